"""The Run and Compare pages' tables as they read at 1024 px (issue 14 item 18): the static tables' cells
(lib.presentation.static_tables) and the narrow frames the pages list (views.metric_display, sample_list,
other_scores, flip_rows). The browser side is in tests/test_pages_journeys.py."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from lib.presentation import static_tables, views
from tests.test_pages_core import PROVENANCE, SAMPLES, SCORES


# -- static tables: numbers formatted, text escaped, data unchanged -------------------------------------------
def cells(html: str) -> list[str]:
    return [c.strip() for c in re.findall(r"<t[dh]\b[^>]*>(.*?)</t[dh]>", html, re.S)]


def test_a_static_table_escapes_text_formats_numbers_and_keeps_the_data() -> None:
    frame = pd.DataFrame({"judge model": ["**m**", "[x](http://e.example)", None], "score": [0.12345, math.nan, 1.0],
                          "attributed": [True, False, True], "n": [3, 4, 5]})
    style = static_tables.styled(frame, formats={"score": "{:.3f}", "absent": "{:.1f}"})
    shown = cells(style.to_html())
    assert shown[:4] == ["judge model", "score", "attributed", "n"]
    assert shown[4:8] == [r"\*\*m\*\*", "0.123", "yes", "3"]
    # the escaped link, with a word joiner after "http:" so no renderer turns the bare URL into a link (issue 23)
    assert shown[8:12] == ["\\[x\\](http:\u2060//e.example)", static_tables.MISSING, "no", "4"]
    assert shown[12] == static_tables.MISSING
    assert "row_heading" not in style.to_html()                     # no index column
    pd.testing.assert_frame_equal(style.data, frame)                  # a test reads numbers, not text
    assert "white-space: normal" in style.to_html()                   # cells wrap


def test_a_static_tables_index_is_escaped_when_shown() -> None:
    frame = pd.DataFrame({"r_1's instrument": [0.5]}, index=["r_1's outputs"])
    shown = cells(static_tables.styled(frame, formats={"r_1's instrument": "{:.3f}"}, index=True).to_html())
    assert r"r\_1's instrument" in shown and r"r\_1's outputs" in shown and "0.500" in shown


# -- the Run page's metric table and sample list ---------------------------------------------------------------
def test_the_metric_table_says_a_missing_part_of_the_instrument_and_puts_the_output_mode_beside_the_model() -> None:
    table = pd.DataFrame({"metric": ["faithfulness", "context_recall"], "score": [0.9, 0.8], "n": [10, 10],
                          "n_failed": [0, 1], "n_excluded": [2, 0], "judge_model": ["gpt-x", None],
                          "prompt_hash": ["h1", "h2"], "binding": [None, "projected"],
                          "output_mode": ["json_schema", None]})
    shown = views.metric_display(table)
    assert list(shown.columns) == ["metric", "score", "n", "failed", "excluded", "judge model", "prompt hash",
                                   "binding"]
    assert shown["judge model"].tolist() == ["gpt-x (json_schema)", views.NOT_RECORDED]
    assert shown["binding"].tolist() == [views.NOT_RECORDED, "projected"]
    assert shown[["failed", "excluded"]].values.tolist() == [[0, 2], [1, 0]]
    assert views.metric_display(table.drop(columns="output_mode"))["judge model"][0] == "gpt-x"


def test_the_sample_list_says_verdicts_and_evidence_in_words_short_columns_first() -> None:
    listed = views.sample_list(views.sample_table(SAMPLES, SCORES, PROVENANCE, "faithfulness"),
                               "faithfulness").set_index("sample_id")
    assert list(listed.columns) == ["score", "status", "verdicts", "evidence", "question"]
    nbsp = "\u00a0"   # a count stays on its word's line; a cell wraps at the comma
    assert listed.loc["s1", "verdicts"] == f"1{nbsp}supported, 1{nbsp}unsupported"
    assert listed.loc["s1", "evidence"] == f"contexts{nbsp}1"
    assert listed.loc["s2", "evidence"] == f"ground_truth{nbsp}1"
    assert (listed.loc["s3", "verdicts"], listed.loc["s3", "evidence"]) == ("", "")   # excluded: no verdicts
    assert listed.loc["s1", "score"] == 0.5 and pd.isna(listed.loc["s3", "score"])


def test_other_scores_are_the_samples_other_metrics_in_registry_order() -> None:
    assert views.other_scores(SCORES, "faithfulness", "s1") == [("context_recall", 1.0)]
    assert views.other_scores(SCORES, "context_recall", "s3") == [("faithfulness", None)]   # excluded: no score
    assert views.other_scores(SCORES, "faithfulness", "nope") == []


# -- the Compare page's flipped verdicts: which evidence a row shows, one row per branch -------------------------
@pytest.mark.parametrize(("baseline", "run", "direction", "evidence_baseline", "evidence_run", "expected"), [
    ("unsupported", "supported", "to positive", "", "cited", "cited"),
    ("supported", "unsupported", "to negative", "cited", "", "cited"),
    ("unsupported", "supported", "to positive", "other", "cited", "cited (baseline: other)"),
    ("supported", "unsupported", "to negative", "cited", "other", "cited (run: other)"),
    ("unsupported", "supported", "to positive", "same", "same", "same"),
    ("unsupported", "supported", "to positive", "", "", ""),
])
def test_a_flipped_verdict_shows_the_positive_verdicts_evidence(baseline: str, run: str, direction: str,
                                                                evidence_baseline: str, evidence_run: str,
                                                                expected: str) -> None:
    flipped = pd.DataFrame([{"sample_id": "s1", "item": "A claim.", "baseline": baseline, "run": run,
                             "direction": direction, "evidence_baseline": evidence_baseline,
                             "evidence_run": evidence_run}])
    rows = views.flip_rows(flipped)
    assert rows.to_dict("records") == [{"sample_id": "s1", "flip": f"{baseline} → {run}", "item": "A claim.",
                                        "evidence": expected}]


def test_no_flips_is_an_empty_table_with_its_columns() -> None:
    empty = views.flipped_verdicts(views.aligned_verdicts(SCORES.iloc[:0], SCORES.iloc[:0], "faithfulness"))
    assert list(views.flip_rows(empty).columns) == ["sample_id", "flip", "item", "evidence"]
