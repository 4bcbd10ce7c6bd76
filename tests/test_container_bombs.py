"""Bombs in the containers the size limits missed (issue 39 item 2): a Parquet file whose pages inflate, and an
MLflow store whose rows multiply. Each file is built here, a few kB on disk; each is refused by `ingest`,
`import` and the Import page's readers in one line naming the file, the row and the field, before the bomb
is decompressed or multiplied, at a peak memory under PEAK_MB (the figure lib/intake/README.md states).

The Parquet bombs are written by pyarrow in a child process (the value exists once, as a buffer, never as a
Python string); the MLflow store by sqlite3, with the tables and columns lib/store/mlflow_store.py reads and
no keys, as a hostile file would have it.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from lib.core.errors import InputError
from lib.intake.uploads import prepare_tool_upload, read_upload
from lib.store import Store
from tests.test_cli import ROOT, assert_usage_error, cli
from tests.test_hostile_imports import _peak_rss_mb

PEAK_MB = 400   # lib/intake/README.md: "every refusal below stays under 400 MB"

BUILD_PARQUET = """
import sys
import pyarrow as pa
import pyarrow.parquet as pq

for k in range(1, len(sys.argv), 4):   # one file per (path, kind, chars, rows) given
    path, kind, chars, rows = sys.argv[k], sys.argv[k + 1], int(sys.argv[k + 2]), int(sys.argv[k + 3])
    offsets = pa.array([0, chars], pa.int32()).buffers()[1]
    value = pa.StringArray.from_buffers(1, offsets, pa.py_buffer(b"q" * chars))
    if kind != "field":   # every row the same value: the file holds it once, a reader that expands it, each row
        value = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), value)
    if kind == "prefix":     # each row's value written as "all of the row before's": DELTA_BYTE_ARRAY
        value = value.cast(pa.string())
    table = pa.table({"user_input": value, "response": pa.array(["a"] * rows),
                      "retrieved_contexts": pa.array([["p"]] * rows), "faithfulness": pa.array([0.5] * rows)})
    pq.write_table(table, path, compression="zstd", store_schema=False, write_statistics=False,
                   use_dictionary=kind == "dictionary",
                   column_encoding={"user_input": "DELTA_BYTE_ARRAY"} if kind == "prefix" else None)
    del value, table
"""

# (name, kind, characters of the value, rows): one question of 300M characters (the 11 kB file), and one
# question of 300,000 characters stored once and given to 2,000 rows (600 MB when expanded), as a dictionary and
# as prefixes.
BOMBS = {"one-field": ("field", 300_000_000, 1), "dictionary": ("dictionary", 300_000, 2_000),
         "prefix": ("prefix", 300_000, 2_000)}


@pytest.fixture(scope="module")
def parquet_bombs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bombs")
    out = {name: folder / f"{name}.parquet" for name in BOMBS}
    # one child writes the three (one interpreter and pyarrow import, not three)
    subprocess.run([sys.executable, "-c", BUILD_PARQUET,
                    *(str(a) for name, (kind, chars, rows) in BOMBS.items() for a in (out[name], kind, chars, rows))],
                   check=True, timeout=180)
    return out


OVER_INPUT = "over the limit of 536,870,912 (EVALDRIFT_MAX_INPUT_BYTES"   # the default, 512 MiB

# (command, bomb, what the one line names); `import` of the one-field bomb is the Import page's test below
PARQUET_DOORS = [
    ("ingest", "one-field", ("row 1, field 'user_input'", "EVALDRIFT_MAX_FIELD_CHARS", "before")),
    ("ingest", "dictionary", ("row 1790, field 'user_input'", OVER_INPUT, "before")),
    ("import", "prefix", ("row 1790, field 'user_input'", OVER_INPUT, "before")),
]


@pytest.mark.parametrize(("command", "bomb", "names"), PARQUET_DOORS, ids=[f"{c}-{b}" for c, b, _ in PARQUET_DOORS])
def test_a_parquet_bomb_is_refused_before_it_inflates_in_bounded_memory(
        fresh_db: Path, parquet_bombs: dict[str, Path], command: str, bomb: str, names: tuple[str, ...]) -> None:
    path = parquet_bombs[bomb]
    assert path.stat().st_size < 20_000
    proc, peak = _peak_rss_mb(command, "--db", fresh_db, path, "--run-id", "bomb")
    assert peak < PEAK_MB, f"peak {peak:.0f} MB"
    line = assert_usage_error(proc)
    assert line.startswith(f"error: {path}, "), line
    for part in names:
        assert part in line, (part, line)
    if fresh_db.exists():
        with Store(fresh_db) as store:
            assert "bomb" not in store.run_ids()


def _one_column(path: Path, values: list[str], encoding: str) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    column = pa.array(values, pa.string())
    pq.write_table(pa.table({"user_input": column}), path, compression="zstd", store_schema=False,
                   write_statistics=False, use_dictionary=encoding == "dictionary",
                   column_encoding={"user_input": "DELTA_BYTE_ARRAY"} if encoding == "prefix" else None)
    return path


# Each check of lib/intake/parquetread.py, a row each, with limits lowered so the files are small:
# (case, EVALDRIFT_MAX_FIELD_CHARS, EVALDRIFT_MAX_INPUT_BYTES, values, encoding, row, words; None: read)
PARQUET_CHECKS = [
    ("footer: a chunk more than its rows can hold", 1_000, 536_870_912, ["q" * 100_000], "plain", 1,
     "the column holds 100,0"),
    ("footer: the chunks together over the input limit", 1_000_000, 100_000, [str(k) * 4_000 for k in range(40)],
     "plain", 1, "the file's pages hold more than 100,000 bytes uncompressed"),
    ("measured: one value over the field limit", 1_000, 536_870_912, ["a", "b" * 5_000, "c"], "dictionary", 2,
     "holds 5,000 bytes, more than 1,000 characters"),
    ("measured: a dictionary value expanded past the input limit", 1_000_000, 100_000, ["q" * 2_000] * 100,
     "dictionary", 51, "the file's values reach more than 100,000 bytes here"),
    ("measured: prefixes expanded past the input limit", 1_000_000, 100_000, ["q" * 2_000] * 100, "prefix", 51,
     "the file's values reach more than 100,000 bytes here"),
    ("under every limit", 1_000_000, 100_000, ["q" * 2_000] * 40, "dictionary", None, None),
]


@pytest.mark.parametrize(("field_chars", "input_bytes", "values", "encoding", "row", "words"),
                         [c[1:] for c in PARQUET_CHECKS], ids=[c[0] for c in PARQUET_CHECKS])
def test_each_parquet_check_refuses_at_its_own_row_and_field(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, field_chars: int, input_bytes: int, values: list[str],
        encoding: str, row: int | None, words: str | None) -> None:
    from lib.intake.reading import read_table

    path = _one_column(tmp_path / "t.parquet", values, encoding)
    monkeypatch.setenv("EVALDRIFT_MAX_FIELD_CHARS", str(field_chars))
    monkeypatch.setenv("EVALDRIFT_MAX_INPUT_BYTES", str(input_bytes))
    if words is None:
        assert read_table(path)["user_input"].tolist() == values
        return
    with pytest.raises(InputError) as refused:
        read_table(path)
    assert (refused.value.row, refused.value.field) == (row, "user_input"), str(refused.value)
    assert words in refused.value.reason and "before" in refused.value.reason, refused.value.reason


def test_the_import_page_refuses_a_parquet_bomb_in_the_same_line_without_a_server_path(
        parquet_bombs: dict[str, Path]) -> None:
    data = parquet_bombs["one-field"].read_bytes()
    [error] = read_upload("bomb.parquet", data).errors           # read as our own table
    with pytest.raises(InputError) as tool:                        # read as a Ragas result (its columns)
        prepare_tool_upload("bomb.parquet", data, fmt="ragas", run_id="bomb")
    for line in (str(error), str(tool.value)):
        assert line.startswith("bomb.parquet, row 1, field 'user_input': "), line
        assert "before" in line and "EVALDRIFT_MAX_FIELD_CHARS" in line, line
        assert "/tmp" not in line and "\n" not in line


def test_a_page_larger_than_its_footer_says_is_refused_by_the_measure_in_bounded_memory(
        parquet_bombs: dict[str, Path]) -> None:
    """Behind the footer check: a footer can understate a page, and the measure that follows it holds at most
    256 MB. Here the footer check is skipped (the one-field bomb's 300 MB page is read by the measure itself)."""
    code = ("import sys; from lib.store.parquet_sizes import column_sizes\n"
            "try:\n    column_sizes(sys.argv[1])\nexcept Exception as exc:\n    print(type(exc).__name__, exc)")
    wrapper = ("import resource, subprocess, sys; p = subprocess.run([sys.executable, '-c', *sys.argv[1:]], "
               "capture_output=True, text=True); print(p.stdout.strip()); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    proc = subprocess.run([sys.executable, "-c", wrapper, code, str(parquet_bombs["one-field"])], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=True)
    said, peak = proc.stdout.strip().splitlines()
    assert said.startswith("InputError ") and "a page of the file needs more than 256 MB to read" in said, said
    assert int(peak) / 1024 < PEAK_MB, f"peak {int(peak) / 1024:.0f} MB"


# -- an MLflow store whose rows multiply -------------------------------------------------------------------------
TABLES = {
    "experiments": "experiment_id, name",
    "runs": "run_uuid, name, experiment_id, start_time, lifecycle_stage",
    "tags": "key, value, run_uuid",
    "trace_info": "request_id, experiment_id, timestamp_ms",
    "trace_request_metadata": "key, value, request_id",
    "spans": "trace_id, span_id, type, start_time_unix_nano, content",
    "assessments": "assessment_id, trace_id, name, assessment_type, value, error, created_timestamp, source_type, "
                   "source_id, valid",
}


def retriever_span(chars: int) -> str:
    """A RETRIEVER span's content as MLflow writes it: the documents are JSON text inside the span's JSON."""
    documents = json.dumps([{"page_content": "p" * chars, "metadata": {}}])
    return json.dumps({"attributes": {"mlflow.spanOutputs": documents}})


def mlflow_store(path: Path, traces: list[str], *, span_chars: int, sourced: list[str] | None = None) -> Path:
    """A store holding one evaluation (run 'nightly') whose traces are `traces` (ids, repeated as given), each
    with one question, answer, RETRIEVER span of `span_chars` passage characters and groundedness verdict;
    `sourced`: the ids given the evaluation's mlflow.sourceRun row (default: each distinct id once)."""
    with sqlite3.connect(path) as conn:
        for table, columns in TABLES.items():
            conn.execute(f"CREATE TABLE {table} ({columns})")
        conn.execute("INSERT INTO experiments VALUES ('0', 'rag')")
        conn.execute("INSERT INTO runs VALUES ('run-1', 'nightly', '0', 1764990000000, 'active')")
        conn.executemany("INSERT INTO trace_info VALUES (?, '0', ?)", [(t, 1764990000000 + k)
                                                                       for k, t in enumerate(traces)])
        distinct = list(dict.fromkeys(traces))
        conn.executemany("INSERT INTO trace_request_metadata VALUES ('mlflow.sourceRun', 'run-1', ?)",
                         [(t,) for t in (sourced if sourced is not None else distinct)])
        for k, trace in enumerate(distinct):
            conn.execute("INSERT INTO trace_request_metadata VALUES ('mlflow.traceInputs', ?, ?)",
                         (json.dumps({"question": f"question {k}?"}), trace))
            conn.execute("INSERT INTO trace_request_metadata VALUES ('mlflow.traceOutputs', ?, ?)",
                         (json.dumps("an answer"), trace))
            conn.execute("INSERT INTO spans VALUES (?, 's1', 'RETRIEVER', 1, ?)", (trace, retriever_span(span_chars)))
            conn.execute("INSERT INTO assessments VALUES (?, ?, 'retrieval_groundedness', 'feedback', '\"yes\"', "
                         "NULL, 1, 'LLM_JUDGE', 'openai:/grader', NULL)", (f"a-{k}", trace))
    return path


def test_a_well_formed_store_built_here_imports(fresh_db: Path, tmp_path: Path) -> None:
    """The builder's store is one the importer reads: the refusals below are for the bomb, not the shape."""
    path = mlflow_store(tmp_path / "mlflow.db", ["tr-1", "tr-2", "tr-3"], span_chars=100)
    proc = cli("import", "--db", fresh_db, path, "--run-id", "ok", "--tool-version", "3.17.2")
    assert proc.returncode == 0, proc.stderr
    with Store(fresh_db) as store:
        assert len(store.samples("ok")) == 3


def test_an_mlflow_store_with_one_trace_id_in_3000_rows_is_refused_before_reading_in_bounded_memory(
        fresh_db: Path, tmp_path: Path) -> None:
    # 3,000 trace_info rows sharing one id, each read with the trace's 500 kB span (the issue: accepted at 3.0 GB)
    path = mlflow_store(tmp_path / "mlflow.db", ["tr-1"] * 3000, span_chars=500_000)
    assert path.stat().st_size < 1_000_000
    proc, peak = _peak_rss_mb("import", "--db", fresh_db, path, "--run-id", "bomb", "--tool-version", "3.17.2")
    assert peak < PEAK_MB, f"peak {peak:.0f} MB"
    assert assert_usage_error(proc).startswith(f"error: {path}, row 2, field 'request_id': rows 1 and 2 are one "
                                               f"trace, 'tr-1'")


@pytest.mark.parametrize(("traces", "sourced"), [
    (["tr-1"] * 3000, None),            # the id repeated in trace_info
    (["tr-1"], ["tr-1"] * 3000),        # one trace named by the evaluation's mlflow.sourceRun metadata 3,000 times
], ids=["trace_info", "trace_request_metadata"])
def test_an_mlflow_store_whose_trace_ids_repeat_is_refused_in_one_line_at_both_doors(
        fresh_db: Path, tmp_path: Path, traces: list[str], sourced: list[str] | None) -> None:
    path = mlflow_store(tmp_path / "mlflow.db", traces, span_chars=500_000, sourced=sourced)
    line = assert_usage_error(cli("import", "--db", fresh_db, path, "--run-id", "bomb", "--tool-version", "3.17.2"))
    assert line.startswith(f"error: {path}, row 2, field 'request_id': "), line
    assert "'tr-1'" in line and "rows 1 and 2" in line, line
    if fresh_db.exists():
        with Store(fresh_db) as store:
            assert "bomb" not in store.run_ids()
    with pytest.raises(InputError) as page:   # the Import page: the same line, the upload's name
        prepare_tool_upload("mlflow.db", path.read_bytes(), fmt="mlflow", run_id="bomb")
    assert str(page.value) == line.removeprefix("error: ").replace(str(path), "mlflow.db")


def test_an_mlflow_evaluation_over_the_input_limit_is_refused_at_the_trace_that_crosses_it(
        fresh_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = mlflow_store(tmp_path / "mlflow.db", ["tr-1", "tr-2", "tr-3", "tr-4"], span_chars=300_000)
    monkeypatch.setenv("EVALDRIFT_MAX_INPUT_BYTES", "1000000")
    line = assert_usage_error(cli("import", "--db", fresh_db, path, "--run-id", "big", "--tool-version", "3.17.2"))
    assert line.startswith(f"error: {path}, row 4, field 'spans': "), line
    assert "over the limit of 1,000,000 (EVALDRIFT_MAX_INPUT_BYTES" in line, line
    monkeypatch.setenv("EVALDRIFT_MAX_INPUT_BYTES", "2000000")   # an operator who needs more raises it
    assert cli("import", "--db", fresh_db, path, "--run-id", "big", "--tool-version", "3.17.2").returncode == 0
