"""The judge sentinel's figures (issue 45, A3): detection of a planted silent change (same judge name, another
grading rule on 2%, 5% or 10% of items), nights to detect, false alarms on an unchanged judge, calls per night.

    python tests/benchmarks/bench_sentinel.py sweep [SEEDS] [PROBES] [NOISE]   # null + planted changes
    python tests/benchmarks/bench_sentinel.py fast [SEEDS] [PROBES] [NOISE]    # the same, judged without the store
    python tests/benchmarks/bench_sentinel.py same [SEEDS]                     # fast == sweep, night by night
    python tests/benchmarks/bench_sentinel.py cost                             # calls a pin and a night make
    python tests/benchmarks/bench_sentinel.py loopback [NIGHTS]                # the same nights over HTTP

Each seed is a fresh store: 200 demo samples recorded as a run judged by "judge-x" (the offline judge's verdicts
behind tests/support/drifting_judge.py), a pin of PROBES probes (a seeded sample named by the seed, 3 repeats), and
90 nights judged through lib.diagnosis.sentinel.run_night, the call cache and the store (the judge asked in this
process, `ResponderJudge`: `loopback` checks that the loopback server over HTTP gives the very same nights). From
night CHANGE_AT on, the judge reverses its verdict on SHARE of the items (which items: a hash with the seed's
salt). NOISE: each item's verdict flips with this probability per call, drawn from the call's seed (0: a model
at temperature 0 that repeats itself; 0.03: the offline judge's stand-in noise).

`fast` computes the same nights without the store, the call cache or the harness's threads: each probe's request
is built once (lib.judging.harness.build_request), asked of the same responder with the same seeds (the pin's and
each night's, from the same pin id), and read with the harness's parse_verdicts; D, m0 and the e-process are the
sentinel's own functions. `same` checks that it gives the very nights `sweep` gives. It is about 10x faster, which
is what makes 20 x 90 nights per configuration affordable on a shared 2-core machine.
"""

from __future__ import annotations

import hashlib
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from lib.diagnosis import sentinel  # noqa: E402
from lib.jobs._demo import demo_samples  # noqa: E402
from lib.judging.scoring import evaluate_run  # noqa: E402
from lib.store import Store  # noqa: E402
from tests.support.drifting_judge import DriftingResponder, ResponderJudge  # noqa: E402

NIGHTS = 90
CHANGE_AT = 31          # the first changed night (1-based): 30 unchanged nights first, so the e-process has had
                        # time to decay if it could (it cannot: its bet is 0 while nights sit at the bound)
SHARES = (0.0, 0.02, 0.05, 0.10)
T0 = datetime(2026, 1, 1, 2, 0)
POOL = 200


def _store(folder: Path, judge: ResponderJudge) -> Store:
    store = Store(folder / "s.duckdb")
    samples = [d.sample for d in demo_samples()[0][:POOL]]
    store.record_run(evaluate_run("r1", samples, judge, metrics=["faithfulness"], cache=store, started_at=T0,
                                  pipeline={"retriever": {"top_k": 3}}))
    store.flush_cache()
    return store


def one_history(seed: int, share: float, probes: int, noise: float) -> tuple[int | None, list[int], float]:
    """(nights from the change to the call, or None; calls per night; m0) for one seed."""
    responder = DriftingResponder(noise=noise, salt=f"rule-b-{seed}")
    judge = ResponderJudge(responder)
    with tempfile.TemporaryDirectory() as folder:
        store = _store(Path(folder), judge)
        sentinel.pin(store, judge, "faithfulness", name=f"seed-{seed}", size=probes, repeats=sentinel.REPEATS,
                     at=T0 + timedelta(hours=1))
        calls = []
        found = None
        for k in range(1, NIGHTS + 1):
            responder.share = share if k >= CHANGE_AT else 0.0
            st = sentinel.run_night(store, judge, night=f"n{k:03d}", at=T0 + timedelta(days=k))
            calls.append(st.nights[-1].calls)
            if st.drift is not None:
                found = k
                break
        m0 = st.pin.null_share
        store.close()
    if found is None:
        return None, calls, m0
    return found - CHANGE_AT + 1, calls, m0   # a call before the change (found < CHANGE_AT) is a false alarm: <= 0


def fast_history(seed: int, share: float, probes: int, noise: float,
                 nights: int = NIGHTS) -> tuple[int | None, list[float], float]:
    """`one_history` without the store: (nights from the change to the call, or None; each night's D; m0)."""
    from lib.core.metrics import get_metric
    from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
    from lib.judging.harness import Instrument, build_request, parse_verdicts

    responder = DriftingResponder(noise=noise, salt=f"rule-b-{seed}")
    name = f"seed-{seed}"
    samples = [d.sample for d in demo_samples()[0][:POOL]]
    chosen, _ = _seeded(samples, probes, name)
    when = T0 + timedelta(hours=1)   # the pin id `pin` makes for this name and time: the same seeds
    pin_id = "pin-" + hashlib.sha256(f"{name}:{when.isoformat()}:faithfulness:main".encode()).hexdigest()[:12]
    instrument = Instrument("faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)
    labels = get_metric("faithfulness").labels
    asked = [(r, items) for s in chosen for r, items in (build_request(s, instrument, "judge-x", "", None),)
             if r is not None]

    def verdicts(seed_: int) -> list[list[bool]]:
        return [[v.label for v in parse_verdicts(responder.reply(r.messages, seed_), items, labels)]
                for r, items in asked]

    base = verdicts(sentinel.pin_seed(pin_id, 0))
    shares = [sentinel.disagreement(b, v) for k in range(1, sentinel.REPEATS + 1)
              for b, v in zip(base, verdicts(sentinel.pin_seed(pin_id, k)), strict=True)]
    m0 = sentinel.null_bound(shares)
    ds: list[tuple[str, float]] = []
    for k in range(1, nights + 1):
        responder.share = share if k >= CHANGE_AT else 0.0
        night = f"n{k:03d}"
        now = verdicts(sentinel.night_seed(pin_id, night))
        ds.append((night, sum(sentinel.disagreement(b, v) for b, v in zip(base, now, strict=True)) / len(base)))
    first = sentinel.first_drift(sentinel.e_process(ds, m0, len(base)))
    found = None if first is None else int(first.night[1:]) - CHANGE_AT + 1
    return found, [d for _, d in ds], m0


def _seeded(samples: list, size: int, name: str) -> tuple[list, str]:
    """The probes `pin` samples (lib.diagnosis.sentinel.probe_samples' rule), less those the baseline excludes."""
    import random

    from lib.core.degenerate import exclusion_reason

    chosen = random.Random(f"evaldrift-sentinel-probes:{name}").sample(samples, min(size, len(samples)))
    return [s for s in sorted(chosen, key=lambda s: s.sample_id) if not exclusion_reason(s, "faithfulness")], name


def same(seeds: int) -> None:
    """`fast` gives the nights `sweep` gives: D night by night, and m0 (15 nights a seed, 5% changed from night 31
    would be unseen: the change is put at night 8 here)."""
    global CHANGE_AT
    CHANGE_AT = 8
    for seed in range(seeds):
        responder = DriftingResponder(noise=0.03, salt=f"rule-b-{seed}")
        judge = ResponderJudge(responder)
        with tempfile.TemporaryDirectory() as folder:
            store = _store(Path(folder), judge)
            sentinel.pin(store, judge, "faithfulness", name=f"seed-{seed}", size=100, at=T0 + timedelta(hours=1))
            full = []
            for k in range(1, 16):
                responder.share = 0.05 if k >= CHANGE_AT else 0.0
                st = sentinel.run_night(store, judge, night=f"n{k:03d}", at=T0 + timedelta(days=k))
                full.append(st.nights[-1].disagreement)
            m0 = st.pin.null_share
            store.close()
        _, quick, m0_fast = fast_history(seed, 0.05, 100, 0.03, nights=15)
        print(f"seed {seed}: nights equal {full == quick}, m0 equal {m0 == m0_fast} ({m0:.4f})")


def sweep(seeds: int, probes: int, noise: float, *, history=None) -> None:
    print(f"{seeds} seeds x {NIGHTS} nights, {probes} probes, judge noise {noise}, change from night {CHANGE_AT}")
    print("| share changed | called | false alarms (before the change) | nights to detect: median, max | m0 |")
    print("|---|---|---|---|---|")
    for share in SHARES:
        t = time.process_time()
        out = [(history or one_history)(s, share, probes, noise) for s in range(seeds)]
        after = [d for d, _, _ in out if d is not None and d > 0]
        before = sum(1 for d, _, _ in out if d is not None and d <= 0)
        m0 = statistics.median(m for _, _, m in out)
        delay = f"{statistics.median(after):.0f}, {max(after)}" if after else "-"
        label = "none (null)" if share == 0 else f"{share:.0%}"
        print(f"| {label} | {len(after)}/{seeds} | {before} | {delay} | {m0:.3f} |  "
              f"({time.process_time() - t:.0f} CPU s)", flush=True)


def cost() -> None:
    print("| probes | pin calls (3 repeats, once) | calls a night | same night again |")
    print("|---|---|---|---|")
    for n in (50, 100, 200):
        judge = ResponderJudge(DriftingResponder())
        with tempfile.TemporaryDirectory() as folder:
            store = _store(Path(folder), judge)
            p = sentinel.pin(store, judge, "faithfulness", size=n, at=T0)
            first = sentinel.run_night(store, judge, night="n1").nights[-1]
            again = sentinel.run_night(store, judge, night="n1").nights[-1]
            print(f"| {n} ({len(p.probes)} scored) | {p.row.calls} | {first.calls} | {again.calls} "
                  f"({again.cached} from the cache) |")
            store.close()


def loopback(nights: int) -> None:
    """The first nights of seed 0 at 10% and noise 0.03, in process and over HTTP: the same disagreements."""
    from lib.judging.openai_judge import OpenAIJudge
    from tests.support.openai_server import OpenAIServer

    got = {}
    for how in ("process", "http"):
        responder = DriftingResponder(noise=0.03, salt="rule-b-0")
        with OpenAIServer(responder) as server, tempfile.TemporaryDirectory() as folder:
            judge = (ResponderJudge(responder, endpoint=server.base_url) if how == "process" else
                     OpenAIJudge("judge-x", base_url=server.base_url, api_key="sk-test", timeout=10.0))
            store = _store(Path(folder), judge)  # type: ignore[arg-type]
            sentinel.pin(store, judge, "faithfulness", name="seed-0", size=100, at=T0 + timedelta(hours=1))
            ds = []
            for k in range(1, nights + 1):
                responder.share = 0.10 if k > nights // 2 else 0.0
                st = sentinel.run_night(store, judge, night=f"n{k:03d}", at=T0 + timedelta(days=k))
                ds.append(round(float(st.nights[-1].disagreement or 0), 6))
            got[how] = (ds, len(server.requests))
            store.close()
    print("in process:", got["process"][0])
    print("over HTTP: ", got["http"][0], f"({got['http'][1]} requests)")
    print("same:", got["process"][0] == got["http"][0])


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "sweep"
    if what == "sweep":
        sweep(int(sys.argv[2]) if len(sys.argv) > 2 else 20, int(sys.argv[3]) if len(sys.argv) > 3 else 100,
              float(sys.argv[4]) if len(sys.argv) > 4 else 0.0)
    elif what == "fast":
        sweep(int(sys.argv[2]) if len(sys.argv) > 2 else 20, int(sys.argv[3]) if len(sys.argv) > 3 else 100,
              float(sys.argv[4]) if len(sys.argv) > 4 else 0.0, history=fast_history)
    elif what == "same":
        same(int(sys.argv[2]) if len(sys.argv) > 2 else 2)
    elif what == "cost":
        cost()
    elif what == "loopback":
        loopback(int(sys.argv[2]) if len(sys.argv) > 2 else 6)
    else:
        raise SystemExit(__doc__)
