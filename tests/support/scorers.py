"""External scorers for ablation tests: `module:function`, samples in, one score (or None) per sample out."""

from __future__ import annotations

from collections.abc import Sequence

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED, REPLAY
from lib.core.results import OK
from lib.core.samples import EvalSample
from lib.jobs._demo import LEAKY_FAITHFULNESS
from lib.judging import OfflineJudge
from lib.judging.harness import Instrument, score_sample


def constant(samples: Sequence[EvalSample]) -> list[float | None]:
    """A harness that ignores its inputs: every sample scores 0.5."""
    return [0.5 for _ in samples]


def mostly_failing(samples: Sequence[EvalSample]) -> list[float | None]:
    """A harness that returns a score for one sample in four and nothing for the rest."""
    return [0.5 if i % 4 == 0 else None for i, _ in enumerate(samples)]


def _faithfulness(samples: Sequence[EvalSample], instrument: Instrument) -> list[float | None]:
    judge = OfflineJudge()
    # an external harness: it judges whatever it is given (evaldrift's own screening is not its code)
    results = [score_sample(s, instrument, judge, screen=False) for s in samples]
    return [r.score if r.status == OK else None for r in results]


def leaky_faithfulness(samples: Sequence[EvalSample]) -> list[float | None]:
    """A harness whose code hands the judge the reference: a leak no stored template shows."""
    return _faithfulness(samples, Instrument("faithfulness", LEAKY_FAITHFULNESS, REPLAY))


def wired_faithfulness(samples: Sequence[EvalSample]) -> list[float | None]:
    """The same harness wired as the table says: answer and contexts only."""
    return _faithfulness(samples, Instrument("faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED))


def whole_sample_faithfulness(samples: Sequence[EvalSample]) -> list[float | None]:
    """A harness that serialises the whole sample into its faithfulness prompt (question and reference too)."""
    from tests.support.synthetic_runs import WHOLE_SAMPLE_FAITHFULNESS

    return _faithfulness(samples, Instrument("faithfulness", WHOLE_SAMPLE_FAITHFULNESS, REPLAY))


def partial_leak_faithfulness(samples: Sequence[EvalSample]) -> list[float | None]:
    """A harness whose code lets the reference reach its check for one sample in 15 (by position, a stable share
    of any order): a leak that moves the run's faithfulness by a few hundredths, below the 0.02 worth naming at
    the interval's near end."""
    leaky = Instrument("faithfulness", LEAKY_FAITHFULNESS, REPLAY)
    wired = Instrument("faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)
    judge = OfflineJudge()
    out: list[float | None] = []
    for s in samples:
        n = int("".join(c for c in s.sample_id if c.isdigit()) or 0)
        r = score_sample(s, leaky if n % 15 == 0 else wired, judge, screen=False)
        out.append(r.score if r.status == OK else None)
    return out
