"""Reading commands work while the dashboard runs (issue 28 item 7): a real `streamlit run app.py` owns the file,
real `python -m lib` processes read the snapshot it keeps beside it (lib.store.snapshot), and a run handed over
through the inbox shows in `runs` once the dashboard has drained it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from subprocess import CompletedProcess

import pytest
from playwright.sync_api import Page

from lib.intake.runjson import run_to_json
from lib.store.snapshot import snapshot_path
from tests.conftest import small_demo
from tests.support.browser import ReusedTab, StreamlitServer, wait_for_app
from tests.support.polling import wait_for
from tests.test_cli import cli
from tests.test_validate import good_run

pytestmark = pytest.mark.e2e
RUNS = 3



@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory, _module_tab: ReusedTab) -> Iterator[StreamlitServer]:
    work = tmp_path_factory.mktemp("held")
    db = work / "evals.duckdb"
    small_demo(RUNS, db)
    with StreamlitServer(db, log_dir=work / "logs") as server:
        page = _module_tab.take()   # the module's tab (tests/support/browser.py), before any test takes it
        try:
            visit(page, server)     # a session opens the store: from now on the dashboard holds the file
        finally:
            _module_tab.hand_back()
        yield server


def visit(page: Page, server: StreamlitServer) -> None:
    """A page load of the dashboard in the module's tab: a session of its own, ended when the tab is handed back.
    The reused tab keeps its renderer: a load in a new tab costs Chromium more (tests/support/browser.py, `page`)."""
    page.goto(server.url)
    wait_for_app(page, timeout=120)


def test_runs_lint_and_report_read_while_the_dashboard_holds_the_file(running: StreamlitServer,
                                                                     tmp_path: Path) -> None:
    held = cli("record", "--db", running.db, _handover(tmp_path, "probe"))
    assert "inbox" in held.stdout + held.stderr   # the dashboard does hold the file: a writer hands over
    runs = cli("runs", "--db", running.db)
    assert runs.returncode == 0, runs.stderr
    assert runs.stdout.count("nightly-") == RUNS
    assert "the dashboard holds" in runs.stderr and "reading its snapshot of" in runs.stderr
    lint = cli("lint", "--db", running.db)
    assert lint.returncode in (0, 1), lint.stderr   # 1: a finding; never 2, the file held
    assert "reads" in lint.stdout
    out = tmp_path / "finding.md"
    report = cli("report", "--db", running.db, "--run", "latest", "--out", out)
    assert report.returncode == 0, report.stderr
    assert out.read_text(encoding="utf-8").startswith("#")


def test_a_run_handed_over_through_the_inbox_shows_in_runs_once_the_dashboard_drained_it(
        running: StreamlitServer, page: Page, tmp_path: Path) -> None:
    handed = cli("record", "--db", running.db, _handover(tmp_path, "handed-over"))
    assert handed.returncode == 0 and "inbox" in handed.stdout + handed.stderr, handed.stderr
    before = cli("runs", "--db", running.db)
    assert before.returncode == 0, before.stderr
    visit(page, running)   # a page run drains the inbox into the file

    def handed_over() -> CompletedProcess | None:
        runs = cli("runs", "--db", running.db)
        return runs if "handed-over" in runs.stdout else None

    after = wait_for(handed_over, timeout=60, pause=1.0) or cli("runs", "--db", running.db)
    assert after.returncode == 0 and "handed-over" in after.stdout, (after.stdout, after.stderr)
    assert snapshot_path(running.db).is_file()


def _handover(folder: Path, run_id: str) -> Path:
    path = folder / f"{run_id}.run.json"
    path.write_text(run_to_json(good_run(run_id)), encoding="utf-8")
    return path
