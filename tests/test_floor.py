"""The judge's floor (issue 25 item 2): a null about a field must rule out the fall the field could cause.

The headroom is the baseline minus the judge's floor for the metric, the score with every field but the one
its items come from blanked, measured in the same ablation (lib.diagnosis.ablation._floor), never assumed 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.samples import EvalSample
from lib.diagnosis.ablation import INCONCLUSIVE, AblationSpec, run_ablation
from lib.diagnosis.ablation import plan as make_plan
from lib.diagnosis.ablation._floor import floor_arm, floor_level
from lib.diagnosis.ablation._verdicts import FLOOR, MEASURED, SENSITIVE
from lib.diagnosis.cost import estimate_ablation
from lib.judging import OfflineJudge
from lib.store import Store
from tests.support import synthetic_runs as syn
from tests.support.cli import run_cli

FAITH = DEFAULT_TEMPLATES["faithfulness"]
SCORER = "tests.support.floor_scorer:lenient_faithfulness"
ALL = ("question", "answer", "contexts", "ground_truth")

# (metric, the run's fields, the floor arm): every field but the items' own, of those the run has
FLOOR_ARMS = [
    ("faithfulness", ALL, "question+contexts+ground_truth"),
    ("answer_relevance", ALL, "question+contexts+ground_truth"),
    ("context_precision", ALL, "question+answer+ground_truth"),
    ("context_recall", ALL, "question+answer+contexts"),
    ("answer_correctness", ALL, "question+contexts+ground_truth"),
    ("faithfulness", ("answer", "contexts"), "contexts"),
    ("context_recall", ("contexts", "ground_truth"), "contexts"),
    ("faithfulness", ("answer",), None),
]


@pytest.mark.parametrize(("metric", "fields", "arm"), FLOOR_ARMS)
def test_the_floor_arm_blanks_every_field_but_the_items_own(metric: str, fields: tuple[str, ...],
                                                            arm: str | None) -> None:
    assert floor_arm(metric, fields) == arm


# (case, baseline scores, floor scores, floor level)
FLOOR_LEVELS = [
    ("not measured", {"a": [0.5]}, None, None),
    ("mean over samples of repeat means", {"a": [0.5], "b": [1.0]}, {"a": [0.0, 0.2], "b": [0.3]}, 0.2),
    ("only samples the baseline scored", {"a": [0.5]}, {"a": [0.1], "b": [0.9]}, 0.1),
    ("none in common", {"a": [0.5]}, {"b": [0.9]}, None),
]


@pytest.mark.parametrize(("case", "base", "floor", "level"), FLOOR_LEVELS, ids=[r[0] for r in FLOOR_LEVELS])
def test_the_floor_level_reads_the_samples_the_baseline_scored(case: str, base: dict, floor: dict | None,
                                                               level: float | None) -> None:
    assert floor_level(base, floor) == (pytest.approx(level) if level is not None else None)


def gold_with_other_passages(n: int) -> list[EvalSample]:
    """The issue's floor case: gold answers (three sentences) paired with another question's passages."""
    fs = syn.facts(n)
    return [EvalSample(f"s{i:03d}", f.question, f"{f.fact1} {f.fact2} {f.filler}",
                       (fs[(i + 1) % n].fact1, fs[(i + 1) % n].fact2), f"{f.fact1} {f.fact2} {f.filler}")
            for i, f in enumerate(fs)]


def test_the_floor_arm_is_planned_and_counted_in_the_estimate(fresh_db: Path) -> None:
    """A leaky template: blanking contexts leaves the reference, so the floor arm asks the judge something new."""
    with Store(fresh_db) as store:
        syn.record(store, "r1", gold_with_other_passages(40), "faithfulness", syn.LEAKY_FAITHFULNESS, syn.REPLAY)
        spec = AblationSpec("r1", ("faithfulness",), ("contexts",), repeats=1, sequential=False)
        p = make_plan(store, spec)
        cost = estimate_ablation(store, spec, cacheable=False)
    assert p.floor_arm("faithfulness") == "question+contexts+ground_truth"
    assert "question+contexts+ground_truth" in p.measured_arms("faithfulness")
    assert "question+contexts+ground_truth" not in p.arms_for("faithfulness")   # a measurement, not a cell
    # baseline, contexts, the joint arm (question+ground_truth: the template renders the reference), the floor,
    # and the positive control beside it (the items given perfect support)
    assert cost.judgings == 5 * 40 and cost.not_rejudged == 0 and cost.calls == 5 * 40 and cost.control == 40


def test_a_floor_arm_asking_what_another_arm_asks_is_read_from_it(fresh_db: Path) -> None:
    """The correct template renders only answer and contexts: the floor arm's prompts are the contexts arm's,
    so the floor is read from that arm and costs no judging."""
    with Store(fresh_db) as store:
        syn.record(store, "r1", gold_with_other_passages(40), "faithfulness", FAITH, PROJECTED)
        spec = AblationSpec("r1", ("faithfulness",), ("contexts",), repeats=1, sequential=False)
        p = make_plan(store, spec)
        cost = estimate_ablation(store, spec, cacheable=False)
    assert p.floor_arm("faithfulness") == "contexts" and p.judged_floor("faithfulness") is None
    assert cost.judgings == 4 * 40 and cost.not_rejudged == 40 and cost.calls == 3 * 40   # the control: 40


def test_the_issues_floor_case_is_inconclusive_with_its_floor_and_exit_3(fresh_db: Path) -> None:
    """Gold answers with another question's passages, the correct template, a judge that marks a few claims
    supported by nothing: stored about 0.05, all of it the judge's floor."""
    judge = OfflineJudge(noise=0.05)
    with Store(fresh_db) as store:
        syn.record(store, "r1", gold_with_other_passages(200), "faithfulness", FAITH, PROJECTED, judge=judge)
        stored = store.run_metrics("r1")
    proc = run_cli("ablate", "--db", fresh_db, "--run", "r1", "--metric", "faithfulness", "--blank", "contexts",
                   "--repeats", "1", "--all-samples", "--json")
    assert proc.returncode == 3, proc.stderr
    out = json.loads(proc.stdout)
    [cell] = [c for c in out["verdicts"] if c["arm"] == "contexts"]
    assert 0.02 < float(stored["score"].iloc[0]) < 0.08
    assert (cell["kind"], cell["why"]) == (INCONCLUSIVE, FLOOR)
    # the floor was measured (the judge's 'supported by nothing'), not taken as 0: little room is left
    assert cell["headroom"] < 0.01
    assert "above this judge's floor (0.0" in cell["sentence"] and "measured in this ablation" in cell["sentence"]
    assert not out["summary"].startswith("miswired")


def scorer_ablation(store: Store, blanks: tuple[str, ...], scorer: str = SCORER):
    result = run_ablation(store, AblationSpec("r1", ("faithfulness",), blanks, repeats=1, scorer=scorer,
                                              sequential=False), None)
    assert result is not None
    return result


@pytest.mark.parametrize(("scorer", "level"), [(SCORER, (0.02, 0.08)),
                                               ("tests.support.floor_scorer:more_lenient_faithfulness", (0.08, 0.2))])
def test_a_scorer_at_its_floor_is_neither_insensitive_nor_clean(fresh_db: Path, scorer: str,
                                                                level: tuple[float, float]) -> None:
    """The issue's external scorer: its score comes from claims it credits whatever the passages say. A null
    cannot show that it ignores its passages (INSENSITIVE) or the reference (CLEAN): it has no room to fall.
    At 0.12 a floor taken as 0 left 0.12 of room, and both nulls were decided (miswired, exit 1)."""
    with Store(fresh_db) as store:
        items = gold_with_other_passages(200)
        syn.record(store, "r1", items, "faithfulness", FAITH, PROJECTED)
        result = scorer_ablation(store, ("contexts", "ground_truth"), scorer)
    by_arm = {c.arm: c for c in result.verdicts}
    for arm in ("contexts", "ground_truth"):
        c = by_arm[arm]
        assert c.baseline is not None and level[0] < c.baseline < level[1]
        assert (c.kind, c.why) == (INCONCLUSIVE, FLOOR), c.sentence
        assert c.headroom == pytest.approx(0.0, abs=1e-9)
    assert result.exit_code == 3
    assert not result.summary.startswith(("miswired", "no dependence"))


def test_room_above_a_measured_floor_still_decides(fresh_db: Path) -> None:
    """The same scorer on answers its passages support: far above its floor, blanking them is SENSITIVE."""
    fs = syn.facts(60)
    items = [EvalSample(f"s{i:03d}", f.question, f.fact1, (f.fact1, f.filler), f.fact1) for i, f in enumerate(fs)]
    with Store(fresh_db) as store:
        syn.record(store, "r1", items, "faithfulness", FAITH, PROJECTED)
        result = scorer_ablation(store, ("contexts",))
    [c] = [c for c in result.verdicts if c.arm == "contexts"]
    assert (c.kind, c.why) == (SENSITIVE, MEASURED)
    assert c.headroom is not None and c.headroom > 0.9
