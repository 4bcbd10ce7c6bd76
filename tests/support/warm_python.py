"""A stand-in interpreter path for a Python with its heavy imports done once per test session.

The Ragas adapter starts `EVALDRIFT_RAGAS_PYTHON ragas_worker.py ...` for every call, and importing Ragas costs
about 5 s of CPU each time; an ablation calls it once per arm. The dashboards the browser tests start each spent
about 1.2 CPU s importing Streamlit, pandas, DuckDB and the rest. `WarmPython(python, modules)` starts
tests/support/tools/warm_python.py in that Python (the modules imported once) and writes `path`, an executable
that runs a command the way `python script args` or `python -m module args` does, in a child forked from the warm
process: the same interpreter, fed the caller's stdin, stdout, stderr, environment and folder. The child is in a
session of its own: a signal to the client (`path`'s process) goes on to the child's process group, the client
SIGKILLed gets it SIGKILLed, and the client exits with the child's status. With WARM_PYTHON_PID_FILE in its
environment (taken out of the command's), the client writes the child's pid there (the process that does the work).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from types import TracebackType

SERVER = Path(__file__).with_name("tools") / "warm_python.py"
CLIENT = """#!{python} -S
import json, os, signal, socket, sys
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect({socket!r})
pid_file = os.environ.pop("WARM_PYTHON_PID_FILE", None)
body = json.dumps({{"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}}).encode()
request = len(body).to_bytes(8, "big") + body
conn.sendall(request[socket.send_fds(conn, [request], [0, 1, 2]):])
def pass_on(number, _):   # a signal to this process goes on to the child's process group
    try:
        conn.send(bytes([number]))
    except OSError:
        pass
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(sig, pass_on)
replies = conn.makefile("rb")
pid = replies.readline().strip()
if pid and pid_file:
    with open(pid_file + ".part", "w") as out:
        out.write(pid.decode())
    os.replace(pid_file + ".part", pid_file)
code = replies.readline().strip()
if not code:
    sys.exit(70)   # the warm process went away
if int(code) < 0:   # the child died of a signal: so does its client
    if -int(code) not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(-int(code), signal.SIG_DFL)
    os.kill(os.getpid(), -int(code))
sys.exit(int(code))
"""


class WarmPython:
    """A warm `python` (a fork server in `python` with `modules` imported); use as a context manager.

    Args:
        python: the interpreter of the tool's environment.
        modules: modules to import once, before any command.
        env: extra environment of the warm process (what must be set before those imports).
        flags: interpreter options of the warm process (e.g. "-I"); a command may pass these, and only these.
    """

    def __init__(self, python: str | Path, modules: tuple[str, ...], *, env: dict[str, str] | None = None,
                 flags: tuple[str, ...] = ()) -> None:
        self.python = str(python)
        self.flags = flags
        self.modules = modules
        self.env = {**os.environ, **(env or {})}
        self.folder = Path(tempfile.mkdtemp(prefix="warm-python-"))
        self.socket = self.folder / "s"
        self.path = self.folder / "python"
        self.proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> WarmPython:
        self.proc = subprocess.Popen([self.python, *self.flags, str(SERVER), str(self.socket), ",".join(self.modules)],
                                     env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            self.proc.kill()
            raise RuntimeError(f"the warm {self.python} did not start (exit {self.proc.wait()})")
        self.path.write_text(CLIENT.format(python=sys.executable, socket=str(self.socket)), encoding="utf-8")
        self.path.chmod(self.path.stat().st_mode | stat.S_IXUSR)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.proc is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()   # the warm process ends when its stdin closes (when this process ends, too)
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for leftover in (self.path, self.socket):
            leftover.unlink(missing_ok=True)
        self.folder.rmdir()
