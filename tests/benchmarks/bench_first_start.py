"""A newcomer's first start, timed from a fresh clone: the README's command to the Overview on the demo.

    python tests/benchmarks/bench_first_start.py [--repeat N] [--shots DIR]

Each repeat clones this repository's HEAD (`git clone`, so only committed files) into a temporary folder,
runs the README's command there (`pip install -r requirements.txt`, then `streamlit run app.py`) and opens
the dashboard in headless Chromium as soon as it answers. It prints, per repeat: pip's seconds, the seconds
from `streamlit run` to the first page, to the first run judged (the bar moving), to the Overview on the demo
(its "90 runs" line, and its script finished), and the total from the command; the CPU seconds the dashboard,
the build and its workers used by then; the machine's load average before and after, and a CPU reference (a
fixed pure-Python loop on one core) timed just before, so a figure from a shared machine says how shared it
was. `--shots DIR` saves the Overview at 1024 and 1440 px wide once it is there. The target (issue 28): the
Overview within 30 s of the command on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.browser import chromium, free_port, new_page, screenshot, wait_for_app  # noqa: E402

TARGET_S = 30.0


def cpu_reference() -> float:
    """Seconds for a fixed pure-Python loop of 12 million steps on one core."""
    t0 = time.perf_counter()
    total = 0
    for i in range(12_000_000):
        total += i % 7
    return time.perf_counter() - t0


def server_cpu(pid: int) -> float:
    """CPU seconds of the dashboard process and its finished children (the demo build and its workers)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    return (utime + stime + cutime + cstime) / os.sysconf("SC_CLK_TCK")


def first_start(work: Path, shots: Path | None = None) -> dict[str, float]:
    """One fresh clone's first start; seconds of each step (see the module docstring)."""
    clone = work / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "EVALDRIFT_", "PYTHONPATH"))}
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-r", "requirements.txt"], cwd=clone, env=env,
                   check=True, stdout=subprocess.DEVNULL)
    pip_s = time.monotonic() - t0
    port = free_port()
    log = open(work / "server.log", "wb")   # noqa: SIM115 (closed after the server stops)
    t1 = time.monotonic()
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                               "--server.address", "127.0.0.1", "--server.headless", "true",
                               "--browser.gatherUsageStats", "false"], cwd=clone, env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    out: dict[str, float] = {"pip": pip_s}
    try:
        with chromium() as browser:
            page = new_page(browser, timeout=600)
            while True:
                try:
                    page.goto(f"http://127.0.0.1:{port}/")
                    break
                except Exception:   # the server is still starting
                    time.sleep(0.2)
            page.get_by_text("First start:").first.wait_for()   # judging runs, or re-judging the episode
            out["first_page"] = time.monotonic() - t1
            page.wait_for_function("""() => /First start: (building the demo database, [1-9]\\d* of|all 90)/
                .test(document.body.innerText) || document.body.innerText.includes("90 runs;")""", timeout=600_000,
                                   polling=100)
            out["bar_moves"] = time.monotonic() - t1
            page.get_by_text("90 runs").first.wait_for()
            wait_for_app(page, timeout=600)   # the whole Overview drawn, its script finished
            out["overview"] = time.monotonic() - t1
            out["cpu"] = server_cpu(server.pid)
            out["total"] = pip_s + out["overview"]
            if shots is not None:
                shots.mkdir(parents=True, exist_ok=True)
                for width in (1024, 1440):
                    page.set_viewport_size({"width": width, "height": 1000})
                    wait_for_app(page, timeout=120)
                    shot = screenshot(page, f"overview-first-start-{width}")   # the whole page, not one viewport
                    shutil.copy(shot, shots / shot.name)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        log.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--shots", type=Path, default=None)
    args = parser.parse_args(argv)
    for k in range(args.repeat):
        load_before = os.getloadavg()
        ref = cpu_reference()
        with tempfile.TemporaryDirectory(prefix="evaldrift-first-start-") as tmp:
            t = first_start(Path(tmp), args.shots if k == 0 else None)
        load_after = os.getloadavg()
        print(f"first start {k + 1}: Overview {t['total']:.1f} s after the README's command "
              f"(pip {t['pip']:.1f} s; from `streamlit run`: first page {t['first_page']:.1f} s, "
              f"bar moving {t['bar_moves']:.1f} s, Overview {t['overview']:.1f} s); "
              f"the dashboard, the build and its workers used {t['cpu']:.1f} CPU s "
              f"({t['cpu'] / 2:.1f} s on two cores of their own); target {TARGET_S:.0f} s on a quiet machine; "
              f"load average (1 min) {load_before[0]:.1f} before, {load_after[0]:.1f} after; "
              f"CPU reference {ref:.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
