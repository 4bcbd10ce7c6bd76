"""Ten times further: the synthetic history at 20,000 runs x 400 samples x 5 metrics (40 million sample scores).

    python tests/benchmarks/bench_scale.py [--workdir DIR]     (or run.py's `scale` section)

Figures: the bulk build, the dashboard's queries (the trend against its 300 ms
target), Trends' five charts (build time, figure size, points drawn: thinned
past lib.presentation.thin.MAX_POINTS runs with every jump and change kept),
the pages' query process's peak memory, and how each grows from 2,000 to
20,000 runs (10x the data), as ratios measured in one run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lib.core.records import MAIN  # noqa: E402
from lib.diagnosis import trends  # noqa: E402
from lib.presentation import charts, views  # noqa: E402
from lib.store import Store  # noqa: E402
from tests.benchmarks import bench_store  # noqa: E402
from tests.benchmarks.report import Figure, Report  # noqa: E402

BASE, FAR = 2_000, 20_000
CHART_MS = 2_000.0    # Trends' five figures, built in Python, well inside a page's 2 s
FIGURE_MB = 5.0       # what the browser is sent for the five figures


def charts_at(report: Report, store: Store, n_runs: int) -> None:
    """Trends' five figures as the page builds them: seconds, megabytes of figure JSON, points drawn."""
    history = store.metric_history(suite=MAIN)
    t = time.perf_counter()
    jumps = views.jumps_frame(trends.find_jumps(store, history=history))
    events = trends.change_events(history)
    noise_sd = trends.trend_noise(history)
    figures = [charts.trend_figure(history[history["metric"] == m], metric=m,
                                   events=views.events_for(events, [m]), jumps=jumps[jumps["metric"] == m],
                                   band=trends.band(noise_sd.get(m, float("nan"))))
               for m in views.ordered_metrics(history["metric"].unique())]
    ms = (time.perf_counter() - t) * 1000
    size = sum(len(f.to_json()) for f in figures) / 1e6
    metrics = set(history["metric"])
    score_points = sum(len(tr.x) for f in figures for tr in f.data if tr.name in metrics)
    report.add(Figure(f"trends_charts_ms@{n_runs}", f"Trends' {len(figures)} charts built ({n_runs:,} runs)", ms, "ms",
                      f"< {CHART_MS:,.0f} ms", ms < CHART_MS, "jumps, change events, noise, figures"))
    report.add(Figure(f"trends_json_mb@{n_runs}", f"Trends' figures sent to the browser ({n_runs:,} runs)", size, "MB",
                      f"< {FIGURE_MB:.0f} MB", size < FIGURE_MB))
    report.add(Figure(f"trends_points@{n_runs}", f"score points drawn over {len(figures)} metrics ({n_runs:,} runs)",
                      score_points, "points", note=f"of {len(history):,} metric scores"))


def growth(report: Report) -> None:
    """Each figure measured at both sizes, as FAR / BASE."""
    done: set[str] = set()
    for f in reversed(report.figures):   # the latest measurement of each figure at BASE
        if not f.key.endswith(f"@{BASE}") or f.unit in ("", "x"):
            continue
        stem = f.key[: -len(f"@{BASE}")]
        if stem in done:
            continue
        done.add(stem)
        far = next((g for g in reversed(report.figures) if g.key == f"{stem}@{FAR}"), None)
        if far is None or not f.value:
            continue
        report.add(Figure(f"growth20k:{stem}", f"{stem}, {FAR:,} / {BASE:,} runs", far.value / f.value, "x",
                          note=f"{f.value:,.1f} -> {far.value:,.1f} {f.unit}"))


def scale(report: Report, work: Path) -> None:
    for n in (BASE, FAR):
        path = work / f"synthetic-{n}.duckdb"
        report.section(f"Scale: the synthetic history at {n:,} runs x 400 samples x 5 metrics")
        if not path.exists():   # a store of this size from an earlier run is reused (its build is not re-timed)
            bench_store.build_store(report, work, n)
        with Store(path) as store:
            bench_store.queries(report, store, n)
            charts_at(report, store, n)
        bench_store.memory(report, path, n)
    report.section(f"Scale: how each figure grows from {BASE:,} to {FAR:,} runs (10x the data)")
    growth(report)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default="/tmp/evaldrift-bench", help="where the databases are built (GBs)")
    args = parser.parse_args(argv)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    report = Report()
    scale(report, work)
    report.summary()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
