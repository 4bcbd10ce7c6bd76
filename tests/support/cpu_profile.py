"""Per-test CPU and wall time, written as JSON lines when EVALDRIFT_CPU_PROFILE names a file (one per worker).

CPU is this process's user+system time plus that of its children once waited (resource.RUSAGE_CHILDREN), so a
server a module starts is charged to the test that stops it. Setup and teardown count with the test they serve.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator

import pytest


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
    start = time.monotonic()
    yield
    wall = time.monotonic() - start
    self1, kids1 = _cpu()
    with open(f"{target}.{worker}", "a") as out:
        out.write(json.dumps({"test": item.nodeid, "worker": worker, "wall": round(wall, 3),
                              "cpu": round(self1 - self0, 3), "children": round(kids1 - kids0, 3),
                              "load": os.getloadavg()[0], "at": time.time()}) + "\n")
