"""Sequential ablation: calls saved, verdicts against judging every sample, and the false-LEAK rate simulated.

    python tests/benchmarks/bench_sequential.py            # the demo's matrix on two runs, synthetic runs, 400 sims
    python tests/benchmarks/bench_sequential.py --sims 200 --db /path/to/demo.duckdb
    python tests/benchmarks/run.py --only judging,sequential   # the same figures in the whole report

Figures, each beside its target:
- the demo's whole matrix (5 metrics x ground_truth, question, contexts; the joint arms too) on the run where
  the leak starts and on the last (fixed) run: judge calls sequential / every sample (target <= 1/3), and the
  cells whose verdict (kind and branch) agrees (target: all);
- synthetic runs (tests/support/seq_synthetic: a leaky and a clean external harness): verdict agreement;
- simulated ablations of one invariant arm (lib.diagnosis.ablation.sequential_cell, the engine's own
  decision path, on simulated per-claim verdicts): the false-LEAK rate with no dependence (target <=
  FALSE_LEAK_LEVEL), the LEAK rate of a true leak of 0.02 (information: any move of a must-never-receive field
  the interval shows is a leak), and the samples judged.

`sequential(report, ...)` adds them to tests/benchmarks/run.py's report; `main()` runs them alone and returns
the printed lines. Benchmarks assert nothing.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lib.core.metrics import METRIC_NAMES, get_metric  # noqa: E402
from lib.core.samples import EvalSample  # noqa: E402
from lib.diagnosis.ablation import (  # noqa: E402
    LEAK,
    AblationResult,
    AblationSpec,
    run_ablation,
)
from lib.diagnosis.ablation._analysis import ArmResults  # noqa: E402
from lib.diagnosis.ablation._engine import matrix_spec  # noqa: E402
from lib.diagnosis.ablation._plan import Plan  # noqa: E402
from lib.diagnosis.ablation._sequential import FALSE_LEAK_LEVEL, seeded_order  # noqa: E402
from lib.diagnosis.ablation._sequential_run import sequential_cell  # noqa: E402
from lib.judging.harness import OK  # noqa: E402
from lib.store import Store  # noqa: E402
from tests.benchmarks.report import Figure, Report  # noqa: E402

FLIP = 0.03          # a judge's per-claim chance of answering the other way, each repeat (the demo's STAND_IN_NOISE)


# -- simulated ablations of one invariant arm ---------------------------------------------------------------

def _arm(labels: np.ndarray, lengths: np.ndarray, ids: list[str]) -> ArmResults:
    """An arm's stored results from simulated per-claim labels [sample, repeat, claim] (claims beyond a sample's
    length are ignored)."""
    reps = labels.shape[1]
    mask = np.arange(labels.shape[2])[None, :] < lengths[:, None]
    score = ((labels & mask[:, None, :]).sum(axis=2) / lengths[:, None]).tolist()
    scores = {sid: score[i] for i, sid in enumerate(ids)}
    per = {sid: labels[i, :, :lengths[i]].tolist() for i, sid in enumerate(ids)}   # [repeat][claim], one call a sample
    rows = {sid: [(OK, "")] * reps for sid in ids}
    return ArmResults(scores, per, 0, 0, len(ids) * reps, Counter(), rows)  # type: ignore[arg-type]


def simulate(sims: int, *, effect: float = 0.0, n: int = 400, repeats: int = 3, seed: int = 0) -> dict[str, float]:
    """`sims` ablations of a must-never-receive field through the engine's decision path.

    Each sample has 3-6 claims, each truly supported with chance 0.75; every judging flips each claim with
    chance FLIP. Blanking the field removes support from each supported claim with the chance that makes the
    expected move `-effect` (0: no dependence). Returns the LEAK rate, the mean samples judged and the rate of
    each verdict kind.
    """
    rng = np.random.default_rng(seed)
    ids = [f"s{i:04d}" for i in range(n)]
    samples = tuple(EvalSample(sid, "q", "a", ("c",), "g") for sid in ids)
    index = {sid: i for i, sid in enumerate(ids)}
    kinds: Counter = Counter()
    judged = 0
    drop = effect / ((1 - 2 * FLIP) * 0.75) if effect else 0.0
    for k in range(sims):
        spec = AblationSpec("sim", ("faithfulness",), ("ground_truth",), repeats=repeats, seed=k)
        plan = Plan(spec, tuple(samples[index[i]] for i in seeded_order(ids, spec.seed)), {}, (), frozenset())
        lengths = rng.integers(3, 7, size=n)
        truth = rng.random((n, 6)) < 0.75
        blanked = truth & ~(rng.random((n, 6)) < drop)
        base = truth[:, None, :] ^ (rng.random((n, repeats, 6)) < FLIP)
        abl = blanked[:, None, :] ^ (rng.random((n, repeats, 6)) < FLIP)
        cell = sequential_cell(spec, plan, get_metric("faithfulness"), "ground_truth", _arm(base, lengths, ids),
                               _arm(abl, lengths, ids), None, False)
        kinds[cell.kind] += 1
        judged += cell.judged
    return {"leak_rate": kinds[LEAK] / sims, "judged": judged / sims, **{k: v / sims for k, v in kinds.items()}}


# -- real ablations: sequential against every sample ----------------------------------------------------------

def compare(store: Store, spec: AblationSpec, judge) -> tuple[AblationResult, AblationResult]:
    """The same ablation judged every sample and sequentially (the sequential one first: no cache to lean on)."""
    from dataclasses import replace
    seq = run_ablation(store, replace(spec, sequential=True), judge)
    full = run_ablation(store, replace(spec, sequential=False), judge)
    assert seq is not None and full is not None
    return seq, full


def agreement(seq: AblationResult, full: AblationResult) -> tuple[int, int]:
    """Cells whose verdict and branch agree, and all cells."""
    a = {(v.metric, v.arm): (v.kind, v.why) for v in seq.verdicts}
    b = {(v.metric, v.arm): (v.kind, v.why) for v in full.verdicts}
    return sum(a[k] == b.get(k) for k in a), len(b)


def demo_matrix(db: Path) -> list[tuple[str, AblationResult, AblationResult]]:
    """The whole matrix on the run where the leak starts and on the last run, each judged both ways."""
    from lib.jobs._demo import run_plans
    from lib.judging import OfflineJudge
    from lib.judging.offline import STAND_IN_NOISE as JUDGE_NOISE

    plans = run_plans()
    leak_start = next(p.run_id for p in plans if p.label == "harness refactor")
    out = []
    with Store(db) as store:
        for run_id in (leak_start, store.run_ids()[-1]):
            seq, full = compare(store, matrix_spec(run_id, METRIC_NAMES), OfflineJudge("offline-lexical-v2",
                                                                                      noise=JUDGE_NOISE))
            out.append((run_id, seq, full))
    return out


def synthetic(db: Path, n: int = 400) -> list[tuple[str, AblationResult, AblationResult]]:
    """A leaky and a clean external harness on synthetic runs, the matrix of faithfulness judged both ways."""
    from tests.support import seq_synthetic as syn

    out = []
    with Store(db) as store:
        for name in ("leaky", "clean"):
            syn.record(store, f"syn-{name}", syn.make_samples(n, seed=11), name)
            spec = AblationSpec(f"syn-{name}", ("faithfulness",), ("ground_truth", "question", "contexts"),
                                repeats=2, scorer=f"tests.support.seq_synthetic:{name}")
            seq, full = compare(store, spec, None)
            out.append((name, seq, full))
    return out


def sequential(report: Report, demo_path: Path, work: Path, *, sims: int = 400) -> None:
    """Every figure of the sequential ablation, each beside its target, added to `report`.

    `demo_path` is copied (the ablations write); `work` holds the copies and the synthetic runs.
    """
    db = work / "sequential-demo.duckdb"
    shutil.copy(demo_path, db)
    t = time.perf_counter()
    rows = demo_matrix(db)
    for run_id, s, f in rows:
        report.add(Figure(f"sequential:demo:{run_id}", f"demo matrix {run_id}: calls, sequential", s.calls, "calls",
                          note=f"{f.calls:,} judging every sample ({s.calls / f.calls:.2f}); {s.stopped_early:,} "
                               f"judgings not needed"))
    ratio = sum(s.calls for _, s, _ in rows) / sum(f.calls for _, _, f in rows)
    report.add(Figure("sequential:calls_ratio", "demo matrix calls, sequential / every sample", ratio, "x",
                      "<= 0.33x", ratio <= 1 / 3, note=f"{len(rows)} runs, 5 metrics x 3 fields"))
    agree = [agreement(s, f) for _, s, f in rows]
    same, cells = sum(a for a, _ in agree), sum(b for _, b in agree)
    report.add(Figure("sequential:demo_agreement", "demo matrix cells with the same verdict (kind, branch)", same,
                      "cells", f"all {cells}", same == cells, note=f"{time.perf_counter() - t:.0f} s both ways"))
    for name, s, f in synthetic(work / "sequential-synthetic.duckdb"):
        a, b = agreement(s, f)
        report.add(Figure(f"sequential:synthetic:{name}", f"synthetic {name} harness: cells with the same verdict",
                          a, "cells", f"all {b}", a == b,
                          note=f"{s.judgings:,} judgings sequential vs {f.judgings:,} every sample"))
    t = time.perf_counter()
    r = simulate(sims, effect=0.0, seed=0)
    report.add(Figure("sequential:false_leak:none", "simulated false-LEAK rate, no dependence", r["leak_rate"], "",
                      f"<= {FALSE_LEAK_LEVEL:g}", r["leak_rate"] <= FALSE_LEAK_LEVEL,
                      note=f"{sims} ablations; {r['judged']:.0f} of 400 samples judged on average; "
                           f"{time.perf_counter() - t:.0f} s"))
    t = time.perf_counter()   # any move of a must-never-receive field is a leak (issue 41): a rate of finding it
    r = simulate(sims, effect=0.02, seed=1)
    report.add(Figure("sequential:leak:edge", "simulated LEAK rate, a true leak of 0.02 (the rest CLEAN: an interval "
                      "that holds 0 and rules out 0.05)", r["leak_rate"], "", "", None,
                      note=f"{sims} ablations; {r['judged']:.0f} of 400 samples judged on average; "
                           f"{time.perf_counter() - t:.0f} s"))


def main(argv: list[str] | None = None) -> list[str]:
    """Run the sequential figures on their own; returns the printed figure lines (for tests/benchmarks/run.py)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sims", type=int, default=400, help="simulated ablations per scenario (default 400)")
    parser.add_argument("--db", type=Path, help="a demo database to copy (default: build one, about a minute)")
    args = parser.parse_args(argv)
    report = Report()
    report.section("Sequential ablation: calls saved, verdicts against every sample, simulated false alarms")
    with tempfile.TemporaryDirectory() as tmp:
        demo = args.db
        if demo is None:
            from lib.jobs._demo import build_demo
            demo = Path(tmp) / "demo.duckdb"
            build_demo(demo)
        sequential(report, demo, Path(tmp), sims=args.sims)
    return [f.line() for f in report.figures]


if __name__ == "__main__":
    main()
