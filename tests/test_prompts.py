"""Judge prompt templates: fields read, lint, content hash, projected and replay rendering."""

from __future__ import annotations

import hashlib
import re

import pytest

from lib.core.errors import InputError, LintError, WiringError
from lib.core.metrics import METRICS
from lib.core.prompts import (
    DEFAULT_TEMPLATES,
    PROJECTED,
    REPLAY,
    build_prompt,
    check,
    fields_read,
    lint,
    placeholders,
    prompt_hash,
    template_diff,
)
from lib.core.samples import EvalSample

SAMPLE = EvalSample(
    sample_id="s-1",
    question="How long are backups kept?",
    answer="Backups are kept for 30 days. They run at 02:00 UTC.",
    contexts=("Backups are kept for 30 days.", "Exports run nightly."),
    ground_truth="Backups are retained for 30 days.",
)

# Each metric with the two fields it must never receive (the wiring table in README.md).
NEVER = [
    ("faithfulness", "question"), ("faithfulness", "ground_truth"),
    ("answer_relevance", "contexts"), ("answer_relevance", "ground_truth"),
    ("context_precision", "answer"), ("context_precision", "ground_truth"),
    ("context_recall", "question"), ("context_recall", "answer"),
    ("answer_correctness", "question"), ("answer_correctness", "contexts"),
]


# -- hash --------------------------------------------------------------------------

def test_prompt_hash_is_12_hex_characters_of_sha256() -> None:
    text = "Judge {items} against {contexts}."
    h = prompt_hash(text)
    assert re.fullmatch(r"[0-9a-f]{12}", h)
    assert h == hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def test_prompt_hash_is_stable_and_changes_with_any_edit() -> None:
    text = DEFAULT_TEMPLATES["faithfulness"]
    assert prompt_hash(text) == prompt_hash(str(text))
    assert prompt_hash(text) != prompt_hash(text + " ")
    assert len({prompt_hash(t) for t in DEFAULT_TEMPLATES.values()}) == len(DEFAULT_TEMPLATES)


# -- fields read -------------------------------------------------------------------

@pytest.mark.parametrize(
    ("template", "metric", "expected"),
    [
        ("{items}", "faithfulness", {"answer"}),
        ("{items}", "context_precision", {"contexts"}),
        ("{items}", "context_recall", {"ground_truth"}),
        ("{contexts}\n{items}", "faithfulness", {"answer", "contexts"}),
        ("{contexts}\n{ground_truth}\n{items}", "faithfulness", {"answer", "contexts", "ground_truth"}),
        ("{sample}", "answer_relevance", {"question", "answer", "contexts", "ground_truth"}),
        ("Reply as {{\"verdicts\": []}} for {items}", "answer_correctness", {"answer"}),
        ("no placeholders at all", "faithfulness", set()),
    ],
)
def test_fields_read(template: str, metric: str, expected: set[str]) -> None:
    assert fields_read(template, metric) == expected


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        ("faithfulness", {"answer", "contexts"}),
        ("answer_relevance", {"answer", "question"}),
        ("context_precision", {"contexts", "question"}),
        ("context_recall", {"ground_truth", "contexts"}),
        ("answer_correctness", {"answer", "ground_truth"}),
    ],
)
def test_default_templates_read_exactly_what_their_metric_receives(metric: str, expected: set[str]) -> None:
    assert fields_read(DEFAULT_TEMPLATES[metric], metric) == expected
    assert lint(DEFAULT_TEMPLATES[metric], metric) == []


def test_placeholders_in_order_of_first_use_and_unknown_ones_rejected() -> None:
    assert placeholders("{contexts} {items} {contexts}") == ["contexts", "items"]
    with pytest.raises(InputError, match="reference") as err:
        placeholders("{reference}")
    assert err.value.field == "template"


# -- lint ----------------------------------------------------------------------------

@pytest.mark.parametrize(("metric", "field"), NEVER)
def test_lint_finds_a_must_never_receive_field(metric: str, field: str) -> None:
    template = "{items}\n{" + field + "}"
    findings = lint(template, metric)
    assert [(f.metric, f.field, f.prompt_hash) for f in findings] == [(metric, field, prompt_hash(template))]
    assert metric in findings[0].message and field in findings[0].message


@pytest.mark.parametrize("metric", sorted(METRICS))
def test_whole_sample_placeholder_reads_all_four_fields_so_lint_finds_both_forbidden(metric: str) -> None:
    expected = {f for m, f in NEVER if m == metric}
    assert {f.field for f in lint("{sample}\n{items}", metric)} == expected


def test_check_raises_lint_error_naming_metric_and_field() -> None:
    with pytest.raises(LintError) as err:
        check("{contexts}\n{ground_truth}\n{items}", "faithfulness")
    assert (err.value.metric, err.value.field) == ("faithfulness", "ground_truth")
    assert "faithfulness" in str(err.value) and "ground_truth" in str(err.value)


# -- rendering -------------------------------------------------------------------------

@pytest.mark.parametrize(("metric", "field"), NEVER)
def test_projected_binding_refuses_a_foreign_field_naming_metric_and_field(metric: str, field: str) -> None:
    template = "{items}\n\nLEAK:\n{" + field + "}"
    with pytest.raises(WiringError) as err:
        build_prompt(template, metric, SAMPLE, PROJECTED)
    assert (err.value.metric, err.value.field) == (metric, field)
    assert repr(metric) in str(err.value) and repr(field) in str(err.value)


@pytest.mark.parametrize("metric", sorted(METRICS))
def test_projected_binding_refuses_the_whole_sample(metric: str) -> None:
    with pytest.raises(WiringError) as err:
        build_prompt("{sample}\n{items}", metric, SAMPLE, PROJECTED)
    assert err.value.metric == metric


def test_replay_binding_renders_what_a_historical_harness_rendered() -> None:
    template = "CONTEXT:\n{contexts}\n\nREFERENCE ANSWER:\n{ground_truth}\n\nCLAIMS:\n{items}"
    prompt, items = build_prompt(template, "faithfulness", SAMPLE, REPLAY)
    assert items == ["Backups are kept for 30 days.", "They run at 02:00 UTC."]
    assert prompt == (
        "CONTEXT:\nPASSAGE 1: Backups are kept for 30 days.\nPASSAGE 2: Exports run nightly.\n\n"
        "REFERENCE ANSWER:\nBackups are retained for 30 days.\n\n"
        "CLAIMS:\nITEM 1: Backups are kept for 30 days.\nITEM 2: They run at 02:00 UTC."
    )


def test_replay_of_the_whole_sample_shows_all_four_artifacts() -> None:
    prompt, _ = build_prompt("{sample}\n\n{items}", "faithfulness", SAMPLE, REPLAY)
    for text in (SAMPLE.question, SAMPLE.answer, SAMPLE.ground_truth, *SAMPLE.contexts):
        assert text in prompt


def test_projected_default_prompt_never_shows_the_forbidden_artifacts() -> None:
    prompt, _ = build_prompt(DEFAULT_TEMPLATES["faithfulness"], "faithfulness", SAMPLE, PROJECTED)
    assert SAMPLE.ground_truth not in prompt
    assert SAMPLE.question not in prompt
    assert "PASSAGE 1: Backups are kept for 30 days." in prompt


def test_blank_artifacts_render_as_visible_placeholders() -> None:
    empty = EvalSample("s-2", "", "A claim.", (), "")
    prompt, _ = build_prompt("CONTEXT:\n{contexts}\n\nQ:\n{question}\n\n{items}", "faithfulness", empty, REPLAY)
    assert "CONTEXT:\n(no passages)" in prompt
    assert "Q:\n(empty)" in prompt


def test_unknown_binding_is_refused() -> None:
    with pytest.raises(ValueError, match="projected or replay"):
        build_prompt(DEFAULT_TEMPLATES["faithfulness"], "faithfulness", SAMPLE, "typed")


def test_template_diff_shows_the_added_line_and_is_empty_for_equal_templates() -> None:
    old = "CONTEXT:\n{contexts}\n\nCLAIMS:\n{items}\n"
    new = "CONTEXT:\n{contexts}\n\nREFERENCE:\n{ground_truth}\n\nCLAIMS:\n{items}\n"
    diff = template_diff(old, new)
    assert "+{ground_truth}\n" in diff
    assert "-{contexts}" not in diff
    assert template_diff(old, old) == ""
