"""The demo database built on the dashboard's first start, in the background, with progress (issue 14 item 1).

The first page a newcomer opens should not be a spinner for the length of
the build. The dashboard starts one build per process on a background thread
(worker processes judge the runs; nothing here calls Streamlit) and the page
shows how many of the nightly runs are judged, reading this object, until
the file appears whole (lib.demo writes it aside and moves it in place).
"""

from __future__ import annotations

import threading
from pathlib import Path

from lib.demo import N_RUNS, build_demo


class DemoBuild:
    """One background build of the demo at `path`: progress, and the error if it failed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.done = 0
        self.total = N_RUNS
        self.error = ""
        self._thread = threading.Thread(target=self._run, name="evaldrift-demo-build", daemon=True)

    def _run(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            build_demo(self.path, progress=self._progress)
        except Exception as exc:   # shown on the page; the next start tries again
            self.error = f"{type(exc).__name__}: {exc}"

    def _progress(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    @property
    def finished(self) -> bool:
        return self.path.exists()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()


_BUILDS: dict[Path, DemoBuild] = {}
_LOCK = threading.Lock()


def demo_build(path: str | Path) -> DemoBuild:
    """The process's build of the demo at `path`, started on first call (again after a failed one)."""
    key = Path(path).resolve()
    with _LOCK:
        build = _BUILDS.get(key)
        if build is None or (build.error and not build.running):
            build = _BUILDS[key] = DemoBuild(key)
            build._thread.start()
        return build


__all__ = ["DemoBuild", "demo_build"]
