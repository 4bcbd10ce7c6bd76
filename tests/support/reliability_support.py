"""Helpers the reliability, kill, concurrency and security tests share.

- `mini_demo`: a small demo history (a few of the demo's nightly runs, scored
  for real by lib.demo) built once per test session; copy it before writing.
- `StreamlitServer`: `streamlit run app.py` in a child process on a free
  loopback port, its output captured to a file.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Playwright

ROOT = Path(__file__).resolve().parents[2]
# Plans of lib.demo.run_plans: a clean run, the first leaking run (ground_truth rendered into
# faithfulness), and a leaking run after the retriever regression.
MINI_DEMO_PLANS = (0, 30, 58)


def build_mini_demo(path: Path, plans: tuple[int, ...] = MINI_DEMO_PLANS) -> Path:
    """Record the chosen demo nightly runs (scored by lib.demo.score_run) into `path`."""
    from lib.demo import demo_samples, run_plans, score_run
    from lib.store import Store

    main, canary = demo_samples()
    all_plans = run_plans()
    tmp = path.with_name(path.name + ".building")
    tmp.unlink(missing_ok=True)
    with Store(tmp) as store:
        for i in plans:
            plan = all_plans[i]
            store.record_run(score_run(plan, [d.regressed if plan.regressed else d.sample for d in main], canary))
    tmp.replace(path)
    return path


def mini_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's mini demo database (built on first use). Read-only: copy it."""
    path = tmp_path_factory.getbasetemp() / "reliability-mini-demo.duckdb"
    if not path.exists():
        build_mini_demo(path)
    return path


def mini_demo_run_ids() -> list[str]:
    from lib.demo import run_plans

    plans = run_plans()
    return [plans[i].run_id for i in MINI_DEMO_PLANS]


def copy_db(src: Path, dest: Path) -> Path:
    shutil.copy(src, dest)
    wal = Path(f"{src}.wal")
    if wal.exists():
        shutil.copy(wal, Path(f"{dest}.wal"))
    return dest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a child process: no OPENAI_*/EVALDRIFT_* leaking in, the repo importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "EVALDRIFT_"))}
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


class StreamlitServer:
    """`streamlit run app.py` on a free loopback port; stdout and stderr go to `log`."""

    def __init__(self, log: Path, env: dict[str, str], *, port: int | None = None) -> None:
        self.port = port or free_port()
        self.log = log
        self.env = env
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90.0) -> StreamlitServer:
        cmd = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
               "--server.port", str(self.port), "--server.address", "127.0.0.1",
               "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
               "--server.runOnSave", "false"]
        self._fh = open(self.log, "wb")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=self.env, stdout=self._fh, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {self.proc.returncode}:\n{self.output()}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"streamlit did not come up in {timeout} s:\n{self.output()}")

    def output(self) -> str:
        try:
            return self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self._fh.close()
        self.proc = None

    def __enter__(self) -> StreamlitServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- a real browser on the dashboard ------------------------------------------------------------------
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
LOCK_WORDS = ("lock", "Traceback", "IOException", "IO Error", "held by another process", "StoreBusyError",
              "Could not set lock", "Conflicting")


def launch_browser(playwright: Playwright) -> Browser:
    """Chromium from the system (Debian's package), headless."""
    if CHROMIUM is None:
        pytest.skip("no chromium on this machine (bash .ci/run installs it)")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])


def settle(page: Page, *, timeout: float = 90.0, quiet: float = 0.8) -> None:
    """Wait until the page's script run is over: the app is shown and no "running" widget for `quiet` s."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout * 1000)
    page.wait_for_selector('[data-testid="stMain"] h1', timeout=timeout * 1000)
    deadline = time.monotonic() + timeout
    calm_since = None
    while time.monotonic() < deadline:
        busy = page.locator('[data-testid="stStatusWidget"]').count() > 0 or \
            page.locator('[data-testid="stSkeleton"]').count() > 0
        now = time.monotonic()
        if busy:
            calm_since = None
        elif calm_since is None:
            calm_since = now
        elif now - calm_since >= quiet:
            return
        time.sleep(0.1)
    raise AssertionError("the page never finished running")


def page_text(page: Page) -> str:
    return page.inner_text("body")


def exceptions_shown(page: Page) -> list[str]:
    """Texts of the exception boxes Streamlit shows when a page script raises."""
    return [e.inner_text() for e in page.locator('[data-testid="stException"]').all()]
