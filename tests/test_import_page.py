"""The Import page in a real browser: a bad row named, fixed, recorded, scored, and found on Trends."""

from __future__ import annotations

import json
import threading
from datetime import datetime
from pathlib import Path

import pytest
from playwright.sync_api import Page

from lib.core.calls import JudgeReply, JudgeRequest
from lib.core.errors import InputError
from lib.core.metrics import METRIC_NAMES
from lib.intake.uploads import (
    TABLE,
    column_mapping,
    detect_upload,
    has_scores,
    read_upload,
    run_facts,
    unknown_columns,
)
from lib.jobs import ImportRunner
from lib.judging import OfflineJudge
from lib.store import Store
from tests.support.browser import (
    MAIN,
    ROOT,
    StreamlitServer,
    exceptions_shown,
    follow,
    main_text,
    selected,
    wait_for_app,
)
from tests.support.cli import run_cli
from tests.support.tool_runs import ROWS as TOOL_ROWS

EXAMPLE = ROOT / "data" / "examples" / "kettle_faq.jsonl"
ROWS = [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines()]



def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")


def bad_rows() -> list[dict]:
    rows = [dict(r) for r in ROWS[:6]]
    rows[1]["contexts"] = rows[1]["contexts"][0]          # a string, not a list of passages
    rows[4]["answer"] = None
    return rows


# -- the lib behind the page ------------------------------------------------------------------------------
def test_read_upload_names_every_bad_row_and_field() -> None:
    upload = read_upload("mine.jsonl", jsonl(bad_rows()))
    assert not upload.ok
    assert [(e.row, e.field) for e in upload.errors] == [(2, "contexts"), (5, "answer")]
    assert list(upload.error_table()["row"]) == [2, 5]
    assert read_upload("mine.jsonl", jsonl(ROWS[:6])).ok
    [unsupported] = read_upload("mine.txt", b"hello").errors
    assert "unsupported file type" in str(unsupported)


def test_column_mapping_shows_our_names_aliases_and_what_is_needed() -> None:
    frame = read_upload("r.jsonl", jsonl([{"user_input": "q?", "response": "A.", "retrieved_contexts": ["A."]}])).frame
    table = column_mapping(frame, ["faithfulness"]).set_index("our name")
    assert table.loc["question", "your column"] == "user_input"
    assert table.loc["contexts", "needed"] == "faithfulness receives it"
    assert table.loc["ground_truth", "needed"].startswith("optional")
    assert table.loc["answer_relevance", "also accepted"] == "answer_relevancy, response_relevancy"


def test_a_scored_upload_is_judged_off_the_page_thread_and_its_progress_read(fresh_db: Path) -> None:
    """A rerun of the page (any widget) kills work on the script thread: scoring runs on the import runner's."""
    threads: set[str] = set()

    class Watched(OfflineJudge):
        def complete(self, request: JudgeRequest) -> JudgeReply:
            threads.add(threading.current_thread().name)
            return super().complete(request)

    frame = read_upload("mine.jsonl", jsonl(ROWS[:6]), metrics=["faithfulness"]).frame
    with Store(fresh_db) as store:
        runner = ImportRunner(store)
        runner.submit(frame, source="mine.jsonl", run_id="up-1", metrics=["faithfulness"], judge=Watched())
        assert runner.status("up-1") is not None
        runner.wait()
        status = runner.status("up-1")
        runner.shutdown()
        assert (status.state, status.done, status.total, status.samples, status.metrics) == (
            "done", 6, 6, 6, ("faithfulness",))
        assert store.run_ids() == ["up-1"]
    assert threads and all(name.startswith("import") for name in threads), threads


# -- the page -----------------------------------------------------------------------------------------------
def upload(page, name: str, data: bytes) -> None:
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        files=[{"name": name, "mimeType": "application/octet-stream", "buffer": data}])
    wait_for_app(page)


def upload_fix_record_score_and_find_the_run_on_trends(page: Page, server: StreamlitServer) -> None:
    """First: a misspelt column and a file without scores are said before recording."""
    page.goto(f"{server.url}/import")
    wait_for_app(page)
    rows = [{"question": r["question"], "answer": r["answer"], "context": r["contexts"]} for r in ROWS[:3]]
    upload(page, "mine.jsonl", jsonl(rows))
    # a file without scores is scored by default, every metric, as `score` does (issue 46 item 5): scoring
    # off, recording would give a run with no metric, and Record run waits
    assert page.locator(".st-key-imp_score input").is_checked()
    page.locator(".st-key-imp_score label").first.click()
    wait_for_app(page)
    text = main_text(page)
    assert "Column 'context' is not read: did you mean 'contexts'?" in text
    assert "carries no score column and scoring is off" in text
    assert page.locator(".st-key-imp_record button").is_disabled()
    assert exceptions_shown(page) == []

    # the sidebar's Import again (same session, no page load: the next file seeds its own scoring default)
    follow(page, f"{server.url}/import")
    upload(page, "mine.jsonl", jsonl(bad_rows()))
    text = main_text(page)
    assert "2 problem(s) in mine.jsonl" in text
    assert "row 2, field 'contexts'" in text and "row 5, field 'answer'" in text

    upload(page, "mine.jsonl", jsonl(ROWS[:6]))            # fixed: the same file, the two rows repaired
    assert "6 rows, no problem found." in main_text(page)
    assert page.locator(".st-key-imp_score input").is_checked()   # scored here with the configured judge
    run_id = page.locator(".st-key-imp_run_id input")
    run_id.fill("from-the-page")
    run_id.press("Enter")
    wait_for_app(page)
    page.locator(".st-key-imp_record button").click()   # scored on the import runner's thread: the page polls
    page.get_by_text("Recorded run from-the-page: 6 samples; faithfulness, ").wait_for(timeout=180_000)
    assert exceptions_shown(page) == []

    follow(page, f"{server.url}/trends?metric=faithfulness")   # the message's "See it on Trends", one metric
    runs = page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
        .flatMap(g => g.data.filter(t => t.name === 'faithfulness').flatMap(t => Array.from(t.customdata)))""")
    assert "from-the-page" in runs and "nightly-1" in runs
    assert page.locator(MAIN).count() == 1 and exceptions_shown(page) == []


# -- other tools' files, as the real tools wrote them in this session (tests/support/tool_runs.py) -----------------
def test_unknown_columns_name_the_likely_intended_one_and_a_file_without_scores_is_known() -> None:
    rows = [{"question": r["question"], "answer": r["answer"], "context": r["contexts"]} for r in ROWS[:3]]
    frame = read_upload("mine.jsonl", jsonl(rows)).frame
    assert unknown_columns(frame) == [("context", "contexts")]
    assert not has_scores(frame)
    assert has_scores(read_upload("mine.jsonl", jsonl([{**rows[0], "faithfulness": 1.0}])).frame)


def test_run_facts_read_the_start_time_and_pipeline_typed_on_the_page() -> None:
    assert run_facts("", "") == (None, None)
    assert run_facts("2026-11-02T02:00", '{"retriever": "bm25"}') == (datetime(2026, 11, 2, 2, 0),
                                                                      {"retriever": "bm25"})
    with pytest.raises(InputError, match="pipeline"):
        run_facts("", "[1, 2]")
    with pytest.raises(InputError, match="started_at"):
        run_facts("yesterday", "")


def test_an_upload_is_detected_as_the_cli_detects_it(inspect_logs, promptfoo_results, ragas_results) -> None:
    for path, fmt in ((inspect_logs["insp-1"], "inspect"), (promptfoo_results["pf-a"], "promptfoo"),
                      (ragas_results["ragas-good"], "ragas")):
        assert detect_upload(path.name, path.read_bytes()) == fmt
    assert detect_upload("mine.jsonl", jsonl(ROWS[:2])) == TABLE
    assert detect_upload("mine.json", jsonl(ROWS[:2])) == TABLE


def choose(page, key: str, option: str) -> None:
    page.locator(f".st-key-{key} [data-testid='stSelectbox']").click()
    page.get_by_role("option", name=option).click()
    wait_for_app(page)


def fill(page, key: str, text: str) -> None:
    box = page.locator(f".st-key-{key} input, .st-key-{key} textarea").first
    box.fill(text)
    box.press("Enter" if "input" in box.evaluate("e => e.tagName.toLowerCase()") else "Control+Enter")
    wait_for_app(page)


def tool_files_are_detected_shown_and_recorded(page: Page, server: StreamlitServer, inspect_logs, promptfoo_results,
                                               ragas_results) -> None:
    """Other tools' files, as the real tools wrote them: detected, their facts shown, recorded. Opened from the
    sidebar's Import after Trends (`follow`: same session, no page load)."""
    follow(page, f"{server.url}/import")

    upload(page, "insp-1.eval", inspect_logs["insp-1"].read_bytes())      # refused before: ".eval not allowed"
    text = main_text(page)
    assert "Detected: an Inspect AI log." in text
    assert "grader: openai-api/loop/grader-strict (from eval.scorers[].options.model)" in text
    assert "samples: 4 (8 rows: up to 2 repeats each)" in text
    assert "wiring profile: answer_correctness (inspect_ai model_graded_fact): receives question by design" in text
    fill(page, "imp_run_id", "insp-page")
    page.locator(".st-key-imp_record button").click()
    wait_for_app(page)
    assert "Recorded run insp-page: 4 samples; answer_correctness." in main_text(page)

    # the next file dropped on the same page, in the same session: read as what it is, not as the last file was
    upload(page, "results.json", promptfoo_results["pf-two"].read_bytes())
    assert "Detected: a promptfoo results.json." in main_text(page)
    assert selected(page, "imp_format") == "a promptfoo results.json"
    choose(page, "imp_provider", "openai:answerer-bad")
    fill(page, "imp_run_id", "pf-page")
    text = main_text(page)
    assert "grader: grader-lenient (from defaultTest.options.provider)" in text
    page.locator(".st-key-imp_record button").click()
    wait_for_app(page)
    assert "Recorded run pf-page: 4 samples" in main_text(page)

    upload(page, "ragas.csv", ragas_results["ragas-good"].read_bytes())  # every row refused before
    assert selected(page, "imp_format").startswith("a Ragas result")
    text = main_text(page)
    assert "Detected: a Ragas result" in text and "grader is not recorded" in text
    assert "ragas version is not recorded" in text
    fill(page, "imp_tool_version", "0.4.3")
    fill(page, "imp_grader", "judge-model")
    page.get_by_text("When it ran, and its pipeline").click()
    fill(page, "imp_started_at", "2026-11-02T02:00")
    fill(page, "imp_pipeline", '{"retriever": "bm25"}')
    fill(page, "imp_run_id", "ragas-page")
    text = main_text(page)
    assert "metric answer_correctness: from factual_correctness(mode=f1)" in text
    page.locator(".st-key-imp_record button").click()
    wait_for_app(page)
    assert "Recorded run ragas-page" in main_text(page)
    assert exceptions_shown(page) == []


@pytest.mark.e2e
def test_the_import_page_records_a_fixed_upload_and_other_tools_files_with_their_instruments(
        tmp_path: Path, page: Page, inspect_logs, promptfoo_results, ragas_results) -> None:
    """The page's two journeys on one dashboard (a dashboard's start and first page cost its server about 3 CPU s):
    an upload of our own rows named, fixed, recorded, scored and found on Trends beside a run the CLI scored; then
    Inspect AI, promptfoo and Ragas files detected, shown and recorded with their instrument. The store is read
    once the dashboard has let it go."""
    db = tmp_path / "evals.duckdb"
    proc = run_cli("score", "--db", db, ROOT / "data" / "examples" / "kettle_faq.jsonl", "--run-id", "nightly-1",
                   "--metrics", "faithfulness", "--started-at", "2026-12-01T02:00")
    assert proc.returncode == 0, proc.stderr
    with StreamlitServer(db, log_dir=tmp_path / "server") as server:
        upload_fix_record_score_and_find_the_run_on_trends(page, server)
        tool_files_are_detected_shown_and_recorded(page, server, inspect_logs, promptfoo_results, ragas_results)
    with Store(db) as store:
        metrics = store.run_metrics("from-the-page")
        inspect_metrics = store.run_metrics("insp-page")
        pf_answers = {s.answer for s in store.samples("pf-page")}
        ragas_metrics = store.run_metrics("ragas-page").set_index("metric")
        ragas_run = store.run("ragas-page")
    assert sorted(metrics["metric"]) == sorted(METRIC_NAMES) and set(metrics["scorer"]) == {"evaldrift"}
    assert set(metrics["n"]) == {6}
    assert list(inspect_metrics["judge_model"]) == ["openai-api/loop/grader-strict"]
    assert pf_answers == {r["bad"] for r in TOOL_ROWS}
    assert set(ragas_metrics["judge_model"]) == {"judge-model"}
    assert ragas_metrics.loc["faithfulness", "scorer"] == "ragas 0.4.3 faithfulness"
    assert (ragas_run.started_at, dict(ragas_run.pipeline)) == (datetime(2026, 11, 2, 2, 0), {"retriever": "bm25"})
