"""A newcomer's first start (issue 14 item 1): from a checkout with an empty data folder, the first page shows
the demo being built with real progress at once, then the Overview on it, and the server log stays clean."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page

from tests.support.browser import home_port, wait_for_app

ROOT = Path(__file__).resolve().parents[1]


def checkout_copy(dest: Path) -> Path:
    """The tracked files of this checkout (what a fresh clone holds), with an empty data folder."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, (f.decode() for f in files)):
        if name.startswith("tests/"):
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, target)
    (dest / "data").mkdir(exist_ok=True)
    assert not list((dest / "data").glob("*.duckdb"))
    return dest


def test_the_first_start_shows_the_demo_being_built_then_the_overview_and_a_clean_log(tmp_path: Path,
                                                                                    page: Page) -> None:
    """In the module's tab of the kept browser context, on the process's home port: the app's scripts are then
    compiled already when an earlier module served the dashboard there (a new context on a new port compiles
    them anew)."""
    repo = checkout_copy(tmp_path / "clone")
    port = home_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "EVALDRIFT_", "PYTHONPATH"))}
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                                   "--server.address", "127.0.0.1", "--server.headless", "true",
                                   "--browser.gatherUsageStats", "false"], cwd=repo, env=env, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        t0 = time.monotonic()
        for _ in range(60):   # the server may still be starting
            try:
                page.goto(f"http://127.0.0.1:{port}/")
                break
            except Exception:
                time.sleep(0.5)
        page.get_by_text("First start:").first.wait_for(timeout=30_000)
        first_page = time.monotonic() - t0
        text = page.inner_text("body")
        # the build under way, counted for real: runs being judged, or all judged and the episode being
        # re-judged (a faster build may be there by the first page; either is the page before the Overview)
        assert re.search(r"First start: (building the demo database, \d+ of 90|all 90) nightly runs judged",
                         text), text
        page.get_by_text("90 runs").first.wait_for(timeout=300_000)   # the Overview, on the demo, by itself
        # and its script run to the end: a server stopped mid-run logs the query it interrupted (seen in a
        # parallel run, the incidents still being read when the server was stopped)
        wait_for_app(page, timeout=120)
        assert (repo / "data" / "demo.duckdb").exists()
        assert first_page < 30, f"first page after {first_page:.1f} s"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    written = log.read_text(encoding="utf-8", errors="replace")
    assert "ScriptRunContext" not in written and "Traceback" not in written, written[-2000:]


def test_the_demo_build_module_is_light_so_app_py_starts_the_build_before_its_own_imports() -> None:
    # Issue 28 item 1: the build began only after the dashboard had imported pandas, DuckDB and the pages' code.
    code = ("import sys, lib.app.demo_start; "
            "print(sorted(m for m in ('pandas', 'duckdb', 'lib.jobs', 'lib.app.ui') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    source = (ROOT / "app.py").read_text()
    assert source.index("demo_start.start_early(") < source.index("from lib.app.ui import")


@pytest.mark.parametrize(("db_setting", "demo_there", "starts"), [
    (None, False, True),          # the demo is the database and is missing: build it now
    (None, True, False),          # already built
    ("other.duckdb", False, False),   # the operator's own database: never the demo
    ("bad setting", False, False),   # a setting the page refuses (here the judge's URL): left to the page
])
def test_start_early_builds_only_a_missing_demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                db_setting: str | None, demo_there: bool, starts: bool) -> None:
    from lib.app import demo_start
    from lib.core import settings

    demo = tmp_path / "data" / "demo.duckdb"
    if demo_there:
        demo.parent.mkdir()
        demo.write_bytes(b"")
    monkeypatch.setattr(settings, "DEMO_DB", demo)
    if db_setting == "bad setting":
        monkeypatch.setenv("OPENAI_BASE_URL", "ftp://judge.example")
    elif db_setting is not None:
        monkeypatch.setenv("EVALDRIFT_DB", str(tmp_path / db_setting))
    started: list[Path] = []
    monkeypatch.setattr(demo_start, "demo_build", started.append)
    demo_start.start_early({})
    assert started == ([demo] if starts else [])
