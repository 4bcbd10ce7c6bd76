"""Small synthetic eval runs built inside the tests, not tuned like the demo.

Words are drawn from syllables by a seeded generator, so no sample shares
content words with another unless a case puts them there. Each sample has two
facts: `fact1` and `fact2`; a case decides which artifacts state which fact.
A run is recorded with the scores its own instrument gives, so an ablation's
re-judged baseline reproduces it unless a case says otherwise.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED, REPLAY
from lib.core.records import MAIN, MetricRecord, RunRecord
from lib.core.results import OK, SampleResult
from lib.core.samples import EvalSample
from lib.judging import OfflineJudge
from lib.judging.harness import Instrument, score_samples
from lib.store import Store

SYLLABLES = ("ka", "lo", "mi", "ru", "te", "vo", "zi", "pa", "ne", "so", "bu", "de", "fi", "go", "ha", "ju")
WHOLE_SAMPLE_FAITHFULNESS = DEFAULT_TEMPLATES["faithfulness"].replace("CONTEXT:\n{contexts}", "{sample}")
LEAKY_FAITHFULNESS = DEFAULT_TEMPLATES["faithfulness"].replace(
    "CLAIMS:\n{items}", "REFERENCE ANSWER:\n{ground_truth}\n\nCLAIMS:\n{items}")


@dataclass(frozen=True)
class Facts:
    question: str
    fact1: str
    fact2: str
    filler: str


def facts(n: int, *, seed: int = 7) -> list[Facts]:
    """n samples' worth of facts with words no other sample uses."""
    rng = random.Random(seed)
    used: set[str] = set()

    def word() -> str:
        while True:
            w = "".join(rng.choice(SYLLABLES) for _ in range(3))
            if w not in used:
                used.add(w)
                return w

    out = []
    for i in range(n):
        w = [word() for _ in range(8)]
        out.append(Facts(f"How long does the {w[0]} {w[1]} keep {w[2]}?",
                         f"The {w[0]} {w[1]} keeps {w[2]} for {10 + i} days.",
                         f"The {w[3]} {w[4]} rotates {w[5]} every {100 + i} hours.",
                         f"The {w[6]} portal lists {w[7]} options."))
    return out


Case = Callable[[int, Facts], EvalSample]


def samples(case: Case, n: int = 40, *, seed: int = 7) -> list[EvalSample]:
    return [case(i, f) for i, f in enumerate(facts(n, seed=seed))]


def record(store: Store, run_id: str, items: list[EvalSample], metric: str, template: str, binding: str, *,
           judge: OfflineJudge | None = None, day: int = 0, pipeline: dict | None = None,
           judge_model: str | None = None, fixed_score: float | None = None) -> RunRecord:
    """Score the samples with (template, binding, judge) and record them as a run.

    `judge_model` records another judge's name than the one that scored (a run
    "judged by a model"); `fixed_score` stores that score for every sample
    instead (stored scores that today's instrument does not reproduce).
    """
    judge = judge or OfflineJudge()
    results = (score_samples(items, Instrument(metric, template, binding), judge, seed=0) if fixed_score is None
               else [SampleResult(s.sample_id, OK, fixed_score) for s in items])
    run = RunRecord(run_id, datetime(2026, 10, 1, 2, 0) + timedelta(days=day), pipeline or {"retriever": "v1"},
                    {MAIN: items}, [MetricRecord(metric, results, judge_model or judge.model, template, binding)])
    store.record_run(run)
    return run


__all__ = ["LEAKY_FAITHFULNESS", "PROJECTED", "REPLAY", "WHOLE_SAMPLE_FAITHFULNESS", "Facts", "facts", "record",
           "samples"]
