"""Runs from DeepEval and MLflow, as the real tools write them in this test session, through the CLI.

DeepEval's test run files and MLflow's tracking store are made by the tools themselves against the loopback
judge (tests/support/more_tools.py; the environments are built by .ci/run): never a hand-written fixture. What a
user checks: the grader is the one that graded, the metrics are the tool's own, the samples pair by what they ask,
and a judge-change marker is drawn at the grader switch and nowhere else.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from lib.core.errors import InputError
from lib.intake.importers import detect, prepare_import
from lib.store import Store
from lib.store.mlflow_store import mlflow_traces
from tests.support.tool_runs import BY_QUESTION, ROWS
from tests.test_cli import assert_usage_error, cli
from tests.test_tool_imports import imported, markers


# -- DeepEval --------------------------------------------------------------------------------------------------
def test_a_deepeval_test_run_records_each_metrics_grader_and_its_metrics(fresh_db: Path, deepeval_runs) -> None:
    path = deepeval_runs["de-1"]
    assert detect(path) == "deepeval"
    proc = imported(fresh_db, path, "de-1", "--tool-version", "4.3.1")
    assert "grader grader-strict (from testCases[].metricsData[].evaluationModel)" in proc.stdout
    with Store(fresh_db) as store:
        metrics = store.run_metrics("de-1").set_index("metric")
        samples = {s.question: s for s in store.samples("de-1")}
    assert sorted(metrics.index) == ["context_recall", "faithfulness"]
    assert set(metrics["judge_model"]) == {"grader-strict"}
    assert metrics.loc["faithfulness", "scorer"] == "deepeval 4.3.1 Faithfulness"
    assert metrics.loc["context_recall", "scorer"] == "deepeval 4.3.1 Contextual Recall"
    assert (metrics.loc["faithfulness", "n"], metrics.loc["faithfulness", "score"]) == (4, 1.0)
    assert set(samples) == set(BY_QUESTION)
    kettle = samples[ROWS[0]["question"]]
    assert (kettle.answer, list(kettle.contexts), kettle.ground_truth) == (ROWS[0]["good"], ROWS[0]["contexts"],
                                                                          ROWS[0]["reference"])


def test_a_deepeval_run_without_its_version_warns_and_names_no_scoring_library_change(fresh_db: Path,
                                                                                      deepeval_runs) -> None:
    proc = imported(fresh_db, deepeval_runs["de-1"], "de-1")
    assert "deepeval version is not recorded" in proc.stderr
    with Store(fresh_db) as store:
        assert set(store.run_metrics("de-1")["scorer"]) == {"deepeval (version not recorded) Faithfulness",
                                                            "deepeval (version not recorded) Contextual Recall"}


def test_deepevals_latest_test_run_file_reads_as_the_run_it_holds(deepeval_runs) -> None:
    latest = deepeval_runs["de-3"].parent / ".deepeval" / ".latest_test_run.json"   # DeepEval wrote it, in its cwd
    assert json.loads(latest.read_text(encoding="utf-8")).keys() >= {"testRunData"}
    assert detect(latest) == "deepeval"
    plan, last = prepare_import(latest, run_id="latest"), prepare_import(deepeval_runs["de-3"], run_id="de-3")
    assert (plan.grader, plan.sources) == (last.grader, last.sources) == ("grader-lenient", {
        "faithfulness": "Faithfulness", "context_recall": "Contextual Recall"})
    assert plan.run.samples == last.run.samples

def test_a_grader_switch_in_three_deepeval_runs_is_one_judge_marker_at_the_switch(fresh_db: Path,
                                                                                  deepeval_runs) -> None:
    for day, name in enumerate(("de-1", "de-2", "de-3"), start=1):
        imported(fresh_db, deepeval_runs[name], name, "--tool-version", "4.3.1",
                 "--started-at", f"2026-11-0{day}T02:00")
    events = markers(fresh_db)
    judge = events[events.kind == "judge model"]
    assert sorted(set(judge["run_id"])) == ["de-3"], events.to_string()
    assert "grader-strict -> grader-lenient" in judge["text"].iloc[0]
    assert set(events.kind) == {"judge model"}, events.to_string()


def test_a_reordered_deepeval_run_pairs_the_same_samples_and_a_repeat_is_one_sample(fresh_db: Path,
                                                                                     deepeval_runs) -> None:
    one = json.loads(deepeval_runs["de-1"].read_text(encoding="utf-8"))
    two = json.loads(deepeval_runs["de-2"].read_text(encoding="utf-8"))
    firsts = [c["input"] for c in one["testCases"]]
    assert [c["input"] for c in two["testCases"]] == [*reversed(firsts), firsts[1]]
    assert [c["name"] for c in two["testCases"]][:4] == [c["name"] for c in one["testCases"]]   # names: positions
    imported(fresh_db, deepeval_runs["de-1"], "de-1", "--tool-version", "4.3.1")
    proc = imported(fresh_db, deepeval_runs["de-2"], "de-2", "--tool-version", "4.3.1")
    assert "5 rows are 4 samples repeated up to 2 times" in proc.stderr   # the case given twice is one sample
    with Store(fresh_db) as store:
        a = {s.sample_id: s.question for s in store.samples("de-1")}
        b = {s.sample_id: s.question for s in store.samples("de-2")}
        assert store.run_notes("de-2")["repeat_sd"] == {"faithfulness": 0.0, "context_recall": 0.0}
    assert a == b and set(a.values()) == set(BY_QUESTION)


def test_a_deepeval_metric_we_do_not_know_is_listed_or_mapped(fresh_db: Path, deepeval_runs,
                                                             tmp_path: Path) -> None:
    data = json.loads(deepeval_runs["de-1"].read_text(encoding="utf-8"))
    for case in data["testCases"]:
        case["metricsData"][0]["name"] = "Correctness [GEval]"
    path = tmp_path / "test_run_20261102_020000.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    proc = imported(fresh_db, path, "geval", "--tool-version", "4.3.1")
    assert "score columns not read (no metric of ours): Correctness [GEval]" in proc.stderr
    imported(fresh_db, path, "mapped", "--tool-version", "4.3.1", "--metric-map",
             "Correctness [GEval]=answer_correctness")
    with Store(fresh_db) as store:
        assert sorted(store.run_metrics("geval")["metric"]) == ["context_recall"]
        assert sorted(store.run_metrics("mapped")["metric"]) == ["answer_correctness", "context_recall"]


def test_a_deepeval_file_with_a_bad_score_or_no_metric_is_refused_with_nothing_written(fresh_db: Path,
                                                                                       deepeval_runs,
                                                                                       tmp_path: Path) -> None:
    data = json.loads(deepeval_runs["de-1"].read_text(encoding="utf-8"))
    data["testCases"][2]["metricsData"][0]["score"] = 1.7
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    line = assert_usage_error(cli("import", "--db", fresh_db, bad, "--run-id", "bad"))
    assert "row 3" in line and "'faithfulness'" in line
    data["testCases"][2]["metricsData"][0]["evaluationModel"] = 7
    bad.write_text(json.dumps(data), encoding="utf-8")
    line = assert_usage_error(cli("import", "--db", fresh_db, bad, "--run-id", "bad"))
    assert "row 3" in line and "testCases.metricsData[1].evaluationModel" in line
    data = json.loads(deepeval_runs["de-1"].read_text(encoding="utf-8"))
    for case in data["testCases"]:
        for entry in case["metricsData"]:
            entry["name"] = "Bias"
    bad.write_text(json.dumps(data), encoding="utf-8")
    line = assert_usage_error(cli("import", "--db", fresh_db, bad, "--run-id", "bad"))
    assert "no score this tool names maps" in line and "Bias" in line
    assert not fresh_db.exists()


# -- MLflow ----------------------------------------------------------------------------------------------------
def test_an_mlflow_store_with_several_evaluations_is_refused_whole_or_imported_one_a_run(fresh_db: Path,
                                                                                         mlflow_runs) -> None:
    store, ids = mlflow_runs
    assert detect(store) == "mlflow"
    line = assert_usage_error(cli("import", "--db", fresh_db, store, "--run-id", "all"))
    assert "3 evaluations" in line and "--mlflow-run" in line and ids["ml-1"] in line
    assert not fresh_db.exists()
    proc = imported(fresh_db, store, "ml-1", "--mlflow-run", "ml-1", "--tool-version", "3.17.2")
    assert "grader openai:/grader-strict (from the assessments' source (LLM_JUDGE))" in proc.stdout
    with Store(fresh_db) as store_:
        metrics = store_.run_metrics("ml-1").set_index("metric")
        samples = {s.question: s for s in store_.samples("ml-1")}
        notes = store_.run_notes("ml-1")
    assert sorted(metrics.index) == ["answer_correctness", "answer_relevance", "faithfulness"]
    assert set(metrics["judge_model"]) == {"openai:/grader-strict"}
    assert metrics.loc["faithfulness", "scorer"] == "mlflow 3.17.2 retrieval_groundedness"
    assert metrics.loc["answer_correctness", "scorer"] == "mlflow 3.17.2 correctness"
    assert list(metrics["n"]) == [4, 4, 4] and list(metrics["score"]) == [1.0, 1.0, 1.0]
    assert set(samples) == set(BY_QUESTION) and notes["mlflow_run"] == ids["ml-1"]
    kettle = samples[ROWS[0]["question"]]
    assert (kettle.answer, list(kettle.contexts), kettle.ground_truth) == (ROWS[0]["good"], ROWS[0]["contexts"],
                                                                          ROWS[0]["reference"])


def test_a_grader_switch_in_three_mlflow_evaluations_is_one_judge_marker_at_the_switch(fresh_db: Path,
                                                                                       mlflow_runs) -> None:
    store, ids = mlflow_runs
    for day, name in enumerate(("ml-1", "ml-2", "ml-3"), start=1):
        imported(fresh_db, store, name, "--mlflow-run", ids[name], "--tool-version", "3.17.2",
                 "--started-at", f"2026-11-0{day}T02:00")
    events = markers(fresh_db)
    judge = events[events.kind == "judge model"]
    assert sorted(set(judge["run_id"])) == ["ml-3"], events.to_string()
    assert "openai:/grader-strict -> openai:/grader-lenient" in judge["text"].iloc[0]
    assert set(events.kind) == {"judge model"}, events.to_string()
    with Store(fresh_db) as store_:   # the lenient grader passed the bad answers the strict one would fail
        assert {s.answer for s in store_.samples("ml-3")} == {r["bad"] for r in ROWS}
        assert list(store_.run_metrics("ml-3")["score"]) == [1.0, 1.0, 1.0]


def test_a_reordered_mlflow_evaluation_pairs_the_same_samples_and_a_repeat_is_one_sample(fresh_db: Path,
                                                                                          mlflow_runs) -> None:
    store, _ids = mlflow_runs
    imported(fresh_db, store, "ml-1", "--mlflow-run", "ml-1", "--tool-version", "3.17.2")
    proc = imported(fresh_db, store, "ml-2", "--mlflow-run", "ml-2", "--tool-version", "3.17.2")
    assert "5 rows are 4 samples repeated up to 2 times" in proc.stderr   # the question asked twice is one sample
    with Store(fresh_db) as store_:
        a = {s.sample_id: s.question for s in store_.samples("ml-1")}
        b = {s.sample_id: s.question for s in store_.samples("ml-2")}
        assert list(store_.run_metrics("ml-2")["n"]) == [4, 4, 4]
    assert a == b and set(a.values()) == set(BY_QUESTION)


def test_a_file_that_is_not_an_mlflow_store_is_refused_by_name(tmp_path: Path) -> None:
    text = tmp_path / "notes.db"
    text.write_text("hello", encoding="utf-8")
    with pytest.raises(InputError, match="not a SQLite file"):
        prepare_import(text, run_id="x")
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("create table t (x)")   # an unrelated SQLite database
    with pytest.raises(InputError, match="not an MLflow tracking store with traces"):
        prepare_import(other, run_id="x")



def test_an_mlflow_store_with_a_bad_value_is_refused_naming_the_row_and_field_and_left_as_it_was(
        fresh_db: Path, mlflow_runs, tmp_path: Path) -> None:
    store, ids = mlflow_runs
    copy = tmp_path / "mlflow.db"
    copy.write_bytes(store.read_bytes())
    traces = [t.trace_id for t in mlflow_traces(copy, ids["ml-1"])]
    with sqlite3.connect(copy) as conn:   # the third trace's groundedness judge said something not yes or no
        conn.execute("UPDATE assessments SET value = ? WHERE trace_id = ? AND name = 'retrieval_groundedness'",
                     ('"maybe"', traces[2]))
    line = assert_usage_error(cli("import", "--db", fresh_db, copy, "--run-id", "bad", "--mlflow-run", "ml-1"))
    assert "row 3" in line and "'faithfulness'" in line
    with sqlite3.connect(copy) as conn:   # and the second trace's inputs nest deeper than anyone writes
        conn.execute("UPDATE trace_request_metadata SET value = ? WHERE request_id = ? AND key = ?",
                     ("[" * 5000 + "]" * 5000, traces[1], "mlflow.traceInputs"))
    line = assert_usage_error(cli("import", "--db", fresh_db, copy, "--run-id", "bad", "--mlflow-run", "ml-1"))
    assert "row 2" in line and "'inputs'" in line and "not JSON as MLflow writes it" in line
    assert not fresh_db.exists()
    with sqlite3.connect(copy) as conn:
        conn.execute("UPDATE trace_request_metadata SET value = ? WHERE request_id = ? AND key = ?",
                     (json.dumps({"question": ROWS[1]["question"]}), traces[1], "mlflow.traceInputs"))
        conn.execute("UPDATE assessments SET value = ? WHERE trace_id = ? AND name = 'retrieval_groundedness'",
                     ('"yes"', traces[2]))
    before = copy.read_bytes()
    prepare_import(copy, run_id="ok", provider="ml-1")   # reading never writes to the store
    assert copy.read_bytes() == before

# -- what each tool's metric receives by design ----------------------------------------------------------------
@pytest.mark.parametrize(("tool", "metric", "blanked", "expected"), [
    ("deepeval", "faithfulness", ["question"], "invariant"),          # DeepEval's Faithfulness keeps to our table
    ("deepeval", "context_precision", ["ground_truth"], "sensitive"),  # judged against the expected output
    ("evaldrift", "context_precision", ["ground_truth"], "invariant"),  # our own harness: a leak
    ("mlflow", "faithfulness", ["question"], "sensitive"),             # RetrievalGroundedness shows the question
    ("mlflow", "faithfulness", ["ground_truth"], "invariant"),         # the reference is a leak everywhere
    ("mlflow", "context_recall", ["question"], "sensitive"),           # RetrievalSufficiency
    ("mlflow", "answer_correctness", ["question"], "sensitive"),       # Correctness
    ("mlflow", "answer_correctness", ["contexts"], "invariant"),
])
def test_deepeval_and_mlflow_runs_are_judged_under_their_tools_wiring_profile(tool, metric, blanked,
                                                                              expected) -> None:
    from lib.core.metrics import EXPECT_SENSITIVE, INVARIANT
    from lib.core.profiles import expectation_for, tool_of

    assert tool_of(f"{tool} 1.0 some-scorer") == tool
    assert expectation_for(metric, blanked, tool) == {"invariant": INVARIANT, "sensitive": EXPECT_SENSITIVE}[expected]
