"""lib.presentation.ablation_form: the Ablation page's form for the ablation on screen, and where it starts
without a link."""

from __future__ import annotations

from datetime import datetime

import pytest

from lib.diagnosis.incidents import Incident
from lib.diagnosis.incidents._incidents import ACCEPTED, StateChange
from lib.presentation.ablation_form import FormValues, form_values, start_at

ALL = ("ground_truth", "question", "contexts")
RUNS = ("r1", "r2", "r3", "r4")


def spec(blanks: tuple[str, ...], *, repeats: int = 3, limit: int | None = None) -> dict[str, object]:
    return {"run_id": "r2", "metrics": ["faithfulness"], "blanks": list(blanks), "repeats": repeats, "limit": limit}


@pytest.mark.parametrize(("blanks", "offered", "want_blanks", "whole", "joint"), [
    (("question",), ALL, ("question",), False, ()),                                  # one field
    (ALL, ALL, ALL, True, ()),                                                        # every field: the matrix
    (("ground_truth", "contexts"), ("ground_truth", "contexts"), ("ground_truth", "contexts"), True, ()),
    (("ground_truth", "contexts", "contexts+ground_truth"), ALL, ("ground_truth", "contexts"), False,
     ("contexts+ground_truth",)),                                                     # the four readings
    (("question", "contexts"), ("contexts",), ("contexts",), False, ()),              # a field the run lacks
    (("contexts",), ("contexts",), ("contexts",), False, ()),                         # one field offered: no matrix
])
def test_form_values_show_the_specs_arms(blanks: tuple[str, ...], offered: tuple[str, ...],
                                         want_blanks: tuple[str, ...], whole: bool, joint: tuple[str, ...]) -> None:
    got = form_values(spec(blanks, repeats=2, limit=20), offered)
    assert got == FormValues("r2", ("faithfulness",), want_blanks, whole, 2, 20, joint, every_sample=True)
    assert got.widgets() == {"abl_run": "r2", "abl_metrics": ["faithfulness"], "abl_blanks": list(want_blanks),
                             "abl_matrix": whole, "abl_repeats": 2, "abl_limit": 20, "abl_all_samples": True,
                             "abl_swaps": []}


def test_the_form_shows_the_fields_the_spec_swapped() -> None:
    got = form_values({**spec(("question",)), "swaps": ["ground_truth"]}, ALL)
    assert got.swaps == ("ground_truth",) and got.widgets()["abl_swaps"] == ["ground_truth"]


@pytest.mark.parametrize(("stored", "every"), [
    ({}, True),                       # stored before sequential ablations: every sample was judged
    ({"sequential": False}, True),
    ({"sequential": True}, False),
])
def test_the_form_shows_whether_every_sample_was_judged(stored: dict[str, object], every: bool) -> None:
    got = form_values({**spec(("question",)), **stored}, ALL)
    assert got.every_sample is every and got.widgets()["abl_all_samples"] is every


def test_no_limit_is_zero_in_the_form() -> None:
    assert form_values(spec(("question",)), ALL).limit == 0


def incident(kind: str, run: str, *, state: str | None = None, metric: str = "faithfulness") -> Incident:
    changes = (StateChange(state, "", "ann", datetime(2026, 1, 2)),) if state else ()
    return Incident(f"{kind}:{metric}:{run}", kind, metric, run, datetime(2026, 1, 1), "t", changes=changes)


@pytest.mark.parametrize(("found", "want"), [
    ([], ("r4", None)),                                                               # nothing: the latest run
    ([incident("canary alarm", "r1"), incident("jump", "r3", metric="context_recall")], ("r3", "context_recall")),
    ([incident("episode", "r2"), incident("jump", "r3")], ("r2", "faithfulness")),    # the first listed
    ([incident("episode", "r2", state=ACCEPTED), incident("jump", "r3")], ("r3", "faithfulness")),  # closed: skipped
    ([incident("lint finding", "r1")], ("r4", None)),                                 # not a jump
    ([incident("jump", "gone")], ("r4", None)),                                       # a run not in the store
])
def test_start_at_the_first_open_jump(found: list[Incident], want: tuple[str, str | None]) -> None:
    assert start_at(found, RUNS) == want
