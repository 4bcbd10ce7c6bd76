"""Peak memory of `python -m lib ingest` against the file's size (issue 9 item 12).

Each size is ingested by a fresh child process into a fresh database; its peak
RSS is the child's ru_maxrss. The constant is the peak of the same command on a
10-row file (the interpreter, pandas, DuckDB); the target is a peak under
3x the file plus that constant.

    python tests/benchmarks/bench_ingest.py [--rows 200000] [--workdir /tmp/evaldrift-bench]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.benchmarks.report import Figure, Report  # noqa: E402

WORDS = ("the retriever returns passages about river deltas sediment flood plains in spring when the snow melts "
         "and engineers measure flow at the gauge near the bridge each hour").split()


def write_jsonl(path: Path, rows: int, seed: int = 5) -> int:
    """A JSONL of `rows` samples with ~240 bytes of text each and two score columns; returns its size in bytes."""
    rng = random.Random(seed)

    def text(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    with open(path, "w", encoding="utf-8") as fh:
        for i in range(rows):
            fh.write(json.dumps({"sample_id": f"s{i}", "question": text(6), "answer": text(10),
                                 "contexts": [text(12), text(8)], "ground_truth": text(6),
                                 "faithfulness": round(rng.random(), 3),
                                 "context_recall": None if i % 97 == 0 else round(rng.random(), 3)}) + "\n")
    return path.stat().st_size


def ingest_peak(file: Path, db: Path) -> tuple[float, float]:
    """(peak RSS in MiB, wall seconds) of one `python -m lib ingest` child."""
    db.unlink(missing_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "lib", "ingest", "--db", str(db), str(file), "--run-id", "big"],
                          cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"ingest failed: {proc.stderr.strip()}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if peak <= before:
        raise SystemExit("a child's peak is only readable when it exceeds every earlier child's: run small first")
    return peak / 1024, wall


def bench(report: Report, work: Path, rows: int) -> None:
    work.mkdir(parents=True, exist_ok=True)
    small, big = work / "ingest-10.jsonl", work / f"ingest-{rows}.jsonl"
    write_jsonl(small, 10)
    size = write_jsonl(big, rows) / 2**20
    constant, _ = ingest_peak(small, work / "ingest-small.duckdb")
    peak, wall = ingest_peak(big, work / "ingest-big.duckdb")
    target = 3 * size + constant
    report.add(Figure("ingest_file_mib", f"JSONL file ({rows:,} rows)", size, "MiB"))
    report.add(Figure("ingest_constant_mib", "peak RSS of ingest on a 10-row file (the constant)", constant, "MiB"))
    report.add(Figure(f"ingest_peak_mib@{rows}", f"peak RSS of ingest ({rows:,} rows)", peak, "MiB",
                      f"< {target:,.0f} MiB", peak < target, "3x the file plus the constant"))
    report.add(Figure(f"ingest_over_file@{rows}", "peak above the constant / file size", (peak - constant) / size, "x",
                      "< 3x", (peak - constant) / size < 3))
    report.add(Figure(f"ingest_rows_per_s@{rows}", "ingest throughput, whole command", rows / wall, "rows/s"))
    run_page(report, work / "ingest-big.duckdb", rows)


RUN_PAGE = """
import json, resource, sys, time
from lib.presentation.sample_pages import SampleFilters, sample_page
from lib.store import Store
with Store(sys.argv[1]) as store:
    t0 = time.perf_counter(); first = sample_page(store, "big", "faithfulness"); t1 = time.perf_counter()
    found = sample_page(store, "big", "faithfulness", SampleFilters(search="s199990")); t2 = time.perf_counter()
print(json.dumps({"first": t1 - t0, "search": t2 - t1, "rows": len(first.rows), "found": len(found.rows),
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run_page(report: Report, db: Path, rows: int) -> None:
    """The Run page's sample table on that run, in a fresh process: a page, and a search over the whole run."""
    proc = subprocess.run([sys.executable, "-c", RUN_PAGE, str(db)], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"run page failed: {proc.stderr.strip()}")
    got = json.loads(proc.stdout)
    report.add(Figure(f"run_page_first_s@{rows}", f"Run page: first page of a {rows:,}-sample run", got["first"], "s",
                      "< 2 s", got["first"] < 2, f"{got['rows']} rows built"))
    report.add(Figure(f"run_page_search_s@{rows}", "Run page: search the whole run for one id", got["search"], "s",
                      "< 2 s", got["search"] < 2, f"{got['found']} found"))
    report.add(Figure(f"run_page_rss_mib@{rows}", "Run page: peak RSS of a process doing both", got["rss"], "MiB"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--workdir", default="/tmp/evaldrift-bench")
    args = parser.parse_args(argv)
    report = Report()
    report.section("Ingest memory (python -m lib ingest, a fresh process per file)")
    bench(report, Path(args.workdir), args.rows)
    report.summary()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
