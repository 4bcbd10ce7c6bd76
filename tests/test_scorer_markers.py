"""Scoring-library markers on Trends when some runs did not record the tool's version (issue 40.12): a run
without a version says nothing about the version, so the runs around it are compared with each other."""

from __future__ import annotations

from datetime import datetime

import pandas as pd
import pytest

from lib.diagnosis.trends import change_events

NONE = "ragas (version not recorded) faithfulness"


def history(scorers: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"run_id": [f"r{i}" for i in range(len(scorers))],
                         "started_at": [datetime(2026, 11, i + 1, 2) for i in range(len(scorers))],
                         "metric": "faithfulness", "pipeline": "{}", "judge_model": "grader",
                         "prompt_hash": None, "binding": None, "scorer": scorers, "score": 0.8})


@pytest.mark.parametrize("scorers, expected", [
    # a version change with an unversioned run between: drawn at the next versioned run (was hidden)
    (["ragas 0.2.15 faithfulness", NONE, "ragas 0.4.3 faithfulness"],
     [("r2", "faithfulness scoring library: ragas 0.2.15 faithfulness -> ragas 0.4.3 faithfulness")]),
    # the same version on both sides of an unversioned run: nothing
    (["ragas 0.4.3 faithfulness", NONE, "ragas 0.4.3 faithfulness"], []),
    # consecutive versioned runs that differ
    (["ragas 0.2.15 faithfulness", "ragas 0.4.3 faithfulness"],
     [("r1", "faithfulness scoring library: ragas 0.2.15 faithfulness -> ragas 0.4.3 faithfulness")]),
    # an unversioned run alone says nothing about the version
    (["ragas 0.4.3 faithfulness", NONE], []),
    # another tool (or another of its metrics) is a change whatever the versions
    (["ragas 0.4.3 faithfulness", "deepeval (version not recorded) Faithfulness"],
     [("r1", "faithfulness scoring library: ragas 0.4.3 faithfulness -> deepeval (version not recorded) "
             "Faithfulness")]),
])
def test_scoring_library_markers_skip_runs_without_a_version(scorers: list[str], expected: list) -> None:
    events = change_events(history(scorers))
    got = events[events.kind == "scoring library"]
    assert list(zip(got.run_id, got.text, strict=True)) == expected
