"""The replay check is like for like with a score the tool reduced over its epochs (issue 40 item 5).

Inspect stores `--epochs-reducer max` over 2 epochs as each sample's max; evaldrift records the reducer (the run
notes' `epochs_reducer`, over `repeats` epochs) and the reduced score. A replay that read the mean of its
judgings (or one judging) against that max compared two different things: a grader that says C then I reproduces
max 1.0, yet its mean 0.5 showed a mismatch, and one lucky C showed none. Now the replay reduces each sample's
first `epochs` judgings with the recorded reducer; with fewer judgings than epochs it says it cannot replay.
The real Inspect's log, re-scored by Inspect's own scorer: tests/test_inspect_options.py (the id-less run).
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path

import pytest

from lib.core.samples import EvalSample
from lib.diagnosis.ablation import AblationSpec
from lib.diagnosis.ablation._analysis import ArmResults, _replay_check
from lib.diagnosis.ablation._epochs import recorded_reduction, reduce_epochs, replayed
from lib.diagnosis.ablation._verdict_words import headline
from lib.judging import OfflineJudge
from lib.judging.scoring import evaluate_run
from lib.store import Store


@pytest.mark.parametrize("values, reducer, expected", [
    ([1.0, 0.0], "mean", 0.5),
    ([1.0, 0.0], "max", 1.0),
    ([0.0, 0.5, 1.0], "median", 0.5),
    ([0.0, 1.0, 1.0], "mode", 1.0),
    ([1.0, 0.0], "mode", 1.0),              # a tie: the first seen, as Counter.most_common (Inspect's)
    ([1.0, 0.0], "majority", None),         # no strict majority: Inspect leaves it unscored
    ([1.0, 1.0, 0.0], "majority", 1.0),
    ([1.0, 0.0, 1.0], "at_least_2", 1.0),
    ([1.0, 0.0, 0.0], "at_least_2", 0.0),
    ([1.0, 0.0, 0.0], "pass_at_2", 1 - (2 / 3) * (1 / 2)),   # 1 - C(2,2)/C(3,2)
    ([1.0, 1.0, 0.0], "pass_at_2", 1.0),    # fewer wrong than k: certain
    ([1.0], "pass_at_2", None),             # fewer epochs than k: undefined
    ([1.0, 1.0, 0.0], "pass_2", 1 / 3),     # C(2,2)/C(3,2)
    ([1.0, 0.0], "collect", None),          # not a number Inspect reduces to: not replayed here
    ([], "max", None),
])
def test_each_epoch_reducer_reduces_as_inspect_does(values: list[float], reducer: str, expected: float | None) -> None:
    got = reduce_epochs(values, reducer)
    assert got == pytest.approx(expected) if expected is not None else got is None


@pytest.mark.parametrize("notes, expected", [
    ({}, None),
    ({"epochs_reducer": {"faithfulness": "mean"}, "repeats": 2}, None),    # the mean: read as a mean anyway
    ({"epochs_reducer": {"answer_correctness": "max"}, "repeats": 2}, None),   # another metric's
    ({"epochs_reducer": {"faithfulness": "max"}}, None),                  # no count of epochs
    ({"epochs_reducer": {"faithfulness": "max"}, "repeats": 3}, ("max", 3)),
])
def test_the_recorded_reduction_is_read_per_metric(notes: dict, expected: tuple | None) -> None:
    assert recorded_reduction(notes, "faithfulness") == expected


@pytest.mark.parametrize("judgings, reduction, exact, expected", [
    ([1.0, 0.0, 0.0], None, False, 1 / 3),          # not reduced: the mean of every judging
    ([0.0, 1.0, 0.0], ("max", 2), False, 1.0),      # the first `epochs` judgings only
    ([0.0, 0.0, 1.0], ("max", 2), False, 0.0),
    ([1.0], ("max", 2), False, None),               # fewer judgings than epochs: no like for like
    ([1.0], ("max", 2), True, 1.0),                 # ... unless the judge was shown to repeat itself exactly
    ([], None, False, None),
])
def test_a_sample_is_replayed_like_for_like(judgings: list[float], reduction: tuple | None, exact: bool,
                                            expected: float | None) -> None:
    got = replayed(judgings, reduction, repeats_exact=exact)
    assert got == pytest.approx(expected) if expected is not None else got is None


SAMPLES = [EvalSample(f"s{i}", f"How many slots does the T{i}00 toaster have?", f"The T{i}00 toaster has {i + 1} "
                      "slots.", [f"The T{i}00 toaster has {i + 1} slots."], f"The T{i}00 toaster has {i + 1} slots.")
           for i in range(1, 7)]


@pytest.fixture(scope="module")
def reduced_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run whose faithfulness (1.0 for every sample) Inspect reduced by max over 2 epochs, as an import records."""
    run = evaluate_run("r", SAMPLES, OfflineJudge(), metrics=["faithfulness"], started_at=datetime(2026, 11, 1))
    run = dataclasses.replace(run, notes={"epochs_reducer": {"faithfulness": "max"}, "repeats": 2})
    path = tmp_path_factory.mktemp("epochs") / "e.duckdb"
    with Store(path) as store:
        store.record_run(run)
        assert set(store.sample_scores("r", metric="faithfulness")["score"]) == {1.0}
    return path


def _base(judgings: list[float]) -> ArmResults:
    return ArmResults({s.sample_id: list(judgings) for s in SAMPLES}, defaultdict(list), 0, 0,
                      len(SAMPLES) * len(judgings), Counter())


@pytest.mark.parametrize("judgings, exact, rerun, mismatch, words", [
    # a grader that says C then I: max 1.0 reproduces the stored max (before: the mean 0.5, a false mismatch)
    ([1.0, 0.0], False, 1.0, False, "reproduces"),
    # a grader that now says I in both: max 0.0, a real mismatch, shown
    ([0.0, 0.0], False, 0.0, True, "REPLAY MISMATCH"),
    # one judging against a max over 2 epochs: not replayed, and said (before: one lucky C read as reproduced)
    ([1.0], False, None, True, "REPLAY NOT LIKE FOR LIKE"),
    ([1.0], True, 1.0, False, "reproduces"),   # a judge shown to repeat itself exactly gives every epoch's value
])
def test_the_replay_check_reads_a_reduced_score_like_for_like(reduced_store: Path, judgings: list[float],
                                                              exact: bool, rerun: float | None, mismatch: bool,
                                                              words: str) -> None:
    spec = AblationSpec("r", ("faithfulness",), ("ground_truth",), repeats=len(judgings), scorer="tool:faithfulness")
    with Store(reduced_store, read_only=True) as store:
        check = _replay_check(store, spec, "faithfulness", _base(judgings), None, "offline-lexical-v2",
                              repeats_exact=exact)
    assert (check.rerun, check.mismatch) == (rerun, mismatch), check.sentence
    assert words in check.sentence, check.sentence
    if rerun is None:
        assert "max over 2 epochs" in check.sentence and "--repeats 2" in check.sentence, check.sentence
        said = headline([], [check])
        assert said.startswith("not replayed:") and "faithfulness" in said, said

