"""A file carries only the fields its metrics receive; the run records which it had; ablations offer only those."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lib.core.errors import InputError
from lib.diagnosis.ablation import AblationSpec, run_ablation
from lib.intake.chunked import ingest_file
from lib.intake.ingest import fields_needed, run_from_frame
from lib.intake.reading import read_table
from lib.intake.runjson import run_from_json, run_to_json
from lib.judging import OfflineJudge
from lib.store import Store
from tests.test_cli import assert_usage_error, cli

FAITH_ONLY = [  # a real-world shape: no reference was ever written, and the question was not kept
    {"id": "a", "answer": "The store opens at 10:00 on Sundays.", "contexts": ["On Sundays the store opens at 10:00."],
     "faithfulness": 1.0},
    {"id": "b", "answer": "Returns take 30 days. A receipt is needed.", "contexts": ["Returns take 30 days."],
     "faithfulness": 0.5},
]


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_faithfulness_file_without_reference_or_question_is_recorded(fresh_db: Path, tmp_path: Path) -> None:
    with Store(fresh_db) as store:
        run = ingest_file(store, jsonl(tmp_path / "f.jsonl", FAITH_ONLY), run_id="f1")
        assert run.fields == ("answer", "contexts")
        assert store.run_fields("f1") == ("answer", "contexts")
        assert [s.ground_truth for s in store.samples("f1")] == ["", ""]
        assert list(store.run_metrics("f1")["score"]) == [0.75]


@pytest.mark.parametrize(("metric", "dropped", "needed"), [
    ("context_recall", "ground_truth", "context_recall receives it"),
    ("answer_correctness", "ground_truth", "answer_correctness receives it"),
    ("answer_relevance", "question", "answer_relevance receives it"),
    ("context_precision", "contexts", "context_precision receives it"),
    ("faithfulness", "answer", "every sample"),
])
def test_a_field_a_scored_metric_receives_is_still_required(tmp_path: Path, metric: str, dropped: str,
                                                            needed: str) -> None:
    rows = [{"id": "a", "question": "q?", "answer": "A.", "contexts": ["A."], "ground_truth": "A.", metric: 1.0}]
    for r in rows:
        r.pop(dropped)
    with pytest.raises(InputError) as err:
        run_from_frame(read_table(jsonl(tmp_path / "x.jsonl", rows)), source="x.jsonl", run_id="x")
    assert err.value.field == dropped and needed in str(err.value)


def test_fields_needed_reads_the_wiring_table() -> None:
    assert fields_needed(["answer", "contexts", "faithfulness"]) == {
        "answer": "every sample", "contexts": "faithfulness receives it"}
    assert set(fields_needed(["answer"], ["context_recall"])) == {"answer", "contexts", "ground_truth"}
    assert fields_needed(["response", "llm_context_precision_with_reference"])["question"] == \
        "context_precision receives it"


def test_score_refuses_a_file_missing_a_field_a_requested_metric_receives(fresh_db: Path, tmp_path: Path) -> None:
    source = jsonl(tmp_path / "f.jsonl", [{k: v for k, v in r.items() if k != "faithfulness"} for r in FAITH_ONLY])
    line = assert_usage_error(cli("score", "--db", fresh_db, source, "--run-id", "r",
                                  "--metrics", "answer_correctness"))
    assert "'ground_truth'" in line and "answer_correctness receives it" in line
    proc = cli("score", "--db", fresh_db, source, "--run-id", "r", "--metrics", "faithfulness")
    assert proc.returncode == 0, proc.stderr
    with Store(fresh_db) as store:
        assert store.run_fields("r") == ("answer", "contexts")


def test_the_fields_survive_the_inbox_hand_over(tmp_path: Path) -> None:
    run = run_from_frame(read_table(jsonl(tmp_path / "f.jsonl", FAITH_ONLY)), source="f", run_id="f")
    assert run_from_json(run_to_json(run)).fields == ("answer", "contexts")


def test_an_ablation_does_not_blank_a_field_the_run_never_had(fresh_db: Path, tmp_path: Path) -> None:
    source = jsonl(tmp_path / "f.jsonl", [{k: v for k, v in r.items() if k != "faithfulness"} for r in FAITH_ONLY])
    assert cli("score", "--db", fresh_db, source, "--run-id", "r", "--metrics", "faithfulness").returncode == 0
    with Store(fresh_db) as store:
        with pytest.raises(InputError, match="has no ground_truth to blank"):
            run_ablation(store, AblationSpec("r", ("faithfulness",), ("ground_truth",), repeats=1), OfflineJudge())
        result = run_ablation(store, AblationSpec("r", ("faithfulness",), ("contexts",), repeats=1), OfflineJudge())
    assert result is not None and [v.arm for v in result.verdicts] == ["contexts"]
