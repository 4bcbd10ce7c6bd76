"""When a browser test may read the page: `wait_for_app` and the script runs it follows (tests/support/browser.py).

Every browser check reads the page after `wait_for_app`, so a wait that returns between two script runs (a click's
rerun not started yet, st.rerun's next run not started yet) would let a check read a stale page. The rule is
tested frame by frame on Streamlit's own messages, then on a small app in the real browser.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from tests.support import browser as browser_support
from tests.support.browser import ScriptRuns, StreamlitServer, chromium, follow, main_text, wait_for_app, watch

EARLY = ForwardMsg.FINISHED_EARLY_FOR_RERUN


class Socket:
    """What ScriptRuns needs of Playwright's WebSocket: its URL and its frame events."""

    def __init__(self, url: str = "ws://127.0.0.1:1/_stcore/stream") -> None:
        self.url = url
        self.handlers: dict[str, object] = {}

    def on(self, event: str, handler: object) -> None:
        self.handlers[event] = handler

    def send(self, kind: str) -> None:
        msg = BackMsg()
        if kind == "rerun":
            msg.rerun_script.query_string = ""
        elif kind == "file_urls":
            msg.file_urls_request.request_id = "r1"
        else:
            msg.app_heartbeat = True
        self.handlers["framesent"](msg.SerializeToString())  # type: ignore[operator]

    def receive(self, kind: str, status: int = ForwardMsg.FINISHED_SUCCESSFULLY) -> None:
        msg = ForwardMsg()
        if kind == "new_session":
            msg.new_session.SetInParent()
        elif kind == "finished":
            msg.script_finished = status   # type: ignore[assignment]
        elif kind == "file_urls":
            msg.file_urls_response.response_id = "r1"
        else:
            msg.delta.SetInParent()
        self.handlers["framereceived"](msg.SerializeToString())  # type: ignore[operator]


class Request:
    """What ScriptRuns needs of Playwright's Request: its URL."""

    def __init__(self, url: str) -> None:
        self.url = url


UPLOAD = Request("http://127.0.0.1:1/_stcore/upload_file/session/file")
OTHER_REQUEST = Request("http://127.0.0.1:1/static/js/index.js")


def play(steps: list[tuple], socket: Socket | None = None) -> ScriptRuns:
    runs = ScriptRuns()
    socket = socket or Socket()
    runs.opened(socket)  # type: ignore[arg-type]
    for step in steps:
        if step[0] in ("request_sent", "request_done"):
            getattr(runs, step[0])(step[1])
        else:
            getattr(socket, step[0])(*step[1:])
    return runs


@pytest.mark.parametrize(("steps", "idle"), [
    ([], True),                                                          # opened, nothing asked yet
    ([("send", "rerun")], False),                                        # asked, not started
    ([("send", "rerun"), ("receive", "new_session")], False),            # started, not finished
    ([("send", "rerun"), ("receive", "new_session"), ("receive", "delta")], False),
    ([("send", "rerun"), ("receive", "new_session"), ("receive", "finished")], True),
    ([("send", "rerun"), ("receive", "new_session"), ("receive", "finished", EARLY)], False),   # st.rerun: more
    ([("send", "rerun"), ("receive", "new_session"), ("receive", "finished", EARLY), ("receive", "new_session"),
      ("receive", "finished")], True),                                   # ... and the run it asked for ended
    ([("send", "rerun"), ("receive", "new_session"), ("receive", "finished"), ("send", "rerun")], False),  # a click
    # a click while a run ends: that run's end crosses the request, whose own run has not started
    ([("send", "rerun"), ("receive", "new_session"), ("send", "rerun"), ("receive", "finished")], False),
    ([("send", "rerun"), ("receive", "new_session"), ("receive", "finished"), ("send", "heartbeat")], True),
    ([("send", "rerun"), ("receive", "new_session"), ("receive", "finished", ForwardMsg.FINISHED_WITH_COMPILE_ERROR)],
     True),
    # a file upload: where to put it (asked, answered), the file itself (sent, done), then the rerun it asks for
    ([("send", "file_urls")], False),
    ([("send", "file_urls"), ("receive", "file_urls")], True),
    ([("send", "file_urls"), ("receive", "file_urls"), ("request_sent", UPLOAD)], False),
    ([("send", "file_urls"), ("receive", "file_urls"), ("request_sent", UPLOAD), ("request_done", UPLOAD)], True),
    ([("request_sent", OTHER_REQUEST)], True),                         # a script or a style sheet: no run
])
def test_a_page_is_idle_only_when_no_run_is_asked_for_or_under_way(steps: list[tuple], idle: bool) -> None:
    runs = play(steps)
    assert runs.known
    assert runs.idle is idle


def test_frames_of_another_connection_or_a_page_not_watched_from_its_start_decide_nothing() -> None:
    assert not ScriptRuns().known and not ScriptRuns().idle          # the connection was never seen opening
    other = Socket("ws://127.0.0.1:1/some/other/socket")
    runs = ScriptRuns()
    runs.opened(other)  # type: ignore[arg-type]
    assert not runs.known and other.handlers == {}
    old, new = Socket(), Socket()
    runs.opened(old)  # type: ignore[arg-type]
    runs.opened(new)  # type: ignore[arg-type]   # the page reconnected: only the new connection counts
    old.send("rerun")
    assert runs.idle
    new.send("rerun")
    assert not runs.idle


# -- in the browser ---------------------------------------------------------------------------------------------
APP = '''
import time
import streamlit as st

n = st.session_state["n"] = st.session_state.get("n", 0) + 1
if n == 1:                      # the first run asks for another at once (st.rerun), which draws late
    st.rerun()
if n == 2:
    time.sleep(1.0)
st.write(f"run {n}")
if st.button("Slow"):           # a click whose run says so late
    time.sleep(1.0)
    st.write("clicked")
if st.button("Switch"):
    st.switch_page("pages/other.py")
# a click whose callback runs before its run starts
st.button("Callback", key="Callback", on_click=lambda: time.sleep(1.0))
if st.session_state.get("Callback"):
    st.write("called back")
'''
OTHER = '''
import time
import streamlit as st

time.sleep(1.0)
st.write("the other page")
st.write(f"asked for {st.query_params.get('q')}, run {st.session_state.get('n')}")
'''


@pytest.fixture(scope="module")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamlitServer]:
    folder = tmp_path_factory.mktemp("settle-app")
    (folder / "app.py").write_text(APP, encoding="utf-8")
    (folder / "pages").mkdir()
    (folder / "pages" / "other.py").write_text(OTHER, encoding="utf-8")
    with StreamlitServer(folder / "none.duckdb", script="app.py", cwd=folder) as server:
        yield server


def test_wait_for_app_returns_after_the_run_a_rerun_a_click_or_a_page_switch_asked_for(
        app_server: StreamlitServer) -> None:
    with chromium():   # in the kept tab (watched from its start, as a new context's tabs are): no cold load
        assert browser_support.KEPT is not None
        page = browser_support.KEPT.kept_tab().take()
        page.goto(app_server.url)
        wait_for_app(page)
        assert "run 2" in main_text(page)              # not the first run's empty page: st.rerun's run, drawn
        runs = watch(page)
        assert runs.known and runs.idle                # Streamlit's own frames were read, and said so

        started = time.monotonic()
        page.get_by_role("button", name="Slow").click()
        wait_for_app(page)
        assert "clicked" in main_text(page) and "run 3" in main_text(page)
        assert time.monotonic() - started >= 1.0

        page.get_by_role("button", name="Callback").click()
        wait_for_app(page)
        assert "called back" in main_text(page)

        page.get_by_role("button", name="Switch").click()
        wait_for_app(page)
        assert "the other page" in main_text(page)
        assert runs.idle

        # follow(): as the dashboard's own links, no page load (the window keeps what it held), the same session
        # (its count goes on), the query given, and back only once the slow page has drawn
        page.goto(app_server.url)
        wait_for_app(page)
        page.evaluate("() => { window.kept = 1 }")
        started = time.monotonic()
        follow(page, app_server.url.rstrip("/") + "/other?q=seven")
        assert "asked for seven, run 2" in main_text(page)        # a new session would have no run yet (None)
        assert page.evaluate("() => window.kept") == 1 and time.monotonic() - started >= 1.0
        follow(page, app_server.url)
        assert "run 3" in main_text(page) and page.evaluate("() => window.kept") == 1   # a new session: run 2
        assert runs.idle


# -- the Chromium kept from module to module ---------------------------------------------------------------------
def test_a_module_hands_the_next_the_kept_tab_with_no_site_data_and_its_home_port(
        app_server: StreamlitServer, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The kept tab (tests/support/browser.py `_Kept`) saves the next module's first page load its compiling, and
    must hand over nothing a site kept: a module's cookies, local or session storage would otherwise reach the next
    module's dashboard, on the same port."""
    assert browser_support.KEPT is not None      # tests/conftest.py keeps one Chromium a test process
    seen = ("() => [document.cookie.split('; ').includes('left=1'), localStorage.getItem('left'),"
            " sessionStorage.getItem('left')]")
    with chromium():                              # one module's browser block
        tab = browser_support.KEPT.kept_tab().take()
        tab.goto(app_server.url)
        wait_for_app(tab)
        tab.evaluate("() => { document.cookie = 'left=1'; localStorage.setItem('left', '1');"
                     " sessionStorage.setItem('left', '1') }")
        assert tab.evaluate(seen) == [True, "1", "1"]
    with chromium():                              # the next module's
        again = browser_support.KEPT.kept_tab().take()
        assert again is tab and again.url == "about:blank"
        again.goto(app_server.url)
        wait_for_app(again)
        assert again.evaluate(seen) == [False, None, None]
    # the module's dashboard has the process's home port; a second one at once takes a free port; once the first
    # stopped, the next one made takes the home port again: the same origin as the last module's
    home = browser_support._HOME[0]
    assert app_server.port == home
    folder = tmp_path_factory.mktemp("home-port")
    with StreamlitServer(folder / "a.duckdb", script="app.py", cwd=app_server.cwd) as second:
        assert second.port != home
    app_server.stop()
    try:
        with StreamlitServer(folder / "b.duckdb", script="app.py", cwd=app_server.cwd) as next_one:
            assert next_one.port == home
    finally:
        app_server.start()


def test_a_test_process_leaves_no_server_log_folder_behind(tmp_path) -> None:
    """A server given no log folder writes its logs to a temporary one, which is gone when the test process ends
    (before, every run left one folder a server under /tmp: 97 of them here after a day's runs)."""
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path; from tests.support.browser import StreamlitServer; "
            "print(StreamlitServer(Path(sys.argv[1])).log_dir)")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "evals.duckdb")], capture_output=True,
                          text=True, timeout=60, cwd=browser_support.ROOT)
    assert proc.returncode == 0, proc.stderr
    folder = proc.stdout.strip()
    assert "evaldrift-e2e-" in folder and not os.path.exists(folder)
