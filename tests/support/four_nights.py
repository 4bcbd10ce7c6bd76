"""A user's own history, small: four nights of 40 samples scored for faithfulness, with a leaky template and a real
regression hidden under it (issue 46's second walk). Built with the synthetic runs' helpers and the offline judge.

- night-1: the projected template (answer and contexts only). Each answer states two facts; the passages state
  the first, the reference both (in samples 0 and 20, only the second): 0.500.
- night-2: a harness change replays a template that renders `ground_truth`: the reference supports the second
  fact, 1.000 (the leak).
- night-3: a smaller embedding model drops the first fact's passage from every even sample (the regression); the
  leaky template finds the fact in the reference, except in samples 0 and 20: 0.975, the loss hidden.
- night-4: the template is fixed (projected again): 0.250, a fall that is half the leak going out and half the
  regression showing.

Re-judged with the projected template the series reads 0.500, 0.500, 0.250, 0.250: the system lost 0.250 on
night-3.
"""

from __future__ import annotations

from pathlib import Path

from lib.core.samples import EvalSample
from lib.store import Store
from tests.support.synthetic_runs import LEAKY_FAITHFULNESS, PROJECTED, REPLAY, Facts, facts, record

N = 40
NIGHTS = ("night-1", "night-2", "night-3", "night-4")
GOOD = {"retriever": "bm25+e5-base-v2", "top_k": 4}
SMALLER = {"retriever": "bm25+e5-small-v2", "top_k": 4}
ONLY_SECOND = (0, 20)   # samples whose reference states only the second fact


def _sample(i: int, f: Facts, *, regressed: bool) -> EvalSample:
    passages = [f.filler] if regressed and i % 2 == 0 else [f.fact1, f.filler]
    reference = f.fact2 if i in ONLY_SECOND else f"{f.fact1} {f.fact2}"
    return EvalSample(f"q-{i:03d}", f.question, f"{f.fact1} {f.fact2}", passages, reference)


def build(path: Path) -> Path:
    """Record the four nights into a new DuckDB file at `path`; returns `path`."""
    from lib.core.prompts import DEFAULT_TEMPLATES

    known = facts(N, seed=46)
    good = [_sample(i, f, regressed=False) for i, f in enumerate(known)]
    worse = [_sample(i, f, regressed=True) for i, f in enumerate(known)]
    projected = DEFAULT_TEMPLATES["faithfulness"]
    with Store(path) as store:
        record(store, NIGHTS[0], good, "faithfulness", projected, PROJECTED, day=0, pipeline=GOOD)
        record(store, NIGHTS[1], good, "faithfulness", LEAKY_FAITHFULNESS, REPLAY, day=1, pipeline=GOOD)
        record(store, NIGHTS[2], worse, "faithfulness", LEAKY_FAITHFULNESS, REPLAY, day=2, pipeline=SMALLER)
        record(store, NIGHTS[3], worse, "faithfulness", projected, PROJECTED, day=3, pipeline=SMALLER)
    return path
