"""What to label next (lib.diagnosis.agreement._active): the active order against a random order, by simulation.

Each draw is a run of N = 400 samples shaped like the demo's leak: 3 to 6 claims a sample, each truly supported
with probability 0.7; a leaking judge gets a supported claim right 97% of the time but calls an unsupported one
supported 60% of the time (it reads the reference); a second instrument on the same texts (the fixed template)
errs 5% either way. People's score of a sample is its share of truly supported claims, the judge's its share of
claims it called supported. The queue takes the first n samples in order: random (u_i) or active (u_i / w_i,
w from the judge's score and its disagreement with the second instrument); both are corrected by
`active_mean` with their own inclusion probabilities (random: n / N each). Prints, over DRAWS seeded draws,
coverage of the run's true people mean and mean width at each n, and how many labels each order needs to halve
the random order's width at 25 labels. `python tests/benchmarks/bench_label_order.py`
"""

from __future__ import annotations

import numpy as np

from lib.diagnosis.agreement._active import active_mean, inclusion, order, weights

N = 400
DRAWS = 1_000   # coverage within about 1.4 points (binomial sd at 95%)
STEPS = (25, 50, 100, 150, 200)


def run(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(people, leaking judge, second instrument, claims per sample) of one simulated run."""
    m = rng.integers(3, 7, size=N)
    people, judge, other = np.empty(N), np.empty(N), np.empty(N)
    for i, k in enumerate(m):
        truth = rng.random(k) < 0.7
        leak = np.where(truth, rng.random(k) < 0.97, rng.random(k) < 0.6)
        fixed = np.where(rng.random(k) < 0.05, ~truth, truth)
        people[i], judge[i], other[i] = truth.mean(), leak.mean(), fixed.mean()
    return people, judge, other, m


def widths_at(people: np.ndarray, judge: np.ndarray, w: np.ndarray, seed: int, steps: tuple[int, ...]
              ) -> list[tuple[float, bool]]:
    """(width, covered) of the corrected interval after the first n of the order, for each n in steps."""
    ids = [f"s{i:04d}" for i in range(N)]
    ranked = order(ids, w, seed=seed)
    truth = people.mean()
    out = []
    for n in steps:
        take = np.array(ranked[:n])
        pi = inclusion(w, n)[take]
        c = active_mean(people[take], judge[take], pi, judge)
        assert c is not None
        out.append((c.width, bool(c.low <= truth <= c.high)))
    return out


def labels_to_reach(people: np.ndarray, judge: np.ndarray, w: np.ndarray, seed: int, target: float) -> int:
    """The first n whose interval is at most `target` wide (checked every 5 labels)."""
    for n in range(25, N + 1, 5):
        (width, _), = widths_at(people, judge, w, seed, (n,))
        if width <= target:
            return n
    return N


def main() -> None:
    rng = np.random.default_rng(2026)
    flat = np.ones(N)
    results = {"random": [], "active": []}
    runs = []
    for draw in range(DRAWS):
        people, judge, other, m = run(rng)
        runs.append((people, judge, weights(judge, np.abs(judge - other), m)))
        results["random"].append(widths_at(people, judge, flat, draw, STEPS))
        results["active"].append(widths_at(people, judge, runs[-1][2], draw, STEPS))
    print(f"{DRAWS} draws of a {N}-sample leaking run; 95% intervals of the run's true people mean")
    print("| order | " + " | ".join(f"n={n} width (coverage)" for n in STEPS) + " |")
    print("|---|" + "---|" * len(STEPS))
    mean_width = {}
    for name, rows in results.items():
        arr = np.array(rows)   # draws x steps x (width, covered)
        mean_width[name] = arr[:, :, 0].mean(0)
        cells = [f"{arr[:, k, 0].mean():.3f} ({arr[:, k, 1].mean():.3f})" for k in range(len(STEPS))]
        print(f"| {name} | " + " | ".join(cells) + " |")
    target = mean_width["random"][0] / 2
    sub = runs[:200]   # the halving search is slower: 200 of the draws
    need = {name: [labels_to_reach(p, j, flat if name == "random" else w, k, target)
                   for k, (p, j, w) in enumerate(sub)] for name in ("random", "active")}
    print(f"labels to halve the random order's width at n=25 ({mean_width['random'][0]:.3f} -> {target:.3f}), "
          f"median over {len(sub)} draws: random {np.median(need['random']):.0f}, "
          f"active {np.median(need['active']):.0f}")


if __name__ == "__main__":
    main()
