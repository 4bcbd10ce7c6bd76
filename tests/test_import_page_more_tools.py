"""The Import page in a real browser with DeepEval's and MLflow's own files, as the tools wrote them this session."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page

from lib.intake.uploads import detect_upload, mlflow_evaluations
from lib.store import Store
from tests.support.browser import StreamlitServer, exceptions_shown, main_text, wait_for_app
from tests.support.tool_runs import ROWS
from tests.test_import_page import choose, fill, upload


def test_deepeval_and_mlflow_uploads_are_detected_as_the_cli_detects_them(deepeval_runs, mlflow_runs) -> None:
    store, ids = mlflow_runs
    assert detect_upload(deepeval_runs["de-1"].name, deepeval_runs["de-1"].read_bytes()) == "deepeval"
    assert detect_upload("mlflow.db", store.read_bytes()) == "mlflow"
    assert mlflow_evaluations("mlflow.db", store.read_bytes()) == [f"{n} ({ids[n]})" for n in ("ml-1", "ml-2",
                                                                                                 "ml-3")]


@pytest.mark.e2e
def test_deepeval_and_mlflow_files_are_detected_shown_and_recorded_with_their_instrument(
        tmp_path: Path, page: Page, deepeval_runs, mlflow_runs) -> None:
    store, ids = mlflow_runs
    db = tmp_path / "evals.duckdb"
    Store(db).close()
    with StreamlitServer(db, log_dir=tmp_path / "server") as server:
        page.goto(f"{server.url}/import")
        wait_for_app(page)
        path = deepeval_runs["de-3"]
        upload(page, path.name, path.read_bytes())
        text = main_text(page)
        assert "Detected: a DeepEval test run (test_run_*.json)." in text
        assert "grader: grader-lenient (from testCases[].metricsData[].evaluationModel)" in text
        assert "metric faithfulness: from Faithfulness" in text and "metric context_recall: from Contextual Recall" \
            in text
        assert "deepeval version is not recorded" in text
        fill(page, "imp_tool_version", "4.3.1")
        fill(page, "imp_run_id", "de-page")
        assert "tool: deepeval 4.3.1" in main_text(page)
        page.locator(".st-key-imp_record button").click()
        wait_for_app(page)
        assert "Recorded run de-page: 4 samples; faithfulness, context_recall." in main_text(page)

        page.goto(f"{server.url}/import")
        wait_for_app(page)
        upload(page, "mlflow.db", store.read_bytes())
        assert "Detected: an MLflow tracking store (mlflow.db)." in main_text(page)
        choose(page, "imp_mlflow_run", f"ml-3 ({ids['ml-3']})")
        fill(page, "imp_tool_version", "3.17.2")
        fill(page, "imp_run_id", "ml-page")
        text = main_text(page)
        assert "grader: openai:/grader-lenient (from the assessments' source (LLM_JUDGE))" in text
        assert "metric faithfulness: from retrieval_groundedness" in text
        assert "wiring profile: faithfulness (mlflow retrieval_groundedness): receives question by design" in text
        page.locator(".st-key-imp_record button").click()
        wait_for_app(page)
        assert "Recorded run ml-page: 4 samples" in main_text(page)
        assert exceptions_shown(page) == []
    with Store(db) as store_:
        de = store_.run_metrics("de-page").set_index("metric")
        ml = store_.run_metrics("ml-page").set_index("metric")
        ml_answers = {s.answer for s in store_.samples("ml-page")}
    assert set(de["judge_model"]) == {"grader-lenient"}
    assert de.loc["faithfulness", "scorer"] == "deepeval 4.3.1 Faithfulness"
    assert set(ml["judge_model"]) == {"openai:/grader-lenient"}
    assert ml.loc["answer_correctness", "scorer"] == "mlflow 3.17.2 correctness"
    assert ml_answers == {r["bad"] for r in ROWS}
