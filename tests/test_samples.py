"""The eval sample: its four artifacts, blanking, and ablation arm names."""

from __future__ import annotations

import pytest

from lib.core.samples import EvalSample, arm_fields, arm_name, blank

SAMPLE = EvalSample(
    sample_id="s-1",
    question="How long are backups kept?",
    answer="Backups are kept for 30 days.",
    contexts=("Backups are kept for 30 days.", "Exports run nightly."),
    ground_truth="Backups are retained for 30 days.",
)


def test_field_returns_each_artifact_by_name() -> None:
    assert SAMPLE.field("question") == "How long are backups kept?"
    assert SAMPLE.field("answer") == "Backups are kept for 30 days."
    assert SAMPLE.field("contexts") == ("Backups are kept for 30 days.", "Exports run nightly.")
    assert SAMPLE.field("ground_truth") == "Backups are retained for 30 days."


def test_field_rejects_a_name_that_is_not_an_artifact() -> None:
    with pytest.raises(KeyError):
        SAMPLE.field("sample_id")


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (["question"], {"question": ""}),
        (["answer"], {"answer": ""}),
        (["contexts"], {"contexts": ()}),
        (["ground_truth"], {"ground_truth": ""}),
        (["ground_truth", "contexts"], {"ground_truth": "", "contexts": ()}),
    ],
)
def test_blank_empties_only_the_named_artifacts(fields: list[str], expected: dict[str, object]) -> None:
    out = blank(SAMPLE, fields)
    for name in ("question", "answer", "contexts", "ground_truth"):
        assert out.field(name) == expected.get(name, SAMPLE.field(name))
    assert out.sample_id == "s-1"


def test_blank_leaves_the_original_sample_untouched() -> None:
    blank(SAMPLE, ["answer", "contexts"])
    assert SAMPLE.answer == "Backups are kept for 30 days."
    assert len(SAMPLE.contexts) == 2


def test_blank_names_an_unknown_field() -> None:
    with pytest.raises(KeyError, match="reference"):
        blank(SAMPLE, ["reference"])


@pytest.mark.parametrize(
    ("fields", "arm"),
    [
        ([], "none"),
        (["ground_truth"], "ground_truth"),
        # canonical order is question, answer, contexts, ground_truth whatever the input order
        (["ground_truth", "question"], "question+ground_truth"),
        (["contexts", "ground_truth", "contexts"], "contexts+ground_truth"),
    ],
)
def test_arm_name_is_canonical(fields: list[str], arm: str) -> None:
    assert arm_name(fields) == arm


@pytest.mark.parametrize("arm", ["none", "ground_truth", "question+ground_truth", "question+contexts+ground_truth"])
def test_arm_fields_inverts_arm_name(arm: str) -> None:
    assert arm_name(arm_fields(arm)) == arm


def test_arm_fields_names_an_unknown_field() -> None:
    with pytest.raises(KeyError, match="reference"):
        arm_fields("question+reference")
