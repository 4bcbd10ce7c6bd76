"""The metric registry: the wiring table as data, typed projections, item splitting, per-sample scores."""

from __future__ import annotations

import pytest

from lib.core.errors import WiringError
from lib.core.metrics import METRIC_NAMES, METRICS, get_metric, items_of, sample_score, split_sentences, wiring_table
from lib.core.samples import EvalSample

# The wiring table (README.md, "The wiring table"), written out by hand.
WIRING = {
    "faithfulness": ("answer", "contexts", {"question", "ground_truth"}),
    "answer_relevance": ("answer", "question", {"contexts", "ground_truth"}),
    "context_precision": ("contexts", "question", {"answer", "ground_truth"}),
    "context_recall": ("ground_truth", "contexts", {"question", "answer"}),
    "answer_correctness": ("answer", "ground_truth", {"question", "contexts"}),
}

SAMPLE = EvalSample(
    sample_id="s-1",
    question="How long are backups kept?",
    answer="Backups are kept for 30 days. They run at 02:00 UTC.",
    contexts=("Backups are kept for 30 days.", "  ", "Exports run nightly."),
    ground_truth="Backups are retained for 30 days.",
)


def test_registry_holds_the_five_metrics_of_the_design() -> None:
    assert set(METRIC_NAMES) == set(WIRING)


@pytest.mark.parametrize("metric", sorted(WIRING))
def test_each_metric_receives_its_two_artifacts_and_never_the_other_two(metric: str) -> None:
    items_from, against, never = WIRING[metric]
    spec = get_metric(metric)
    assert (spec.items_from, spec.against) == (items_from, against)
    assert spec.receives == {items_from, against}
    assert spec.never == never


@pytest.mark.parametrize("metric", sorted(WIRING))
def test_projection_keeps_only_the_received_fields(metric: str) -> None:
    items_from, against, never = WIRING[metric]
    view = get_metric(metric).project(SAMPLE)
    assert getattr(view, items_from) == getattr(SAMPLE, items_from)
    assert getattr(view, against) == getattr(SAMPLE, against)
    for name in never:
        assert not hasattr(view, name)


def test_each_artifact_feeds_as_many_metrics_as_the_design_says() -> None:
    # question and ground_truth feed two metrics, answer and contexts three
    feeds = {name: sum(name in spec.receives for spec in METRICS.values())
             for name in ("question", "answer", "contexts", "ground_truth")}
    assert feeds == {"question": 2, "answer": 3, "contexts": 3, "ground_truth": 2}


def test_unknown_metric_error_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match="faithfulness"):
        get_metric("groundedness")


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ([True, True, True, True], 1.0),
        ([True, False, True, True], 3 / 4),
        ([False, False, False], 0.0),
        ([True, False, False], 1 / 3),
    ],
)
def test_ratio_metrics_score_positives_over_items(labels: list[bool], expected: float) -> None:
    for metric in ("faithfulness", "answer_relevance", "context_recall", "answer_correctness"):
        assert sample_score(get_metric(metric), labels) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ([True, False, True], (1 / 1 + 2 / 3) / 2),
        ([False, True], (1 / 2) / 1),
        ([True, True, False], (1 / 1 + 2 / 2) / 2),
        ([False, False, True, True], (1 / 3 + 2 / 4) / 2),
        ([True], 1.0),
        # no relevant passage retrieved is a real precision of 0, not a failure
        ([False, False, False], 0.0),
    ],
)
def test_context_precision_is_rank_weighted_average_precision(labels: list[bool], expected: float) -> None:
    assert sample_score(get_metric("context_precision"), labels) == pytest.approx(expected)


def test_precision_rewards_relevant_passages_ranked_first() -> None:
    spec = get_metric("context_precision")
    assert sample_score(spec, [True, False]) > sample_score(spec, [False, True])


@pytest.mark.parametrize("metric", sorted(WIRING))
def test_a_sample_with_no_items_has_no_score(metric: str) -> None:
    with pytest.raises(ValueError, match="no items"):
        sample_score(get_metric(metric), [])


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("", []),
        ("   \n ", []),
        ("Backups are kept for 30 days.", ["Backups are kept for 30 days."]),
        ("Keys are 256-bit. Exports run at 02:00 UTC!  Is that late?",
         ["Keys are 256-bit.", "Exports run at 02:00 UTC!", "Is that late?"]),
        # a decimal point is not a sentence end
        ("Storage costs 2.5 dollars. Done.", ["Storage costs 2.5 dollars.", "Done."]),
        ("Line one.\nLine two.", ["Line one.", "Line two."]),
    ],
)
def test_split_sentences(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


def test_items_are_claims_of_the_answer_for_faithfulness() -> None:
    spec = get_metric("faithfulness")
    assert items_of(spec, spec.project(SAMPLE)) == ["Backups are kept for 30 days.", "They run at 02:00 UTC."]


def test_items_are_nonblank_passages_in_rank_order_for_precision() -> None:
    spec = get_metric("context_precision")
    assert items_of(spec, spec.project(SAMPLE)) == ["Backups are kept for 30 days.", "Exports run nightly."]


def test_items_of_a_view_without_the_items_field_is_a_wiring_error() -> None:
    recall = get_metric("context_recall")
    faithfulness_view = get_metric("faithfulness").project(SAMPLE)
    with pytest.raises(WiringError) as err:
        items_of(recall, faithfulness_view)
    assert (err.value.metric, err.value.field) == ("context_recall", "ground_truth")


def test_wiring_table_rows_read_like_the_design() -> None:
    rows = {r["metric"]: r for r in wiring_table()}
    assert rows["faithfulness"] == {
        "metric": "faithfulness",
        "items judged": "claims of answer",
        "judged against": "contexts",
        "receives": "answer, contexts",
        "must never receive": "question, ground_truth",
        "positive control": "contexts set to the claims of answer",
    }
    assert rows["context_precision"]["items judged"] == "passages of contexts"
    assert rows["context_recall"]["must never receive"] == "question, answer"
