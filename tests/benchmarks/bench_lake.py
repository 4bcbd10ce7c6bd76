"""The team store against the file, side by side in one run: the Trends and Overview queries at 2,000 and 20,000
runs on a DuckLake (its catalog in the machine's Postgres 15 on loopback, its data in a local folder) and on a DuckDB
file holding the same rows, and recording throughput with 1 and 8 writer processes.

    EVALDRIFT_LAKE_PYTHON=/tmp/lake-venv/bin/python python tests/benchmarks/bench_lake.py [--samples 40]

It runs in the lake environment (duckdb 1.5.5, lib/store/requirements-lake.txt), re-executing itself there when
started from another python, so the file is written and read by the same duckdb as the lake: a ratio compares the
two stores, not two duckdb versions. Each history is written in bulk into both stores batch by batch (the same rows),
and each query is timed on the lake and on the file in alternation (median of `--repeats`), so both see the same
machine load. The runs keep the demo's first `--samples` main samples (default 40; the 12 canaries stay): the
Trends and Overview queries read run_metrics and runs, which grow with runs x metrics, not samples.

Writers: each is a process of its own (this script with --writer) that opens the store, generates its runs, says
ready, and records them one `record_run` transaction each once the parent says go; throughput is every writer's runs
over the wall time from go to the last one done. A file takes one writer (one process owns it); the lake takes 1 and
8. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lib.core.records import CANARY, MAIN  # noqa: E402
from lib.diagnosis import rejudge, trends  # noqa: E402
from lib.presentation import views  # noqa: E402
from lib.store import Store, lake  # noqa: E402
from tests.benchmarks.report import Figure, Report  # noqa: E402
from tests.benchmarks.synth import History  # noqa: E402
from tests.support import postgres  # noqa: E402

SIZES = (2_000, 20_000)
WRITERS = (1, 8)


def trends_page(store: Store) -> object:
    """What the Trends page reads (lib/app/loaders.py): the trend, its jumps, change markers and noise."""
    history = store.metric_history(suite=MAIN)
    return (trends.find_jumps(store, history=history), trends.change_events(history), trends.trend_noise(history))


def overview_page(store: Store) -> object:
    """What the Overview reads: the trend, the metric cards (paired steps, lint, re-judged series), the jumps, the
    canary's standing and the lint."""
    history = store.metric_history(suite=MAIN)
    lint = trends.lint_status(store)
    cards = views.metric_cards(history, paired=store.paired_steps(views.card_steps(history), MAIN), lint=lint,
                               series=rejudge.finished_series(store))
    canary = trends.canary_status(store, history=store.metric_history(suite=CANARY))
    return cards, trends.find_jumps(store, history=history), canary


QUERIES: dict[str, Callable[[Store], object]] = {
    "trend": lambda s: s.metric_history(suite=MAIN),
    "trends_page": trends_page,
    "overview_page": overview_page,
}


def side_by_side(fn: Callable[[Store], object], stores: dict[str, Store], repeats: int,
                 budget: float) -> dict[str, tuple[float, int]]:
    """Median ms of `fn` on each store and the calls it is of, the stores taken in turn within each repeat, after
    one warm-up call each. A store whose warm-up took over `budget` seconds is not called again: its one call is its
    figure (at 2,000 runs the lake's Trends reads took 99 s a call)."""
    times: dict[str, list[float]] = {name: [] for name in stores}
    slow = set()
    for name, store in stores.items():
        t = time.perf_counter()
        fn(store)
        if time.perf_counter() - t > budget:
            slow.add(name)
            times[name].append((time.perf_counter() - t) * 1000)
    for _ in range(repeats):
        for name, store in stores.items():
            if name in slow:
                continue
            t = time.perf_counter()
            fn(store)
            times[name].append((time.perf_counter() - t) * 1000)
    return {name: (statistics.median(v), len(v)) for name, v in times.items()}


def build_both(report: Report, file: Store, team: Store, n_runs: int, samples: int) -> None:
    """The same synthetic history written in bulk into both stores, batch by batch; each one's seconds."""
    history = History(n_runs, samples=samples)
    spent = {"file": 0.0, "lake": 0.0}
    for batch in history.batches():
        for name, store in (("file", file), ("lake", team)):
            t = time.perf_counter()
            store.record_runs_bulk([batch])
            spent[name] += time.perf_counter() - t
    rows = file.cursor().execute("SELECT count(*) FROM sample_scores").fetchall()[0][0]
    for name, seconds in spent.items():
        report.add(Figure(f"lake_build_s@{n_runs}:{name}", f"bulk write of {n_runs:,} runs, {name}", seconds, "s",
                          note=f"{rows:,} score rows, {rows / seconds:,.0f} rows/s"))


def queries(report: Report, file: Store, team: Store, n_runs: int, repeats: int, budget: float,
            too_slow: set[str]) -> None:
    """Each query on both stores; one the lake took more than 10 x `budget` for at a smaller size is timed on the
    file only (its growth is not linear: measuring it would take hours), and said."""
    for name, fn in QUERIES.items():
        stores = {"file": file} if name in too_slow else {"file": file, "lake": team}
        ms = side_by_side(fn, stores, repeats, budget)
        for where, (value, calls) in ms.items():
            report.add(Figure(f"lake_{name}_ms@{n_runs}:{where}", f"{name} ({n_runs:,} runs), {where}", value,
                              "ms", note=f"median of {calls}" if calls > 1 else "one call"))
        if "lake" not in ms:
            report.note(f"{name} on the lake at {n_runs:,} runs: not measured (over {10 * budget:.0f} s a call at "
                        "the smaller size)")
            continue
        if ms["lake"][0] > 10 * budget * 1000:
            too_slow.add(name)
        report.add(Figure(f"lake_{name}_ratio@{n_runs}", f"{name} ({n_runs:,} runs), lake / file",
                          ms["lake"][0] / ms["file"][0], "x"))


# -- writers --------------------------------------------------------------------------------------------------------

def writer(target: str, prefix: str, n_runs: int, samples: int, go: Path) -> None:
    """One writer process: open, generate, say ready, wait for `go`, record each run, say the seconds."""
    t0 = time.perf_counter()
    with Store(target) as store:
        opened = time.perf_counter() - t0
        records = History(n_runs, samples=samples).records(0, n_runs, run_ids=[f"{prefix}-{i}" for i in range(n_runs)])
        print(json.dumps({"ready": True}), flush=True)
        while not go.exists():
            time.sleep(0.01)
        t = time.perf_counter()
        for record in records:
            store.record_run(record)
        print(json.dumps({"opened": opened, "recording": time.perf_counter() - t, "finished": time.time(),
                          "conflicts": getattr(store, "conflicts", 0)}), flush=True)


def writers(report: Report, target: str, n_writers: int, runs_each: int, samples: int, work: Path,
            label: str) -> None:
    go = work / f"go-{label}-{n_writers}"
    go.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, __file__, "--writer", target, f"w{label}{n_writers}-{w}",
                               str(runs_each), str(samples), str(go)], stdout=subprocess.PIPE, text=True, env=env)
             for w in range(n_writers)]
    for p in procs:
        assert p.stdout is not None
        if json.loads(p.stdout.readline() or "{}") != {"ready": True}:
            raise SystemExit(f"a writer did not start (exit {p.wait()})")
    started = time.time()   # wall clock: the writers' finishing times are read against it
    go.touch()
    done = []
    for p in procs:
        out, _ = p.communicate(timeout=3600)
        if p.returncode != 0:
            raise SystemExit(f"a writer failed (exit {p.returncode})")
        done.append(json.loads(out.strip().splitlines()[-1]))
    wall = max(d["finished"] for d in done) - started   # go to the last commit (not the processes' exits)
    runs = n_writers * runs_each
    report.add(Figure(f"lake_writers_runs_per_s@{n_writers}:{label}",
                      f"{n_writers} writer(s), {label}: runs recorded a second", runs / wall, "runs/s",
                      note=f"{runs} runs of {samples}+12 samples in {wall:.1f} s; each writer's recording "
                           f"{min(d['recording'] for d in done):.1f}-{max(d['recording'] for d in done):.1f} s, "
                           f"opening {min(d['opened'] for d in done):.1f}-{max(d['opened'] for d in done):.1f} s; "
                           f"conflicts retried {sum(d['conflicts'] for d in done)}"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default="/tmp/evaldrift-bench-lake", help="the files and the lake's data (GBs)")
    parser.add_argument("--samples", type=int, default=40, help="main samples a run (the demo has 400)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="history sizes, in runs")
    parser.add_argument("--repeats", type=int, default=5, help="timings a query and store (their median)")
    parser.add_argument("--runs-each", type=int, default=10, help="runs each writer records (0: no writers)")
    parser.add_argument("--budget", type=float, default=30.0,
                        help="seconds a call over which it is timed once; over 10x, not at the next size")
    parser.add_argument("--writer", nargs=5, metavar=("TARGET", "PREFIX", "N", "SAMPLES", "GO"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.writer:
        target, prefix, n, samples, go = args.writer
        writer(target, prefix, int(n), int(samples), Path(go))
        return 0
    if lake.available() is not None:   # not the lake environment: run there
        python = os.environ.get("EVALDRIFT_LAKE_PYTHON", "/tmp/lake-venv/bin/python")
        if not Path(python).exists() or os.environ.get("EVALDRIFT_BENCH_IN_LAKE"):
            raise SystemExit(f"no lake environment: {lake.available()}")
        return subprocess.call([python, __file__, *(argv if argv is not None else sys.argv[1:])],
                               env={**os.environ, "EVALDRIFT_BENCH_IN_LAKE": "1"})
    if postgres.missing():
        raise SystemExit(postgres.missing())
    work = Path(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    report = Report()
    server = postgres.start()
    too_slow: set[str] = set()
    try:
        for n in (int(x) for x in args.sizes.split(",") if x.strip()):   # --sizes "": the writers alone
            report.section(f"Lake and file at {n:,} runs x ({args.samples} + 12 canary) samples x 5 metrics")
            url = "ducklake:" + server.catalog(f"bench{n}")
            os.environ[lake.DATA_PATH_VARIABLE] = str(work / f"lake-data-{n}")
            with Store(work / f"file-{n}.duckdb") as file, Store(url) as team:
                build_both(report, file, team, n, args.samples)
                queries(report, file, team, n, args.repeats, args.budget, too_slow)
        if args.runs_each:   # --runs-each 0: the queries alone
            report.section(f"Recording: {args.runs_each} runs a writer, one transaction a run")
            single = work / "writers.duckdb"
            Store(single).close()
            writers(report, str(single), 1, args.runs_each, args.samples, work, "file")
            for w in WRITERS:
                url = "ducklake:" + server.catalog(f"writers{w}")
                os.environ[lake.DATA_PATH_VARIABLE] = str(work / f"lake-writers-{w}")
                Store(url).close()   # made once before the writers race (as a team's first open would)
                writers(report, url, w, args.runs_each, args.samples, work, "lake")
            one, eight = (report.get(f"lake_writers_runs_per_s@{w}:lake") for w in WRITERS)
            if one and eight:
                report.add(Figure("lake_writers_scaling", "8 writers / 1 writer, lake throughput",
                                  eight.value / one.value, "x"))
    finally:
        server.stop()
    report.write(work / "figures.json")
    print(f"\nload average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}; figures in {work}/figures.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
