"""The dashboard in a real browser: `streamlit run app.py` on a loopback port, and Debian's Chromium driving it.

- `StreamlitServer(db)`: a context manager that starts the dashboard on a copy
  of a database (the server process owns and writes that file), captures its
  stdout and stderr to files, waits for /_stcore/health, and ends its whole
  process group on exit. In the test session (`WARM_SERVERS`) the same command runs
  in a child forked from a warm interpreter (`warm_python`) that imported Streamlit,
  pandas, DuckDB and the rest once for the test process.
- `chromium()`: Playwright's sync API driving /usr/bin/chromium, headless; in
  the test session one Chromium a test process, kept from module to module
  (`_Kept`), and each dashboard on the process's home port (`home_port`).
  Missing Chromium skips the test on a workstation and fails it in CI, which
  installs it (.ci/run).
- `module_browser`, `module_tabs` and `tab_page`: fixtures (tests/conftest.py offers them to every module) giving
  the module its `browser`, one browser context in it (`tabs`) and one tab in that, reused by each test as `page`.
- `wait_for_app(page)`: until Streamlit has finished running the page script
  and drawn what it sent (no status widget, no skeleton, every Plotly chart
  and data grid drawn), with no run or upload asked for and not finished, as
  the page's WebSocket frames tell (`watch`, `ScriptRuns`).
- `follow(page, url)`: open another page of the dashboard shown in `page` as its own
  links do, in the same session and without a page load (a pasted link is `page.goto`).
- `screenshot(page, name)`: artifacts/screenshots/<name>.png under the repo
  root (git-ignored: test artifacts, never committed).
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, NoReturn

import pytest

from tests.support.warm_python import WarmPython

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page, Playwright, Request, WebSocket

ROOT = Path(__file__).resolve().parents[2]
APP = "app.py"
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run")
VIEWPORT = {"width": 1400, "height": 1000}
# Every test context asks for reduced motion: Streamlit then skips its decorative CSS animations, and a page load
# cost Chromium 6% less CPU (5.15 against 5.47 s for four loads of the demo's Trends and Overview, four rounds each).
# Nothing a test checks moves.
CONTEXT = {"viewport": VIEWPORT, "reduced_motion": "reduce"}   # every test context's options
CLEARED_ENV = ("OPENAI_", "EVALDRIFT_")   # a developer's settings never reach the server under test
WAIT_S = 60.0                             # generous: the test machine is shared and has 2 cores

# Streamlit 1.67's DOM: the app root reports its script state; a status widget ("Stop") is shown while
# the script runs; skeletons stand in for elements whose frontend code is still loading (Plotly).
APP_ROOT = '[data-testid="stApp"]'
APP_IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
STATUS_WIDGET = '[data-testid="stStatusWidget"]'
SKELETON = '[data-testid="stSkeleton"]'
PLOTLY_CHART = '[data-testid="stPlotlyChart"]'
DATA_GRID = '[data-testid="stDataFrame"]'
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


_HOME: list[int] = []        # this process's home ports, in the order first chosen
_TAKEN: set[int] = set()     # ports of this process's servers made and not yet stopped
HOMES = 3                    # a module serves three dashboards at once at most (tests/test_browser_links.py: two)


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as Tornado binds: a closed server's port is free
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def home_port() -> int:
    """The first of this process's home ports that none of its servers holds, else a new home port (up to HOMES),
    else a free port.

    A test module's dashboard thus has the origin the previous module's had, so the Chromium kept from module to
    module (`chromium()`) finds the app's scripts compiled in its cache: a first page load of an origin cost
    Chromium 3.1 CPU s here, a later one 1.4 s (Trends of the demo, one tab). A module's second dashboard at once
    takes the second home port, so it too finds its scripts compiled when an earlier module served one there."""
    for port in _HOME:
        if port not in _TAKEN and _bindable(port):
            return port
    if len(_HOME) < HOMES:
        _HOME.append(free_port())
        return _HOME[-1]
    return free_port()


def copy_db(src: Path, dest: Path) -> Path:
    """Copy a DuckDB file (and its write-ahead log, when there is one) to `dest`; returns `dest`."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, dest)
    wal = Path(f"{src}.wal")
    if wal.exists():
        shutil.copy(wal, Path(f"{dest}.wal"))
    return dest


# The dashboard's third-party imports up to its first pages (what `python -X importtime` listed for the Overview and
# Trends of the demo), done once a test process in a warm interpreter: never evaldrift's own lib, app or pages, which
# import in each server after its environment and folder are set, as in a real `streamlit run`. Streamlit reads its
# configuration (.streamlit/config.toml of the folder, --server.* options, STREAMLIT_* variables) in `streamlit run`
# itself, after the fork, and seeds nothing at import.
SERVER_MODULES = (
    "streamlit", "streamlit.web.cli", "streamlit.web.bootstrap", "streamlit.web.server.app_discovery",
    "streamlit.web.server.starlette.starlette_agent_routes", "streamlit.web.skills",
    "streamlit.components.v2.manifest_scanner", "streamlit.dataframe.lazy_df_adapters",
    "streamlit.runtime.scriptrunner.magic_funcs", "streamlit.watcher.polling_path_watcher",
    "uvicorn", "uvicorn.protocols.http.h11_impl", "starlette.applications", "starlette.middleware.sessions",
    "starlette.staticfiles", "anyio._core._sockets", "anyio._core._synchronization", "anyio._core._streams",
    "websockets", "websockets.server", "websockets.datastructures", "websockets.extensions.permessage_deflate",
    "numpy", "pandas", "pyarrow", "pyarrow.parquet", "pyarrow.pandas_compat", "pyarrow.vendored.version", "duckdb",
    "pydantic", "pydantic.fields", "plotly.graph_objects", "plotly.io", "plotly.offline",
    "narwhals._pandas_like.namespace", "narwhals._pandas_like.dataframe",
)
WARM_SERVERS = False                  # tests/conftest.py: the test session's servers start warm; a benchmark's do not
_WARM: WarmPython | None = None       # this process's warm interpreter for its servers, started by the first


def warm_python() -> Path:
    """The client of this process's warm interpreter for dashboards (tests/support/warm_python.py), started the
    first time; `end_warm_python` (at the session's end, or the process's) ends it."""
    global _WARM
    if _WARM is None:
        warm = WarmPython(sys.executable, SERVER_MODULES, env={"PYTHONUNBUFFERED": "1"})
        warm.__enter__()
        _WARM = warm
        atexit.register(end_warm_python)
    return _WARM.path


def end_warm_python() -> None:
    """End this process's warm interpreter, if any (the servers forked from it and still running too)."""
    global _WARM
    warm, _WARM = _WARM, None
    if warm is not None:
        warm.__exit__(None, None, None)


def _gone(pid: int) -> bool:
    """Whether process `pid` has ended (gone, or a zombie its parent has yet to reap)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


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
        warm: run `command` in a child of this process's warm interpreter (`warm_python`): the same `python -m
            streamlit run ...`, its imports of Streamlit, pandas, DuckDB... done already, 1.2 CPU s less a server.
            `proc` is then the client, whose process group `stop` signals as ever; `pid` is the serving child.
            None: `WARM_SERVERS` (the test session's).
    """

    def __init__(self, db: Path, *, env: Mapping[str, str] | None = None, log_dir: Path | None = None,
                 port: int | None = None, timeout: float = WAIT_S, script: str | Path = APP,
                 args: tuple[str, ...] = (), cwd: Path = ROOT, warm: bool | None = None) -> None:
        self.warm = WARM_SERVERS if warm is None else warm
        self.db = Path(db)
        self.cwd = Path(cwd)
        self.args = tuple(args)
        self.script = str(script)
        self.port = port or home_port()
        _TAKEN.add(self.port)
        if log_dir is None:   # a folder of its own, removed when the test process ends (its failures quote the logs)
            log_dir = Path(tempfile.mkdtemp(prefix="evaldrift-e2e-"))
            atexit.register(shutil.rmtree, log_dir, ignore_errors=True)
        self.log_dir = Path(log_dir)
        self.stdout_path = self.log_dir / "streamlit.stdout.log"
        self.stderr_path = self.log_dir / "streamlit.stderr.log"
        self.pid_path = self.log_dir / "streamlit.pid"   # the warm client writes its child's pid there
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

    @property
    def pid(self) -> int:
        """The process serving the dashboard: `proc`'s, or when warm the child the warm interpreter forked for it."""
        assert self.proc is not None
        if not self.warm:
            return self.proc.pid
        deadline = time.monotonic() + 10
        while not self.pid_path.exists():   # written as soon as the child is forked, long before it answers
            assert time.monotonic() < deadline and self.proc.poll() is None, f"no server pid:\n{self.output()}"
            time.sleep(0.05)
        return int(self.pid_path.read_text())

    def start(self) -> StreamlitServer:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        _TAKEN.add(self.port)
        command, env = self.command, self.env
        if self.warm:
            self.pid_path.unlink(missing_ok=True)
            command = [str(warm_python()), *command[1:]]
            env = {**env, "WARM_PYTHON_PID_FILE": str(self.pid_path)}
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(command, cwd=self.cwd, env=env, stdout=out, stderr=err,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            self._wait_healthy()
        except RuntimeError:
            self.stop()
            if self.port not in _HOME or "already in use" not in self.output():
                raise
            self.port = free_port()   # another process took a home port in between: any free one will do
            return self.start()
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
        """Terminate the server's process group; kill it if it is still there after 10 s. When warm, the client
        passes the SIGTERM on to its child's group and exits with the child's status; a SIGKILLed client gets its
        child SIGKILLed by the warm interpreter: this waits for that child to be gone too (its port free)."""
        child = self.pid if self.warm and self.proc is not None and self.pid_path.exists() else None
        proc, self.proc = self.proc, None
        try:
            self._end(proc)
            deadline = time.monotonic() + 10
            while child is not None and not _gone(child) and time.monotonic() < deadline:
                time.sleep(0.02)
        finally:
            _TAKEN.discard(self.port)

    @staticmethod
    def _end(proc: subprocess.Popen[bytes] | None) -> None:
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


# -- what the page's connection says about its script runs ---------------------------------------------------
class ScriptRuns:
    """A page's Streamlit script runs as its WebSocket frames tell them (Playwright sees every frame): a run asked
    for (a `rerun_script` message sent) and not yet started (no `new_session` since), or started and not finished
    (no `script_finished` since). A run that ends early for a rerun (st.rerun, st.switch_page) counts as asked:
    the next one follows. A file upload in flight counts as asked too: its rerun is asked for when the file is in.
    `known` is False until this page's connection was seen opening, since a connection already open when watching
    began may be mid-run."""

    def __init__(self) -> None:
        self.socket: object = None
        self.asked = False
        self.running = False
        self.uploading = False              # upload URLs asked for and not yet given
        self.waited = False                 # wait_for_app has returned on this connection
        self.uploads: set[object] = set()   # files on their way to the server: a rerun is asked when they are in

    @property
    def known(self) -> bool:
        return self.socket is not None

    @property
    def idle(self) -> bool:
        return self.known and not (self.asked or self.running or self.uploading or self.uploads)

    def opened(self, socket: WebSocket) -> None:
        if not socket.url.endswith("/_stcore/stream"):
            return
        self.socket, self.asked, self.running, self.uploading = socket, False, False, False
        self.waited = False
        socket.on("framesent", lambda payload: self._sent(socket, payload))
        socket.on("framereceived", lambda payload: self._received(socket, payload))

    def request_sent(self, request: Request) -> None:
        if "/_stcore/upload_file/" in request.url:
            self.uploads.add(request)

    def request_done(self, request: Request) -> None:
        self.uploads.discard(request)

    def _sent(self, socket: WebSocket, payload: str | bytes) -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg

        if socket is not self.socket or not isinstance(payload, bytes):
            return
        kind = BackMsg.FromString(payload).WhichOneof("type")
        if kind == "rerun_script":
            self.asked = True
        elif kind == "file_urls_request":   # an upload begins: where to put the file, then the file, then a rerun
            self.uploading = True

    def _received(self, socket: WebSocket, payload: str | bytes) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        if socket is not self.socket or not isinstance(payload, bytes):
            return
        msg = ForwardMsg.FromString(payload)
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.asked, self.running = False, True
        elif kind == "file_urls_response":
            self.uploading = False
        elif kind == "script_finished":
            self.running = False
            self.asked = self.asked or msg.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN


_RUNS: weakref.WeakKeyDictionary[Page, ScriptRuns] = weakref.WeakKeyDictionary()


def watch(page: Page) -> ScriptRuns:
    """Follow `page`'s script runs from its next connection on (wait_for_app reads them)."""
    runs = _RUNS.get(page)
    if runs is None:
        runs = _RUNS[page] = ScriptRuns()
        page.on("websocket", runs.opened)
        page.on("request", runs.request_sent)
        page.on("requestfinished", runs.request_done)
        page.on("requestfailed", runs.request_done)
    return runs


def watch_context(context: BrowserContext) -> BrowserContext:
    """Follow the script runs of every tab opened in `context` from now on."""
    context.on("page", watch)
    return context


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


class _Kept:
    """The Chromium a test process keeps from one test module to the next, with one browser context and one tab in
    it that every module's `tabs` and `page` are (tests/conftest.py turns keeping on, and ends it at the session's
    end). Between modules the context forgets everything a site can keep (cookies, local and session storage,
    IndexedDB) but not its HTTP and code caches, so a module's first page load, on the home port
    (`home_port`), finds the app's scripts compiled."""

    def __init__(self) -> None:
        self.playwright: Playwright | None = None
        self.browser: Browser | None = None
        self.context: BrowserContext | None = None
        self.tab: ReusedTab | None = None
        self.depth = 0                      # chromium() blocks open
        self.origins: set[str] = set()      # origins the kept context may hold data of

    def open(self) -> Browser:
        if self.browser is None or not self.browser.is_connected():
            self.close()
            from playwright.sync_api import sync_playwright

            self.playwright = sync_playwright().start()
            self.browser = launch_chromium(self.playwright)
        return self.browser

    def kept_context(self) -> BrowserContext:
        browser = self.open()
        if self.context is None or self.context not in browser.contexts:
            self.context = watch_context(browser.new_context(**CONTEXT))  # type: ignore[arg-type]
            self.context.on("request", self._seen)
            self.tab = ReusedTab(self.context)
        self.context.set_default_timeout(WAIT_S * 1000)
        return self.context

    def _seen(self, request: Request) -> None:
        scheme, _, rest = request.url.partition("://")
        if scheme in ("http", "https"):
            self.origins.add(f"{scheme}://{rest.split('/', 1)[0]}")

    def kept_tab(self) -> ReusedTab:
        self.kept_context()
        assert self.tab is not None
        return self.tab

    def tidy(self, before: list[BrowserContext]) -> None:
        """Close the contexts opened since `before`; at the outermost block's end, also every page of the kept
        context but its tab, and blank that tab and forget the sites' data."""
        browser = self.browser
        if browser is None or not browser.is_connected():
            return
        for context in browser.contexts:
            if context is not self.context and context not in before:
                _quietly(context.close)
        if self.depth or self.context is None:
            return
        keep = self.tab.page if self.tab is not None else None
        for page in self.context.pages:
            if page is not keep:
                _quietly(page.close)
        if self.tab is not None:
            self.tab.hand_back()
        self.context.clear_cookies()
        origins, self.origins = sorted(self.origins), set()
        try:
            if origins:
                self._forget(keep, origins)
        except Exception:   # no tab to clear through, or it would not go: the next module gets a new context
            _quietly(self.context.close)
            self.context = self.tab = None

    def _forget(self, tab: Page | None, origins: list[str]) -> None:
        """Clear what the sites at `origins` keep in the kept context (not its HTTP and code caches) through `tab`."""
        if tab is None or tab.is_closed():
            raise RuntimeError("no tab")
        assert self.context is not None
        cdp = self.context.new_cdp_session(tab)
        try:
            for origin in origins:   # cookies, local storage, IndexedDB, Cache API: not the HTTP cache
                cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
        finally:
            cdp.detach()
        # A tab's session storage is cleared from a page of its origin: a blank one, answered here (the server
        # may be gone), then the tab goes blank again.
        tab.route("**/*", lambda route: route.fulfill(status=200, content_type="text/html", body=""))
        try:
            for origin in origins:
                tab.goto(f"{origin}/", wait_until="commit")
                tab.evaluate("() => sessionStorage.clear()")
        finally:
            tab.unroute_all(behavior="ignoreErrors")
            tab.goto("about:blank")

    def close(self) -> None:
        if self.browser is not None:
            _quietly(self.browser.close)
        if self.playwright is not None:
            _quietly(self.playwright.stop)
        self.playwright = self.browser = self.context = self.tab = None


def _quietly(action: Callable[[], object]) -> None:
    with suppress(Exception):   # already closed, or the browser went away: nothing left to tidy
        action()


KEPT: _Kept | None = None   # set by tests/conftest.py: one Chromium a test process


@contextmanager
def chromium() -> Iterator[Browser]:
    """Playwright's sync API with /usr/bin/chromium; yields the browser.

    Outside the test session: started and closed here. In it (`KEPT`): the process's Chromium, started on first
    use; the contexts opened in the block are closed at its end. Starting Playwright and Chromium cost about
    0.8 CPU s a module."""
    if not CHROMIUM.exists():
        _unavailable(f"no Chromium at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright is not installed (pip install -r tests/requirements.txt)")
    if KEPT is not None:
        browser = KEPT.open()
        before = list(browser.contexts)
        KEPT.depth += 1
        try:
            yield browser
        finally:
            KEPT.depth -= 1
            KEPT.tidy(before)
        return
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            yield browser
        finally:
            browser.close()


def new_page(browser: Browser, *, timeout: float = WAIT_S) -> Page:
    """A page in a fresh browser context (its own Streamlit session), at a desktop size, patient."""
    context = watch_context(browser.new_context(**CONTEXT))  # type: ignore[arg-type]
    context.set_default_timeout(timeout * 1000)
    return context.new_page()


@pytest.fixture(scope="module", name="browser")
def module_browser() -> Iterator[Browser]:
    """The test module's browser: the process's Chromium (`chromium()`), held open for the module. Every browser
    test takes this fixture (tests/conftest.py offers it); tests/test_shared_fixtures.py fails on a test file that
    launches its own."""
    with chromium() as browser:
        yield browser


@pytest.fixture(scope="module", name="tabs")
def module_tabs(browser: Browser) -> Iterator[BrowserContext]:
    """One browser context for a test module: each test opens its own tab in it (its own Streamlit session), and
    the tabs share the context's HTTP and code caches, so a page load does not fetch and compile the app's scripts
    anew (measured on the demo: about a third less Chromium CPU per load than in a fresh context). In the test
    session it is the kept context (`_Kept`), cleared of the module's site data at the module's end."""
    if KEPT is not None:
        yield KEPT.kept_context()
        return
    context = watch_context(browser.new_context(**CONTEXT))  # type: ignore[arg-type]
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
            watch(self.page)
        else:   # a tab opened since (a module's own) is in front, and Chromium draws a tab behind it lazily
            self.page.bring_to_front()
        return self.page

    def hand_back(self) -> None:
        """Leave the tab blank at the desktop size for the next test; a tab that will not go is closed."""
        page = self.page
        if page is None or page.is_closed():
            return
        try:
            page.unroute_all(behavior="ignoreErrors")
            page.goto("about:blank", timeout=WAIT_S * 1000)
            # resized once blank: a page left at another size would first be laid out and drawn again at this one
            # (Trends left at 1024 px: 0.12-0.2 CPU s blanked first against 0.18-0.42 s resized first)
            page.set_viewport_size(VIEWPORT)  # type: ignore[arg-type]
        except Exception:   # a test that ended mid-navigation or with a dialog open: the next test gets a new tab
            page.close()


@pytest.fixture(scope="module")
def _module_tab(tabs: BrowserContext) -> Iterator[ReusedTab]:
    if KEPT is not None and tabs is KEPT.context:
        yield KEPT.kept_tab()   # blanked and cleared when the module's browser block ends
        return
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
_SETTLED_JS = """([idle, status, skeleton, chart, grid]) => {
    if (!document.querySelector(idle)) return false;
    if (document.querySelector(status) || document.querySelector(skeleton)) return false;
    // a data grid, once mounted (its canvas), lists its header cells a moment after (offscreen too)
    const drawn = (g) => !g.querySelector('canvas') || g.querySelector('[role="columnheader"]');
    return Array.from(document.querySelectorAll(chart)).every(c => c.querySelector('.main-svg'))
        && Array.from(document.querySelectorAll(grid)).every(drawn);
}"""
QUIET_S = 0.5     # a page whose connection was not watched from its start: drawn and unchanged for this long
LOADED_S = 0.1    # a watched page's first wait on a connection (after a goto): nothing the test did can be pending
ACTED_S = 0.35    # a later wait (after a click, a key, a file): Streamlit sends some widgets' changes late (a data
                  # grid's selection, a slider's value: about 150-200 ms after the input), so the run it asks for
                  # must have been asked for by the end of this spell


def wait_for_app(page: Page, *, timeout: float = WAIT_S, quiet: float = QUIET_S) -> None:
    """Wait until Streamlit has finished running the page's script and drawn its output.

    Drawn means: the app root reports data-test-script-state="notRunning", no
    status widget ("Running..."/"Stop") and no loading skeleton is shown, every
    Plotly chart has drawn its SVG and every mounted data grid its header cells.
    Finished means, on a page whose connection was watched from its start
    (`watch`: every page of `new_page`, `tabs` and the module's `page`): no
    script run or upload asked for and not yet started, no run started and not
    finished (a run that ends early for another, st.rerun or st.switch_page,
    is followed by it), and so it stays for LOADED_S on the first wait after
    the page connected, ACTED_S on a later one. On a page not watched from its
    start, finished means drawn and unchanged for `quiet` seconds.
    """
    deadline = time.monotonic() + timeout
    runs = watch(page)
    page.wait_for_selector(APP_ROOT, state="attached", timeout=timeout * 1000)
    args = [APP_IDLE, STATUS_WIDGET, SKELETON, PLOTLY_CHART, DATA_GRID]
    spell = min(quiet, ACTED_S if runs.waited else LOADED_S) if runs.known else quiet
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"the page never settled within {timeout:.0f} s: {page.url}")
        page.wait_for_function(_SETTLED_JS, arg=args, timeout=left * 1000, polling=100)
        time.sleep(spell)
        if page.evaluate(_SETTLED_JS, args) and (runs.idle or not runs.known):   # evaluate: frames seen by now
            runs.waited = runs.known
            return


_FOLLOW_JS = """(url) => {
    // what the dashboard does when one of its own links is followed: the address changes without a page load and
    // Streamlit runs the page it names, with its query (its popstate handler: the same as the browser's Back)
    history.pushState({}, '', url);
    window.dispatchEvent(new PopStateEvent('popstate'));
}"""


def follow(page: Page, url: str, *, timeout: float = WAIT_S) -> None:
    """Open `url` of the dashboard already shown in `page` the way its own links and the sidebar do: in the same
    session, without loading the page again (Streamlit's frontend runs the page the address names, query and
    all), then `wait_for_app`. A pasted link, or a new session, is `page.goto`. In the same tab a page load cost
    Chromium 0.75-2.4 CPU s, this 0.24-0.79 s (the demo's Trends, Review, Run and Overview, three rounds).

    The page must be watched from its connection's start (`watch`), which every test tab is."""
    runs = watch(page)
    assert runs.known and runs.waited, "follow() needs a dashboard loaded and waited for in this tab first"
    if "#" not in url:      # Streamlit reruns on every such address; the frame asking for it may be read later
        runs.asked = True
    page.evaluate(_FOLLOW_JS, url)
    wait_for_app(page, timeout=timeout)


def selected(page: Page, key: str) -> str:
    """The value a keyed selectbox shows (its visible text, not its label)."""
    return page.locator(f".st-key-{key} input[role=combobox]").first.input_value().strip()


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
