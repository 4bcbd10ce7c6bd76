"""Words a newcomer trips on (issue 28 item 6), decided in lib and tested without a browser: why the four readings
are missing, the replay check's stored level, and one signed format for a tile and a sentence."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lib.core.formatting import signed
from lib.diagnosis.ablation import four_readings_gap
from lib.diagnosis.ablation._analysis import _stored_words
from lib.diagnosis.ablation._result import ArmVerdict

BASE = ArmVerdict(metric="faithfulness", arm="ground_truth", kind="LEAK", expected="invariant", baseline=0.92,
                  ablated=0.78, delta=-0.14, lo=-0.16, hi=-0.12, noise=0.01, ratio=14.0, n=398, n_failed=0,
                  n_units=398, flips_to_positive=0, flips_to_negative=40, flips_p=0.0, mde=0.02, sentence="",
                  renders=("answer", "contexts"))
CONTEXTS = replace(BASE, arm="contexts", ablated=0.7)


@pytest.mark.parametrize(("verdicts", "words"), [
    ([BASE], "this needs faithfulness with ground_truth and contexts blanked."),
    ([replace(BASE, metric="answer_relevance"), replace(CONTEXTS, metric="answer_relevance")],
     "this needs faithfulness with ground_truth and contexts blanked."),
    ([replace(BASE, stop="decided", judged=120), CONTEXTS], "judged each arm only until its verdict was decided"),
    ([BASE, replace(CONTEXTS, ablated=None)], "an arm has no score"),
    ([BASE, CONTEXTS], "this run's wiring does not render ground_truth"),
])
def test_the_four_readings_say_why_they_are_missing(verdicts: list[ArmVerdict], words: str) -> None:
    assert words in four_readings_gap(verdicts)


@pytest.mark.parametrize(("value", "text"), [
    (-0.0004, "+0.000"),   # the tile and the lead line once wrote this as "+0.000" and "-0.000"
    (0.0004, "+0.000"),
    (-0.0006, "-0.001"),
    (0.1234, "+0.123"),
    (-0.145, "-0.145"),
])
def test_a_change_is_written_with_one_sign_everywhere(value: float, text: str) -> None:
    assert signed(value) == text


def test_the_replay_check_names_the_runs_own_score_when_it_compared_fewer_samples() -> None:
    stored = {f"s{i}": (1.0 if i % 4 else 0.5) for i in range(8)}   # all 8: mean 0.875
    assert _stored_words(0.875, 8, stored) == "the stored 0.875"
    assert _stored_words(0.9, 4, stored) == ("the stored 0.900 on the same 4 samples (the run's score over all 8: "
                                             "0.875)")
