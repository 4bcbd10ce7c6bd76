"""The command line called in this process: `lib.cli.parser.main` with its output captured, as a finished process.

Starting `python -m lib` costs about 2 s of imports each time; a test of what a
command prints and returns gets the same from `main(argv)` here. Tests of the
process boundary itself (the `python -m lib` entry, a pipe closed early, a
terminal on stderr, a second process holding the database) start a real one.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from lib.cli.parser import main

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    """os.environ replaced by `env` for the call (None: left as it is), then restored."""
    if env is None:
        yield
        return
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_cli(*args: object, env: Mapping[str, str] | None = None, cwd: Path = ROOT,
            stdin: str = "") -> subprocess.CompletedProcess[str]:
    """Run `python -m lib *args` in this process: its exit code, stdout and stderr, as subprocess.run returns them.

    Args:
        env: the whole environment of the call (default: this process's, which conftest has cleaned).
        cwd: the working folder of the call.
        stdin: what the command reads from standard input (not a terminal).
    """
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    saved_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with _environment(env), contextlib.chdir(cwd), contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:   # argparse: --help (0) and usage errors (2)
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        sys.stdin = saved_stdin
    return subprocess.CompletedProcess([sys.executable, "-m", "lib", *argv], int(code), out.getvalue(),
                                       err.getvalue())
