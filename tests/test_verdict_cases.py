"""Issue 10's failures, each rebuilt on a small synthetic run made in the test (not the demo).

Each case records a run whose stored scores its own instrument produced, then
ablates it and checks what the verdict may say (DESIGN.md section 6).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lib.ablation import (
    CLEAN,
    INCONCLUSIVE,
    LEAK,
    AblationResult,
    AblationSpec,
    ArmVerdict,
    four_readings_spec,
    run_ablation,
)
from lib.diagnose import RunChanges, TemplateChange, split_jump, suspects_for
from lib.errors import JudgeError
from lib.judges import JudgeReply, JudgeRequest, OfflineJudge
from lib.prompts import DEFAULT_TEMPLATES
from lib.samples import EvalSample
from lib.store import Store
from lib.verdicts import FLOOR, MEASURED, STATIC
from lib.views import PAGE_COMPARE, suspect_actions
from tests.support import synthetic_runs as syn
from tests.support.synthetic_runs import LEAKY_FAITHFULNESS, PROJECTED, REPLAY, WHOLE_SAMPLE_FAITHFULNESS

FAITH = DEFAULT_TEMPLATES["faithfulness"]


def coinciding(i: int, f: syn.Facts) -> EvalSample:
    """The reference states only what the passages already state."""
    return EvalSample(f"s{i:03d}", f.question, f"{f.fact1} {f.fact2}", (f.fact1, f.fact2), f.fact1)


def reference_only(i: int, f: syn.Facts) -> EvalSample:
    """The answer's second fact is stated by the reference, not by the passages."""
    return EvalSample(f"s{i:03d}", f.question, f"{f.fact1} {f.fact2}", (f.fact1, f.filler), f"{f.fact1} {f.fact2}")


def overlapping(i: int, f: syn.Facts) -> EvalSample:
    """The second fact is stated by the question and by the reference, not by the passages."""
    return EvalSample(f"s{i:03d}", f"{f.question} {f.fact2}", f"{f.fact1} {f.fact2}", (f.fact1, f.filler), f.fact2)


def ablate(store: Store, run_id: str, blanks: tuple[str, ...], **kw: object) -> AblationResult:
    spec = AblationSpec(run_id, ("faithfulness",), blanks, repeats=kw.pop("repeats", 2), **kw)  # type: ignore[arg-type]
    result = run_ablation(store, spec, None if spec.scorer else OfflineJudge())
    assert result is not None
    return result


def cell(result: AblationResult, arm: str) -> ArmVerdict:
    [v] = [v for v in result.verdicts if v.arm == arm]
    return v


# -- 2. CLEAN says only what was measured, and static evidence is never cleared ----------------------------

def test_a_template_that_renders_the_reference_is_not_cleared_when_its_support_coincides(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(coinciding), "faithfulness", LEAKY_FAITHFULNESS, REPLAY)
        result = ablate(store, "r1", ("ground_truth",))
    v = cell(result, "ground_truth")
    assert v.delta == pytest.approx(0.0)  # the numbers alone would clear it
    assert result.exit_code == 1
    assert v.kind == LEAK
    assert "renders ground_truth" in v.sentence and "no effect measured on these 40 samples" in v.sentence
    assert v.why == STATIC and v.renders is not None and "ground_truth" in v.renders
    assert result.summary.startswith("wiring leak: faithfulness's wiring renders ground_truth")


def test_an_external_scorer_is_clean_only_as_far_as_these_samples_show(fresh_db: Path) -> None:
    # the scorer serialises the whole sample; on this data the reference adds nothing the passages lack
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(coinciding), "faithfulness", FAITH, PROJECTED)
        result = ablate(store, "r1", ("ground_truth",), scorer="tests.support.scorers:whole_sample_faithfulness")
    v = cell(result, "ground_truth")
    assert v.kind == CLEAN
    assert "no dependence of faithfulness on ground_truth measured on these 40 samples" in v.sentence
    assert "the interval rules out a move of 0.000" in v.sentence
    assert "code that was not read" in v.sentence
    assert "does not read" not in v.sentence and "does not read" not in result.summary
    assert v.renders is None  # nothing static to read: the --json says so


# -- 3. a leak hidden by overlap shows when the forbidden fields are blanked together -------------------------

def test_a_leak_of_the_set_shows_only_in_the_joint_arm(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(overlapping), "faithfulness", WHOLE_SAMPLE_FAITHFULNESS, REPLAY)
        result = ablate(store, "r1", ("question", "ground_truth"),
                        scorer="tests.support.scorers:whole_sample_faithfulness")
    assert cell(result, "question").kind == CLEAN and cell(result, "ground_truth").kind == CLEAN
    joint = cell(result, "question+ground_truth")
    assert joint.joint and (joint.kind, joint.why) == (LEAK, MEASURED)
    assert joint.delta == pytest.approx(-0.5)
    assert "when question and ground_truth are blanked" in joint.sentence and "a leak of the set" in joint.sentence
    assert "clears nothing" in cell(result, "question").sentence
    assert result.exit_code == 1
    assert "when question and ground_truth are blanked together" in result.summary


def test_a_sample_template_is_never_cleared_and_its_joint_arm_measures_the_leak(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(overlapping), "faithfulness", WHOLE_SAMPLE_FAITHFULNESS, REPLAY)
        result = ablate(store, "r1", ("question",))   # the joint arm is added without being asked for
    assert result.exit_code == 1
    assert (cell(result, "question").kind, cell(result, "question").why) == (LEAK, STATIC)
    assert (cell(result, "question+ground_truth").kind, cell(result, "question+ground_truth").why) == (LEAK, MEASURED)
    assert result.summary.startswith("wiring leak: faithfulness moves 0.50 when question and ground_truth are")


# -- 4. no room to move is inconclusive, not miswired -----------------------------------------------------------

def test_a_metric_at_its_floor_is_inconclusive_not_insensitive(fresh_db: Path) -> None:
    fs = syn.facts(40)
    # correct wiring, but every answer is paired with another question's passages: faithfulness ~0
    items = [EvalSample(f"s{i:03d}", f.question, f"{f.fact1} {f.fact2}",
                        (fs[(i + 1) % 40].fact1, fs[(i + 1) % 40].filler), f.fact1) for i, f in enumerate(fs)]
    with Store(fresh_db) as store:
        syn.record(store, "r1", items, "faithfulness", FAITH, PROJECTED)
        result = ablate(store, "r1", ("contexts",))
    v = cell(result, "contexts")
    assert result.exit_code == 3
    assert not result.summary.startswith("miswired")
    assert v.kind == INCONCLUSIVE
    assert f"already at {v.baseline:.3f}: blanking contexts cannot lower it" in v.sentence
    assert v.why == FLOOR and v.headroom is not None and v.headroom < 0.05


# -- 5. a deterministic judge: noise band 0, no ratio to it --------------------------------------------------

def test_identical_repeats_give_a_zero_band_and_the_interval_decides(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(reference_only), "faithfulness", LEAKY_FAITHFULNESS, REPLAY)
        result = ablate(store, "r1", ("ground_truth",), repeats=3)
    v = cell(result, "ground_truth")
    assert v.kind == LEAK
    assert "x the noise band" not in v.sentence and "x the noise band" not in result.summary
    assert v.noise == 0.0 and v.ratio is None
    assert "repeats identical" in v.sentence and v.why == MEASURED


# -- 9. only the readings the wiring makes meaningful ----------------------------------------------------------

def test_four_readings_are_computed_only_when_the_wiring_renders_the_reference(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "clean", syn.samples(reference_only), "faithfulness", FAITH, PROJECTED)
        syn.record(store, "leaky", syn.samples(reference_only), "faithfulness", LEAKY_FAITHFULNESS, REPLAY, day=1)
        clean = run_ablation(store, four_readings_spec("clean", repeats=2), OfflineJudge())
        leaky = run_ablation(store, four_readings_spec("leaky", repeats=2), OfflineJudge())
    assert clean is not None and leaky is not None
    assert clean.four is None   # "the reference alone supports ..." would be noise: it is never rendered
    assert leaky.four is not None and leaky.four.leak == pytest.approx(0.5)


# -- 1 and 10. a jump is explained by its split; an unscored cell is not zero ------------------------------------

class FailingJudge:
    model = "offline-lexical-v2"
    concurrency = 1
    cacheable = False

    def complete(self, request: JudgeRequest) -> JudgeReply:
        raise JudgeError("server error (503)")


def test_a_split_whose_cells_are_unscored_says_so_instead_of_zero(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "a", syn.samples(reference_only), "faithfulness", FAITH, PROJECTED)
        syn.record(store, "b", syn.samples(reference_only, seed=8), "faithfulness", FAITH, PROJECTED, day=1)
        split = split_jump(store, "faithfulness", "a", "b", lambda model: FailingJudge())
    assert split.a_with_a is None and split.b_with_b is None and split.instrument is None and split.total is None
    assert "4 of the 4 cells are unscored" in split.sentence and "server error (503)" in split.sentence
    assert "instrument)" not in split.sentence and "0.000" not in split.sentence


def test_an_ablation_headline_says_nothing_about_a_jump_between_runs(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(reference_only), "faithfulness", FAITH, PROJECTED)
        result = ablate(store, "r1", ("question", "ground_truth"))
    assert result.exit_code == 0
    assert "pipeline" not in result.summary and "not the wiring" not in result.summary
    assert result.summary.startswith("no dependence measured: on these 40 samples")
    assert "split of that jump" in result.summary


def test_the_suggested_test_for_every_jump_is_its_split() -> None:
    changes = RunChanges("b", "a", judge_models={"faithfulness": ("m1", "m2")},
                         templates=[TemplateChange("faithfulness", "h1", "h2", "", ("answer", "contexts"),
                                                   ("answer", "contexts", "ground_truth"), ("ground_truth",))],
                         bindings={"faithfulness": ("projected", "replay")}, pipeline={"retriever.k": (3, 5)})
    from datetime import datetime

    from lib.diagnose import Jump
    jump = Jump("faithfulness", "b", "a", datetime(2026, 10, 2), 0.7, 0.9, 0.2, 0.05, 0.01,
                suspects_for(changes, "faithfulness"))
    actions = suspect_actions(jump)
    assert actions and all(a.page == PAGE_COMPARE for a in actions)
    assert all(a.params == {"run": "b", "run_b": "a", "metric": "faithfulness", "split": "1"} for a in actions)
    assert all("split" in a.test for a in actions)
