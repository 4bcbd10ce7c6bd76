"""The store at scale: bulk build, record_run, the dashboard's queries, the Parquet layout, memory."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import time
from datetime import timedelta
from pathlib import Path

import duckdb
import pandas as pd

from lib.diagnosis import provenance, trends
from lib.presentation import review
from lib.store import Store
from lib.store.parquet import ParquetStore, export_parquet
from lib.store.schema import _SCHEMA_V1
from tests.benchmarks.report import Figure, Report, median_ms
from tests.benchmarks.synth import History, build

ROOT = Path(__file__).resolve().parents[2]
TREND_MS = 300.0
BUILD_ROWS_PER_S = 200_000


def _mib(path: Path) -> float:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20
    return path.stat().st_size / 2**20


def build_store(report: Report, work: Path, n_runs: int) -> Path:
    """Build the synthetic store of `n_runs` runs in bulk; figures: rows/s, seconds, size."""
    path = work / f"synthetic-{n_runs}.duckdb"
    built = build(path, n_runs)
    targeted = n_runs >= 2000  # the target is for the 2,000-run store; smaller builds pay fixed costs
    report.add(Figure(f"build_rows_per_s@{n_runs}", f"bulk build, {n_runs:,} runs: sample_scores rows per second",
                      built.rows_per_second, "rows/s", f">= {BUILD_ROWS_PER_S:,}/s" if targeted else "",
                      built.rows_per_second >= BUILD_ROWS_PER_S if targeted else None,
                      f"{built.score_rows:,} score rows + {built.sample_rows:,} samples in {built.seconds:.1f} s; "
                      f"generating {built.generate_seconds:.1f} s of it"))
    report.add(Figure(f"build_s@{n_runs}", f"bulk build, {n_runs:,} runs: seconds", built.seconds, "s"))
    report.add(Figure(f"file_mib@{n_runs}", f"database file, {n_runs:,} runs", _mib(path), "MiB"))
    return path


def write_paths(report: Report, work: Path, big: Path | None, *, k: int = 10) -> None:
    """record_run per run against record_runs_bulk on the same rows, the index's share, a nightly write."""
    history = History(200)
    records = history.records(0, k)
    rows = sum(len(m.results) for r in records for m in r.metrics)
    one = work / "record-run.duckdb"
    one.unlink(missing_ok=True)
    with Store(one) as store:
        t = time.perf_counter()
        for r in records:
            store.record_run(r)
        per_run = time.perf_counter() - t
        via_run = store.metric_history()
    report.add(Figure("record_run_rows_per_s", f"record_run, one transaction per run ({k} runs)", rows / per_run,
                      "rows/s", note=f"{per_run / k:.2f} s a run including building its RunRecord's rows; "
                                     f"2,000 runs this way: about {2000 * per_run / k / 60:.0f} min"))
    bulk = work / "record-bulk.duckdb"
    bulk.unlink(missing_ok=True)
    with Store(bulk) as store:
        batch = history.batch(0, k)
        t = time.perf_counter()
        store.record_runs_bulk([batch])
        secs = time.perf_counter() - t
        via_bulk = store.metric_history()
    report.add(Figure("bulk_small_rows_per_s", f"record_runs_bulk, the same {k} runs in one call", rows / secs,
                      "rows/s", note=f"{per_run / secs:.1f}x record_run"))
    same = _same_history(via_run, via_bulk)
    report.add(Figure("bulk_equals_record_run", "record_runs_bulk gives the history record_run gives", float(same),
                      "", "identical", same, "metric_history frames compared (scores to 1e-12)"))
    for p in (one, bulk):
        p.unlink(missing_ok=True)

    # what the sample_scores primary key costs a bulk insert (in memory, 400k rows)
    frame = history.batch(0, 200).sample_scores
    times = {}
    for with_pk in (True, False):
        con = duckdb.connect()
        ddl = _SCHEMA_V1[5] if with_pk else _SCHEMA_V1[5].replace(", PRIMARY KEY (run_id, suite, metric, sample_id)",
                                                                  "")
        con.execute(ddl)
        con.register("incoming", frame)
        t = time.perf_counter()
        con.execute("INSERT INTO sample_scores SELECT * FROM incoming")
        times[with_pk] = time.perf_counter() - t
        con.close()
    report.add(Figure("pk_share", "share of a sample_scores insert spent on its primary-key index",
                      100 * (1 - times[False] / times[True]), "%",
                      note=f"{len(frame) / times[True]:,.0f} rows/s with the key, {len(frame) / times[False]:,.0f} "
                           f"without (400k rows, in memory)"))

    if big is not None:
        # a nightly job recording one run into the big store (new id), then removing it again
        rec = History(200).records(0, 1, run_ids=["nightly-bench-extra"])[0]
        with Store(big) as store:
            t = time.perf_counter()
            store.record_run(rec)
            secs = time.perf_counter() - t
            store.delete_run(rec.run_id)
        report.add(Figure("nightly_record_run_s", "record_run of one more run into the 2,000-run store", secs, "s",
                          note="a nightly job's write; runs while the dashboard serves, from its process"))


def _same_history(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return False
    try:
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), check_exact=False,
                                      rtol=0, atol=1e-12)
    except AssertionError:
        return False
    return True


def queries(report: Report, store: Store, n_runs: int, *, label: str = "") -> None:
    """The dashboard's lib calls, median of 5 each."""
    tag = f"{n_runs:,} runs{label}"
    ms, history = median_ms(store.metric_history)
    report.add(Figure(f"trend_ms@{n_runs}{label}", f"trend of every metric over all runs ({tag})", ms, "ms",
                      f"< {TREND_MS:.0f} ms", ms < TREND_MS, f"store.metric_history(), {len(history):,} rows"))
    last = store.run_ids()[-1]
    calls = {
        "find_jumps": lambda: trends.find_jumps(store),
        "change_events": lambda: trends.change_events(history),
        "canary_status": lambda: trends.canary_status(store),
        "lint_status": lambda: trends.lint_status(store),
        "data_version": store.data_version,
        "run_scores": lambda: (store.sample_scores(last), store.samples_frame(last)),
        "provenance_run": lambda: provenance.provenance(store, last, "faithfulness"),
        "review_week": lambda: review.review(store, *_week(store)),
    }
    for name, fn in calls.items():
        ms, _ = median_ms(fn)
        report.add(Figure(f"{name}_ms@{n_runs}{label}", f"{name} ({tag})", ms, "ms"))


def _week(store: Store):
    end = store.runs()["started_at"].max().date()
    return end - timedelta(days=6), end


def parquet(report: Report, work: Path, path: Path, n_runs: int) -> None:
    """Export to Parquet partitioned by run month (the default) and by run day; the dashboard's reads over each."""
    with Store(path) as store:
        reference = store.metric_history()
        ref_jumps = [j.sentence for j in trends.find_jumps(store, history=reference)]
        last = store.run_ids()[-1]
    for granularity in ("month", "day"):
        dest = work / f"parquet-{n_runs}-{granularity}"
        tag = f"{n_runs:,} runs, by {granularity}"
        with Store(path) as store:
            summary = export_parquet(store, dest, granularity=granularity, overwrite=True)
        report.add(Figure(f"export_rows_per_s[{granularity}]@{n_runs}", f"export to Parquet ({tag}): rows/s",
                          summary.total_rows / summary.seconds, "rows/s",
                          note=f"{summary.total_rows:,} rows, {summary.seconds:.1f} s, {_mib(dest):,.0f} MiB, "
                               f"{len(list((dest / 'sample_scores').iterdir())):,} partitions a table"))
        t = time.perf_counter()
        with ParquetStore(dest) as pq:
            report.add(Figure(f"parquet_open_ms[{granularity}]@{n_runs}", f"open the Parquet dataset ({tag})",
                              1000 * (time.perf_counter() - t), "ms",
                              note="globs every table, reads the per-run tables into memory"))
            ms, history = median_ms(pq.metric_history)
            report.add(Figure(f"parquet_trend_ms[{granularity}]@{n_runs}", f"trend over Parquet ({tag})", ms, "ms",
                              f"< {TREND_MS:.0f} ms", ms < TREND_MS, "ParquetStore.metric_history()"))
            same = _same_history(reference, history) and [
                j.sentence for j in trends.find_jumps(pq, history=history)] == ref_jumps
            report.add(Figure(f"parquet_same[{granularity}]@{n_runs}", f"same trend and jumps as over DuckDB ({tag})",
                              float(same), "", "identical", same))
            ms, _ = median_ms(lambda: trends.find_jumps(pq))
            report.add(Figure(f"parquet_jumps_ms[{granularity}]@{n_runs}", f"find_jumps over Parquet ({tag})", ms,
                              "ms"))
            ms, _ = median_ms(lambda: (pq.sample_scores(last), pq.samples_frame(last)))
            report.add(Figure(f"parquet_run_scores_ms[{granularity}]@{n_runs}",
                              f"one run's scores and samples over Parquet ({tag})", ms, "ms",
                              note="the Run page's read: no date filter, so every file's footer is read"))
        if granularity == "day":
            shutil.rmtree(dest, ignore_errors=True)


_MEMORY_PROBE = textwrap.dedent("""
    import sys
    from lib.diagnosis import checks, diagnose, provenance
    from lib.store import Store
    from tests.benchmarks.report import vm_hwm_mib
    with Store(sys.argv[1]) as s:
        h = s.metric_history()
        diagnose.find_jumps(s, history=h)
        checks.canary_status(s)
        checks.lint_status(s)
        last = s.run_ids()[-1]
        s.sample_scores(last)
        provenance.provenance(s, last)
        print(vm_hwm_mib())
""")


def memory(report: Report, path: Path, n_runs: int) -> None:
    """Peak RSS of a fresh process that opens the store and runs the Overview's and Run page's calls."""
    out = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, str(path)], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    mib = float(out.stdout.strip().splitlines()[-1])
    report.add(Figure(f"query_rss_mib@{n_runs}", f"peak RSS of a process running the pages' queries ({n_runs:,})",
                      mib, "MiB", note="python + pandas + duckdb, no Streamlit"))
