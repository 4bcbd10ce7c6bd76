"""Runs from the tools people use: committed files written by the tool itself (Ragas 0.4.3, Inspect AI 0.3.285:
tests/fixtures/imports/make_*.py). Files the real tools write in the test run: tests/test_tool_imports.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from lib.diagnosis.trends import change_events
from lib.intake.importers import detect, import_run
from lib.store import Store
from tests.test_cli import cli

FIXTURES = Path(__file__).parent / "fixtures" / "imports"
KETTLE_Q = ["What is the warranty on the X200 kettle?", "Does the X200 kettle switch off by itself?",
            "How much water does the X200 hold?"]


def stored(db: Path, run_id: str) -> tuple[list, pd.DataFrame, pd.DataFrame]:
    with Store(db) as store:
        return store.samples(run_id), store.run_metrics(run_id), store.sample_scores(run_id)


@pytest.mark.parametrize("name", ["ragas_result.csv", "ragas_result.parquet"])
def test_a_ragas_result_table_records_its_samples_scores_and_instrument(fresh_db: Path, name: str) -> None:
    proc = cli("import", "--db", fresh_db, FIXTURES / name, "--run-id", "ragas-1", "--tool-version", "0.4.3")
    assert proc.returncode == 0, proc.stderr
    samples, metrics, scores = stored(fresh_db, "ragas-1")
    samples = sorted(samples, key=lambda s: KETTLE_Q.index(s.question))   # ids are content hashes, stored in id order
    assert [s.question for s in samples] == KETTLE_Q
    # pandas wrote the passages as a Python list in the CSV: read as the list, not refused
    assert samples[0].contexts == ("The X200 kettle has a warranty of 2 years.", "Warranty claims need the receipt.")
    assert samples[2].ground_truth == "1.7 litres."
    by_metric = metrics.set_index("metric")
    assert by_metric.loc["faithfulness", "scorer"] == "ragas 0.4.3 faithfulness"
    assert by_metric.loc["context_recall", "scorer"] == "ragas 0.4.3 context_recall"
    order = [s.sample_id for s in samples]
    faith = scores[scores.metric == "faithfulness"].set_index("sample_id")["score"]
    assert list(faith[order]) == [1.0, 0.5, 1.0]
    recall = scores[scores.metric == "context_recall"].set_index("sample_id")
    assert list(recall.loc[order, "status"]) == ["ok", "ok", "failed"]     # Ragas' NaN: not scored, never 0
    assert (by_metric.loc["context_recall", "n"], by_metric.loc["context_recall", "n_failed"]) == (2, 1)


def test_a_ragas_experiment_jsonl_records_its_run(fresh_db: Path) -> None:
    path = FIXTURES / "ragas_project" / "experiments" / "rag_eval.jsonl"
    run = import_run(path, run_id="exp-1", version="0.4.3")
    assert [m.metric for m in run.metrics] == ["faithfulness"]
    assert [r.score for r in run.metrics[0].results] == [1.0, 0.5, 1.0]
    assert run.metrics[0].scorer == "ragas 0.4.3 faithfulness"
    assert [s.answer for s in run.samples["main"]][1].startswith("Yes, it switches off automatically")
    assert import_run(path, run_id="exp-2").metrics[0].scorer == "ragas (version not recorded) faithfulness"


@pytest.mark.parametrize("name", ["inspect_rag.eval", "inspect_rag.json"])
def test_an_inspect_log_records_samples_grades_and_grader(fresh_db: Path, name: str) -> None:
    assert detect(FIXTURES / name) == "inspect"
    proc = cli("import", "--db", fresh_db, FIXTURES / name, "--run-id", "insp")
    assert proc.returncode == 0, proc.stderr
    assert "grader mockllm/grader" in proc.stdout
    samples, metrics, scores = stored(fresh_db, "insp")
    assert [s.sample_id for s in samples] == ["kettle-1", "kettle-2", "kettle-3"]
    assert samples[0].contexts == ("The X200 kettle has a warranty of 2 years.",)   # from the sample's metadata
    assert (samples[0].answer, samples[0].ground_truth) == ("The X200 kettle has a 2 year warranty.", "Two years.")
    [row] = metrics.to_dict("records")
    assert (row["metric"], row["judge_model"], row["scorer"]) == (
        "answer_correctness", "mockllm/grader", "inspect_ai 0.3.285 model_graded_fact")
    # C = 1, I = 0; the grader's unreadable "GRADE: P" is Inspect's NaN: failed, not scored
    assert list(scores["status"]) == ["ok", "failed", "ok"] and list(scores["score"].fillna(-1)) == [1.0, -1, 0.0]
    with Store(fresh_db) as store:
        assert f"{store.run('insp').started_at:%Y-%m-%d %H}" == "2026-12-03 07"   # the log's eval.created


def test_a_change_of_scoring_library_version_is_a_trends_marker(fresh_db: Path, tmp_path: Path) -> None:
    csv = tmp_path / "ragas_result.csv"
    shutil.copy(FIXTURES / "ragas_result.csv", csv)
    for run_id, version, day in (("a", "0.2.15", 1), ("b", "0.2.15", 2), ("c", "0.4.3", 3)):
        proc = cli("import", "--db", fresh_db, csv, "--run-id", run_id, "--tool-version", version,
                   "--started-at", f"2026-11-0{day}T02:00")
        assert proc.returncode == 0, proc.stderr
    with Store(fresh_db) as store:
        events = change_events(store.metric_history())
    markers = events[events.kind == "scoring library"]
    assert list(markers["run_id"]) == ["c", "c"]
    assert "faithfulness scoring library: ragas 0.2.15 faithfulness -> ragas 0.4.3 faithfulness" in list(markers.text)
