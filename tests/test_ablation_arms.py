"""The swap arms and the positive control (issue 41 items 2 and 3), as pure rules: one row per branch.

classify_control decides whether a metric's score rises when its items get perfect support; with_control reads
that into a cell left at the judge's floor; the swap pairing is a seeded derangement; the control's sample is the
wiring table's `positive_control`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from lib.core.errors import InputError
from lib.core.metrics import EXPECT_SENSITIVE, INVARIANT, METRICS
from lib.core.samples import FIELDS, EvalSample
from lib.diagnosis.ablation import _arm_words as arm_words
from lib.diagnosis.ablation import _verdicts as v
from lib.diagnosis.ablation._arms import arm_sample, derangement, parse_swap, partners, supported, swap_seed
from lib.diagnosis.ablation._spec import AblationSpec
from lib.diagnosis.ablation._verdicts import ControlEvidence, Decision, classify_control, with_control


def control(**kw: object) -> ControlEvidence:
    """A clear rise: floor 0.05, 0.95 with perfect support, 60 samples, identical repeats, nothing failed."""
    base: dict[str, object] = {"metric": "faithfulness", "n": 60, "mean": 0.9, "lo": 0.85, "hi": 0.95, "noise": 0.0,
                               "floor": 0.05, "supported": 0.95, "n_failed": 0, "n_units": 120}
    return ControlEvidence(**{**base, **kw})  # type: ignore[arg-type]


FLAT = {"mean": 0.0, "lo": 0.0, "hi": 0.0, "supported": 0.05}   # a constant scorer: the same with perfect support

CONTROL_ROWS = [
    ("a clear rise", control(), v.SENSITIVE, v.ROSE),
    ("a rise at ten samples is decided", control(n=10), v.SENSITIVE, v.ROSE),
    ("a rise with no band measured", control(noise=None), v.SENSITIVE, v.ROSE),
    ("a rise beyond a nonzero band", control(noise=0.1), v.SENSITIVE, v.ROSE),
    ("a rise within the band", control(mean=0.09, lo=0.05, hi=0.12, noise=0.1), v.INCONCLUSIVE, v.WITHIN_NOISE),
    ("a rise whose mean is exactly the band", control(mean=0.1, lo=0.05, hi=0.15, noise=0.1), v.INCONCLUSIVE,
     v.WITHIN_NOISE),
    ("the low end exactly at the effect is no decided rise", control(mean=0.03, lo=0.02, hi=0.04), v.INCONCLUSIVE,
     v.SMALL_RISE),
    ("a rise that excludes zero below the effect", control(mean=0.01, lo=0.005, hi=0.015), v.INCONCLUSIVE,
     v.SMALL_RISE),
    ("flat: the judge does not read its inputs", control(**FLAT), v.INSENSITIVE, v.IGNORES_INPUTS),
    ("flat at full marks (a constant 1.0)", control(floor=1.0, **{**FLAT, "supported": 1.0}), v.INSENSITIVE,
     v.IGNORES_INPUTS),
    ("a fall with perfect support reads its inputs no more", control(mean=-0.02, lo=-0.04, hi=0.0), v.INSENSITIVE,
     v.IGNORES_INPUTS),
    ("the high end exactly at the rise ruled out", control(mean=0.0, lo=-0.05, hi=0.05), v.INSENSITIVE,
     v.IGNORES_INPUTS),
    ("the high end past the rise ruled out", control(mean=0.0, lo=-0.05, hi=0.06), v.INCONCLUSIVE, v.WIDE),
    ("flat on nineteen samples: too few", control(n=19, **FLAT), v.INCONCLUSIVE, v.TOO_FEW),
    ("flat on twenty samples decides", control(n=20, **FLAT), v.INSENSITIVE, v.IGNORES_INPUTS),
    ("nothing paired", control(n=0, mean=None, lo=None, hi=None), v.INCONCLUSIVE, v.TOO_FEW),
    ("over a fifth of judgings failed", control(n_failed=25, n_units=120), v.INCONCLUSIVE, v.FAILURES),
    ("exactly a fifth failed still decides", control(n_failed=24, n_units=120), v.SENSITIVE, v.ROSE),
    ("failures before a flat control", control(n_failed=25, n_units=120, **FLAT), v.INCONCLUSIVE, v.FAILURES),
]


@pytest.mark.parametrize(("case", "e", "kind", "why"), CONTROL_ROWS, ids=[r[0] for r in CONTROL_ROWS])
def test_the_positive_control_rule(case: str, e: ControlEvidence, kind: str, why: str) -> None:
    assert classify_control(e) == Decision(kind, why)


@pytest.mark.parametrize(("case", "e", "kind", "why"), CONTROL_ROWS, ids=[r[0] for r in CONTROL_ROWS])
def test_every_control_branch_has_a_sentence_that_names_its_verdict(case: str, e: ControlEvidence, kind: str,
                                                                   why: str) -> None:
    said = arm_words.control_sentence(e, Decision(kind, why), noise="repeats identical")
    assert said.startswith(f"{kind} (positive control)")
    if kind != v.INCONCLUSIVE or why not in (v.FAILURES, v.TOO_FEW):
        assert "contexts set to the claims of answer" in said   # the wiring table's positive control, named


FLOOR_CELL = Decision(v.INCONCLUSIVE, v.FLOOR)
IGNORES = Decision(v.INSENSITIVE, v.IGNORES_INPUTS)
ROSE = Decision(v.SENSITIVE, v.ROSE)

WITH_CONTROL_ROWS = [
    ("a received field at the floor, a flat control: the judge ignores its inputs", FLOOR_CELL, EXPECT_SENSITIVE,
     IGNORES, IGNORES),
    ("a received field at the floor, a rising control: no room to fall", FLOOR_CELL, EXPECT_SENSITIVE, ROSE,
     FLOOR_CELL),
    ("a received field at the floor, the control undecided", FLOOR_CELL, EXPECT_SENSITIVE,
     Decision(v.INCONCLUSIVE, v.WIDE), FLOOR_CELL),
    ("a received field at the floor, no control measured", FLOOR_CELL, EXPECT_SENSITIVE, None, FLOOR_CELL),
    ("a forbidden field at the floor, a flat control: a leak could not show either", FLOOR_CELL, INVARIANT, IGNORES,
     FLOOR_CELL),
    ("a cell not at the floor stands", Decision(v.INCONCLUSIVE, v.WIDE), EXPECT_SENSITIVE, IGNORES,
     Decision(v.INCONCLUSIVE, v.WIDE)),
    ("a decided cell stands", Decision(v.SENSITIVE, v.MEASURED), EXPECT_SENSITIVE, IGNORES,
     Decision(v.SENSITIVE, v.MEASURED)),
]


@pytest.mark.parametrize(("case", "d", "expected", "ctrl", "want"), WITH_CONTROL_ROWS,
                         ids=[r[0] for r in WITH_CONTROL_ROWS])
def test_a_cell_at_the_floor_reads_the_positive_control(case: str, d: Decision, expected: str,
                                                        ctrl: Decision | None, want: Decision) -> None:
    assert with_control(d, expected, ctrl) == want


# -- the swap pairing ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 3, 7, 40])
def test_the_swap_pairing_is_a_derangement_fixed_by_its_seed(n: int) -> None:
    ids = [f"s{i:03d}" for i in range(n)]
    pairs = derangement(ids[::-1], seed=11)   # the order handed in does not matter: ids are sorted first
    assert sorted(pairs) == ids and sorted(pairs.values()) == ids   # a permutation
    assert all(a != b for a, b in pairs.items())                     # no sample keeps its own
    assert pairs == derangement(ids, seed=11)
    assert n < 7 or pairs != derangement(ids, seed=12)


def test_one_sample_has_no_swap_partner() -> None:
    assert derangement(["only"], seed=1) == {} and derangement([], seed=1) == {}


def sample(i: int) -> EvalSample:
    return EvalSample(f"s{i}", f"question {i}?", f"Answer {i}. More {i}.", (f"passage {i}a", f"passage {i}b"),
                      f"reference {i}")


def test_a_swap_arm_takes_the_field_from_the_partner_and_keeps_the_rest() -> None:
    items = [sample(i) for i in range(5)]
    pairs = partners(items, 3)
    for s in items:
        got = arm_sample(s, "faithfulness", "swap:question+ground_truth", pairs)
        other = pairs[s.sample_id]
        assert (got.question, got.ground_truth) == (other.question, other.ground_truth) != (s.question,
                                                                                           s.ground_truth)
        assert (got.sample_id, got.answer, got.contexts) == (s.sample_id, s.answer, s.contexts)
    with pytest.raises(InputError, match="swap partner"):
        arm_sample(items[0], "faithfulness", "swap:ground_truth", {})


@pytest.mark.parametrize("metric", list(METRICS))
def test_the_positive_control_is_the_wiring_tables(metric: str) -> None:
    """The field the items are judged against holds the items' own text; every other field but theirs is blank."""
    spec = METRICS[metric]
    s = sample(1)
    got = supported(s, metric)
    source = s.field(spec.control_from)
    want = source if isinstance(source, tuple) else (source,)
    assert got.field(spec.against) == (want if spec.against == "contexts" else " ".join(want))
    for f in FIELDS:
        if f not in (spec.items_from, spec.against):
            assert not got.field(f), f
    assert got.field(spec.items_from) == s.field(spec.items_from)
    assert spec.positive_control == f"{spec.against} set to the {spec.item_kind}s of {spec.items_from}"


# -- the spec ------------------------------------------------------------------------------------------------

def test_a_spec_with_swaps_records_its_pairing_seed_and_one_without_keeps_its_id() -> None:
    plain = AblationSpec("r", ("faithfulness",), ("ground_truth",))
    swapping = AblationSpec("r", ("faithfulness",), (), swaps=("ground_truth",))
    assert swapping.swap_seed == swap_seed("r") and swapping.arms == ("none", "swap:ground_truth")
    assert AblationSpec.from_dict(swapping.to_dict()) == swapping
    assert swapping.ablation_id != AblationSpec("r", ("faithfulness",), (), swaps=("ground_truth",),
                                                swap_seed=1).ablation_id
    # the id of an ablation with no swap is the one it had before swaps existed (its stored result is found)
    d = dataclasses.asdict(plain)
    del d["swaps"], d["swap_seed"]
    assert plain.ablation_id == "abl-" + hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12]


@pytest.mark.parametrize(("swaps", "message"), [
    (("contexts",), "cannot swap contexts"),
    (("answer",), "cannot swap answer"),
    (("reference",), "unknown field"),
])
def test_a_field_that_cannot_be_swapped_is_refused(swaps: tuple[str, ...], message: str) -> None:
    with pytest.raises(InputError, match=message):
        AblationSpec("r", ("faithfulness",), (), swaps=swaps)


def test_a_spec_with_nothing_to_blank_or_swap_is_refused() -> None:
    with pytest.raises(InputError, match="blank or swap"):
        AblationSpec("r", ("faithfulness",), ())


def test_swap_names_are_spelled_one_way() -> None:
    assert parse_swap("ground_truth+question") == parse_swap("swap:question+ground_truth") == \
        "swap:question+ground_truth"
