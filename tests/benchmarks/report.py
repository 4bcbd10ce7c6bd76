"""Figures: a measured value, its target, and whether it meets it; printed as they come and as a table."""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

PASS, MISS, INFO = "PASS", "MISS", "info"


@dataclass(frozen=True)
class Figure:
    """One measured figure.

    Attributes:
        key: a stable identifier (for the growth ratios and the JSON file).
        name: what was measured, in words.
        value: the number.
        unit: its unit ('s', 'ms', 'rows/s', 'MiB', 'x', 'calls', ...).
        target: the target in words ('>= 200,000 rows/s'), or '' when there is none.
        ok: True/False against the target, None for information only.
        note: how it was measured, or why it missed.
    """

    key: str
    name: str
    value: float
    unit: str
    target: str = ""
    ok: bool | None = None
    note: str = ""
    section: str = ""   # the benchmark section it was measured in (set by Report.add)

    @property
    def status(self) -> str:
        return INFO if self.ok is None else (PASS if self.ok else MISS)

    def line(self) -> str:
        target = f"target {self.target}" if self.target else ""
        note = f"  ({self.note})" if self.note else ""
        return f"{self.status:>4}  {self.name:<62} {fmt(self.value, self.unit):>16}  {target:<22}{note}"


def fmt(value: float, unit: str) -> str:
    if value != value:  # NaN
        return "n/a"
    if unit in ("rows/s", "samples/s", "calls", "rows", "runs", "cells"):
        return f"{value:,.0f} {unit}"
    if unit == "ms":
        return f"{value:,.1f} ms"
    if unit == "x":
        return f"{value:.2f}x"
    return f"{value:,.2f} {unit}"


class Report:
    """Collects figures, prints each as it is measured, and writes them all as JSON."""

    def __init__(self) -> None:
        self.figures: list[Figure] = []
        self.t0 = time.perf_counter()
        self.current = ""

    def add(self, figure: Figure) -> Figure:
        if not figure.section:
            figure = dataclasses.replace(figure, section=self.current)
        self.figures.append(figure)
        print(figure.line(), flush=True)
        return figure

    def section(self, title: str) -> None:
        self.current = title
        print(f"\n== {title} [{time.perf_counter() - self.t0:,.0f} s in]", flush=True)

    def note(self, text: str) -> None:
        print(f"      {text}", flush=True)

    def get(self, key: str) -> Figure | None:
        return next((f for f in self.figures if f.key == key), None)

    def summary(self) -> None:
        print("\n== Summary: every figure with its target", flush=True)
        for f in self.figures:
            if f.ok is not None:
                print(f.line())
        misses = [f for f in self.figures if f.ok is False]
        print(f"\n{sum(f.ok is True for f in self.figures)} PASS, {len(misses)} MISS, "
              f"{sum(f.ok is None for f in self.figures)} info; {time.perf_counter() - self.t0:,.0f} s in all",
              flush=True)

    def write(self, path: Path) -> None:
        path.write_text(json.dumps([asdict(f) for f in self.figures], indent=1))


def median_ms(fn: Callable[[], object], repeats: int = 5) -> tuple[float, object]:
    """Median wall time of `repeats` calls, in milliseconds, and the last result."""
    times = []
    out: object = None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), out


def vm_hwm_mib(pid: int | str = "self", field: str = "VmHWM") -> float:
    """Peak resident memory (VmHWM) of a process, in MiB (Linux /proc); field="VmRSS": resident now."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def warn(text: str) -> None:
    print(f"  !   {text}", file=sys.stderr, flush=True)
