"""What Streamlit's collection after every script run costs the dashboard: CPU a page load, and memory held.

Streamlit's default (runner.postScriptGC) runs a full garbage collection at
the end of every script run; evaldrift's .streamlit/config.toml turns it off.
This serves the demo twice, once each way, loads every page in turn in one
headless Chromium session (ROUNDS times), and prints the server's CPU per load
and its resident memory after, for both settings, measured in one run:

    python tests/benchmarks/bench_rerun_gc.py [--rounds 15] [--db PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.benchmarks.bench_first_start import server_cpu  # noqa: E402
from tests.benchmarks.report import vm_hwm_mib  # noqa: E402
from tests.support.browser import StreamlitServer, chromium, wait_for_app  # noqa: E402

PAGES = ("", "trends", "run", "compare", "review", "ablation", "canary", "labels")


def measure(db: Path, collect: bool, rounds: int) -> tuple[float, float, float]:
    """Server CPU per load, wall time per load and resident MiB after `rounds` passes over PAGES."""
    with tempfile.TemporaryDirectory() as work:
        copy = Path(shutil.copy(db, Path(work) / "demo.duckdb"))
        with StreamlitServer(copy, args=("--runner.postScriptGC", str(collect).lower())) as server, \
                chromium() as browser:
            assert server.proc is not None
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            page.goto(server.url)   # the first load opens the database and fills the caches: not counted
            wait_for_app(page)
            cpu0, start, loads = server_cpu(server.proc.pid), time.monotonic(), 0
            for _ in range(rounds):
                for path in PAGES:
                    page.goto(f"{server.url}/{path}")
                    wait_for_app(page)
                    loads += 1
            return ((server_cpu(server.proc.pid) - cpu0) / loads, (time.monotonic() - start) / loads,
                    vm_hwm_mib(server.proc.pid, "VmRSS"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15, help="passes over the pages (default 15)")
    parser.add_argument("--db", type=Path, help="the database to serve (default: the demo, built in --workdir)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/evaldrift-bench-pages"))
    args = parser.parse_args(argv)
    db = args.db or args.workdir / "demo.duckdb"
    if not db.exists():
        from lib.jobs._demo import build_demo
        args.workdir.mkdir(parents=True, exist_ok=True)
        build_demo(db)
    loads = args.rounds * len(PAGES)
    print(f"{loads} page loads each way, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print("| postScriptGC | server CPU a load | wall a load | resident after |")
    print("|---|---|---|---|")
    for collect in (True, False):
        cpu, wall, rss = measure(db, collect, args.rounds)
        print(f"| {str(collect).lower()} | {cpu * 1000:.0f} ms | {wall:.2f} s | {rss:.0f} MiB |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
