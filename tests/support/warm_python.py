"""A stand-in interpreter path for another tool's Python with its heavy imports done once per test session.

The Ragas adapter starts `EVALDRIFT_RAGAS_PYTHON ragas_worker.py ...` for every call, and importing Ragas costs
about 5 s of CPU each time; an ablation calls it once per arm. `WarmPython(python, modules)` starts
tests/support/tools/warm_python.py in that Python (the modules imported once) and writes `path`, an executable
that runs a script the way `python script args` does, in a child forked from the warm process: the same
interpreter, the same Ragas, the same worker script, fed the caller's stdin, environment and folder.
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
import json, os, socket, sys
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect({socket!r})
body = json.dumps({{"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}}).encode()
socket.send_fds(conn, [body], [0, 1, 2])
conn.shutdown(socket.SHUT_WR)
code = conn.recv(16)
sys.exit(int(code) if code else 70)
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
                                     env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
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
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for leftover in (self.path, self.socket):
            leftover.unlink(missing_ok=True)
        self.folder.rmdir()
