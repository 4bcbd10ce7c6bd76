"""Ingest: real JSONL, CSV and Parquet files into a real DuckDB store."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lib.core.errors import InputError
from lib.core.results import FAILED, OK
from lib.core.samples import EvalSample
from lib.intake.chunked import ingest_file
from lib.intake.ingest import NO_SCORE, records_from_frame
from lib.intake.reading import read_table
from lib.store import Store
from tests.support.cli import run_cli

LONG_ANSWER = "Cairo 🐪 " * 25_000 + "end."
RTL_QUESTION = "ما هي عاصمة مصر؟"


def ragas_rows() -> list[dict[str, object]]:
    """Three samples under Ragas column names; one score missing per two metrics."""
    return [
        {"sample_id": "s1", "user_input": "What is the capital of France? 🇫🇷", "response": "Paris is the capital.",
         "retrieved_contexts": ["Paris is the capital of France.", "France is in Europe."],
         "reference": "Paris.", "faithfulness": 1.0, "answer_relevancy": 0.5, "context_recall": 0.75},
        {"sample_id": "s2", "user_input": RTL_QUESTION, "response": "القاهرة",
         "retrieved_contexts": ["القاهرة هي عاصمة مصر\u2028second line"],
         "reference": "القاهرة", "faithfulness": 0.5, "answer_relevancy": None, "context_recall": 1.0},
        {"sample_id": "s3", "user_input": "Which city?", "response": LONG_ANSWER, "retrieved_contexts": [],
         "reference": 'A "quoted", multi-line\nreference.', "faithfulness": None, "answer_relevancy": 1.0,
         "context_recall": 0.0},
    ]


EXPECTED_SAMPLES = [
    EvalSample("s1", "What is the capital of France? 🇫🇷", "Paris is the capital.",
               ("Paris is the capital of France.", "France is in Europe."), "Paris."),
    EvalSample("s2", RTL_QUESTION, "القاهرة", ("القاهرة هي عاصمة مصر\u2028second line",), "القاهرة"),
    EvalSample("s3", "Which city?", LONG_ANSWER, (), 'A "quoted", multi-line\nreference.'),
]


# -- writing real files ------------------------------------------------------------------
def write_jsonl(path: Path, rows: list[dict[str, object]] | str) -> Path:
    if isinstance(rows, str):
        path.write_text(rows, encoding="utf-8")
    else:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def write_csv(path: Path, rows: list[dict[str, object]] | str) -> Path:
    if isinstance(rows, str):
        path.write_text(rows, encoding="utf-8")
        return path
    cells = [{k: json.dumps(v, ensure_ascii=False) if isinstance(v, list) else v for k, v in r.items()}
             for r in rows]
    pd.DataFrame(cells).to_csv(path, index=False)
    return path


def write_parquet(path: Path, rows: list[dict[str, object]] | str) -> Path:
    assert not isinstance(rows, str)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


WRITERS: dict[str, Callable[[Path, list[dict[str, object]] | str], Path]] = {
    "jsonl": write_jsonl, "csv": write_csv, "parquet": write_parquet}


def write(tmp_path: Path, fmt: str, rows: list[dict[str, object]] | str, name: str = "run") -> Path:
    return WRITERS[fmt](tmp_path / f"{name}.{fmt}", rows)


@pytest.fixture
def fresh_store(tmp_path: Path):
    with Store(tmp_path / "x.duckdb") as store:
        yield store


@pytest.fixture
def store_with_run(tmp_path: Path, fresh_store: Store) -> Store:
    """A store already holding run 'nightly-1', ingested from a good JSONL file."""
    ingest_file(fresh_store, write(tmp_path, "jsonl", ragas_rows(), name="good"), run_id="nightly-1",
                started_at=datetime(2024, 5, 1, 3, 0))
    return fresh_store


# -- round trips -------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_round_trip_keeps_text_intact_and_scores_exact(tmp_path: Path, fresh_store: Store, fmt: str) -> None:
    path = write(tmp_path, fmt, ragas_rows())

    run = ingest_file(fresh_store, path, run_id="r1", started_at=datetime(2024, 5, 1, 3, 0),
                      pipeline={"retriever": "bm25", "k": 2})

    assert fresh_store.samples("r1") == EXPECTED_SAMPLES
    assert run.n_samples == len(EXPECTED_SAMPLES)
    assert fresh_store.run("r1").pipeline == {"retriever": "bm25", "k": 2}
    metrics = fresh_store.run_metrics("r1").set_index("metric")
    assert sorted(metrics.index) == ["answer_relevance", "context_recall", "faithfulness"]
    # hand-computed: mean over scored samples only, the unscored one counted as failed
    assert metrics.loc["faithfulness", "score"] == pytest.approx((1.0 + 0.5) / 2)
    assert metrics.loc["answer_relevance", "score"] == pytest.approx((0.5 + 1.0) / 2)
    assert metrics.loc["context_recall", "score"] == pytest.approx((0.75 + 1.0 + 0.0) / 3)
    assert metrics.loc["faithfulness", ["n", "n_failed", "n_excluded"]].tolist() == [2, 1, 0]
    assert metrics.loc["context_recall", ["n", "n_failed"]].tolist() == [3, 0]
    assert metrics["judge_model"].isna().all() and metrics["prompt_hash"].isna().all()  # unattributed

    scores = fresh_store.sample_scores("r1", metric="faithfulness").set_index("sample_id")
    assert scores["status"].tolist() == [OK, OK, FAILED]
    assert scores.loc["s3", "reason"] == NO_SCORE and math.isnan(scores.loc["s3", "score"])
    assert scores.loc["s2", "score"] == 0.5


def test_our_own_column_names_and_id_alias(tmp_path: Path, fresh_store: Store) -> None:
    rows = [{"id": 7, "question": "q", "answer": "a", "contexts": ["c"], "ground_truth": "g",
             "context_precision": 0.25, "answer_correctness": 1}]
    ingest_file(fresh_store, write(tmp_path, "jsonl", rows), run_id="r1")

    assert fresh_store.samples("r1") == [EvalSample("7", "q", "a", ("c",), "g")]
    metrics = fresh_store.run_metrics("r1").set_index("metric")["score"].to_dict()
    assert metrics == {"answer_correctness": 1.0, "context_precision": 0.25}


def test_ids_are_generated_from_rows_when_absent(tmp_path: Path, fresh_store: Store) -> None:
    rows = [{k: v for k, v in r.items() if k != "sample_id"} for r in ragas_rows()[:2]]
    content = json.dumps(rows[0]) + "\n\n" + json.dumps(rows[1]) + "\n"  # a blank line 2 is skipped

    ingest_file(fresh_store, write(tmp_path, "jsonl", content), run_id="r1")

    assert [s.sample_id for s in fresh_store.samples("r1")] == ["row-1", "row-3"]


def test_attribution_is_stored_when_given(tmp_path: Path, fresh_store: Store) -> None:
    template = "Claims:\n{items}\nContext:\n{contexts}"
    ingest_file(fresh_store, write(tmp_path, "csv", ragas_rows()), run_id="r1", judge_model="gpt-judge",
                templates={"faithfulness": template, "answer_relevancy": "Q: {question}\n{items}"},
                binding="replay")

    faith = fresh_store.instrument("r1", "faithfulness")
    assert (faith.judge_model, faith.template, faith.binding) == ("gpt-judge", template, "replay")
    assert fresh_store.instrument("r1", "answer_relevance").template == "Q: {question}\n{items}"
    assert fresh_store.instrument("r1", "context_recall").template is None


def test_ingesting_the_same_file_twice_leaves_one_copy(tmp_path: Path, fresh_store: Store) -> None:
    path = write(tmp_path, "parquet", ragas_rows())
    ingest_file(fresh_store, path, run_id="r1")
    once = fresh_store.counts()

    ingest_file(fresh_store, path, run_id="r1")

    assert fresh_store.counts() == once
    assert fresh_store.run_ids() == ["r1"]


def test_reingesting_a_run_id_replaces_its_content(tmp_path: Path, fresh_store: Store) -> None:
    ingest_file(fresh_store, write(tmp_path, "jsonl", ragas_rows(), name="a"), run_id="r1")
    ingest_file(fresh_store, write(tmp_path, "jsonl", ragas_rows()[:1], name="b"), run_id="r1")

    assert [s.sample_id for s in fresh_store.samples("r1")] == ["s1"]
    assert fresh_store.counts()["samples"] == 1


def test_a_frame_from_elsewhere_reads_nan_as_not_scored() -> None:
    df = pd.DataFrame({
        "user_input": ["q1", "q2"], "response": ["a1", "a2"],
        "retrieved_contexts": [np.array(["c1", "c2"], dtype=object), np.array([], dtype=object)],
        "reference": ["g1", "g2"], "faithfulness": [np.nan, 0.5], "unknown_extra": [1, 2]})

    samples, results = records_from_frame(df, source="ragas result")

    assert samples == [EvalSample("row-1", "q1", "a1", ("c1", "c2"), "g1"),
                       EvalSample("row-2", "q2", "a2", (), "g2")]
    assert [(r.status, r.score, r.reason) for r in results["faithfulness"]] == [
        (FAILED, None, NO_SCORE), (OK, 0.5, "")]


def test_a_frame_with_infinity_names_row_and_field() -> None:
    df = pd.DataFrame({"question": ["q1", "q2"], "answer": ["a", "a"], "contexts": [["c"], ["c"]],
                       "ground_truth": ["g", "g"], "context_recall": [0.5, np.inf]})

    with pytest.raises(InputError) as info:
        records_from_frame(df, source="frame")

    assert (info.value.row, info.value.field, info.value.source) == (2, "context_recall", "frame")


# -- bad input: a clear error naming row and field; the store unchanged -------------------------
def with_cell(row: int, column: str, value: object) -> Callable[[list[dict[str, object]]], list[dict[str, object]]]:
    def change(rows: list[dict[str, object]]) -> list[dict[str, object]]:
        rows[row - 1][column] = value
        return rows
    return change


def without(column: str) -> Callable[[list[dict[str, object]]], list[dict[str, object]]]:
    return lambda rows: [{k: v for k, v in r.items() if k != column} for r in rows]


def with_extra(column: str) -> Callable[[list[dict[str, object]]], list[dict[str, object]]]:
    return lambda rows: [{**r, column: r["user_input"]} for r in rows]


LINE = ('{{"sample_id": "{id}", "user_input": {q}, "response": "a", "retrieved_contexts": [], '
        '"reference": "g", "faithfulness": {score}}}')  # one JSON line, written by hand


def raw_jsonl(lines: list[str]) -> Callable[[list[dict[str, object]]], str]:
    """Good rows as lines, with line n replaced by lines[n-1] when that is not empty."""
    def build(rows: list[dict[str, object]]) -> str:
        good = [json.dumps(r, ensure_ascii=False) for r in rows]
        return "".join((line if line else good[i]) + "\n" for i, line in enumerate(lines))
    return build


def two_bad_cells(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    rows[2]["user_input"] = None
    rows[1]["context_recall"] = 2.0
    rows[1]["reference"] = 17  # same row, earlier column: reported first
    return rows


BAD_INPUTS = [
    # (case, format, change to the good rows, expected row, expected field, words in the message)
    ("missing column", "csv", without("reference"), None, "ground_truth", "missing column"),
    ("wrong type", "jsonl", with_cell(2, "user_input", 42), 2, "user_input", "must be text, got int"),
    ("wrong type: an integer column", "parquet", lambda rows: [{**r, "reference": i} for i, r in enumerate(rows)],
     1, "reference", "must be text, got int"),
    ("NaN in question (empty CSV cell)", "csv", with_cell(3, "user_input", None), 3, "user_input", "missing"),
    ("NaN in question (JSON null)", "jsonl", with_cell(1, "user_input", None), 1, "user_input", "missing"),
    ("NaN in question (Parquet null)", "parquet", with_cell(2, "user_input", None), 2, "user_input", "missing"),
    ("contexts as plain string (JSONL)", "jsonl", with_cell(1, "retrieved_contexts", "Paris is big."), 1,
     "retrieved_contexts", "contexts must be a list of passages, got a string"),
    ("contexts as plain string (CSV)", "csv", with_cell(2, "retrieved_contexts", "Paris is big."), 2,
     "retrieved_contexts", "contexts must be a list of passages, got a string"),
    ("contexts a broken JSON array", "csv", with_cell(2, "retrieved_contexts", '["a", '), 2,
     "retrieved_contexts", "not a valid JSON array"),
    ("passage not text", "jsonl", with_cell(3, "retrieved_contexts", ["ok", 5]), 3, "retrieved_contexts",
     "passage 2 must be text"),
    ("score 1.5", "jsonl", with_cell(2, "faithfulness", 1.5), 2, "faithfulness", "number in [0, 1]"),
    ("score negative", "parquet", with_cell(3, "context_recall", -0.1), 3, "context_recall", "number in [0, 1]"),
    ('score "inf" (CSV)', "csv", with_cell(1, "faithfulness", "inf"), 1, "faithfulness", "'inf'"),
    ('score "nan" (JSONL string)', "jsonl", with_cell(3, "answer_relevancy", "nan"), 3, "answer_relevancy",
     "'nan'"),
    ("score float inf (Parquet)", "parquet", with_cell(2, "faithfulness", math.inf), 2, "faithfulness",
     "number in [0, 1]"),
    ("score bare Infinity (JSONL)", "jsonl", raw_jsonl(["", "", LINE.format(id="s3", q='"q"', score="Infinity")]),
     3, "faithfulness", "Infinity"),
    ("score bare NaN (JSONL)", "jsonl", raw_jsonl([LINE.format(id="s1", q='"q"', score="NaN")]), 1,
     "faithfulness", "NaN"),
    ("score not a number", "csv", with_cell(2, "context_recall", "high"), 2, "context_recall", "'high'"),
    ("score a boolean", "jsonl", with_cell(1, "context_recall", True), 1, "context_recall", "boolean"),
    ("duplicate id", "csv", with_cell(3, "sample_id", "s1"), 3, "sample_id", "duplicate sample id 's1'"),
    ("NUL character", "jsonl", with_cell(2, "response", "fine\x00then not"), 2, "response", "NUL character"),
    ("NUL in a passage", "parquet", with_cell(1, "retrieved_contexts", ["a", "b\x00"]), 1, "retrieved_contexts",
     "NUL character"),
    ("unpaired surrogate", "jsonl", raw_jsonl(["", LINE.format(id="s2", q='"\\ud800"', score="0.5")]), 2,
     "user_input", "surrogate"),
    ("malformed JSONL line 2", "jsonl", raw_jsonl(["", '{"sample_id": "s2", "user_input": ', ""]), 2, None,
     "not valid JSON"),
    ("JSONL line not an object", "jsonl", raw_jsonl(["", "", '["s3", "q"]']), 3, None, "JSON Lines"),
    ("blank lines keep line numbers", "jsonl", raw_jsonl(["", " ", '{"sample_id": 1.5}']), 3, "sample_id",
     "must be text"),
    ("question and user_input both", "jsonl", with_extra("question"), None, "user_input", "keep one"),
    ("first bad cell wins", "jsonl", two_bad_cells, 2, "reference", "must be text"),
    ("header only", "csv", lambda rows: "user_input,response,retrieved_contexts,reference\n", None, None,
     "no rows"),
]


@pytest.mark.parametrize(("fmt", "change", "row", "field", "words"),
                         [pytest.param(*case[1:], id=case[0]) for case in BAD_INPUTS])
def test_bad_input_names_row_and_field_and_writes_nothing(
        tmp_path: Path, store_with_run: Store, fmt: str, change: Callable, row: int | None, field: str | None,
        words: str) -> None:
    path = write(tmp_path, fmt, change(ragas_rows()))
    before = store_with_run.counts()

    with pytest.raises(InputError) as info:
        ingest_file(store_with_run, path, run_id="nightly-1", judge_model="j")

    assert (info.value.row, info.value.field) == (row, field), str(info.value)
    assert words in str(info.value)
    assert info.value.source == str(path)
    assert store_with_run.counts() == before
    assert store_with_run.samples("nightly-1") == EXPECTED_SAMPLES  # the earlier copy survives


@pytest.mark.parametrize(("name", "content", "words"), [
    ("run.xlsx", b"PK", "unsupported file type '.xlsx'"),
    ("missing.jsonl", None, "cannot read file"),
    ("missing.csv", None, "cannot read file"),
    ("missing.parquet", None, "cannot read file"),
    ("bad.parquet", b"not parquet at all", "not a readable Parquet file"),
])
def test_unreadable_files_are_input_errors(tmp_path: Path, name: str, content: bytes | None, words: str) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)

    with pytest.raises(InputError) as info:
        read_table(path)

    assert (info.value.row, info.value.field, info.value.source) == (None, None, str(path))
    assert words in str(info.value)


def test_non_utf8_csv_cell_is_named(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes("question,answer\nfine,ok\nstill fine,caf\xe9\n".encode("latin-1"))

    with pytest.raises(InputError, match="not UTF-8") as info:
        read_table(path)

    assert (info.value.row, info.value.field) == (2, "answer")


def test_non_utf8_jsonl_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": "caf\xe9"}\n')

    with pytest.raises(InputError) as info:
        read_table(path)

    assert (info.value.row, info.value.field) == (2, None)


def test_unknown_template_metric_is_refused_before_writing(tmp_path: Path, store_with_run: Store) -> None:
    before = store_with_run.counts()

    with pytest.raises(InputError) as info:
        ingest_file(store_with_run, write(tmp_path, "jsonl", ragas_rows()), run_id="nightly-2",
                    templates={"faithfulnes": "{items}"})

    assert info.value.field == "templates"
    assert store_with_run.counts() == before


@pytest.mark.parametrize(("metric", "refused"), [
    ("faithfulness", None),                  # receives the answer and the passages: no question needed
    ("answer_relevance", "question"),        # receives the question: its column must be there
])
def test_a_column_is_needed_only_when_a_metric_of_the_file_receives_it(tmp_path: Path, metric: str,
                                                                      refused: str | None) -> None:
    # Found by the fuzz test: a one-row file without a question column, scored for faithfulness, is a whole file
    source = tmp_path / "no-question.jsonl"
    source.write_text(json.dumps({"sample_id": "s0", "answer": "0", "contexts": ["c"], "ground_truth": "0",
                                  metric: 0.5}) + "\n", encoding="utf-8")
    done = run_cli("ingest", "--db", tmp_path / "e.duckdb", "--run-id", "r1", source)
    if refused is None:
        assert done.returncode == 0 and "recorded run r1: 1 samples" in done.stdout, done.stderr
    else:
        assert done.returncode == 2 and f"missing column ({metric} receives it)" in done.stderr, done.stderr
        assert refused in done.stderr
