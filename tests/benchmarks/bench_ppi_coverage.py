"""Coverage of the label-corrected metric's 95% interval (lib.diagnosis.agreement._ppi), by simulation.

People's sample scores ~ Beta(2, 3) (mean 0.4); a judge that flatters by about 0.3 with noise; n labelled,
N unlabelled, 20,000 seeded draws per row. Prints coverage and mean width for plain PPI, PPI++ (tuned) and the
labels alone. `python tests/benchmarks/bench_ppi_coverage.py`
"""

from __future__ import annotations

import numpy as np

from lib.diagnosis.agreement._ppi import ppi_mean_arrays

DRAWS = 20_000


def main() -> None:
    rng = np.random.default_rng(2026)
    print("| n labelled | N unlabelled | plain PPI coverage | PPI++ coverage | labels alone | width PPI++ "
          "| width labels |")
    print("|---|---|---|---|---|---|---|")
    for n, big_n in ((50, 350), (150, 250), (300, 2000)):
        truth = rng.beta(2, 3, size=(DRAWS, n + big_n))
        judge = np.clip(0.6 * truth + 0.45 + rng.normal(0, 0.12, size=truth.shape), 0, 1)
        people, judged, rest = truth[:, :n], judge[:, :n], judge[:, n:]
        row = []
        widths = []
        for lam in (1.0, None, 0.0):
            _, low, high, _ = ppi_mean_arrays(people, judged, rest, lam=lam)
            row.append(f"{((low <= 0.4) & (high >= 0.4)).mean():.4f}")
            widths.append(f"{(high - low).mean():.3f}")
        print(f"| {n} | {big_n} | {' | '.join(row)} | {widths[1]} | {widths[2]} |")


if __name__ == "__main__":
    main()
