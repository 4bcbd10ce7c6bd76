"""How the labelled samples were drawn, and the corrected mean's estimator that matches it.

PPI (lib.diagnosis.agreement._ppi) holds for labels drawn uniformly at random. The Labels page's queue draws
where the judge is unsure first (lib.diagnosis.agreement._active); its labels carry the queue's weights
(lib.core.labels.QueueDraw), and for them the Horvitz-Thompson estimator `active_mean` holds. A corrected value
is shown only where one of the two holds for every labelled sample:

- every sample drawn uniformly (a file, the CLI, the demo): PPI (PPI++'s tuning);
- every sample offered by one queue over exactly the samples being corrected: the weighted estimator, with
  inclusion probability min(1, n w / total) at n samples labelled from it (sequential Poisson sampling;
  `_active.inclusion` without its capping step, which needs every weight: a cap binds only when one sample
  weighs more than total / n);
- otherwise no number, and one line saying why: samples from the dashboard stored before the queue's weights
  were kept (their chance of being drawn is unknown), a mix of uniform and queue draws, several queues (their
  designs differ), or a queue over another set of samples than the one corrected.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

UNIFORM = "uniform"
UNKNOWN = "unknown"
MIXED = "mixed"
QUEUE = "queue"
DASHBOARD = "dashboard"   # the Labels page's source: its labels came through the queue


@dataclass(frozen=True)
class SampleDraw:
    """How one labelled sample was drawn.

    Attributes:
        design: UNIFORM, UNKNOWN, MIXED (its labels disagree on it) or QUEUE.
        queue: the queue's identity (run id, total weight, size) when QUEUE.
        weight: the sample's weight in that queue.
    """

    design: str
    queue: tuple[str, float, int] | None = None
    weight: float = float("nan")


@dataclass(frozen=True)
class Withheld:
    """No corrected value: the labels' draw does not support one. The judge's mean stays.

    Attributes:
        judge: the judge's mean over its scored samples.
        n_labelled: labelled samples paired with the judge's scores.
        reason: one line saying why no corrected value is shown.
    """

    judge: float
    n_labelled: int
    reason: str

    @property
    def short(self) -> str:
        return f"{self.judge:.2f} by the judge; not corrected ({self.reason})"

    def sentence(self, metric: str) -> str:
        """'faithfulness 0.94 by the judge; not corrected: ...'."""
        return f"{metric} {self.judge:.2f} by the judge; not corrected: {self.reason}"


@dataclass(frozen=True)
class Choice:
    """The estimator a set of labelled samples supports.

    Attributes:
        estimator: "ppi", "weighted" or "" (none: `reason` says why).
        reason: why no estimator holds ('' when one does).
        pi: each sample's inclusion probability, in the order given ("weighted" only).
    """

    estimator: str
    reason: str = ""
    pi: tuple[float, ...] = ()


def sample_draws(labels: pd.DataFrame) -> dict[str, SampleDraw]:
    """Each labelled sample's draw, from its current labels (Store.labels rows: source and queue_* columns).

    A label with a queue's weights is a QUEUE draw; a dashboard label without them an UNKNOWN one (stored before
    the weights were kept); any other a UNIFORM one. A sample whose labels say different things is MIXED.
    """
    if labels.empty:
        return {}
    n = len(labels)
    has = "queue_run" in labels.columns
    # one pass over plain columns, not a groupby with rows as tuples: 0.35 of the Overview's first 2.1 CPU s on the
    # demo went here
    runs = labels["queue_run"].tolist() if has else [None] * n
    totals, sizes, weights = ((labels[c].tolist() if has else [None] * n)
                              for c in ("queue_total", "queue_size", "queue_weight"))
    seen: dict[str, set[SampleDraw]] = {}
    for sid, source, run, total, size, weight in zip(labels["sample_id"].tolist(), labels["source"].tolist(),
                                                     runs, totals, sizes, weights, strict=True):
        if isinstance(run, str) and run:
            draw = SampleDraw(QUEUE, (run, float(total), int(size)), float(weight))
        elif source == DASHBOARD:
            draw = SampleDraw(UNKNOWN)
        else:
            draw = SampleDraw(UNIFORM)
        seen.setdefault(str(sid), set()).add(draw)
    return {sid: draws.pop() if len(draws) == 1 else SampleDraw(MIXED) for sid, draws in seen.items()}


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"


def choose(draws: Sequence[SampleDraw], population: int) -> Choice:
    """The estimator that holds for labelled samples drawn as `draws` from `population` scored samples.

    Example:
        >>> choose([SampleDraw(UNIFORM)] * 3, 10).estimator
        'ppi'
        >>> choose([SampleDraw(QUEUE, ("r", 4.0, 10), 1.0)] * 2, 10).pi
        (0.5, 0.5)
    """
    designs = [d.design for d in draws]
    if all(d == UNIFORM for d in designs):
        return Choice("ppi")
    if UNKNOWN in designs:
        k = designs.count(UNKNOWN)
        return Choice("", f"{_count(k, 'labelled sample')} came from the Labels page's queue before it kept how it "
                          "drew them, so their chance of being drawn is unknown and no estimator holds")
    if MIXED in designs:
        k = designs.count(MIXED)
        return Choice("", f"{_count(k, 'labelled sample')} drawn more than one way (their labels came at random "
                          "and from the Labels page's queue, or from queues with different weights): no one "
                          "estimator holds for the mix")
    if UNIFORM in designs:
        k = designs.count(UNIFORM)
        return Choice("", f"{_count(k, 'labelled sample')} drawn at random and {len(designs) - k} taken from the "
                          "Labels page's queue (which favours samples the judge is unsure of): no one estimator "
                          "holds for the mix")
    queues = {d.queue for d in draws}
    if len(queues) > 1:
        runs = sorted({q[0] for q in queues if q})
        return Choice("", f"labels taken from {len(queues)} queues with different weights (runs "
                          f"{', '.join(runs)}): no one estimator holds for the mix")
    (queue,) = queues
    assert queue is not None
    run, total, size = queue
    if size != population:
        return Choice("", f"the labels came from run {run}'s queue over {size} samples, and {population} are "
                          "corrected here: its weights do not give these samples' chances of being drawn")
    n = len(draws)
    pi = np.minimum(1.0, n * np.array([d.weight for d in draws]) / total)
    return Choice("weighted", pi=tuple(float(p) for p in pi))


def draws_of(found: Mapping[str, SampleDraw], sample_ids: Sequence[str]) -> list[SampleDraw]:
    """The draws of `sample_ids`, in order (a sample with no current label of its own: UNKNOWN)."""
    return [found.get(str(s), SampleDraw(UNKNOWN)) for s in sample_ids]
