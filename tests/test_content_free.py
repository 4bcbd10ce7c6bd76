"""Content-free answers (issue 41 item 4): a refusal, a non-answer or an answer with no claim states nothing for
faithfulness to check. Table-driven detection; a score stored on one by another tool is flagged at import and by
`lint --db`, as a score on a sample with no passages is."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest

from lib.core.degenerate import chance_summary, content_free_reason, exclusion_reason
from lib.core.records import MetricRecord, RunRecord
from lib.core.results import OK, SampleResult
from lib.core.samples import EvalSample
from lib.intake.importers import prepare_import
from lib.store import Store
from tests.support.cli import run_cli

REFUSAL, NO_CLAIM = "refusal", "no claim"

ANSWERS = [
    # (answer, what it is for faithfulness: REFUSAL, NO_CLAIM or None: a claim to check)
    ("I'm not sure.", REFUSAL),                       # issue 41: "'m" took a space before it
    ("I\u2019m not sure.", REFUSAL),
    ("I'm sorry, I don't know.", REFUSAL),            # issue 41: an apology before the refusal
    ("I am sorry, but I cannot answer that.", REFUSAL),
    ("Sorry, I cannot answer that question.", REFUSAL),
    ("Unfortunately, I don't know.", REFUSAL),
    ("I'm not certain.", REFUSAL),
    ("I am unable to answer that.", REFUSAL),
    ("I don't know.", REFUSAL),
    ("I do not know", REFUSAL),
    ("The context does not mention it.", REFUSAL),
    ("There is no information about that.", REFUSAL),
    ("No idea.", REFUSAL),                            # issue 41: whole non-answers scored 0.0
    ("Not sure.", REFUSAL),
    ("Unknown.", REFUSAL),
    ("None.", REFUSAL),
    ("N/A", REFUSAL),
    ("Sorry, no idea!", REFUSAL),
    ("  no   IDEA ", REFUSAL),
    ("...", NO_CLAIM),
    ("It is.", NO_CLAIM),
    ("Yes.", NO_CLAIM),
    ("", NO_CLAIM),
    ("Paris.", None),
    ("Unknown soldiers are buried at Arlington.", None),
    ("None of the passages is wrong: the kettle holds 1.7 litres.", None),
    ("I'm not sure, but the kettle holds 1.7 litres.", None),
    ("I don't know the exact figure, but the kettle holds 1.7 litres.", None),
    ("No idea is too small for the X200 team.", None),
]


@pytest.mark.parametrize(("answer", "kind"), ANSWERS, ids=[repr(a) for a, _ in ANSWERS])
def test_each_content_free_answer_is_seen_and_each_claim_is_judged(answer: str, kind: str | None) -> None:
    reason = content_free_reason(answer)
    assert (reason.split(":")[0] if reason else None) == kind
    sample = EvalSample("s1", "How much does the X200 hold?", answer, ("The X200 holds 1.7 litres.",), "1.7 l")
    excluded = exclusion_reason(sample, "faithfulness")
    assert (excluded is not None) is (kind is not None)
    assert exclusion_reason(sample, "answer_relevance") is None or answer == ""   # relevance judges a refusal


def ragas_csv(path: Path, answers: list[str], faithfulness: list[float]) -> Path:
    """A Ragas-style results file (its `to_pandas().to_csv()`): list columns as Python reprs."""
    pd.DataFrame({
        "user_input": [f"How much does kettle {i} hold?" for i in range(len(answers))],
        "retrieved_contexts": [repr([f"Kettle {i} holds 1.{i} litres."]) for i in range(len(answers))],
        "response": answers,
        "reference": [f"1.{i} litres" for i in range(len(answers))],
        "faithfulness": faithfulness,
    }).to_csv(path, index=False)
    return path


CONTENT_FREE = ["I'm not sure.", "I'm sorry, I don't know.", "No idea.", "Not sure.", "Unknown.", "None.", "N/A"]


def test_a_tools_scores_on_content_free_answers_are_flagged_at_import_and_by_lint(tmp_path: Path) -> None:
    # the Ragas-style case: 35 content-free answers its faithfulness scored 1.0, beside 5 real ones
    answers = [CONTENT_FREE[i % len(CONTENT_FREE)] for i in range(35)] + [f"It holds 1.{i} litres." for i in
                                                                          range(35, 40)]
    path = ragas_csv(tmp_path / "ragas.csv", answers, [1.0] * 40)
    plan = prepare_import(path, run_id="rg", fmt="ragas", version="0.4.3", grader="judge-model")
    warned = [w for w in plan.warnings if "content-free" in w]
    assert warned == ["faithfulness: 35 score(s) on content-free answers (a refusal, a non-answer or no claim; 35 "
                      "of them 1.0): the answer states no claim to check, so a score there is chance, not support"]
    db = tmp_path / "runs.duckdb"
    with Store(db) as store:
        store.record_run(plan.run)
        frame = store.chance_scores()
    assert len(frame) == 35 and set(frame["reason"]) == {"content-free answer"}
    proc = run_cli("lint", "--db", db)
    assert proc.returncode == 1, proc.stderr
    assert ("FINDING run rg: 35 faithfulness score(s) on content-free answers (a refusal, a non-answer or no claim; "
            "35 of them 1.0), e.g. " in proc.stdout)
    assert "the answer states no claim to check, so a score there is chance, not support" in proc.stdout


def test_no_passages_and_content_free_are_each_said_once_per_run_and_metric() -> None:
    frame = pd.DataFrame({"run_id": ["r", "r", "r"], "metric": ["faithfulness"] * 3, "sample_id": ["a", "b", "c"],
                          "score": [1.0, 0.0, 1.0], "reason": ["no passages", "content-free answer",
                                                               "content-free answer"]})
    lines = chance_summary(frame)
    assert lines == [
        "run r: 2 faithfulness score(s) on content-free answers (a refusal, a non-answer or no claim; 1 of them "
        "1.0), e.g. b: the answer states no claim to check, so a score there is chance, not support",
        "run r: 1 faithfulness score(s) on samples with no passages (1 of them 1.0), e.g. a: a score there is "
        "chance, not support"]


def test_a_score_on_a_content_free_answer_that_also_has_no_passages_is_flagged_once(tmp_path: Path) -> None:
    items = [EvalSample("s1", "q?", "No idea.", (), "g"), EvalSample("s2", "q?", "Not sure.", ("p",), "g"),
             EvalSample("s3", "q?", "It holds 2 litres.", ("p",), "g")]
    run = RunRecord("r1", datetime(2026, 10, 1), {}, {"main": items},
                    [MetricRecord("faithfulness", [SampleResult(s.sample_id, OK, 1.0) for s in items], None, None,
                                  None),
                     MetricRecord("answer_relevance", [SampleResult(s.sample_id, OK, 0.0) for s in items], None,
                                  None, None)])
    with Store(tmp_path / "r.duckdb") as store:
        store.record_run(run)
        frame = store.chance_scores("r1")
    assert frame[["metric", "sample_id", "reason"]].values.tolist() == [
        ["faithfulness", "s1", "no passages"], ["faithfulness", "s2", "content-free answer"]]
