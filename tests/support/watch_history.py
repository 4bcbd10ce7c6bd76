"""Small run histories for the watcher, built in the test: one metric's nightly runs at chosen levels, with the
instrument, pipeline and failures a case asks for. Scores are drawn per sample around the night's level (seeded),
so steps have a paired per-sample change and the run-to-run spread is measured as with real runs; no judge runs.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.records import MAIN, MetricRecord, RunRecord
from lib.core.results import FAILED, OK, SampleResult
from lib.core.samples import EvalSample
from lib.store import Store
from tests.support.synthetic_runs import LEAKY_FAITHFULNESS, facts

START = datetime(2026, 9, 1, 2, 0)
N = 40
SD = 0.08          # per-sample spread around the night's level: a run mean moves about 0.013 from noise alone
SAMPLES = [EvalSample(f"s{i:03d}", f.question, f"{f.fact1} {f.filler}", (f.fact1, f.fact2), f.fact1)
            for i, f in enumerate(facts(N))]
DEFAULT = DEFAULT_TEMPLATES["faithfulness"]
LEAKY = LEAKY_FAITHFULNESS
EDITED = DEFAULT + "\nBe strict."   # another prompt that reads the same fields


def run_id(day: int) -> str:
    return f"night-{day:03d}"


def night(store: Store, day: int, level: float, *, metric: str = "faithfulness", template: str = DEFAULT,
          binding: str = PROJECTED, judge_model: str = "offline-lexical-v2", pipeline: dict | None = None,
          failed: int = 0, seed: int = 0, hours: float = 24.0, suite: str = MAIN, start: datetime = START) -> str:
    """Record night `day` of a history (from `start`): `metric` scored around `level`, `failed` samples failed;
    returns its id."""
    rng = random.Random(seed * 100_003 + day)
    results = []
    for k, s in enumerate(SAMPLES):
        if k < failed:
            results.append(SampleResult(s.sample_id, FAILED, None, reason="judge reply unreadable"))
            continue
        results.append(SampleResult(s.sample_id, OK, min(1.0, max(0.0, rng.gauss(level, SD)))))
    rid = run_id(day)
    store.record_run(RunRecord(rid, start + timedelta(hours=hours * day), pipeline or {"retriever": "v1"},
                               {suite: SAMPLES},
                               [MetricRecord(metric, results, judge_model, template, binding, suite=suite)]))
    return rid


def history(store: Store, levels: list[float], **kw: object) -> list[str]:
    """Record one night per level, from day 0."""
    return [night(store, d, lv, **kw) for d, lv in enumerate(levels)]  # type: ignore[arg-type]


def at(day: float) -> datetime:
    """The time of night `day` (a fraction: hours after it)."""
    return START + timedelta(hours=24 * day)
