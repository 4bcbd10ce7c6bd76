"""`ablate` on a run another tool scored, without --scorer or --judge (issue 40.12): the first thing said is what
can re-score it (the tool's own scorer, or that evaldrift has none for that tool), never a hint to set
OPENAI_BASE_URL for a judge that would not be the tool's scorer anyway."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from lib.cli.common import UsageError
from lib.cli.diagnosing import _refuse_tool_run
from lib.intake.ingest import run_from_frame
from lib.store import Store


@pytest.mark.parametrize("scorer, says, not_says", [
    ("deepeval 4.3.1 Faithfulness", "evaldrift does not build deepeval's own scorer", "OPENAI_BASE_URL"),
    ("mlflow 3.17.2 retrieval_groundedness", "evaldrift does not build mlflow's own scorer", "OPENAI_BASE_URL"),
    ("inspect_ai 0.3.285 model_graded_fact", "inspect_scorer:rescore@LOG.eval", "OPENAI_BASE_URL"),
    (None, None, None),   # a score of ours: nothing to refuse here (the run's own judge replays it)
])
def test_ablating_a_tool_run_says_first_what_can_rescore_it(tmp_path: Path, scorer: str | None, says: str | None,
                                                            not_says: str | None) -> None:
    frame = pd.DataFrame({"id": ["a", "b"], "question": ["q1?", "q2?"], "answer": ["a1.", "a2."],
                          "contexts": [["p1."], ["p2."]], "faithfulness": [1.0, 0.0]})
    run = run_from_frame(frame, source="t", run_id="r", judge_model="grader", scorer=scorer)
    with Store(tmp_path / "e.duckdb") as store:
        store.record_run(run)
        if says is None:
            _refuse_tool_run(store, "r", ["faithfulness"])
            return
        with pytest.raises(UsageError) as caught:
            _refuse_tool_run(store, "r", ["faithfulness"])
    assert says in str(caught.value) and not_says not in str(caught.value), str(caught.value)
