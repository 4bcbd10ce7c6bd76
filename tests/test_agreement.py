"""Agreement with people: the statistics against hand-worked tables and scipy, and per instrument on real judgings."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED, REPLAY
from lib.core.records import MAIN
from lib.core.samples import EvalSample
from lib.diagnosis.agreement import Estimate, agreement_by_instrument
from lib.diagnosis.agreement import _stats as st
from lib.diagnosis.agreement._agreement import compare, is_worse, labelled_pairs
from lib.intake.labels import import_labels
from lib.store import Store
from tests.support.synthetic_runs import LEAKY_FAITHFULNESS, facts, record

HALUEVAL = Path("/work/shared/data/halueval_qa.jsonl")


# -- the statistics -------------------------------------------------------------------------------
def test_kappa_and_accuracy_on_a_hand_worked_table() -> None:
    # 20 verdicts: both yes 8, judge yes people no 2, judge no people yes 3, both no 7.
    pred = [True] * 8 + [True] * 2 + [False] * 3 + [False] * 7
    truth = [True] * 8 + [False] * 2 + [True] * 3 + [False] * 7
    # observed 15/20 = 0.75; chance = (10/20)(11/20) + (10/20)(9/20) = 0.5; kappa = (0.75-0.5)/0.5 = 0.5
    assert st.accuracy(pred, truth) == 0.75
    assert st.cohen_kappa(pred, truth) == pytest.approx(0.5)


def test_bias_and_mean_error_on_a_hand_worked_case() -> None:
    assert st.bias([0.9, 0.5, 1.0], [0.5, 0.5, 0.8]) == pytest.approx((0.4 + 0.0 + 0.2) / 3)
    assert st.mean_error([0.1, 0.5], [0.5, 0.3]) == pytest.approx(0.3)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auc_matches_scipy_mann_whitney_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    labels = rng.random(200) < 0.4
    scores = np.round(rng.random(200) * 0.6 + labels * 0.3, 1)   # rounded: many ties
    from scipy import stats  # here, not at the top: see tests/test_ppi.py z()

    u = stats.mannwhitneyu(scores[labels], scores[~labels]).statistic
    assert st.auc(scores, labels) == pytest.approx(u / (labels.sum() * (~labels).sum()))


def test_auc_of_a_perfect_and_a_reversed_ranking() -> None:
    assert st.auc([0.1, 0.2, 0.8, 0.9], [False, False, True, True]) == 1.0
    assert st.auc([0.9, 0.8, 0.2, 0.1], [False, False, True, True]) == 0.0
    assert math.isnan(st.auc([0.1, 0.2], [True, True]))


GATE = [  # (difference, its interval, margin, worse?)
    (0.0, (0.0, 0.0), 0.02, False),          # an equal judge
    (-0.10, (-0.15, -0.05), 0.02, True),     # lower beyond the margin, interval below zero
    (-0.10, (-0.25, 0.05), 0.02, False),     # lower beyond the margin, but the interval holds zero
    (-0.01, (-0.015, -0.005), 0.02, False),  # surely lower, within the margin
    (0.05, (0.01, 0.09), 0.02, False),       # better
]


@pytest.mark.parametrize(("value", "ci", "margin", "worse"), GATE)
def test_the_gate_fails_only_a_candidate_worse_beyond_the_margin_and_sure(value, ci, margin, worse) -> None:
    assert is_worse(Estimate(value, *ci), margin) is worse


# -- per instrument, on real judgings --------------------------------------------------------------
def half_supported(i: int, f) -> EvalSample:
    return EvalSample(f"s{i:02d}", f.question, f"{f.fact1} {f.fact2}", (f"{f.fact1} {f.filler}",),
                      f"{f.fact1} {f.fact2}")


@pytest.fixture
def leaky_history(fresh_db: Path, tmp_path: Path):
    """Two runs of the same samples: a projected judge, then one shown the reference. Claim 2 of every answer
    is only in the reference; people label claim 1 supported and claim 2 not."""
    items = [half_supported(i, f) for i, f in enumerate(facts(30))]
    with Store(fresh_db) as store:
        record(store, "r1", items, "faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)
        record(store, "r2", items, "faithfulness", LEAKY_FAITHFULNESS, REPLAY, day=1)
        rows = [{"sample_id": s.sample_id, "metric": "faithfulness", "item": k, "label": k == 1, "labeller": "ana"}
                for s in items for k in (1, 2)]
        (tmp_path / "l.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        import_labels(store, tmp_path / "l.jsonl")
        yield store


def test_a_leaky_instrument_agrees_less_and_shows_bias(leaky_history: Store) -> None:
    right, leaky = agreement_by_instrument(leaky_history, MAIN, "faithfulness")
    assert right.n_samples == leaky.n_samples == 30 and right.n_items == 60
    assert "projected" in right.instrument and "replay" in leaky.instrument
    assert right.accuracy.value == 1.0 and right.bias.value == 0.0 and right.kappa.value == 1.0
    # The leaky judge calls claim 2 supported: half its verdicts disagree; it is 0.5 above people on every sample.
    assert leaky.accuracy.value == 0.5 and leaky.bias.value == pytest.approx(0.5)
    assert leaky.kappa.value == pytest.approx(0.0)
    assert leaky.bias.low == pytest.approx(0.5) and right.version == leaky.version == 60


def test_a_label_does_not_pair_with_a_sample_whose_content_changed(leaky_history: Store) -> None:
    items = [half_supported(i, f) for i, f in enumerate(facts(30))]
    items[0] = EvalSample("s00", items[0].question, "A different answer.", items[0].contexts, items[0].ground_truth)
    record(leaky_history, "r3", items, "faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED, day=2)
    pairs, _ = labelled_pairs(leaky_history, MAIN, "faithfulness", run_ids=["r3"])
    assert set(pairs.items["sample_id"]) == {s.sample_id for s in items[1:]}


def test_the_paired_comparison_of_two_instruments(leaky_history: Store) -> None:
    pairs, version = labelled_pairs(leaky_history, MAIN, "faithfulness")
    right = pairs.where("run_id", ["r1"])
    leaky = pairs.where("run_id", ["r2"])
    worse = compare(right, leaky, metric="faithfulness", version=version, margin=0.02)
    assert worse.difference.value == pytest.approx(-0.5) and worse.worse
    same = compare(right, right, metric="faithfulness", version=version, margin=0.02)
    assert same.difference.value == 0.0 and not same.worse


# -- on public labelled data we did not design ---------------------------------------------------------
def test_agreement_on_halueval_matches_an_independent_computation(fresh_db: Path, tmp_path: Path) -> None:
    records = [json.loads(line) for line in HALUEVAL.read_text().splitlines()[:300]]
    items = [EvalSample(r["id"], r["question"], r["answer"], tuple(r["contexts"]), r["ground_truth"])
             for r in records]
    with Store(fresh_db) as store:
        record(store, "halu", items, "faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)
        (tmp_path / "h.jsonl").write_text("".join(json.dumps(
            {"sample_id": r["id"], "metric": "faithfulness", "label": r["supported"], "labeller": "HaluEval"}) + "\n"
            for r in records))
        import_labels(store, tmp_path / "h.jsonl")
        (got,) = agreement_by_instrument(store, MAIN, "faithfulness")
        scores = store.sample_scores("halu", metric="faithfulness").set_index("sample_id")
    ok = scores[scores["status"] == "ok"]
    truth = np.array([next(r["supported"] for r in records if r["id"] == sid) for sid in ok.index])
    judge = ok["score"].to_numpy(float)
    from scipy import stats  # here, not at the top: see tests/test_ppi.py z()

    u = stats.mannwhitneyu(judge[truth], judge[~truth]).statistic
    assert got.n_samples == len(ok)
    assert got.auc.value == pytest.approx(u / (truth.sum() * (~truth).sum()))
    table = np.array([[np.sum((judge >= 0.5) & truth), np.sum((judge >= 0.5) & ~truth)],
                      [np.sum((judge < 0.5) & truth), np.sum((judge < 0.5) & ~truth)]])
    n = table.sum()
    observed = np.trace(table) / n
    chance = (table[0].sum() * table[:, 0].sum() + table[1].sum() * table[:, 1].sum()) / n**2
    assert got.accuracy.value == pytest.approx(observed)
    assert got.kappa.value == pytest.approx((observed - chance) / (1 - chance))
    assert got.bias.value == pytest.approx(np.mean(judge - truth))
    assert got.auc.low < got.auc.value < got.auc.high


def test_the_vectorised_bootstrap_is_the_replicate_by_replicate_one() -> None:
    rng = np.random.default_rng(3)
    clusters = [f"s{k % 17}" for k in range(120)]
    pred, truth = rng.random(120) < 0.6, rng.random(120) < 0.5
    values = rng.random(120)
    draws, index = st.replicate_weights(clusters, reps=50, seed=1)
    slow_mean = st.boot(lambda w: st.weighted_mean(values, w), 120, draws, index)
    slow_kappa = st.boot(lambda w: st.weighted_kappa(pred, truth, w), 120, draws, index)
    assert np.allclose(st.boot_mean(values, draws, index), slow_mean)
    assert np.allclose(st.boot_kappa(pred, truth, draws, index), slow_kappa, equal_nan=True)
