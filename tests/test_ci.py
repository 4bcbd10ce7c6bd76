"""What .ci/run does for the tests: the tool paths it exports are the ones the tests use, a held package lock is
waited for, and two checkouts never build one tool environment at once (.ci/lib.sh)."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import tool_runs

ROOT = Path(__file__).resolve().parents[1]
RUN = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
LIB = ROOT / ".ci" / "lib.sh"


def test_every_path_ci_exports_is_one_the_tests_read() -> None:
    exported = set(re.findall(r"^\s*export\s+\"?(EVALDRIFT_\w+)=", RUN, re.M))
    assert exported == set(tool_runs.CI_PATHS)


def test_the_tool_paths_ci_exports_are_the_ones_tests_use(tmp_path: Path) -> None:
    """A child pytest with every exported path pointed into tmp_path: a test inside it finds each there, not in
    /tmp's defaults (before, the autouse fixture had cleared them and every test found the default)."""
    paths = {}
    for name in tool_runs.CI_PATHS:
        path = tmp_path / name.lower() / ("bin/python" if name.endswith("_PYTHON") else "")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch() if name.endswith("_PYTHON") else path.mkdir(exist_ok=True)
        paths[name] = str(path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALDRIFT_", "PYTEST_"))}
    env.update(paths, CI_PATHS_PROBE=json.dumps(paths), CI="true")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                           "tests/support/ci_paths_probe.py"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "1 passed" in proc.stdout


def _bash(script: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", f"set -euo pipefail; source {LIB}; {script}"], cwd=tmp_path,
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=60)


# A stand-in apt-get (a shell function, found before the real one): it fails as apt does on a held lock for its
# first `held` calls, then succeeds; each call is logged.
FAKE_APT = """apt-get() {{
  echo "$*" >> calls
  if [ "$(wc -l < calls)" -le {held} ]; then
    echo "{message}" >&2; return 100
  fi
}}
"""
LISTS = "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)"
FRONTEND = "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?"


@pytest.mark.parametrize(("message", "held", "wait", "status", "calls"), [
    (LISTS, 0, "600", 0, 1),           # no lock held: one call
    (LISTS, 2, "600", 0, 3),           # the lists' lock held twice (update does not wait by itself): tried again
    (FRONTEND, 1, "600", 0, 2),        # dpkg's lock
    (LISTS, 99, "0", 100, 1),          # held past the wait: apt-get's own failure
    ("E: Unable to locate package chromium", 1, "600", 100, 1),   # any other failure: at once
])
def test_apt_get_waits_for_the_package_lock(tmp_path: Path, message: str, held: int, wait: str, status: int,
                                            calls: int) -> None:
    proc = _bash(FAKE_APT.format(held=held, message=message) + "apt_get update -qq", tmp_path,
                 APT_LOCK_WAIT=wait, APT_LOCK_POLL="0.05")
    assert proc.returncode == status, proc.stderr
    lines = (tmp_path / "calls").read_text().splitlines()
    assert len(lines) == calls
    assert lines[0] == f"-o DPkg::Lock::Timeout={wait} update -qq"   # install waits for dpkg's lock by itself
    if status:
        assert message in proc.stderr


def test_two_checkouts_build_one_tool_environment_once(tmp_path: Path) -> None:
    """Two CI runs reach the same /tmp tool folder together: one builds, the other waits and finds it built."""
    build = ('build() { if [ ! -e "$1/built" ]; then echo start >> log; sleep 0.5; mkdir -p "$1"; '
             'touch "$1/built"; echo end >> log; fi; echo used >> log; }; '
             'locked "$PWD/tool-venv" build "$PWD/tool-venv"')
    both = [subprocess.Popen(["bash", "-c", f"set -euo pipefail; source {LIB}; {build}"], cwd=tmp_path)
            for _ in range(2)]
    assert [p.wait(timeout=60) for p in both] == [0, 0]
    assert (tmp_path / "log").read_text().split() == ["start", "end", "used", "used"]


def _third_party_imports() -> dict[str, set[str]]:
    """The top-level packages outside the standard library that lib, the pages and app.py import, by file. The
    *_worker.py modules run in a tool's own environment (Ragas', Inspect's), not this one."""
    files = [p for p in sorted((ROOT / "lib").rglob("*.py")) if not p.name.endswith("_worker.py")]
    found: dict[str, set[str]] = {}
    for path in [*files, *sorted((ROOT / "pages").glob("*.py")), ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                     else [])
            for top in {n.split(".")[0] for n in names} - set(sys.stdlib_module_names) - {"lib"}:
                found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_package_the_code_imports_is_pinned_in_requirements() -> None:
    """numpy was imported by 10 modules of lib and pinned nowhere: pandas' own requirement chose its version."""
    pinned = {re.sub(r"[-_.]+", "-", line.split("==")[0].strip().lower())
              for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
              if "==" in line and not line.lstrip().startswith("#")}
    dists = importlib.metadata.packages_distributions()
    missing = {top: sorted(files)[:3] for top, files in _third_party_imports().items()
               if not {re.sub(r"[-_.]+", "-", d.lower()) for d in dists.get(top, [top])} & pinned}
    assert missing == {}


# An orphan: the child starts a grandchild in its own session and exits at once; the grandchild burns CPU, then
# leaves a mark.
ORPHAN = """import subprocess, sys
subprocess.Popen([sys.executable, "-c", '''import sys, time
t = time.process_time()
while time.process_time() - t < {burn}: pass
time.sleep({sleep})
open(sys.argv[1], "w").write("done")
''', sys.argv[1]], start_new_session=True)
"""


def _reap(tmp_path: Path, burn: float, sleep: float, **env: str) -> tuple[subprocess.CompletedProcess, float]:
    """.ci/reap.py over the orphan-leaving child, and the CPU of every process waited for meanwhile."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, str(ROOT / ".ci" / "reap.py"), sys.executable, "-c",
                           ORPHAN.format(burn=burn, sleep=sleep), str(tmp_path / "mark")],
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return proc, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def test_ci_waits_for_orphaned_processes_so_their_cpu_is_counted(tmp_path: Path) -> None:
    """Chromium's renderers are orphans: before .ci/reap.py, bash's `times` never counted their CPU."""
    proc, cpu = _reap(tmp_path, burn=0.5, sleep=0.2)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "mark").read_text() == "done"   # it ended before reap.py did
    assert cpu >= 0.5


def test_an_orphan_left_running_is_named_and_killed_not_waited_for_forever(tmp_path: Path) -> None:
    proc, _ = _reap(tmp_path, burn=0.0, sleep=600, REAP_WAIT="1")
    assert proc.returncode == 0
    assert "still running after the tests ended" in proc.stderr and "time.sleep(600)" in proc.stderr
    assert not (tmp_path / "mark").exists()
