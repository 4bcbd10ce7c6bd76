"""Issue 41 item 1, end to end: an external scorer that lets the reference reach its check for 1 sample in 15
moves faithfulness by a few hundredths; the ablation calls it LEAK (exit 1) with its size, never CLEAN."""

from __future__ import annotations

from pathlib import Path

from lib.core.samples import EvalSample
from lib.diagnosis.ablation import LEAK, AblationSpec, run_ablation
from lib.diagnosis.ablation._verdicts import BELOW_EFFECT
from lib.store import Store
from tests.support import synthetic_runs as syn
from tests.support.synthetic_runs import LEAKY_FAITHFULNESS, REPLAY


def reference_only(i: int, f: syn.Facts) -> EvalSample:
    """The answer's second fact is stated by the reference, not by the passages."""
    return EvalSample(f"s{i:03d}", f.question, f"{f.fact1} {f.fact2}", (f.fact1, f.filler), f"{f.fact1} {f.fact2}")


def test_a_leak_for_one_sample_in_15_is_a_leak_with_its_size(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(reference_only, 200), "faithfulness", LEAKY_FAITHFULNESS, REPLAY)
        spec = AblationSpec("r1", ("faithfulness",), ("ground_truth",), repeats=1,
                            scorer="tests.support.scorers:partial_leak_faithfulness")
        result = run_ablation(store, spec, None)
    assert result is not None
    gt = next(v for v in result.verdicts if v.arm == "ground_truth")
    assert gt.delta is not None and -0.05 < gt.delta < -0.02 and gt.hi is not None and gt.hi < 0
    assert (gt.kind, gt.why) == (LEAK, BELOW_EFFECT), gt.sentence
    assert result.exit_code == 1
    assert "the interval excludes 0: a fall of" in gt.sentence and "any dependence on it is a leak" in gt.sentence
    assert result.summary.startswith(f"wiring leak: faithfulness moves {gt.delta:+.3f} when ground_truth is blanked")
    assert "no metric tested" not in result.summary and "no dependence" not in gt.sentence
