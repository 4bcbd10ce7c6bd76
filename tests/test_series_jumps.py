"""Re-judged series decide jumps by the rule the stored series use (issue 25: one rule).

A re-judged series is one instrument over the team's runs; its steps used to be flagged by a spread estimated
from the series' own few differences (the jump among them), so a collapse at three runs read as no jump, and at
two runs a one-sample move cleared the 0.005 floor. Each series here is written in the test (30 samples per run,
scores set directly) and read back through rejudge.load_series, at 2, 3, 4 and 5 runs.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED, prompt_hash
from lib.core.records import MAIN, MetricRecord, RunRecord
from lib.core.results import OK, SampleResult
from lib.core.samples import EvalSample
from lib.diagnosis.incidents import _incidents as incidents
from lib.diagnosis.rejudge import _run as rejudge
from lib.store import Store
from lib.store import history as hs

N = 30
FAITH = DEFAULT_TEMPLATES["faithfulness"]


def level(i: int, k: int) -> list[float]:
    """A run's per-sample scores: 0.8 on average, each sample its own fixed level plus a small repeat wobble."""
    return [min(1.0, 0.6 + 0.4 * ((s * 7) % 10) / 9 + (0.01 if (s + k) % 3 == 0 else 0.0)) for s in range(N)]


def write_series(store: Store, runs: list[list[float]]) -> rejudge.Series:
    samples = [EvalSample(f"s{s:02d}", f"q{s}", f"a{s}", (f"p{s}",), f"g{s}") for s in range(N)]
    ids = [f"r{i}" for i in range(len(runs))]
    for i, rid in enumerate(ids):
        recorded = [SampleResult(f"s{s:02d}", OK, 0.5) for s in range(N)]
        store.record_run(RunRecord(rid, datetime(2026, 9, 1) + timedelta(days=i), {"retriever": "v1"},
                                   {MAIN: samples}, [MetricRecord("faithfulness", recorded, "m", FAITH, PROJECTED)]))
    hs.start_series(store, "rj-test", metric="faithfulness", suite=MAIN, spec={}, judge_model="m",
                    prompt_hash=prompt_hash(FAITH), binding=PROJECTED, label="test", total=N * len(runs))
    for rid, scores in zip(ids, runs, strict=True):
        hs.add_series_run(store, "rj-test", rid, [SampleResult(f"s{s:02d}", OK, x) for s, x in enumerate(scores)])
    hs.finish_series(store, "rj-test", "done")
    series = rejudge.load_series(store, "rj-test")
    assert series is not None
    return series


def collapse(runs: int) -> list[list[float]]:
    """Steady runs, then the last one loses 0.3 on every sample (the issue's 0.817 -> 0.517)."""
    out = [level(0, k) for k in range(runs - 1)]
    return [*out, [x - 0.3 for x in level(0, runs)]]


def no_change(runs: int) -> list[list[float]]:
    """Steady runs; in the last, one sample of 30 moves by 0.5 (a mean move of 0.017)."""
    out = [level(0, k) for k in range(runs - 1)]
    last = level(0, runs - 2)
    last[0] = last[0] - 0.5
    return [*out, last]


@pytest.mark.parametrize("runs", [2, 3, 4, 5])
@pytest.mark.parametrize(("case", "build", "jump"), [("collapse", collapse, True), ("no change", no_change, False)])
def test_a_short_rejudged_series_is_decided_by_the_paired_change(tmp_path: Path, runs: int, case: str, build,
                                                                 jump: bool) -> None:
    with Store(tmp_path / "db.duckdb") as store:
        series = write_series(store, build(runs))
        last = f"r{runs - 1}"
        assert [j.run_id for j in series.jumps] == ([last] if jump else [])
        said = incidents.series_step(series.frame, last, series.threshold)
    assert said is not None and ("the system changed" in said) is jump
    if jump:
        [j] = series.jumps
        assert j.delta == pytest.approx(-0.3, abs=0.01) and 0.005 <= j.threshold < 0.1
