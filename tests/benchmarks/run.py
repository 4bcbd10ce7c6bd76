"""evaldrift's benchmarks: every figure of issue 6 with its target beside it.

    python tests/benchmarks/run.py            # everything (about 5 minutes on 2 cores)
    python tests/benchmarks/run.py --quick    # 200 runs only, short demo, no Ragas, no cold page loads
    python tests/benchmarks/run.py --only store,pages --workdir /tmp/evaldrift-bench
    python tests/benchmarks/run.py --readme   # also rewrite the figure tables of tests/benchmarks/README.md

Sections: store (bulk build of the synthetic history, record_run vs bulk, the
dashboard's queries, memory, the Parquet layout), judging (demo build, harness
throughput, ablations with the model judge on a loopback server and with the
offline judge, the call cache, Ragas side by side), sequential (the demo's matrix
judged sequentially and in full: calls saved, verdict agreement; synthetic runs;
the simulated false-LEAK rate, tests/benchmarks/bench_sequential.py), engine (an ablation's wall time
against the ideal at 16 and 64 in flight with client CPU per call, calls against distinct prompts for the
demo's re-judged history, the batch path end to end: tests/benchmarks/bench_engine.py), pages (each page's first
load in headless Chromium, the dashboard's peak RSS), scale (the history at 20,000
runs: queries, Trends' charts, memory, growth from 2,000). The growth from 200 to
2,000 runs is printed last, then every targeted figure again as a summary.

Benchmarks print numbers; they assert nothing and are not collected by pytest.
The machine is shared and has 2 cores: read the figures as orders of magnitude.

The Ragas comparison runs in its own environment (EVALDRIFT_RAGAS_PYTHON, default
/tmp/ragas-venv/bin/python), never this project's:

  python -m venv /tmp/ragas-venv
  /tmp/ragas-venv/bin/pip install ragas "langchain-community<0.4" "langchain-core<1" "langchain<1" "langchain-openai<1"
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lib.store import Store  # noqa: E402
from tests.benchmarks import (  # noqa: E402
    bench_engine,
    bench_judging,
    bench_pages,
    bench_scale,
    bench_sequential,
    bench_store,
    readme,
)
from tests.benchmarks.report import Figure, Report  # noqa: E402

SECTIONS = ("store", "judging", "sequential", "engine", "pages", "scale")
SMALL, LARGE = 200, 2000


def growth(report: Report) -> None:
    """Each figure measured at both sizes, as the ratio 2,000 runs / 200 runs (10x the data)."""
    for f in list(report.figures):
        if not f.key.endswith(f"@{SMALL}") or f.unit in ("", "x"):
            continue
        base = f.key[: -len(f"@{SMALL}")]
        big = report.get(f"{base}@{LARGE}")
        if big is None or not f.value:
            continue
        name = f.name.replace(f"{SMALL:,} runs", "N runs").replace(f"({SMALL:,})", "(N runs)")
        report.add(Figure(f"growth:{base}", f"{name}, 2,000 / 200", big.value / f.value, "x",
                          note=f"{f.value:,.1f} -> {big.value:,.1f} {f.unit}"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a fast sanity run: 200 runs, no Ragas, no cold pages")
    parser.add_argument("--readme", metavar="FILE.md", type=Path, nargs="?", const=readme.FIGURES_DOC,
                        help="also write the figures into the Performance and Scaling tables of FILE.md "
                             f"(default: {readme.FIGURES_DOC.relative_to(ROOT)})")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated sections: {', '.join(SECTIONS)}")
    parser.add_argument("--workdir", default="/tmp/evaldrift-bench", help="where the databases are built (GBs)")
    args = parser.parse_args(argv)
    if args.readme:
        try:   # before minutes of measuring, not after: a file without the figure markers is refused now
            readme.check(args.readme)
        except (OSError, ValueError) as exc:
            parser.error(str(exc))
    sections = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = sections - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s): {', '.join(sorted(unknown))}")
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    sizes = [SMALL] if args.quick else [SMALL, LARGE]
    demo_runs = 35 if args.quick else 90
    report = Report()
    print(f"evaldrift benchmarks: {'quick' if args.quick else 'full'}, sections {', '.join(sorted(sections))}, "
          f"work in {work}")

    stores = {n: work / f"synthetic-{n}.duckdb" for n in sizes}
    if "store" in sections:
        report.section(f"Bulk build of the synthetic history ({' and '.join(f'{n:,}' for n in sizes)} runs "
                       "x 400 samples x 5 metrics)")
        for n in sizes:
            bench_store.build_store(report, work, n)
        report.section("Write paths: record_run per run, record_runs_bulk, the primary key, a nightly write")
        bench_store.write_paths(report, work, stores.get(LARGE))
        for n in sizes:
            report.section(f"The dashboard's queries on {n:,} runs (median of 5)")
            with Store(stores[n]) as store:
                bench_store.queries(report, store, n)
            bench_store.memory(report, stores[n], n)
        for n in sizes:
            report.section(f"Parquet dataset partitioned by run date ({n:,} runs)")
            bench_store.parquet(report, work, stores[n], n)

    demo_path = work / f"demo-{demo_runs}.duckdb"
    if "judging" in sections:
        report.section(f"Demo build ({demo_runs} runs) and harness throughput, offline judge")
        demo_path = bench_judging.demo(report, work, demo_runs)
        report.section(f"Ablation with the OpenAI-compatible judge ({bench_judging.LATENCY * 1000:.0f} ms a call, "
                       f"{bench_judging.CONCURRENCY} in flight)")
        bench_judging.model_ablation(report, demo_path)
        report.section("Ablation with the offline judge")
        bench_judging.offline_ablation(report, demo_path)
        if args.quick:
            report.note("Ragas comparison skipped (--quick)")
        else:
            report.section("Side by side with Ragas' faithfulness (same samples, same server)")
            bench_judging.ragas(report, work, demo_path)

    if "sequential" in sections:
        report.section("Sequential ablation: calls saved, verdicts against every sample, simulated false alarms")
        if not demo_path.exists():
            from lib.jobs._demo import build_demo
            build_demo(demo_path, n_runs=demo_runs)
        bench_sequential.sequential(report, demo_path, work, sims=400)   # about 20 s of simulation

    if "engine" in sections:
        bench_engine.engine(report, work, demo_runs)

    if "pages" in sections:
        targets = [(demo_path, f"demo, {demo_runs} runs"), (stores[max(sizes)], f"synthetic, {max(sizes):,} runs")]
        for db, label in targets:
            if not db.exists():
                report.note(f"pages on {label}: no database at {db} (run the store or judging section first)")
                continue
            report.section(f"Page loads in headless Chromium: {label}")
            bench_pages.page_loads(report, work, db, label, cold=not args.quick)

    if len(sizes) > 1:
        report.section(f"How the figures grow from {SMALL:,} to {LARGE:,} runs")
        growth(report)
    if "scale" in sections and not args.quick:
        bench_scale.scale(report, work)   # 20,000 runs: about 4 GB on disk and several minutes
    report.summary()
    report.write(work / "figures.json")
    print(f"figures written to {work / 'figures.json'}")
    if args.readme:
        readme.update(work / "figures.json", args.readme)
        print(f"figure tables written from them: {args.readme}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
