"""People's labels of samples, as values: what was labelled, the judgement, who and when.

A label is a person's judgement of one sample for one metric: a binary one (supported / not, relevant /
not: 1.0 or 0.0) or a score in [0, 1]; of the whole sample (item None) or of one item (a claim, a passage or
a statement, 1-based in the order the metric's items are read, `lib.core.metrics.items_of`). It carries the
hash of the fields the labeller saw for that metric (`content_key`): a label holds for a sample with the same
content, never for a sample whose answer or passages changed under the same id.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, fields
from datetime import datetime

from lib.core.metrics import get_metric, items_of
from lib.core.samples import EvalSample

BINARY = "binary"
SCORE = "score"
KINDS = (BINARY, SCORE)


def content_key(metric: str, sample: EvalSample) -> str:
    """The hash of what a labeller of `metric` sees of `sample`: only the fields the metric receives."""
    view = get_metric(metric).project(sample)
    body = {f.name: getattr(view, f.name) for f in fields(view)}
    text = json.dumps(body, ensure_ascii=False, sort_keys=True, default=list)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def label_items(metric: str, sample: EvalSample) -> list[str]:
    """The items a label's `item` number counts (1-based): the metric's claims, passages or statements."""
    spec = get_metric(metric)
    return items_of(spec, spec.project(sample))


@dataclass(frozen=True)
class QueueDraw:
    """How a queue offered a sample for labelling (lib.diagnosis.agreement._active): it took the samples of run
    `run_id` in ascending u / w order, so after n labels this sample's inclusion probability is about
    min(1, n weight / total) (sequential Poisson sampling).

    Attributes:
        run_id: the run whose queue offered the sample.
        weight: the sample's weight w in that queue.
        total: the sum of the queue's weights (over its `size` samples) when the sample was offered.
        size: how many samples the queue drew from.
    """

    run_id: str
    weight: float
    total: float
    size: int


@dataclass(frozen=True)
class Label:
    """One person's label of one sample (or one of its items) for one metric.

    Attributes:
        suite: the suite the sample belongs to.
        sample_id: the sample's id.
        metric: the metric the judgement is for.
        item: 1-based item number, or None for the whole sample.
        kind: BINARY (value 1.0 or 0.0) or SCORE (value in [0, 1]).
        value: the judgement.
        content: `content_key` of the sample the labeller saw.
        labeller: who labelled it (login e-mail or a typed name).
        labelled_at: when.
        source: the door it came through ("file:<name>", "cli", "dashboard", "demo").
        note: an optional remark.
        seq: the store's order of labels (0 before it is stored).
        drawn: how the sample was drawn for labelling, when a queue drew it (the Labels page's active order):
            its weight there and that queue's run, total weight and size; None when nothing is known of the
            draw (a file, the CLI, the demo: taken as a uniform draw, except a dashboard label stored before the
            queue's weights were kept, whose draw is unknown).
    """

    suite: str
    sample_id: str
    metric: str
    item: int | None
    kind: str
    value: float
    content: str
    labeller: str
    labelled_at: datetime
    source: str
    note: str = ""
    seq: int = 0
    drawn: QueueDraw | None = None

    @property
    def key(self) -> tuple[str, str, str, int | None, str, str]:
        """What a newer label by the same person supersedes: suite, sample, metric, item, labeller, content."""
        return (self.suite, self.sample_id, self.metric, self.item, self.labeller, self.content)


def check_value(kind: str, value: float) -> str | None:
    """Why `value` is not a valid label of `kind`, or None when it is."""
    if kind not in KINDS:
        return f"kind must be {' or '.join(KINDS)}, got {kind!r}"
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        return f"value must be a number, got {value!r}"
    if kind == BINARY and value not in (0.0, 1.0):
        return f"a binary label is 1 or 0 (or true/false), got {value!r}"
    if not 0.0 <= value <= 1.0:
        return f"a score label lies in [0, 1], got {value!r}"
    return None
