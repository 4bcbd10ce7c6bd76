"""The demo database built on the dashboard's first start, in the background, with progress (issue 14 item 1).

The first page a newcomer opens should not be a spinner for the length of
the build. The dashboard starts one build per process, in a child process
(`python -m lib.app.demo_start PATH`, which judges the runs on every core and
prints its progress); a thread reads that progress and the page shows how
many of the nightly runs are judged until the file appears whole (lib.jobs
writes it aside and moves it in place). A child process, not a thread of the
server: worker processes spawned from inside Streamlit would re-run the
dashboard's script in each worker.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from lib.core import settings
from lib.core.settings import ROOT


class DemoBuild:
    """One background build of the demo at `path`: progress, and the error if it failed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.done = 0
        self.total = 0   # the child's first line says how many runs (this module stays light: see start_early)
        self.error = ""
        self.rejudged = (0, 0)   # runs re-judged of those to re-judge, once every run is judged
        self._thread = threading.Thread(target=self._run, name="evaldrift-demo-build", daemon=True)

    def _run(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        child = subprocess.Popen([sys.executable, "-m", "lib.app.demo_start", str(self.path)], cwd=ROOT,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert child.stdout is not None
        for line in child.stdout:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "progress":
                self.done, self.total = int(parts[1]), int(parts[2])
            elif len(parts) == 3 and parts[0] == "rejudge":
                self.rejudged = (int(parts[1]), int(parts[2]))
        err = child.stderr.read() if child.stderr else ""
        if child.wait() != 0:   # shown on the page; the next start tries again
            self.error = err.strip().splitlines()[-1] if err.strip() else f"exit code {child.returncode}"

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


def start_early(secrets: dict[str, object] | None = None) -> None:
    """On a first start, start the demo build before the dashboard imports its own modules.

    app.py calls this first: the build then judges while the server imports pandas, DuckDB and the pages'
    code (about 2 CPU s), instead of after. It starts the build only when the configured database is the
    demo's and is not there yet; any other case (a misconfigured setting included) is left to the page.
    """
    try:
        path = settings.load(secrets=secrets).db_path
    except Exception:   # the page says what is wrong with the setting
        return
    if settings.is_demo_path(path) and not Path(path).exists():
        demo_build(path)


def main(argv: list[str]) -> int:
    """Build the demo at argv[0], printing 'progress DONE TOTAL' at the start and after each run, then
    'rejudge DONE TOTAL' as the open episodes are re-judged."""
    from lib.jobs import build_demo

    # This process is ours and runs one thread: its workers fork, with the imports and the eval set already made.
    build_demo(argv[0], progress=lambda done, total: print(f"progress {done} {total}", flush=True),
               start_method="fork",
               rejudge_progress=lambda done, total: print(f"rejudge {done} {total}", flush=True))
    return 0


__all__ = ["DemoBuild", "demo_build", "start_early"]

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
