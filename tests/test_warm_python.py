"""The tests' warm interpreter (tests/support/warm_python.py) runs a script as `python [options] script` would, a
module as `python -m module` would, and ends and reports as that process would when signalled."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.warm_python import WarmPython

SCRIPT = "import json, sys; print(json.dumps({'argv': sys.argv[1:], 'isolated': sys.flags.isolated}))"


@pytest.mark.parametrize(("flags", "args", "code", "out"), [
    ((), ["x", "-I"], 0, '{"argv": ["-I"], "isolated": 0}'),           # options after the script are its own
    (("-I",), ["-I", "x"], 0, None),                                     # an option the warm process runs with
    ((), ["-I", "x"], 2, ""),                                            # one it does not: refused, not ignored
])
def test_a_warm_python_runs_the_script_with_its_arguments_and_only_the_options_it_was_started_with(
        tmp_path: Path, flags: tuple[str, ...], args: list[str], code: int, out: str | None) -> None:
    script = tmp_path / "show.py"
    script.write_text(SCRIPT, encoding="utf-8")
    argv = [str(script) if a == "x" else a for a in args]
    with WarmPython(sys.executable, ("json",), flags=flags) as warm:
        proc = subprocess.run([str(warm.path), *argv], capture_output=True, text=True, timeout=30)
    assert proc.returncode == code, proc.stderr
    if out is None:
        assert proc.stdout.strip() == '{"argv": [], "isolated": 1}'
    else:
        assert proc.stdout.strip() == out
    if code == 2:
        assert "-I needs a warm interpreter started with it" in proc.stderr


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WarmPython]:
    with WarmPython(sys.executable, ("json",)) as running:
        yield running


def test_a_warm_python_runs_a_module_as_python_m_does(warm: WarmPython, tmp_path: Path) -> None:
    # how the test dashboards start: `python -m streamlit run app.py ...`, the module found from the working folder
    (tmp_path / "shown.py").write_text("import json, sys; print(json.dumps({'name': __name__, 'argv': sys.argv,"
                                       " 'path0': sys.path[0]}))", encoding="utf-8")
    proc = subprocess.run([str(warm.path), "-m", "shown", "run", "-m", "x"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"name": "__main__", "argv": [str(tmp_path / "shown.py"), "run", "-m", "x"],
                                       "path0": str(tmp_path)}


# a command that says its pid, then waits; a SIGTERM ends it with exit code 3, after a line on its stdout
WAITER = """import os, signal, sys, time
def stop(*_):
    print("stopping", flush=True)
    sys.exit(3)
signal.signal(signal.SIGTERM, stop)
print(os.getpid(), flush=True)
time.sleep(60)
"""


def _gone(pid: int, timeout: float = 10.0) -> bool:
    """Whether process `pid` ends (or is a zombie) within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.02)
    return False


def _waiter(warm: WarmPython, tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    """The WAITER run warm, as tests/support/browser.py starts a dashboard: in a session of its own."""
    (tmp_path / "waiter.py").write_text(WAITER, encoding="utf-8")
    client = subprocess.Popen([str(warm.path), str(tmp_path / "waiter.py")], stdout=subprocess.PIPE, text=True,
                              stdin=subprocess.DEVNULL, start_new_session=True)
    assert client.stdout is not None
    child = int(client.stdout.readline())
    assert child != client.pid and os.getpgid(child) != client.pid   # forked by the warm process, not the client
    return client, child


def test_a_sigterm_to_the_clients_group_ends_the_forked_child_and_its_exit_code_comes_back(
        warm: WarmPython, tmp_path: Path) -> None:
    # StreamlitServer.stop: SIGTERM to the process group it started
    client, child = _waiter(warm, tmp_path)
    os.killpg(client.pid, signal.SIGTERM)
    assert client.wait(timeout=30) == 3
    assert client.stdout is not None and client.stdout.read() == "stopping\n"
    assert _gone(child)


def test_a_sigkilled_client_gets_its_child_killed_and_a_killed_child_its_client(warm: WarmPython,
                                                                                 tmp_path: Path) -> None:
    client, child = _waiter(warm, tmp_path)
    os.killpg(client.pid, signal.SIGKILL)   # StreamlitServer.stop's last resort: nothing is passed on
    assert client.wait(timeout=30) == -signal.SIGKILL
    assert _gone(child), "the SIGKILLed client's child still runs"
    client, child = _waiter(warm, tmp_path)
    os.kill(child, signal.SIGKILL)          # the child dies of a signal: its client reports the same
    assert client.wait(timeout=30) == -signal.SIGKILL
