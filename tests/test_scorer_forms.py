"""A scorer given as module:function@argument, and one that scores several arms in one call (its `many` form)."""

from __future__ import annotations

import pytest

from lib.core.errors import InputError
from lib.core.results import EXCLUDED, FAILED, OK
from lib.core.samples import EvalSample
from lib.diagnosis.ablation import load_scorer
from lib.diagnosis.ablation._judging import score_groups

seen: list[tuple[str, list[list[str]]]] = []


def by_length(argument: str, samples):
    """Scores each sample by its answer's length (tenths), with the argument recorded."""
    seen.append((argument, [[s.sample_id for s in samples]]))
    return [min(1.0, len(s.answer) / 10) if s.answer else "the tool refuses an empty answer" for s in samples]


def _many(argument: str, groups):
    seen.append((argument, [[s.sample_id for s in g] for g in groups]))
    return [[min(1.0, len(s.answer) / 10) if s.answer else "the tool refuses an empty answer" for s in g]
            for g in groups]


by_length.many = _many   # type: ignore[attr-defined]


def plain(samples):
    seen.append(("", [[s.sample_id for s in samples]]))
    return [0.5 for _ in samples]


SAMPLES = [EvalSample("a", "q?", "12345", ("p",), "r"), EvalSample("b", "q?", "1234567890", ("p",), "r"),
           EvalSample("c", "q?", "", ("p",), "r")]   # no answer: excluded before any call


@pytest.mark.parametrize(("target", "error"), [
    ("tests.test_scorer_forms:by_length@logs/x.eval", None),
    ("tests.test_scorer_forms:plain", None),
    ("tests.test_scorer_forms:by_length@", "module:function@argument"),
    ("tests.test_scorer_forms", "module:function"),
    ("tests.test_scorer_forms:nothing@x", "cannot load scorer"),
])
def test_a_scorer_spec_may_carry_an_argument(target: str, error: str | None) -> None:
    if error is not None:
        with pytest.raises(InputError, match=error):
            load_scorer(target)
        return
    scorer = load_scorer(target)
    seen.clear()
    scorer(SAMPLES[:1])
    assert seen == [("logs/x.eval" if "@" in target else "", [["a"]])]


def test_a_scorer_with_a_many_form_scores_every_group_in_one_call() -> None:
    scorer = load_scorer("tests.test_scorer_forms:by_length@log")
    seen.clear()
    out = score_groups(scorer, {("faithfulness", "none", 0): SAMPLES, ("faithfulness", "answer", 0): SAMPLES,
                                ("faithfulness", "none", 1): SAMPLES})
    assert seen == [("log", [["a", "b"], ["a", "b"], ["a", "b"]])]   # one call; the excluded sample never sent
    assert [(r.sample_id, r.status, r.score) for r in out[("faithfulness", "none", 0)]] == [
        ("c", EXCLUDED, None), ("a", OK, 0.5), ("b", OK, 1.0)]
    blanked = {r.sample_id: r for r in out[("faithfulness", "answer", 0)]}
    assert blanked["a"].status == FAILED and "the tool refuses an empty answer" in blanked["a"].reason


def test_a_scorer_without_one_is_called_per_group() -> None:
    scorer = load_scorer("tests.test_scorer_forms:plain")
    seen.clear()
    score_groups(scorer, {("faithfulness", "none", 0): SAMPLES, ("faithfulness", "answer", 0): SAMPLES})
    assert len(seen) == 2
