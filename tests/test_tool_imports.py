"""Runs from Inspect AI, promptfoo and Ragas, as the real tools write them in this test session, through the CLI.

Each file is made by the tool itself against the loopback judge (tests/support/tool_runs.py; the environments
are built by .ci/run): never a hand-written fixture. What a user checks: the grader is the one that graded,
the samples pair by what they ask, repeats are repeats, a score the tool wrote in floating point is not
refused, and a change marker is drawn only where the instrument changed.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from lib.core.errors import InputError
from lib.diagnosis.trends import change_events
from lib.intake.importers import prepare_import
from lib.intake.importers.inspect import ZSTD, _member
from lib.store import Store
from tests.support.tool_runs import BY_QUESTION, INSPECT_PYTHON, ROWS, tool_env
from tests.support.warm_python import WarmPython
from tests.test_cli import assert_usage_error, cli


def imported(db: Path, path: Path, run_id: str, *args: str):
    proc = cli("import", "--db", db, path, "--run-id", run_id, *args)
    assert proc.returncode == 0, proc.stderr
    return proc


def markers(db: Path) -> pd.DataFrame:
    with Store(db) as store:
        return change_events(store.metric_history())


# -- Inspect AI ------------------------------------------------------------------------------------------------
def test_an_inspect_log_records_the_scorers_grader_and_its_epochs_as_repeats(fresh_db: Path, inspect_logs) -> None:
    proc = imported(fresh_db, inspect_logs["insp-1"], "insp-1")
    # model_graded_fact(model=...) graded; the answering model (eval.model) did not
    assert "grader openai-api/loop/grader-strict (from eval.scorers[].options.model)" in proc.stdout
    assert "8 rows are 4 samples repeated up to 2 times" in proc.stderr
    with Store(fresh_db) as store:
        samples, metrics = store.samples("insp-1"), store.run_metrics("insp-1")
        notes = store.run_notes("insp-1")
    assert sorted(s.sample_id for s in samples) == [r["id"] for r in ROWS]     # Inspect's own ids, once each
    [row] = metrics.to_dict("records")
    assert row["judge_model"] == "openai-api/loop/grader-strict"
    assert row["scorer"].startswith("inspect_ai 0.3.") and row["scorer"].endswith(" model_graded_fact")
    assert isinstance(row["prompt_hash"], str)             # the scorer's grading options are the instrument
    assert (row["n"], row["score"]) == (4, 1.0)
    assert notes["repeats"] == 2 and notes["repeat_sd"] == {"answer_correctness": 0.0}


def test_a_grader_switch_in_three_inspect_runs_is_one_judge_marker_at_the_switch(fresh_db: Path,
                                                                                 inspect_logs) -> None:
    for day, name in enumerate(("insp-1", "insp-2", "insp-3"), start=1):
        imported(fresh_db, inspect_logs[name], name, "--started-at", f"2026-11-0{day}T02:00")
    events = markers(fresh_db)
    judge = events[events.kind == "judge model"]
    assert list(judge["run_id"]) == ["insp-3"], events.to_string()
    assert "grader-strict -> openai-api/loop/grader-lenient" in judge["text"].iloc[0]
    assert not (events["run_id"] == "insp-2").any()      # the grader role names the same grader: no marker
    assert set(events.kind) == {"judge model"}           # no pipeline was given: no pipeline marker either


# -- promptfoo -------------------------------------------------------------------------------------------------
def test_a_promptfoo_file_with_float_similarity_imports_with_its_text_grader(fresh_db: Path,
                                                                             promptfoo_results) -> None:
    path = promptfoo_results["pf-a"]
    raw = json.loads(path.read_text(encoding="utf-8"))
    relevance = [c["score"] for r in raw["results"]["results"] for c in r["gradingResult"]["componentResults"]
                 if c["assertion"]["type"] == "answer-relevance"]
    assert max(relevance) > 1.0                           # promptfoo's cosine similarity: 1.0000000000000002
    proc = imported(fresh_db, path, "pf-a")
    assert "grader openai:chat:grader-strict (from defaultTest.options.provider)" in proc.stdout
    assert "set to the bound: answer_relevance" in proc.stderr
    with Store(fresh_db) as store:
        metrics = store.run_metrics("pf-a").set_index("metric")
        scores = store.sample_scores("pf-a")
        notes = store.run_notes("pf-a")
    assert sorted(metrics.index) == ["answer_relevance", "context_recall", "faithfulness"]
    assert set(metrics["judge_model"]) == {"openai:chat:grader-strict"}
    assert metrics.loc["faithfulness", "scorer"] == f"promptfoo {raw['metadata']['promptfooVersion']} " \
                                                    "context-faithfulness"
    assert scores["score"].max() <= 1.0
    assert notes["clamped_scores"]["answer_relevance"] == sum(s > 1 for s in relevance)
    assert notes["embedding_model"] == "openai:embedding:embedder"


def test_a_reordered_promptfoo_file_pairs_the_same_samples(fresh_db: Path, promptfoo_results) -> None:
    for name in ("pf-a", "pf-b"):
        imported(fresh_db, promptfoo_results[name], name)
    with Store(fresh_db) as store:
        a = {s.sample_id: s.question for s in store.samples("pf-a")}
        b = {s.sample_id: s.question for s in store.samples("pf-b")}
    assert a == b and set(a.values()) == set(BY_QUESTION)


def test_a_promptfoo_file_with_two_providers_is_refused_whole_or_imported_one_provider_a_run(
        fresh_db: Path, promptfoo_results) -> None:
    path = promptfoo_results["pf-two"]
    line = assert_usage_error(cli("import", "--db", fresh_db, path, "--run-id", "both"))
    assert "2 runs (openai:answerer-bad, openai:answerer-good)" in line and "--provider" in line
    assert not fresh_db.exists()
    good = imported(fresh_db, path, "good", "--provider", "openai:answerer-good")
    imported(fresh_db, path, "bad", "--provider", "openai:answerer-bad")
    # --grader, as promptfoo stores it: {"modelName": ...} in defaultTest.options.provider
    assert "grader grader-lenient (from defaultTest.options.provider)" in good.stdout
    assert "16 rows" not in good.stderr and "8 rows are 4 samples repeated up to 2 times" in good.stderr
    with Store(fresh_db) as store:
        answers = {run: {s.question: s.answer for s in store.samples(run)} for run in ("good", "bad")}
        assert store.run_notes("good")["repeats"] == 2
    assert answers["good"] == {r["question"]: r["good"] for r in ROWS}
    assert answers["bad"] == {r["question"]: r["bad"] for r in ROWS}


def test_a_score_far_outside_the_range_is_still_refused_with_its_row(fresh_db: Path, promptfoo_results,
                                                                     tmp_path: Path) -> None:
    data = json.loads(promptfoo_results["pf-a"].read_text(encoding="utf-8"))
    data["results"]["results"][1]["gradingResult"]["componentResults"][0]["score"] = 1.5
    bad = tmp_path / "results.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    line = assert_usage_error(cli("import", "--db", fresh_db, bad, "--run-id", "pf"))
    assert "row 2" in line and "'faithfulness'" in line and "[0, 1]" in line
    assert not fresh_db.exists()


# -- Ragas -----------------------------------------------------------------------------------------------------
def test_a_ragas_csv_maps_its_parametrised_metric_and_takes_the_grader_given(fresh_db: Path, ragas_results) -> None:
    path = ragas_results["ragas-good"]
    assert "factual_correctness(mode=f1)" in path.read_text(encoding="utf-8").splitlines()[0]
    proc = imported(fresh_db, path, "rg", "--tool-version", "0.4.3", "--grader", "judge-model")
    assert "grader judge-model (from given)" in proc.stdout
    with Store(fresh_db) as store:
        metrics = store.run_metrics("rg").set_index("metric")
    assert "answer_correctness" in metrics.index
    assert metrics.loc["answer_correctness", "scorer"] == "ragas 0.4.3 factual_correctness(mode=f1)"
    assert set(metrics["judge_model"]) == {"judge-model"}


def test_a_ragas_csv_with_no_metric_we_know_is_refused(fresh_db: Path, ragas_results, tmp_path: Path) -> None:
    frame = pd.read_csv(ragas_results["ragas-good"])
    renamed = frame.rename(columns={"faithfulness": "my_faith", "context_recall": "recall_at_k",
                                    "factual_correctness(mode=f1)": "f1_score"})
    path = tmp_path / "ragas.csv"
    renamed.to_csv(path, index=False)
    line = assert_usage_error(cli("import", "--db", fresh_db, path, "--run-id", "none"))
    assert "no score this tool names maps" in line and "my_faith" in line
    assert not fresh_db.exists()


def test_a_missing_ragas_version_warns_and_draws_no_scoring_library_marker(fresh_db: Path, ragas_results,
                                                                           tmp_path: Path) -> None:
    path = ragas_results["ragas-good"]
    imported(fresh_db, path, "a", "--tool-version", "0.4.3", "--started-at", "2026-11-01T02:00",
             "--pipeline", '{"retriever": "bm25"}')
    proc = imported(fresh_db, path, "b", "--started-at", "2026-11-02T02:00")
    assert "ragas version is not recorded" in proc.stderr
    imported(fresh_db, path, "c", "--tool-version", "0.4.3", "--started-at", "2026-11-03T02:00",
             "--pipeline", '{"retriever": "bm25"}')
    events = markers(fresh_db)
    assert events.empty, events.to_string()   # neither the unversioned run nor the run with no pipeline moved


def test_a_reordered_ragas_csv_pairs_the_same_samples(fresh_db: Path, ragas_results, tmp_path: Path) -> None:
    frame = pd.read_csv(ragas_results["ragas-good"])
    path = tmp_path / "reordered.csv"
    frame.iloc[::-1].to_csv(path, index=False)
    shutil.copy(ragas_results["ragas-good"], tmp_path / "first.csv")
    imported(fresh_db, tmp_path / "first.csv", "one", "--tool-version", "0.4.3")
    imported(fresh_db, path, "two", "--tool-version", "0.4.3")
    with Store(fresh_db) as store:
        one = {s.sample_id: s.question for s in store.samples("one")}
        two = {s.sample_id: s.question for s in store.samples("two")}
    assert one == two and len(one) == len(ROWS)


# -- Inspect's own reader, in its environment ---------------------------------------------------------------------
def unfinished(log: Path, tmp_path: Path) -> Path:
    """The log as Inspect leaves it before the run ends: the same zip without its header member."""
    out = tmp_path / "unfinished.eval"
    with zipfile.ZipFile(log) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            if info.filename != "header.json":
                data = _member(src, info.filename) if info.compress_type == ZSTD else src.read(info.filename)
                dst.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
    return out


def test_inspects_own_reader_gives_the_same_run_and_reads_an_unfinished_log(fresh_db: Path, inspect_logs,
                                                                            tmp_path: Path, monkeypatch) -> None:
    python = tool_env(*INSPECT_PYTHON)
    log = inspect_logs["insp-1"]
    ours = prepare_import(log, run_id="ours")
    half = unfinished(log, tmp_path)
    with pytest.raises(InputError, match="unfinished log has no header yet: EVALDRIFT_INSPECT_PYTHON"):
        prepare_import(half, run_id="half")
    # Inspect's Python with Inspect imported once for the two reads (tests/support/warm_python.py: each read still
    # runs the reader in that interpreter, forked); Inspect started cold, as a user's, is test_blank_reach's and
    # test_inspect_options'
    with WarmPython(python, ("inspect_ai", "inspect_ai.log"), flags=("-I",)) as warm:
        monkeypatch.setenv("EVALDRIFT_INSPECT_PYTHON", str(warm.path))
        theirs = prepare_import(log, run_id="ours")
        assert (theirs.grader, theirs.version, theirs.notes["repeats"]) == (ours.grader, ours.version, 2)
        assert theirs.run.samples == ours.run.samples
        assert [(m.metric, [r.score for r in m.results], m.prompt_hash) for m in theirs.run.metrics] == \
            [(m.metric, [r.score for r in m.results], m.prompt_hash) for m in ours.run.metrics]
        proc = imported(fresh_db, half, "half")                 # the CLI, through Inspect's reader
        assert "grader openai-api/loop/grader-strict" in proc.stdout
    with Store(fresh_db) as store:
        assert len(store.samples("half")) == len(ROWS)


# -- markers only from what a run recorded ---------------------------------------------------------------------
@pytest.mark.parametrize(("judges", "pipelines", "expected"), [
    (("a", "a", "b"), ({"r": 1}, {"r": 1}, {"r": 1}), [("r3", "judge model")]),     # a real switch
    (("a", None, "a"), ({"r": 1}, {"r": 1}, {"r": 1}), []),                          # the middle one gave no grader
    (("a", None, "b"), ({"r": 1}, {"r": 1}, {"r": 1}), [("r3", "judge model")]),     # compared with the last given
    (("a", "a", "a"), ({"r": 1}, {}, {"r": 1}), []),                                 # the middle gave no pipeline
    (("a", "a", "a"), ({"r": 1}, {}, {"r": 2}), [("r3", "pipeline")]),
])
def test_a_marker_is_drawn_only_from_what_runs_recorded(fresh_db: Path, judges, pipelines, expected) -> None:
    from datetime import datetime

    from lib.core.records import MetricRecord, RunRecord
    from lib.core.results import OK, SampleResult
    from lib.core.samples import EvalSample

    with Store(fresh_db) as store:
        for i, (judge, pipeline) in enumerate(zip(judges, pipelines, strict=True), start=1):
            store.record_run(RunRecord(
                run_id=f"r{i}", started_at=datetime(2026, 11, i, 2), pipeline=pipeline,
                samples={"main": [EvalSample("s1", "q?", "A.", ("A.",), "A.")]},
                metrics=[MetricRecord("faithfulness", [SampleResult("s1", OK, 1.0)], judge, None, None)]))
    events = markers(fresh_db)
    assert list(zip(events["run_id"], events["kind"], strict=True)) == expected, events.to_string()
