"""Per-test CPU and wall time, written as JSON lines when EVALDRIFT_CPU_PROFILE names a file (one per worker).

CPU is this process's user+system time plus that of its children once waited (resource.RUSAGE_CHILDREN), so a
server a module starts is charged to the test that stops it. Setup and teardown count with the test they serve.
`machine` is the whole machine's busy CPU in the same time: the test's whole cost when one worker runs alone.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator

import pytest


def _machine_busy() -> float:
    """CPU seconds the whole machine has been busy (all but idle and iowait, /proc/stat): with one worker
    (-n 0), per test this counts what the children's figure cannot, such as Chromium's renderers."""
    with open("/proc/stat") as stat:
        ticks = [int(x) for x in stat.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def _cpu() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    target = os.environ.get("EVALDRIFT_CPU_PROFILE")
    if not target:
        yield
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    self0, kids0 = _cpu()
    busy0 = _machine_busy()
    start = time.monotonic()
    yield
    wall = time.monotonic() - start
    self1, kids1 = _cpu()
    busy = _machine_busy() - busy0
    with open(f"{target}.{worker}", "a") as out:
        out.write(json.dumps({"test": item.nodeid, "worker": worker, "wall": round(wall, 3),
                              "cpu": round(self1 - self0, 3), "children": round(kids1 - kids0, 3),
                              "machine": round(busy, 2), "load": os.getloadavg()[0], "at": time.time()}) + "\n")
