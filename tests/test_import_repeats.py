"""Rows sharing an id in another tool's file (issue 39 item 5, issue 40 item 11): a repeat is validated as a single
row is, its scores read as a single row's are, and two rows that name one id but ask different things are refused
naming both rows, never folded into one sample with the second dropped.

The files are Ragas result CSVs as `EvaluationResult.to_pandas().to_csv()` writes them (every cell text, passages
as a Python list repr), with an `id` column a team added, built here.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from lib.core.errors import InputError
from lib.intake.importers import prepare_import
from lib.intake.ingest import NO_SCORE
from lib.intake.uploads import prepare_tool_upload
from lib.store import Store
from tests.test_cli import assert_usage_error, cli

HEADER = ["id", "user_input", "retrieved_contexts", "response", "reference", "faithfulness"]
Q, REF = "When does the kettle switch off?", "At 100 C."
ROW = {"id": "7", "user_input": Q, "retrieved_contexts": "['The kettle switches off at 100 C.']",
       "response": "At 100 C.", "reference": REF, "faithfulness": "1.0"}


def ragas_csv(path: Path, rows: list[dict[str, str]]) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=HEADER)
        writer.writeheader()
        writer.writerows([{**ROW, **row} for row in rows])
    return path


def plan(path: Path):
    return prepare_import(path, run_id="r", fmt="ragas", version="0.4.3", grader="grader-x")


def stored(plan_) -> list[tuple[str, str, float | None, str | None]]:
    """(sample id, status, score, reason) of the one metric, as the run would record them."""
    [metric] = plan_.run.metrics
    return [(r.sample_id, r.status, r.score, r.reason) for r in metric.results]


# Each row a branch of the rule: repeats read like single rows, and one id is one sample.
@pytest.mark.parametrize(("rows", "expected"), [
    # numeric text, as every CSV cell is: the mean of the two (before: failed "no score in source", exit 0)
    ([{"faithfulness": "0.5"}, {"faithfulness": "0.7"}], ("ok", 0.6)),
    # a repeat left unscored: the mean of those scored, as for Inspect epochs
    ([{"faithfulness": "0.5"}, {"faithfulness": ""}], ("ok", 0.5)),
    # no repeat scored: not scored, never 0
    ([{"faithfulness": ""}, {"faithfulness": ""}], ("failed", NO_SCORE)),
    # the answers differ between repeats (a pipeline run twice): still one sample, its scores averaged
    ([{"faithfulness": "1"}, {"response": "It stops at 100 C.", "faithfulness": "0"}], ("ok", 0.5)),
])
def test_repeats_of_one_sample_are_folded_with_their_scores_read_as_a_single_rows_are(
        tmp_path: Path, rows: list[dict[str, str]], expected: tuple) -> None:
    got = plan(ragas_csv(tmp_path / "ragas.csv", rows))
    [(_sid, status, score, reason)] = stored(got)
    assert (status, score if status == "ok" else reason) == (expected[0], pytest.approx(expected[1])
                                                              if status == "ok" else expected[1])
    assert got.notes["repeats"] == 2 and got.notes["rows_read"] == 2


# A repeat is refused where a single row with the same value is refused, with the same words and its own row.
@pytest.mark.parametrize(("value", "words"), [
    ("high", "score must be a number in [0, 1], got the text 'high'"),
    ("9.5", "score must be a number in [0, 1], got '9.5'"),
    ("nan", "score must be a number in [0, 1], got the text 'nan' (leave the cell empty or null for not scored)"),
])
def test_a_bad_score_in_a_repeat_is_refused_as_in_a_single_row(tmp_path: Path, value: str, words: str) -> None:
    with pytest.raises(InputError) as single:
        plan(ragas_csv(tmp_path / "one.csv", [{"faithfulness": value}]))
    assert (single.value.row, single.value.field, single.value.reason) == (1, "faithfulness", words)
    with pytest.raises(InputError) as repeated:   # before: accepted, the repeat's value dropped
        plan(ragas_csv(tmp_path / "two.csv", [{"faithfulness": "0.5"}, {"faithfulness": value}]))
    assert (repeated.value.row, repeated.value.field, repeated.value.reason) == (2, "faithfulness", words)


# One id, two samples: which one is meant is not ours to guess (before: the first kept, the second dropped).
@pytest.mark.parametrize(("second", "field"), [
    ({"user_input": "How long does the kettle take to boil?"}, "user_input"),
    ({"reference": "At 90 C."}, "reference"),
])
def test_two_rows_sharing_an_id_but_asking_different_things_are_refused_naming_both(
        tmp_path: Path, second: dict[str, str], field: str) -> None:
    path = ragas_csv(tmp_path / "ragas.csv", [{"faithfulness": "0.5"}, {"faithfulness": "0.7"},
                                             {"id": "7", **second, "faithfulness": "0.9"}])
    with pytest.raises(InputError) as refused:
        plan(path)
    assert (refused.value.row, refused.value.field) == (3, field)
    assert "rows 1 and 3 share the id '7'" in refused.value.reason, refused.value.reason


def test_the_cli_and_the_import_page_refuse_a_doubled_id_in_one_line_and_record_nothing(
        fresh_db: Path, tmp_path: Path) -> None:
    path = ragas_csv(tmp_path / "ragas.csv", [{"faithfulness": "0.5"},
                                             {"user_input": "Is the kettle cordless?", "faithfulness": "0.7"}])
    line = assert_usage_error(cli("import", "--db", fresh_db, path, "--run-id", "doubled", "--tool-version", "0.4.3"))
    assert line.startswith(f"error: {path}, row 2, field 'user_input': rows 1 and 2 share the id '7'"), line
    with Store(fresh_db) as store:
        assert "doubled" not in store.run_ids()
    with pytest.raises(InputError) as page:   # what the Import page shows: the upload's name, no server path
        prepare_tool_upload("ragas.csv", path.read_bytes(), fmt="ragas", run_id="doubled")
    assert str(page.value) == line.removeprefix("error: ").replace(str(path), "ragas.csv")
    assert str(tmp_path) not in str(page.value) and "/tmp" not in str(page.value)
