"""Every door turns a bad file into one line naming file, row and field (issue 39 items 3 and 8).

A table of bad inputs x doors, each file built here: the labels door (`labels import`), the tool-import door
(`import`) and the Import page's reader of the same upload (`lib.intake.uploads.prepare_tool_upload`, what the
page calls). At the CLI the refusal is exit 2 and one line; on the page it is an InputError naming the upload as
the user named it, never the server's temporary path, and never another exception (a traceback on the page).
Also here: a FIFO given to a door is refused before it is opened, and an echoed value is cut, so a refusal of a
2M-character name is a line, not 2 MB.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from lib.core.errors import InputError
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.samples import EvalSample
from lib.intake.uploads import prepare_tool_upload
from lib.store import Store
from tests.support.synthetic_runs import facts, record
from tests.test_cli import assert_usage_error, cli


# -- files built here ---------------------------------------------------------------------------------------------
def _label_line(**change: object) -> dict:
    return {"sample_id": "s01", "metric": "faithfulness", "item": 1, "label": "yes", "labeller": "ana", **change}


def _labels_jsonl(second: str) -> bytes:
    """A labels file whose row 1 is good and whose row 2 is `second` (raw JSON text)."""
    return (json.dumps(_label_line(sample_id="s00")) + "\n" + second + "\n").encode("utf-8")


def _with_raw(key: str, raw: str) -> str:
    """Row 2 with one value replaced by raw JSON text (what json.dumps cannot write)."""
    return json.dumps(_label_line(**{key: "@@RAW@@"})).replace('"@@RAW@@"', raw)


CSV_HEAD = "sample_id,metric,item,label,labeller,note\ns00,faithfulness,1,yes,ana,fine\n"


def deepeval_run(change: Callable[[list[dict]], None] | None = None) -> bytes:
    """A DeepEval test run of two test cases, each scored for Faithfulness; `change` edits the test cases."""
    cases = [{"name": f"test_case_{i}", "input": f"question {i}?", "actualOutput": f"answer {i}",
              "expectedOutput": f"reference {i}", "retrievalContext": [f"passage {i}"],
              "metricsData": [{"name": "Faithfulness", "score": 0.5, "evaluationModel": "gpt-4o-mini",
                               "error": None}]} for i in range(2)]
    if change:
        change(cases)
    return json.dumps({"testCases": cases}).encode("utf-8")


def mlflow_store(path: Path, *, start_time: object = 1_780_000_000_000, value: object = '"yes"',
                 inputs: object = '{"question": "question 1?"}') -> Path:
    """The tables of an MLflow tracking store that mlflow.genai.evaluate fills, with one evaluation of two traces;
    the second trace's groundedness value and inputs, and the run's start time, are the ones given."""
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE experiments (experiment_id INTEGER, name TEXT);
        CREATE TABLE runs (run_uuid TEXT, name TEXT, experiment_id INTEGER, start_time, lifecycle_stage TEXT);
        CREATE TABLE tags (run_uuid TEXT, key TEXT, value TEXT);
        CREATE TABLE trace_info (request_id TEXT, timestamp_ms INTEGER);
        CREATE TABLE trace_request_metadata (request_id TEXT, key TEXT, value);
        CREATE TABLE spans (trace_id TEXT, type TEXT, content TEXT, start_time_unix_nano INTEGER);
        CREATE TABLE assessments (assessment_id TEXT, trace_id TEXT, name TEXT, assessment_type TEXT, value,
                                  error TEXT, source_type TEXT, source_id TEXT, valid INTEGER,
                                  created_timestamp INTEGER);
        INSERT INTO experiments VALUES (1, 'nightly');""")
    con.execute("INSERT INTO runs VALUES ('run-1', 'eval-1', 1, ?, 'active')", (start_time,))
    for i in range(2):
        trace = f"tr-{i}"
        con.execute("INSERT INTO trace_info VALUES (?, ?)", (trace, 1000 + i))
        rows = [("mlflow.sourceRun", "run-1"), ("mlflow.traceOutputs", json.dumps(f"answer {i}")),
                ("mlflow.traceInputs", inputs if i == 1 else json.dumps({"question": f"question {i}?"}))]
        con.executemany("INSERT INTO trace_request_metadata VALUES (?, ?, ?)", [(trace, k, v) for k, v in rows])
        span = {"attributes": {"mlflow.spanOutputs": json.dumps([{"page_content": f"passage {i}"}])}}
        con.execute("INSERT INTO spans VALUES (?, 'RETRIEVER', ?, 1)", (trace, json.dumps(span)))
        con.execute("INSERT INTO assessments VALUES (?, ?, 'expected_response', 'expectation', ?, NULL, 'HUMAN', "
                    "NULL, 1, 1)", (f"e{i}", trace, json.dumps(f"reference {i}")))
        con.execute("INSERT INTO assessments VALUES (?, ?, 'retrieval_groundedness', 'feedback', ?, NULL, "
                    "'LLM_JUDGE', 'openai:/gpt-4o-mini', 1, 2)", (f"f{i}", trace, value if i == 1 else '"yes"'))
    con.commit()
    con.close()
    return path


def _mlflow_bytes(tmp_path: Path, **kw: object) -> bytes:
    return mlflow_store(tmp_path / "built.db", **kw).read_bytes()


def _drop_name(cases: list[dict]) -> None:
    del cases[1]["metricsData"][0]["name"]


# -- the table ----------------------------------------------------------------------------------------------------
LABELS, TOOLS = "labels", "tools"   # which doors a case goes through: labels import; import and the Import page
Build = Callable[[Path], bytes]
# (case, doors, file name, the bytes, what the one line names besides the file)
CASES: list[tuple[str, str, str, Build, tuple[str, ...]]] = [
    ("csv field over the field limit", LABELS, "big.csv",   # (a 140,000-character one goes in: see below)
     lambda _: (CSV_HEAD + "s01,faithfulness,1,yes,ana," + "x" * 1_000_001 + "\n").encode(),
     ("row 2", "field 'note'", "over the limit")),
    ("a 5,000-digit integer", LABELS, "digits.jsonl", lambda _: _labels_jsonl(_with_raw("item", "9" * 5000)),
     ("row 2", "field 'item'", "5000 digits")),
    ("nesting 5,000 deep", LABELS, "deep.jsonl", lambda _: _labels_jsonl(_with_raw("note", "[" * 5000 + "]" * 5000)),
     ("row 2", "nested too deeply")),
    ("a list where text goes", LABELS, "list.jsonl", lambda _: _labels_jsonl(json.dumps(_label_line(note=["a"]))),
     ("row 2", "field 'note'", "must be text")),
    ("non-UTF-8 CSV", LABELS, "latin.csv", lambda _: CSV_HEAD.encode() + b"s01,faithfulness,1,yes,ana,caf\xe9\n",
     ("row 2", "field 'note'", "not UTF-8")),
    ("non-UTF-8 JSONL", LABELS, "latin.jsonl",
     lambda _: _labels_jsonl(json.dumps(_label_line(note="cafe"))).replace(b"cafe", b"caf\xe9"),
     ("row 2", "not UTF-8")),
    ("a _row column", LABELS, "row.csv",
     lambda _: b"sample_id,metric,label,labeller,_row\ns00,faithfulness,yes,ana,abc\n",
     ("row 1", "field '_row'", "unknown column")),
    ("item 1e400", LABELS, "inf.jsonl", lambda _: _labels_jsonl(_with_raw("item", "1e400")),
     ("row 2", "field 'item'", "whole number")),
    ("a key given twice", LABELS, "twice.jsonl", lambda _: _labels_jsonl(_with_raw("label", '"yes", "label": "no"')),
     ("row 2", "field 'label'", "appears twice")),
    ("a NUL character", LABELS, "nul.jsonl", lambda _: _labels_jsonl(json.dumps(_label_line(note="a\x00b"))),
     ("row 2", "field 'note'", "NUL")),
    ("a note over the field limit", LABELS, "long.jsonl",
     lambda _: _labels_jsonl(json.dumps(_label_line(note="n" * 1_000_001))),
     ("row 2", "field 'note'", "EVALDRIFT_MAX_FIELD_CHARS")),
    ("labelled in year 1", LABELS, "year1.jsonl",
     lambda _: _labels_jsonl(json.dumps(_label_line(labelled_at="0001-01-01T00:00:00"))),
     ("row 2", "field 'labelled_at'", "1970")),
    ("labelled in year 9999", LABELS, "year9999.jsonl",
     lambda _: _labels_jsonl(json.dumps(_label_line(labelled_at="9999-12-31T00:00:00"))),
     ("row 2", "field 'labelled_at'", "1970")),
    ("deepeval: a metricsData entry without name", TOOLS, "test_run_20261102_020000.json",
     lambda _: deepeval_run(_drop_name), ("row 2", "field 'testCases.metricsData[1].name'", "missing")),
    ("mlflow: an assessment value that is an integer", TOOLS, "mlflow.db", lambda t: _mlflow_bytes(t, value=1),
     ("row 2", "field 'retrieval_groundedness'", "JSON text")),
    ("mlflow: inputs that are an integer", TOOLS, "mlflow.db", lambda t: _mlflow_bytes(t, inputs=5),
     ("row 2", "field 'inputs'", "JSON text")),
    ("mlflow: start_time 1e300", TOOLS, "mlflow.db", lambda t: _mlflow_bytes(t, start_time=1e300),
     ("field 'start_time'", "1970")),
    ("mlflow: start_time 9e18", TOOLS, "mlflow.db", lambda t: _mlflow_bytes(t, start_time=9e18),
     ("field 'start_time'", "1970")),
    ("mlflow: start_time as text", TOOLS, "mlflow.db", lambda t: _mlflow_bytes(t, start_time="yesterday"),
     ("field 'start_time'", "milliseconds")),
]
DOORS = {LABELS: ("labels import",), TOOLS: ("import", "Import page")}
MATRIX = [(case, door, *rest) for case, doors, *rest in CASES for door in DOORS[doors]]


@pytest.fixture
def labelled_db(fresh_db: Path) -> Path:
    """A database whose run holds samples s00 and s01 (two claims each), for the labels door."""
    items = [EvalSample(f"s{i:02d}", f.question, f"{f.fact1} {f.fact2}", (f"{f.fact1} {f.filler}",),
                        f"{f.fact1} {f.fact2}") for i, f in enumerate(facts(2))]
    with Store(fresh_db) as store:
        record(store, "r1", items, "faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)
    return fresh_db


@pytest.mark.parametrize(("case", "door", "name", "build", "names"), MATRIX, ids=[f"{m[1]}: {m[0]}" for m in MATRIX])
def test_a_bad_file_is_one_line_naming_file_row_and_field_at_every_door(
        labelled_db: Path, tmp_path: Path, case: str, door: str, name: str, build: Build,
        names: tuple[str, ...]) -> None:
    data = build(tmp_path)
    if door == "Import page":
        fmt = "mlflow" if name.endswith(".db") else "deepeval"
        with pytest.raises(InputError) as refused:   # any other exception is the page's traceback
            prepare_tool_upload(name, data, fmt=fmt, run_id="bad", version="1")
        line = str(refused.value)
        assert line.startswith(name) and "evaldrift-upload-" not in line, line   # the upload's name, no server path
    else:
        path = tmp_path / name
        path.write_bytes(data)
        args = ("labels", "import", "--db", labelled_db, path) if door == "labels import" else \
            ("import", "--db", labelled_db, path, "--run-id", "bad", "--tool-version", "1")
        line = assert_usage_error(cli(*args))
        assert str(path) in line or f"error: {name}" in line, line
    for part in names:
        assert part in line, (part, line)
    assert len(line) < 1_000, len(line)
    with Store(labelled_db) as store:   # nothing half-written
        assert store.label_history("main").empty and store.run_ids() == ["r1"]


def test_the_good_versions_of_the_built_files_go_in(labelled_db: Path, tmp_path: Path) -> None:
    """The table's files differ from good ones only where each case says (else a refusal proves nothing)."""
    (tmp_path / "good.jsonl").write_bytes(_labels_jsonl(json.dumps(_label_line())))
    # a cell over 131,072 characters (where Python's csv module stops) and under the field limit is a note
    (tmp_path / "good.csv").write_text(CSV_HEAD + "s01,faithfulness,1,yes,ana," + "x" * 140_000 + "\n")
    for name in ("good.jsonl", "good.csv"):
        proc = cli("labels", "import", "--db", labelled_db, tmp_path / name)
        assert proc.returncode == 0, proc.stderr
    (tmp_path / "test_run_20261102_020000.json").write_bytes(deepeval_run())
    mlflow_store(tmp_path / "mlflow.db")
    for run_id, name in (("de", "test_run_20261102_020000.json"), ("ml", "mlflow.db")):
        proc = cli("import", "--db", labelled_db, tmp_path / name, "--run-id", run_id, "--tool-version", "1")
        assert proc.returncode == 0, proc.stderr
    with Store(labelled_db) as store:
        assert set(store.run_ids()) == {"r1", "de", "ml"} and len(store.label_history("main")) == 4
        assert len(store.label_history("main")["note"].iloc[-1]) == 140_000


# -- a FIFO is refused before it is opened ------------------------------------------------------------------------
@pytest.mark.parametrize("args", [("import", "--run-id", "x"), ("import", "--run-id", "x", "--format", "mlflow"),
                                  ("labels", "import"), ("ingest", "--run-id", "x"), ("record",)],
                         ids=lambda a: " ".join(a))
def test_a_fifo_is_refused_before_it_is_opened(labelled_db: Path, tmp_path: Path, args: tuple[str, ...]) -> None:
    fifo = tmp_path / ("pipe.db" if "mlflow" in args else "pipe.json" if args[0] == "import" else "pipe.jsonl")
    os.mkfifo(fifo)
    command = [*args[:1], *(args[1:2] if args[0] == "labels" else ()), "--db", labelled_db, fifo,
               *(args[1:] if args[0] != "labels" else ())]
    done: list = []
    worker = threading.Thread(target=lambda: done.append(cli(*command)), daemon=True)
    worker.start()
    worker.join(20)
    if worker.is_alive():   # blocked in open(): a writer end lets it go, so the test fails instead of hanging
        with open(fifo, "wb"):
            pass
        worker.join(20)
        pytest.fail("the command blocked opening a FIFO")
    line = assert_usage_error(done[0])
    assert "not a regular file" in line and fifo.name in line, line


# -- an echoed value is cut ---------------------------------------------------------------------------------------
def test_a_two_million_character_name_is_echoed_cut(labelled_db: Path, tmp_path: Path) -> None:
    from lib.intake.runjson import run_to_json
    from tests.test_validate import good_run

    doc = json.loads(run_to_json(good_run("long")))
    doc["metrics"][0]["metric"] = "m" * 2_000_000
    (tmp_path / "long.run.json").write_text(json.dumps(doc))
    line = assert_usage_error(cli("record", "--db", labelled_db, tmp_path / "long.run.json"))
    assert "unknown metric" in line and len(line.encode()) < 1_000, len(line.encode())
    (tmp_path / "long.jsonl").write_bytes(_labels_jsonl(json.dumps(_label_line(metric="f" * 2_000_000))))
    line = assert_usage_error(cli("labels", "import", "--db", labelled_db, tmp_path / "long.jsonl"))
    assert "row 2" in line and "field 'metric'" in line and len(line.encode()) < 1_000, len(line.encode())


# -- the Import page: a refusal is a sentence without server paths, names from the file are text ------------------
LINK = "[grader](http://evil.example/x)"
IMAGE = "![pixel](http://evil.example/p.png)"


def _markdown_graders(cases: list[dict]) -> None:
    cases[0]["metricsData"][0]["evaluationModel"] = LINK
    cases[1]["metricsData"][0]["evaluationModel"] = IMAGE


def test_the_import_page_escapes_names_from_the_file_and_refuses_without_a_traceback(
        fresh_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.testing.v1 import AppTest

    from tests.support.browser import ROOT

    Store(fresh_db).close()
    monkeypatch.setenv("EVALDRIFT_DB", str(fresh_db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/import.py")
    at.run()
    at.file_uploader(key="imp_file").upload("test_run_20261102_020000.json", deepeval_run(_markdown_graders)).run()
    assert not at.exception, [e.value for e in at.exception]
    warnings = [w.value for w in at.warning]
    graders = [w for w in warnings if "graders" in w]
    assert graders, warnings
    for shown in warnings:   # Markdown: a link or an image from the file must reach the reader as its text
        assert re.search(r"(?<!\\)\[", shown) is None, shown   # every [ escaped: no link, no image opens
    assert "\\[grader\\]" in graders[0] and "\\[pixel\\]" in graders[0], graders[0]

    at.file_uploader(key="imp_file").upload("mlflow.db", _mlflow_bytes(tmp_path, start_time=9e18)).run()
    at.selectbox(key="imp_format").set_value("mlflow").run()   # (the choice made for the last upload is kept)
    assert not at.exception, [e.value for e in at.exception]   # was: OverflowError/ValueError with server paths
    said = " ".join(t.value for t in at.text)
    assert "mlflow.db, field 'start_time'" in said and "evaldrift-upload-" not in said, said
