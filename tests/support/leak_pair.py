"""Two runs of the same demo samples, faithfulness only, judged by the offline judge: r1 with the projected
template, r2 (a day later) with one that also renders ground_truth (the leak: the judge says more is supported).
The label-corrected value's tests (test_corrected, test_label_next, test_label_design) build on them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from lib.core.labels import SCORE, Label, content_key
from lib.core.prompts import DEFAULT_TEMPLATES, REPLAY
from lib.core.samples import EvalSample
from lib.judging import OfflineJudge
from lib.judging.scoring import evaluate_run
from lib.store import Store

T0 = datetime(2026, 3, 1)
LEAKY = DEFAULT_TEMPLATES["faithfulness"].replace("{contexts}", "{contexts}\n\n{ground_truth}")


def record_pair(store: Store, samples: Sequence[EvalSample]) -> None:
    """Record r1 (projected) and r2 (leaky) on `samples`."""
    store.record_run(evaluate_run("r1", samples, OfflineJudge("offline-lexical-v2"), metrics=["faithfulness"],
                                  started_at=T0, pipeline={"k": 1}))
    store.record_run(evaluate_run("r2", samples, OfflineJudge("offline-lexical-v2"), metrics=["faithfulness"],
                                  templates={"faithfulness": LEAKY}, binding=REPLAY,
                                  started_at=T0 + timedelta(days=1), pipeline={"k": 1}))


def halved_labels(store: Store, samples: Sequence[EvalSample]) -> list[Label]:
    """People's whole-sample scores of `samples`: half what r1's judge scored each."""
    judged = store.sample_scores("r1", metric="faithfulness").set_index("sample_id")["score"]
    return [Label(suite="main", sample_id=s.sample_id, metric="faithfulness", item=None, kind=SCORE,
                  value=round(float(judged[s.sample_id]) * 0.5, 4), content=content_key("faithfulness", s),
                  labeller="ann", labelled_at=T0, source="test") for s in samples]
