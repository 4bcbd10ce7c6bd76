"""The dashboard in a real browser: `streamlit run app.py` on a loopback port, and Debian's Chromium driving it.

- `StreamlitServer(db)`: a context manager that starts the dashboard on a copy
  of a database (the server process owns and writes that file), captures its
  stdout and stderr to files, waits for /_stcore/health, and ends its whole
  process group on exit.
- `chromium()`: Playwright's sync API driving /usr/bin/chromium, headless.
  Missing Chromium skips the test on a workstation and fails it in CI, which
  installs it (.ci/run).
- `module_tabs` and `tab_page`: fixtures (tests/conftest.py offers them to every module that has a module-scoped
  `browser` fixture) giving the module one browser context and one tab in it, reused by each test as `page`.
- `wait_for_app(page)`: until Streamlit has finished running the page script
  and drawn what it sent (no status widget, no skeleton, every Plotly chart
  drawn), for a short quiet spell.
- `screenshot(page, name)`: artifacts/screenshots/<name>.png under the repo
  root (git-ignored: test artifacts, never committed).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, NoReturn

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page, Playwright

ROOT = Path(__file__).resolve().parents[2]
APP = "app.py"
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run")
VIEWPORT = {"width": 1400, "height": 1000}
CLEARED_ENV = ("OPENAI_", "EVALDRIFT_")   # a developer's settings never reach the server under test
WAIT_S = 60.0                             # generous: the test machine is shared and has 2 cores

# Streamlit 1.67's DOM: the app root reports its script state; a status widget ("Stop") is shown while
# the script runs; skeletons stand in for elements whose frontend code is still loading (Plotly).
APP_ROOT = '[data-testid="stApp"]'
APP_IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
STATUS_WIDGET = '[data-testid="stStatusWidget"]'
SKELETON = '[data-testid="stSkeleton"]'
PLOTLY_CHART = '[data-testid="stPlotlyChart"]'
EXCEPTION = '[data-testid="stException"]'
MAIN = '[data-testid="stMain"]'
SIDEBAR_NAV = '[data-testid="stSidebarNav"]'


POINT_JS = """(metric) => {
    // The Trends figure of `metric`: its score trace (named after the metric), and a point of it that is
    // neither a flagged jump nor a recorded change, so that only the score marker lies under the mouse.
    const gd = Array.from(document.querySelectorAll('.js-plotly-plot')).find(
        g => g.data.some(t => t.name === metric));
    const k = gd.data.findIndex(t => t.name === metric);
    const mine = (t) => t.yaxis === gd.data[k].yaxis;   // the same panel (all traces, on a one-metric chart)
    const busy = new Set(gd.data.filter((t, i) => i !== k && mine(t) && t.customdata)
        .flatMap(t => Array.from(t.customdata)));
    const ids = Array.from(gd.data[k].customdata);
    const i = ids.findIndex((id, n) => n >= 5 && !busy.has(id) && !busy.has(ids[n - 1]) && !busy.has(ids[n + 1]));
    return {trace: k, point: i, run: ids[i]};
}"""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def copy_db(src: Path, dest: Path) -> Path:
    """Copy a DuckDB file (and its write-ahead log, when there is one) to `dest`; returns `dest`."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, dest)
    wal = Path(f"{src}.wal")
    if wal.exists():
        shutil.copy(wal, Path(f"{dest}.wal"))
    return dest


def server_env(db: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The server's environment: ours without OPENAI_*/EVALDRIFT_*, then EVALDRIFT_DB=db and `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(CLEARED_ENV)}
    env["PYTHONUNBUFFERED"] = "1"
    env["EVALDRIFT_DB"] = str(db)
    env.update(extra or {})
    return env


class StreamlitServer:
    """`streamlit run app.py` on a free loopback port, serving the database file `db`.

    Pass a copy: the server process owns the file (DuckDB: one owning process)
    and writes to it. Use as a context manager; on exit the process group is
    terminated, then killed.

    Args:
        db: the DuckDB file the dashboard opens (EVALDRIFT_DB).
        env: extra environment variables for the server.
        log_dir: where stdout and stderr are written (a new temporary directory when None).
        port: the port (a free one when None).
        timeout: seconds to wait for /_stcore/health to answer "ok".
        script: the script to serve (app.py; the page benchmark serves a one-line floor page too).
        args: more `streamlit run` options (e.g. --secrets.files PATH for a test's login settings).
        cwd: the checkout to serve from (this one; the page benchmark serves an older revision's too).
    """

    def __init__(self, db: Path, *, env: Mapping[str, str] | None = None, log_dir: Path | None = None,
                 port: int | None = None, timeout: float = WAIT_S, script: str | Path = APP,
                 args: tuple[str, ...] = (), cwd: Path = ROOT) -> None:
        self.db = Path(db)
        self.cwd = Path(cwd)
        self.args = tuple(args)
        self.script = str(script)
        self.port = port or free_port()
        self.log_dir = Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="evaldrift-e2e-"))
        self.stdout_path = self.log_dir / "streamlit.stdout.log"
        self.stderr_path = self.log_dir / "streamlit.stderr.log"
        self.env = server_env(self.db, env)
        self.timeout = timeout
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def command(self) -> list[str]:
        return [sys.executable, "-m", "streamlit", "run", self.script, "--server.port", str(self.port),
                "--server.address", "127.0.0.1", "--server.headless", "true",
                "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none", *self.args]

    def start(self) -> StreamlitServer:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(self.command, cwd=self.cwd, env=self.env, stdout=out, stderr=err,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_healthy(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + self.timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {self.proc.returncode} before answering:\n{self.output()}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=5) as r:
                    if r.read().strip() == b"ok":
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not answer {self.url}/_stcore/health within {self.timeout:.0f} s:"
                                   f"\n{self.output()}")
            time.sleep(0.25)

    def stop(self) -> None:
        """Terminate the server's process group; kill it if it is still there after 10 s."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=grace)
                return
            except subprocess.TimeoutExpired:
                continue

    def stdout(self) -> str:
        return self.stdout_path.read_text(encoding="utf-8", errors="replace") if self.stdout_path.exists() else ""

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace") if self.stderr_path.exists() else ""

    def output(self) -> str:
        """Both captured streams, for a failure message or a grep."""
        return f"--- stdout ({self.stdout_path})\n{self.stdout()}\n--- stderr ({self.stderr_path})\n{self.stderr()}"

    def __enter__(self) -> StreamlitServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


# -- Chromium ---------------------------------------------------------------------------------------
def _unavailable(reason: str) -> NoReturn:
    """Skip on a workstation; fail in CI, whose setup (.ci/run) installs Chromium and Playwright."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI must provide it (.ci/run installs it)")
    pytest.skip(f"{reason} (install it, or run bash .ci/run, to run the browser tests)")


def launch_chromium(playwright: Playwright) -> Browser:
    """Debian's Chromium at /usr/bin/chromium, headless, through a running Playwright."""
    if not CHROMIUM.exists():
        _unavailable(f"no Chromium at {CHROMIUM}")
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS), headless=True)


@contextmanager
def chromium() -> Iterator[Browser]:
    """Playwright's sync API with /usr/bin/chromium; yields the browser and closes both after."""
    if not CHROMIUM.exists():
        _unavailable(f"no Chromium at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright is not installed (pip install -r tests/requirements.txt)")
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            yield browser
        finally:
            browser.close()


def new_page(browser: Browser, *, timeout: float = WAIT_S) -> Page:
    """A page in a fresh browser context (its own Streamlit session), at a desktop size, patient."""
    context = browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
    context.set_default_timeout(timeout * 1000)
    return context.new_page()


@pytest.fixture(scope="module", name="tabs")
def module_tabs(browser: Browser) -> Iterator[BrowserContext]:
    """One browser context for a test module: each test opens its own tab in it (its own Streamlit session), and
    the tabs share the context's HTTP and code caches, so a page load does not fetch and compile the app's scripts
    anew (measured on the demo: about a third less Chromium CPU per load than in a fresh context)."""
    context = browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
    context.set_default_timeout(WAIT_S * 1000)
    try:
        yield context
    finally:
        context.close()


class ReusedTab:
    """One tab in `context` that tests take in turn (a test module's `page`, a signed-in user's tab): made when
    first taken, and again if a test closed it."""

    def __init__(self, context: BrowserContext) -> None:
        self.context = context
        self.page: Page | None = None

    def take(self) -> Page:
        if self.page is None or self.page.is_closed():
            self.page = self.context.new_page()
        return self.page

    def hand_back(self) -> None:
        """Leave the tab blank at the desktop size for the next test; a tab that will not go is closed."""
        page = self.page
        if page is None or page.is_closed():
            return
        try:
            page.set_viewport_size(VIEWPORT)  # type: ignore[arg-type]
            page.unroute_all(behavior="ignoreErrors")
            page.goto("about:blank", timeout=WAIT_S * 1000)
        except Exception:   # a test that ended mid-navigation or with a dialog open: the next test gets a new tab
            page.close()


@pytest.fixture(scope="module")
def _module_tab(tabs: BrowserContext) -> Iterator[ReusedTab]:
    tab = ReusedTab(tabs)
    try:
        yield tab
    finally:
        if tab.page is not None and not tab.page.is_closed():
            tab.page.close()


@pytest.fixture(name="page")
def tab_page(_module_tab: ReusedTab) -> Iterator[Page]:
    """The module's tab in its context (`tabs`), blank, at the desktop size. Each test's first navigation opens a
    Streamlit session of its own (loading a page ends the tab's last session), while the tab's renderer process is
    kept: measured on the demo, a page load in a reused tab costs Chromium about 2.2 CPU s against 3.9 s in a new
    tab (1.9 s against 2.8 s of wall time). A test that needs two sessions at once opens a second tab itself."""
    try:
        yield _module_tab.take()
    finally:
        _module_tab.hand_back()


# -- reading the page -------------------------------------------------------------------------------
_SETTLED_JS = """([idle, status, skeleton, chart]) => {
    if (!document.querySelector(idle)) return false;
    if (document.querySelector(status) || document.querySelector(skeleton)) return false;
    return Array.from(document.querySelectorAll(chart)).every(c => c.querySelector('.main-svg'));
}"""


def wait_for_app(page: Page, *, timeout: float = WAIT_S, quiet: float = 0.5) -> None:
    """Wait until Streamlit has finished running the page's script and drawn its output.

    Settled means: the app root reports data-test-script-state="notRunning", no
    status widget ("Running..."/"Stop") and no loading skeleton is shown, and
    every Plotly chart has drawn its SVG; and it stays so for `quiet` seconds,
    because a finished run is often followed by another (st.navigation, query
    parameters written back to the URL, st.switch_page).
    """
    deadline = time.monotonic() + timeout
    page.wait_for_selector(APP_ROOT, state="attached", timeout=timeout * 1000)
    args = [APP_IDLE, STATUS_WIDGET, SKELETON, PLOTLY_CHART]
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"the page never settled within {timeout:.0f} s: {page.url}")
        page.wait_for_function(_SETTLED_JS, arg=args, timeout=left * 1000, polling=100)
        time.sleep(quiet)
        if page.evaluate(_SETTLED_JS, args):
            return


def exceptions_shown(page: Page) -> list[str]:
    """The texts of the exception boxes Streamlit shows when a script raises."""
    return [e.inner_text() for e in page.locator(EXCEPTION).all()]


def main_text(page: Page) -> str:
    """The visible text of the main area (not the sidebar)."""
    return page.locator(MAIN).inner_text()


_CONTENT_HEIGHT_JS = """(main) => {
    const el = document.querySelector(main);
    return Math.max(document.body.scrollHeight, el ? el.scrollHeight : 0);
}"""
SHOT_MAX_HEIGHT = 12_000


def screenshot(page: Page, name: str, *, full_page: bool = True) -> Path:
    """Write artifacts/screenshots/<name>.png (git-ignored) and return its path.

    Streamlit scrolls inside its main area, not the document, so Playwright's
    own full_page sees one viewport; the whole page is taken by growing the
    viewport to the content's height (capped), then restoring it.
    """
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    size = page.viewport_size
    height = int(page.evaluate(_CONTENT_HEIGHT_JS, MAIN)) if full_page and size else 0
    if size and height > size["height"]:
        page.set_viewport_size({"width": size["width"], "height": min(height, SHOT_MAX_HEIGHT)})
        try:
            page.wait_for_timeout(500)   # let data grids and charts draw the rows that came into view
            page.screenshot(path=str(path))
        finally:
            page.set_viewport_size(size)
    else:
        page.screenshot(path=str(path))
    return path
