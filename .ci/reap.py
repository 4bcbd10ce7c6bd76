"""Run a command and wait for every process it leaves behind, so the CPU they spend is counted.

.ci/run prints the test step's CPU from bash's `times`, which counts only processes that were waited for. Chromium's
renderers and other grandchildren are orphaned when their parent exits first: without a subreaper they are
reparented to init, never waited for here, and their CPU (about a quarter of the test step's, measured by sampling
/proc) was missing from the figure. As a subreaper (Linux prctl) this process inherits them and waits for each, so
their CPU reaches bash's `times`.

An orphan still running REAP_WAIT seconds (default 60) after the command ended is a leak (a server a test never
stopped): it is named on stderr and killed, so a leak can neither hang CI nor go unseen.

Usage: python .ci/reap.py COMMAND [ARGS...]; exits with COMMAND's status.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36


def main(argv: list[str]) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:   # not Linux, or refused: run uncounted, say so
        print("reap.py: cannot become a subreaper; orphaned processes' CPU is not counted", file=sys.stderr)
    status = subprocess.call(argv)
    deadline = time.monotonic() + float(os.environ.get("REAP_WAIT", "60"))
    while _reap_one():
        if time.monotonic() > deadline:
            _kill_left()
            deadline = float("inf")
        time.sleep(0.05)
    return status


def _reap_one() -> bool:
    """Wait for any orphan that has ended; False when none is left."""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return False
    return True


def _kill_left() -> None:
    me = str(os.getpid())
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if fields[1] != me:   # the parent's pid
                continue
            pid = int(stat.parent.name)
            command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):   # ended while being read
            continue
        print(f"reap.py: killing pid {pid}, still running after the tests ended: {command[:200]}", file=sys.stderr)
        with contextlib.suppress(ProcessLookupError):   # it ended meanwhile
            os.kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
