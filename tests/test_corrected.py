"""A run's metric corrected by people's labels, from a real store: the labels pair with the run's own judgings
(calibrated per instrument), the rest of the run's scores carry the judge's share; the incident and the Review
export say it (issue 45, B4)."""

from __future__ import annotations

import dataclasses
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pytest

from lib.diagnosis.agreement import corrected_at_steps, corrected_of_run, ppi_mean
from lib.diagnosis.incidents._incidents import build
from lib.diagnosis.trends._diagnose import Jump, Suspect
from lib.jobs._demo import demo_samples
from lib.presentation.review import review, review_markdown
from lib.store import Store
from tests.support.leak_pair import T0, halved_labels, record_pair


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs of 40 demo samples, faithfulness only: r1 with the projected template, r2 with one that also
    renders ground_truth (the leak: the judge says more is supported); people's whole-sample scores of 15."""
    path = tmp_path_factory.mktemp("corrected") / "c.duckdb"
    samples = [d.sample for d in demo_samples()[0][:40] if d.sample.answer][:40]
    with Store(path) as store:
        record_pair(store, samples)
        store.add_labels(halved_labels(store, samples[:15]))
    return path


def _arrays(store: Store, run_id: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    scores = store.sample_scores(run_id, metric="faithfulness").set_index("sample_id")["score"].astype(float)
    people = store.labels("main", metric="faithfulness").set_index("sample_id")["value"].astype(float)
    labelled = scores.index.isin(people.index)
    return (people[scores.index[labelled]].to_numpy(), scores[labelled].to_numpy(), scores[~labelled].to_numpy())


@pytest.mark.parametrize("run_id", ["r1", "r2"])
def test_each_run_is_corrected_by_the_labels_against_its_own_judgings(store_path: Path, run_id: str) -> None:
    with Store(store_path) as store:
        got = corrected_of_run(store, "main", "faithfulness", run_id, tune=False)
        people, judged, rest = _arrays(store, run_id)
    assert got is not None and (got.n_labelled, got.n_unlabelled) == (15, len(rest)) and len(rest) >= 20
    # plain PPI by hand: the judge on the 25 unlabelled, plus people minus this run's judge on the 15 labelled
    assert got.value == pytest.approx(rest.mean() + (people - judged).mean())
    assert got.judge == pytest.approx(np.concatenate([judged, rest]).mean())
    tuned = ppi_mean(people, judged, rest)
    with Store(store_path) as store:
        assert corrected_of_run(store, "main", "faithfulness", run_id) == tuned


def test_the_leaky_run_reads_higher_by_its_judge_but_not_through_the_labels(store_path: Path) -> None:
    with Store(store_path) as store:
        r1, r2 = (corrected_of_run(store, "main", "faithfulness", r) for r in ("r1", "r2"))
    assert r1 is not None and r2 is not None
    assert r2.judge > r1.judge + 0.03       # the leak flatters the judge's score
    assert r2.low <= r1.value <= r2.high     # people's view did not move: r2's interval holds r1's corrected value


def test_steps_on_a_labelled_metric_are_said_with_the_run_before(store_path: Path) -> None:
    with Store(store_path) as store:
        assert corrected_at_steps(store, "main", [("answer_relevance", "r2", "r1")]) == {}
        said = corrected_at_steps(store, "main", [("faithfulness", "r2", "r1")])
        r1 = corrected_of_run(store, "main", "faithfulness", "r1")
        r2 = corrected_of_run(store, "main", "faithfulness", "r2")
    assert r1 is not None and r2 is not None
    assert said == {("faithfulness", "r2"): f"{r2.sentence('faithfulness')} (the run before: {r1.short})"}


def _jump() -> Jump:
    return Jump("faithfulness", "r2", "r1", T0 + timedelta(days=1), 0.78, 0.94, 0.16, 0.02, 0.005,
                (Suspect("prompt", "faithfulness prompt a -> b", "split"),))


@pytest.mark.parametrize(("corrected", "expected"), [
    ({("faithfulness", "r2"): "faithfulness 0.94 by the judge; 0.79 [0.74, 0.84] corrected by 150 labels"},
     ("2026-03-02 through people's labels: faithfulness 0.94 by the judge; 0.79 [0.74, 0.84] corrected by 150 "
      "labels",)),
    ({("faithfulness", "r9"): "another run"}, ()),
    (None, ()),
])
def test_an_incident_says_the_move_through_peoples_labels(corrected: dict[tuple[str, str], str] | None,
                                                          expected: tuple[str, ...]) -> None:
    (inc,) = build([_jump()], corrected=corrected)
    assert inc.corrected == expected
    assert set(expected) <= set(inc.evidence)


def test_the_review_export_says_it(store_path: Path) -> None:
    with Store(store_path) as store:
        rev = review(store, date(2026, 3, 1), date(2026, 3, 2))
    line = "at r2 (2026-03-02), faithfulness 0.94 by the judge; 0.79 [0.74, 0.84] corrected by 150 labels"
    shown = dataclasses.replace(rev, corrected=(line,))
    assert f"Through people's labels: {line}." in shown.headline
    text = review_markdown(shown)
    assert "## The moves through people's labels" in text and "0.79 \\[0.74, 0.84] corrected by 150 labels" in text
    assert "No move in range on a metric people labelled." in review_markdown(dataclasses.replace(rev, corrected=()))
