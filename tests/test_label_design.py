"""A label carries how it was drawn, and the corrected value uses the estimator that matches (issue 45 B5).

The Labels page's queue takes samples where the judge is unsure first (lib.diagnosis.agreement._active): labels
taken in that order are not a uniform sample, so plain PPI over them is biased toward those samples. Each
label the page stores keeps the queue's weight of its sample, and every corrected value (a run's, a segment's,
the incident's and the Review's sentence) is the weighted (Horvitz-Thompson) one then; a mix of designs, or a
queue whose weights were not kept, gives a one-line reason instead of a number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from lib.app import labelling
from lib.core.labels import label_items
from lib.core.metrics import get_metric, sample_score
from lib.core.prompts import DEFAULT_TEMPLATES, REPLAY
from lib.diagnosis.agreement import corrected_of_run
from lib.jobs._demo import demo_samples
from lib.judging import OfflineJudge
from lib.judging.scoring import evaluate_run
from lib.store import Store

T0 = datetime(2026, 3, 1)
LEAKY = DEFAULT_TEMPLATES["faithfulness"].replace("{contexts}", "{contexts}\n\n{ground_truth}")
N_LABELLED = 20


@dataclass(frozen=True)
class Ctx:
    store: Store


def _verdicts(store: Store, run_id: str) -> dict[str, list[bool]]:
    import json
    rows = store.sample_scores(run_id, metric="faithfulness")
    return {sid: [bool(v["label"]) for v in json.loads(text)] for sid, text in zip(rows["sample_id"], rows["verdicts"],
                                                                                    strict=True) if text}


def test_labels_taken_in_the_queues_order_are_weighted_by_it(tmp_path: Path) -> None:
    """r2's judge (the leak) is wrong exactly on the samples its queue puts first (people call every claim of
    the top 30% by weight unsupported, and agree with the judge elsewhere). The first 20 samples of the queue,
    labelled through the page's own door, over-represent them: on main PPI++ said 0.38 [0.17, 0.58] of a truth
    of 0.61; the weighted estimator covers it."""
    samples = [d.sample for d in demo_samples()[0][:240] if d.sample.answer][:120]
    with Store(tmp_path / "d.duckdb") as store:
        store.record_run(evaluate_run("r1", samples, OfflineJudge("offline-lexical-v2"), metrics=["faithfulness"],
                                      started_at=T0, pipeline={"k": 1}))
        store.record_run(evaluate_run("r2", samples, OfflineJudge("offline-lexical-v2"), metrics=["faithfulness"],
                                      templates={"faithfulness": LEAKY}, binding=REPLAY,
                                      started_at=T0 + timedelta(days=1), pipeline={"k": 1}))
        queue = labelling.label_order(Ctx(store), "r2", "main", "faithfulness")
        weight = dict(zip(queue.sample_ids, queue.weights, strict=True))
        hard = {s for s, w in weight.items() if w >= np.quantile(queue.weights, 0.7)}
        judged = _verdicts(store, "r2")
        people = {s: [False] * len(v) if s in hard else v for s, v in judged.items()}
        spec = get_metric("faithfulness")
        truth = float(np.mean([sample_score(spec, people[s]) for s in queue.sample_ids]))
        by_id = {s.sample_id: s for s in samples}
        for sid in queue.sample_ids[:N_LABELLED]:
            assert len(label_items("faithfulness", by_id[sid])) == len(people[sid])
            for k, value in enumerate(people[sid], start=1):
                labelling.record_label(Ctx(store), run_id="r2", suite="main", metric="faithfulness", sample_id=sid,
                                       item=k, value=value, labeller="ann")
        got = corrected_of_run(store, "main", "faithfulness", "r2")
        assert got is not None and got.n_labelled == N_LABELLED
        assert got.low <= truth <= got.high, f"{got.sentence('faithfulness')} misses the truth {truth:.2f}"
        assert got.judge > got.high   # the leak is still seen through people's eyes
        assert math.isfinite(got.width)
