"""The judge engine's figures for tests/benchmarks/run.py: in flight (bench_inflight), distinct prompts
(bench_distinct), the batch path (bench_batch), each measured on a fresh copy of the demo database."""

from __future__ import annotations

import re
from pathlib import Path

from tests.benchmarks import bench_batch, bench_distinct, bench_inflight
from tests.benchmarks.report import Figure, Report


def verdict(target: str, value: float) -> bool | None:
    """PASS/MISS against a target written '<= 1.2x', '1.00' or '0'; None for 'none'."""
    m = re.fullmatch(r"<=\s*([\d.]+)x?", target.strip())
    if m:
        return value <= float(m.group(1))
    try:
        return abs(value - float(target)) < 1e-9
    except ValueError:
        return None


SECTIONS = ((bench_inflight, "Judge engine: calls in flight (50 ms a call) and client CPU per call"),
            (bench_distinct, "Judge engine: calls per distinct prompt (re-judged history, repeated ablation)"),
            (bench_batch, "The batch path end to end (Batch API on the loopback server)"))


def engine(report: Report, work: Path, demo_runs: int) -> None:
    """Each engine benchmark in its own section (the batch one to tests/benchmarks/README.md's Scaling, the rest to
    Performance)."""
    runs = max(demo_runs, bench_inflight.LEAKY_RUN + 1)
    for module, title in SECTIONS:
        report.section(title)
        name = module.__name__.rsplit(".", 1)[-1]
        for i, (what, value, target, note) in enumerate(module.measure(bench_inflight.demo_db(work, runs, name))):
            unit = "ms" if "CPU" in what else "x" if "ratio" in what or "/" in what else "calls"
            report.add(Figure(f"engine:{name}:{i}", what, float(value), unit,
                              "" if target == "none" else target, verdict(target, float(value)), note))
