"""Synthetic runs for the sequential ablation, unlike the demo: claims as tokens, harnesses as scorers.

Each sample's answer is a list of claim tokens; each claim is stated by a
passage, by the reference only, or by neither, with chances the case picks.
The harnesses below are external scorers (`module:function`), so the ablation
cannot read their wiring and has only the measurement to go on:

- `leaky`: a claim counts as supported when a passage or the reference states it.
- `clean`: only passages count; the reference and question are shown to it and
  ignored, but any change in what it is shown reshuffles its per-claim noise, as
  a model's verdicts change when its prompt changes: a clean run with real noise.

Every judgment flips with a small chance decided by a hash of what the harness
saw, so re-scoring the same input gives the same score (a deterministic judge),
and blanking any field it is shown changes the noise, never the expected score.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from datetime import datetime

from lib.core.records import MAIN, MetricRecord, RunRecord
from lib.core.results import OK, SampleResult
from lib.core.samples import EvalSample
from lib.store import Store

FLIP = 0.06


def make_samples(n: int, *, seed: int, p_passage: float = 0.7, p_reference: float = 0.2) -> list[EvalSample]:
    """n samples; each claim stated by a passage (p_passage), else by the reference only (p_reference), else none."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        claims = [f"c{i}x{j}" for j in range(rng.randint(3, 6))]
        passages, reference = [], []
        for c in claims:
            r = rng.random()
            if r < p_passage:
                passages.append(c)
                reference.append(c)
            elif r < p_passage + p_reference:
                reference.append(c)
        contexts = (" ".join(passages) or f"filler{i}", f"other{i}")
        out.append(EvalSample(f"q{i:04d}", f"question {i}?", " ".join(claims), contexts, " ".join(reference)))
    return out


def _flip(*parts: str) -> bool:
    h = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return int.from_bytes(h[:4], "big") / 2 ** 32 < FLIP


def _score(s: EvalSample, *, reads_reference: bool) -> float | None:
    claims = s.answer.split()
    if not claims:
        return None
    passage_words = set(" ".join(s.contexts).split())
    reference_words = set(s.ground_truth.split())
    seen = "|".join((s.question, " ".join(s.contexts), s.ground_truth))
    supported = 0
    for c in claims:
        ok = c in passage_words or (reads_reference and c in reference_words)
        supported += ok != _flip(c, seen)
    return supported / len(claims)


def leaky(samples: Sequence[EvalSample]) -> list[float | None]:
    """A harness that counts the reference as support (a leak no template shows)."""
    return [_score(s, reads_reference=True) for s in samples]


def clean(samples: Sequence[EvalSample]) -> list[float | None]:
    """A harness that counts only passages as support, its noise reshuffled by anything it is shown."""
    return [_score(s, reads_reference=False) for s in samples]


def record(store: Store, run_id: str, samples: list[EvalSample], scorer_name: str) -> None:
    """Record the run with the scores its own harness gives, so the ablation's replay reproduces it."""
    scores = {"leaky": leaky, "clean": clean}[scorer_name](samples)
    results = [SampleResult(s.sample_id, OK, v) for s, v in zip(samples, scores, strict=True) if v is not None]
    store.record_run(RunRecord(run_id, datetime(2026, 11, 1, 2, 0), {"harness": scorer_name}, {MAIN: samples},
                               [MetricRecord("faithfulness", results, None, None, None)]))
