"""External scorers for the swap and positive-control arms: `module:function`, samples in, one score each out.

Written apart from the engine: what each one reads is in its own code, never told to the ablation.
"""

from __future__ import annotations

from collections.abc import Sequence

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED, REPLAY
from lib.core.results import OK
from lib.core.samples import EvalSample
from lib.judging import OfflineJudge
from lib.judging.harness import Instrument, score_sample

# an answer_correctness harness whose template checks the answer against the passages, not the reference
PASSAGE_CORRECTNESS = DEFAULT_TEMPLATES["answer_correctness"].replace(
    "REFERENCE ANSWER:\n{ground_truth}", "REFERENCE ANSWER:\n{contexts}")


def always_one(samples: Sequence[EvalSample]) -> list[float | None]:
    """A harness that gives full marks whatever it is shown."""
    return [1.0 for _ in samples]


def _judged(samples: Sequence[EvalSample], instrument: Instrument) -> list[float | None]:
    judge = OfflineJudge()
    results = [score_sample(s, instrument, judge, screen=False) for s in samples]
    return [r.score if r.status == OK else None for r in results]


def reference_correctness(samples: Sequence[EvalSample]) -> list[float | None]:
    """answer_correctness wired as the table says: the answer's claims against the reference."""
    return _judged(samples, Instrument("answer_correctness", DEFAULT_TEMPLATES["answer_correctness"], PROJECTED))


def passage_correctness(samples: Sequence[EvalSample]) -> list[float | None]:
    """answer_correctness that reads the passages where the reference belongs: it ignores the reference."""
    return _judged(samples, Instrument("answer_correctness", PASSAGE_CORRECTNESS, REPLAY))
