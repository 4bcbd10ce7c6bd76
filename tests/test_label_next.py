"""What to label next and what labels say, without a browser (issue 45 B4-B5, issue 46 item 7): the active order
and its estimator (lib.diagnosis.agreement._active), the Labels page's words (lib.app.labelling), each segment's
metric corrected by people's labels (Trends' toggle), and the agreement table's columns."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from lib.app import labelling
from lib.diagnosis.agreement import (
    AUC_DROPPED,
    agreements_frame,
    corrected_by_segment,
    corrected_of_run,
)
from lib.diagnosis.agreement._active import active_mean, inclusion, labels_to_halve, order, weights
from lib.diagnosis.agreement._agreement import Agreement
from lib.diagnosis.agreement._stats import Estimate
from lib.jobs._demo import demo_samples
from lib.store import Store
from tests.support.leak_pair import halved_labels, record_pair


@dataclass(frozen=True)
class Ctx:
    store: Store


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """r1 (projected template) and r2 (one that renders ground_truth too) on the same 40 demo samples; people's
    whole-sample scores of 15 of them."""
    path = tmp_path_factory.mktemp("next") / "n.duckdb"
    samples = [d.sample for d in demo_samples()[0][:60] if d.sample.answer][:40]
    with Store(path) as store:
        record_pair(store, samples)
        store.add_labels(halved_labels(store, samples[:15]))
    return path


# -- the active order and its estimator --------------------------------------------------------------------------
def test_inclusion_sums_to_the_labels_taken_and_caps_at_one() -> None:
    w = np.array([10.0, 1.0, 1.0, 1.0, 1.0])
    pi = inclusion(w, 2)
    assert pi.sum() == pytest.approx(2) and pi[0] == 1.0 and pi[1:] == pytest.approx([0.25] * 4)
    assert inclusion(np.ones(4), 1) == pytest.approx([0.25] * 4)
    assert inclusion(np.ones(4), 4) == pytest.approx([1.0] * 4)


def test_equal_chances_give_plain_ppi_with_the_finite_population_factor_by_hand() -> None:
    people, judged, rest = np.array([0.0, 1.0, 1.0, 0.0]), np.array([1.0, 1.0, 1.0, 0.0]), np.array([1.0, 0.0])
    every = np.concatenate([judged, rest])
    c = active_mean(people, judged, np.full(4, 4 / 6), every)
    assert c is not None
    assert c.value == pytest.approx(every.mean() + (people - judged).mean())   # 4/6 - 1/4
    # n/(n-1) (1 - pi) sum((r/pi - mean)^2) / N^2 with r = (-1, 0, 0, 0): sample variance of r x (1 - n/N) / n
    r = people - judged
    se = math.sqrt(r.var(ddof=1) * (1 - 4 / 6) / 4)
    assert (c.low, c.high) == pytest.approx((c.value - 1.959964 * se, c.value + 1.959964 * se), abs=1e-6)


def test_labels_to_halve_a_random_order_by_hand() -> None:
    # variance (1 - n/N)/n: from n = 100 of N = 1000 (0.009) to a quarter (0.00225) at m = 307.7 -> 308
    assert labels_to_halve(np.ones(1000), 100) == 308
    assert labels_to_halve(np.ones(10), 1) is None and labels_to_halve(np.ones(10), 10) is None


@pytest.mark.parametrize(("score", "gap", "items", "expected"), [
    (1.0, 0.0, 4, math.sqrt(0.01)),                  # sure and unopposed: the floor only
    (0.5, 0.0, 4, math.sqrt(0.25 / 4 + 0.01)),       # items split: the judge's uncertainty
    (1.0, 0.5, 4, math.sqrt(0.25 + 0.01)),           # another instrument scored the same text 0.5 lower
    (0.5, float("nan"), 1, math.sqrt(0.25 + 0.01)),  # no other instrument: no disagreement; one item
])
def test_weights_read_uncertainty_disagreement_and_the_floor(score: float, gap: float, items: int,
                                                             expected: float) -> None:
    assert float(weights(np.array([score]), np.array([gap]), np.array([items]))[0]) == pytest.approx(expected)


def test_the_order_puts_heavier_samples_earlier_and_is_the_same_every_time() -> None:
    ids = [f"s{i:03d}" for i in range(400)]
    w = np.where(np.arange(400) < 100, 1.0, 0.1)
    ranked = order(ids, w)
    assert ranked == order(ids, w) and sorted(ranked) == list(range(400))
    # inclusion(w, 50) gives the heavy quarter 38.5 of the first 50 (a random order: 12.5)
    assert sum(k < 100 for k in ranked[:50]) >= 30
    assert sum(k < 100 for k in order(ids, np.ones(400))[:50]) <= 20


# -- the Labels page's words ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("label", "others", "words", "tied"), [
    (None, (), "", False),                                      # nobody else: nothing to say
    (1.0, (("ann", 1.0),), "ann: supported", False),            # agreeing
    (1.0, (("ann", 0.0),), "ann: unsupported. A tie: agreement leaves this item out until a third person labels it.",
     True),                                                      # one against one: a tie
    (1.0, (("ann", 0.0), ("bo", 1.0)), "ann: unsupported, bo: supported", False),   # a third breaks it
    (None, (("ann", 0.0), ("bo", 1.0)), "ann: unsupported, bo: supported. A tie: agreement leaves this item out "
     "until a third person labels it.", True),                   # two others tied, this labeller silent
])
def test_other_peoples_labels_and_ties_are_said(label: float | None, others: tuple, words: str, tied: bool) -> None:
    item = labelling.JudgedItem(1, "a claim", "supported", "", label, others)
    assert item.tied is tied
    assert labelling.item_words(item, "supported", "unsupported") == words


def test_reach_counts_every_run_and_instrument_that_judged_the_text(store_path: Path) -> None:
    with Store(store_path) as store:
        sample = store.samples("r2")[0]
        found = labelling.reach(Ctx(store), "main", "faithfulness", sample)
        assert (found.runs, found.instruments) == (2, 2)
        assert "2 runs (2 instruments) judged this very text" in labelling.reach_words(found)
        other = replace(sample, answer=sample.answer + " A claim no run judged.")
        assert labelling.reach(Ctx(store), "main", "faithfulness", other).runs == 0
    assert labelling.reach_words(labelling.Reach(1, 1)).startswith("Only this run")


def test_the_queue_orders_by_disagreement_and_says_what_halves_the_interval(store_path: Path) -> None:
    with Store(store_path) as store:
        found = labelling.label_order(Ctx(store), "r2", "main", "faithfulness")
        assert found.compared_runs == ("r1",)
        r1 = store.sample_scores("r1", metric="faithfulness").set_index("sample_id")["score"]
        r2 = store.sample_scores("r2", metric="faithfulness").set_index("sample_id")["score"]
        by_id = dict(zip(found.sample_ids, found.weights, strict=True))
        differ = [s for s in by_id if abs(r1[s] - r2[s]) > 0.2]
        same = [s for s in by_id if r1[s] == r2[s] and r2[s] in (0.0, 1.0)]
        assert differ and same and min(by_id[s] for s in differ) > max(by_id[s] for s in same)
        q = labelling.queue(Ctx(store), "r2", "main", "faithfulness", "ana", order=found.sample_ids)
        assert q.current is not None and q.current.sample_id == found.sample_ids[0]
        corrected = corrected_of_run(store, "main", "faithfulness", "r2")
        words = labelling.next_words(corrected, found, "faithfulness")
        half = found.labels_to_halve(15)
        assert half is not None and f"about {half - 15} more labelled samples ({half} in all) would halve" in words
        assert "corrected by 15 labels" in words and "(the latest run of each other instrument: r1)" in words
    assert labelling.next_words(None, found, "faithfulness").startswith("Under two labelled samples of this run")


# -- Trends' toggle: each segment corrected on its own instrument ---------------------------------------------------
def test_each_segment_is_corrected_by_its_own_instruments_judgings(store_path: Path) -> None:
    with Store(store_path) as store:
        found = corrected_by_segment(store, store.metric_history())
        assert [s.segment.first_run for s in found] == ["r1", "r2"]
        for s in found:   # one run a segment: the run's own correction
            run = corrected_of_run(store, "main", "faithfulness", s.segment.first_run)
            assert run is not None
            assert (s.corrected.judge, s.corrected.value, s.corrected.low, s.corrected.high, s.corrected.n_labelled) \
                == pytest.approx((run.judge, run.value, run.low, run.high, run.n_labelled))
        leak = found[1].corrected
        assert leak.judge > leak.high   # the leaking judge is above what people's labels say


# -- the agreement table's columns -----------------------------------------------------------------------------------
def _agreement(auc: Estimate) -> Agreement:
    return Agreement(metric="faithfulness", instrument="j", version=1, n_samples=3, n_runs=1, n_items=6,
                     accuracy=Estimate(0.8, 0.6, 1.0), auc=auc)


@pytest.mark.parametrize(("aucs", "has_auc"), [
    ([Estimate(float("nan"), float("nan"), float("nan"))] * 2, False),   # item labels only: no AUC can exist
    ([Estimate(float("nan"), float("nan"), float("nan")), Estimate(0.9, 0.8, 1.0)], True),   # one has one
])
def test_the_auc_column_stands_only_where_an_instrument_has_one(aucs: list[Estimate], has_auc: bool) -> None:
    frame = agreements_frame([_agreement(a) for a in aucs])
    assert ("AUC" in frame.columns) is has_auc
    if has_auc:
        assert (frame["AUC"] != "-").any()
    assert "item labels" in AUC_DROPPED
