"""Bad input: property-based fuzzing of ingest over real JSONL, CSV and Parquet files, and bad command lines.

Each generated file is a handful of valid rows with at most one corruption
from tests/reliability_cases.py BAD_INPUTS, written in one format. The test
knows which row and field the corruption sits in, so it can demand exactly
that of the error: an InputError whose .row and .field name it (or no row,
for a file-level problem), a non-empty message, and a database unchanged to
the row. A valid file must be stored whole and read back verbatim.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lib.core.errors import InputError
from lib.core.metrics import get_metric
from lib.core.records import MAIN, MetricRecord, RunRecord
from lib.core.results import FAILED, OK
from lib.core.samples import EvalSample
from lib.intake.chunked import ingest_file
from lib.intake.ingest import NO_SCORE
from lib.store import Store
from tests.reliability_cases import BAD_INPUTS, CLI_CASES, README, UPDATE_COMMAND, CliCase, readme_with_section
from tests.support.cli import run_cli
from tests.support.reliability_support import child_env, copy_db, mini_demo

FORMATS = ("jsonl", "csv", "parquet")
TEXTS = ("question", "answer", "ground_truth")
METRICS = ("faithfulness", "context_recall")
# the fields a file of these metrics must give a column for: the answer always, and what each metric receives
# (the wiring table); a column none of them receives (the question, here) may be left out of the file
NEEDED = {"answer"} | {f for m in METRICS for f in get_metric(m).receives}
KINDS = {b.id: b for b in BAD_INPUTS}
EXAMPLES = int(os.environ.get("EVALDRIFT_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large, HealthCheck.large_base_example])

UNUSUAL = ("👩‍👩‍👧‍👦 family", "مرحبا بالعالم", "שלום עולם", "e\u0301\u0301 combining", "zero\u200bwidth",
           "line\u2028separator", "para\u2029separator", "\ufeffbom first", "tab\there", "new\nline", "cr\rreturn",
           "crlf\r\nboth", '"quoted", with commas', "NaN", "None", "null", "NA", "1e999", "[not a list",
           "\U0001f600" * 10, "Ω≈ç√∫", "𝕳𝖊𝖑𝖑𝖔", "\x7f del \x1b esc \x0b vt \x0c ff", "  padded  ")
HUGE = "huge " * 40_000   # 200,000 characters


class Bare:
    """A bare JSON token (NaN, Infinity, -Infinity), written unquoted into a JSONL line."""

    def __init__(self, token: str) -> None:
        self.token = token


class Absent:
    """The key is left out of this JSONL object."""


ABSENT = Absent()


@dataclass
class Case:
    """One generated file: rows of cells, the column names, and what ingest must do."""

    fmt: str
    kind: str
    rows: list[dict[str, object]]
    names: dict[str, str]                       # canonical field -> column name as written
    want_index: int | None = None               # 0-based index of the row the error must name (None: file level)
    want_field: str | None = None               # expected error field (column as written)
    valid: bool = True
    raw: bytes | None = None                    # write these bytes instead of the rows
    raw_lines: dict[int, bytes] = field(default_factory=dict)   # JSONL: row index -> raw line
    blank_before: dict[int, int] = field(default_factory=dict)  # JSONL: row index -> blank lines before it
    types: dict[str, pa.DataType] = field(default_factory=dict)  # Parquet: column -> type override
    ascii_json: bool = False
    crlf: bool = False

    @property
    def want_row(self) -> int | None:
        """The row number the error must carry: the line number for JSONL, the n-th record otherwise."""
        if self.want_index is None:
            return None
        if self.fmt == "jsonl":
            return self.want_index + 1 + sum(self.blank_before.get(k, 0) for k in range(self.want_index + 1))
        return self.want_index + 1

    def fail(self, row: int | None, canon: str | None) -> None:
        self.valid = False
        self.want_index = None if row is None else row - 1
        self.want_field = self.names.get(canon, canon) if canon else None


# -- generating -------------------------------------------------------------------------------------
# st.text()'s own alphabet (every character UTF-8 can encode: all but the surrogates, category Cs) by category: its
# default, characters(codec="utf-8"), also tries chr(i).encode for each of the 1.1 million code points (1.1 CPU s a
# test process) unless the table it writes under .hypothesis/ is there already, which a fresh clone lacks
ANY_CHARACTER = st.characters(exclude_categories=("Cs",))
plain_text = st.text(alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1,
                     max_size=24)
texts = st.one_of(plain_text, plain_text, st.sampled_from(UNUSUAL))
scores = st.one_of(st.none(), st.floats(0.0, 1.0), st.sampled_from([0.0, 1.0, 0.5]))


@st.composite
def base_rows(draw: st.DrawFn, fmt: str) -> tuple[list[dict[str, object]], dict[str, str]]:
    n = draw(st.integers(1, 6))
    ragas = draw(st.booleans())
    names = {"sample_id": "id" if ragas and draw(st.booleans()) else "sample_id",
             "question": "user_input" if ragas else "question", "answer": "response" if ragas else "answer",
             "contexts": "retrieved_contexts" if ragas else "contexts",
             "ground_truth": "reference" if ragas else "ground_truth",
             "faithfulness": "faithfulness", "context_recall": "context_recall"}
    rows = []
    for i in range(n):
        rows.append({"sample_id": f"s{i}", "question": draw(texts), "answer": draw(texts),
                     "contexts": draw(st.lists(texts, max_size=3)), "ground_truth": draw(texts),
                     "faithfulness": draw(scores), "context_recall": draw(scores)})
    return rows, names


def kinds_for(fmt: str) -> list[str]:
    return [b.id for b in BAD_INPUTS if fmt in b.formats and b.id != "random-bytes"]


@st.composite
def cases(draw: st.DrawFn, fmt: str, kind: str | None = None) -> Case:
    rows, names = draw(base_rows(fmt))
    if kind is None:
        kind = draw(st.sampled_from(["valid", *kinds_for(fmt)]))
    case = Case(fmt, kind, rows, names, ascii_json=draw(st.booleans()), crlf=draw(st.booleans()))
    if fmt == "jsonl" and draw(st.booleans()):
        case.blank_before = {i: draw(st.integers(0, 2)) for i in range(len(rows))}
    if kind != "valid":
        corrupt(draw, case)
    return case


def corrupt(draw: st.DrawFn, case: Case) -> None:
    fmt, rows, kind = case.fmt, case.rows, case.kind
    i = draw(st.integers(0, len(rows) - 1))
    r = i + 1
    text_field = draw(st.sampled_from(TEXTS))
    metric = draw(st.sampled_from(METRICS))
    if kind == "malformed-line":
        case.raw_lines[i] = draw(st.sampled_from([b'{"question": "a",', b"not json", b'{"a": 1}}', b"{'a': 1}",
                                                  b'{"a": tru}', b'{"a": "unterminated}']))
        case.fail(r, None)
    elif kind == "not-an-object":
        case.raw_lines[i] = draw(st.sampled_from([b"[1, 2]", b"3", b'"text"', b"null", b"[]"]))
        case.fail(r, None)
    elif kind == "invalid-utf8":
        if fmt == "jsonl":
            case.raw_lines[i] = b'{"question": "caf\xe9 \xff"}'
            case.fail(r, None)
        else:
            rows[i][text_field] = "\udcff"  # written with surrogateescape: the byte 0xff
            case.fail(r, text_field)
    elif kind == "wrong-type-text":
        target = draw(st.sampled_from([*TEXTS, "contexts", "sample_id"]))
        if fmt == "jsonl":
            bad = {"contexts": [42, {"p": 1}, True], "sample_id": [1.5, True, ["s"], {"id": 1}]}.get(
                target, [42, 3.5, True, ["a"], {"a": 1}])
            rows[i][target] = draw(st.sampled_from(bad))
            case.fail(r, target)
        else:  # a Parquet column has one type: the whole column is wrong, so row 1 is the first bad cell
            typ = pa.float64() if target == "sample_id" else pa.int64()
            for k, row in enumerate(rows):
                row[target] = float(k) + 0.5 if target == "sample_id" else k
            case.types[target] = typ
            case.fail(1, target)
    elif kind == "bare-nan-text":
        rows[i][text_field] = Bare(draw(st.sampled_from(["NaN", "Infinity", "-Infinity"])))
        case.fail(r, text_field)
    elif kind == "nan-score":
        if fmt == "jsonl":
            rows[i][metric] = Bare("NaN")
            case.fail(r, metric)
        elif fmt == "csv":
            rows[i][metric] = draw(st.sampled_from(["nan", "NaN", "-nan"]))
            case.fail(r, metric)
        else:
            rows[i][metric] = math.nan  # Ragas writes NaN for a metric it could not compute: not scored
    elif kind == "inf-score":
        if fmt == "jsonl":
            rows[i][metric] = draw(st.sampled_from([Bare("Infinity"), Bare("-Infinity"), Bare("1e999")]))
        elif fmt == "csv":
            rows[i][metric] = draw(st.sampled_from(["inf", "Infinity", "-inf", "1e999"]))
        else:
            rows[i][metric] = draw(st.sampled_from([math.inf, -math.inf]))
        case.fail(r, metric)
    elif kind == "out-of-range-score":
        rows[i][metric] = draw(st.one_of(st.floats(1.0, 1e300, exclude_min=True),
                                         st.floats(-1e300, 0.0, exclude_max=True),
                                         st.sampled_from([2, -1, 1.0000001, 100])))
        case.fail(r, metric)
    elif kind == "non-numeric-score":
        rows[i][metric] = draw(st.sampled_from(["high", "true", "0,5", "½"] if fmt == "csv"
                                               else ["high", True, False, [0.5], {"v": 1}, "0,5"]))
        case.fail(r, metric)
    elif kind == "missing-text":
        target = draw(st.sampled_from([*TEXTS, "contexts"]))
        rows[i][target] = draw(st.sampled_from([None, ABSENT])) if fmt == "jsonl" else None
        if len(rows) == 1 and rows[i][target] is ABSENT:
            if target in NEEDED:          # absent from every row: the column itself is missing,
                case.fail(None, target)   # named canonically (no column spells it)
                case.want_field = target
        else:
            case.fail(r, target)
    elif kind == "empty-text":
        rows[i][text_field] = ""
        if fmt == "csv":
            case.fail(r, text_field)  # an empty CSV cell is CSV's only missing value
    elif kind == "huge-text":
        rows[i][text_field] = HUGE
    elif kind == "unusual-unicode":
        rows[i][text_field] = draw(st.sampled_from(UNUSUAL))
        rows[i]["contexts"] = [draw(st.sampled_from(UNUSUAL)), *rows[i]["contexts"]]  # type: ignore[misc]
    elif kind == "nul-char":
        target = draw(st.sampled_from([*TEXTS, "contexts"]))
        if target == "contexts":
            rows[i]["contexts"] = ["before\x00after"]
        else:
            rows[i][target] = "before\x00after"
        case.fail(r, target)
    elif kind == "lone-surrogate":
        target = draw(st.sampled_from([*TEXTS, "contexts"]))
        rows[i][target] = ["ok", "\ud800 alone"] if target == "contexts" else "caf\udc80"
        case.ascii_json = True  # written as a \\uXXXX escape (raw, it would not even be UTF-8)
        case.fail(r, target)
    elif kind == "duplicate-id":
        if len(rows) == 1:
            rows.append(dict(rows[0]))
        j = draw(st.integers(1, len(rows) - 1))
        k = draw(st.integers(0, j - 1))
        if fmt == "jsonl" and draw(st.booleans()):
            rows[k]["sample_id"], rows[j]["sample_id"] = 7, "7"  # an integer id is read as text
        else:
            rows[j]["sample_id"] = rows[k]["sample_id"]
        case.fail(j + 1, "sample_id")
    elif kind == "empty-id":
        rows[i]["sample_id"] = draw(st.sampled_from(["", "   "]))
        case.fail(r, "sample_id")
    elif kind == "missing-column":
        # a field the file's scores (faithfulness, context_recall) receive, or the answer; the question, which
        # neither receives, may be left out (tests/test_optional_fields.py)
        target = draw(st.sampled_from(["answer", "ground_truth", "contexts"]))
        for row in rows:
            row[target] = ABSENT
        case.fail(None, target)
        case.want_field = target  # canonical name: no column spells it
    elif kind == "alias-clash":
        canon = draw(st.sampled_from(["question", "answer", "ground_truth"]))
        alias = {"question": "user_input", "answer": "response", "ground_truth": "reference"}[canon]
        case.names[canon] = canon
        for row in rows:
            row[f"alias:{alias}"] = row[canon]
        case.fail(None, None)
        case.want_field = alias
    elif kind == "contexts-string":
        bad = draw(st.sampled_from(["a single passage", "", "[unclosed", "[1, 2]", '["ok", null]']))
        if fmt == "csv" and bad == "":
            bad = "a single passage"  # an empty CSV cell is a missing value: tested as missing-text
        rows[i]["contexts"] = bad
        if fmt == "parquet":
            _contexts_as_strings(case)
        case.fail(r, "contexts")
    elif kind == "contexts-json-string":
        rows[i]["contexts"] = json.dumps(rows[i]["contexts"], ensure_ascii=draw(st.booleans()))
        if fmt == "parquet":
            _contexts_as_strings(case)
    elif kind == "contexts-bad-passage":
        rows[i]["contexts"] = ["fine", None] if fmt == "parquet" else ["fine", draw(st.sampled_from([3, None, 1.5,
                                                                                                  ["nested"]]))]
        case.fail(r, "contexts")
    elif kind == "no-rows":
        if fmt == "jsonl":
            case.raw = draw(st.sampled_from([b"", b"\n\n", b"   \n"]))
            case.fail(None, None)
            case.want_field = "any"
        else:
            case.rows = []
            case.fail(None, None)
    else:
        raise AssertionError(kind)


def _contexts_as_strings(case: Case) -> None:
    for row in case.rows:
        if not isinstance(row["contexts"], str):
            row["contexts"] = json.dumps(row["contexts"], ensure_ascii=False)
    case.types["contexts"] = pa.string()


# -- writing --------------------------------------------------------------------------------------
def _columns(case: Case) -> list[str]:
    cols: list[str] = []
    for row in case.rows:
        for k in row:
            if k not in cols:
                cols.append(k)
    if not cols:
        cols = list(case.names)[:7]
    return cols


def _present_columns(case: Case) -> list[str]:
    """The columns a CSV or Parquet file has: those not absent from every row (all of them for no rows)."""
    cols = _columns(case)
    if not case.rows:
        return cols
    return [c for c in cols if not all(row.get(c) is ABSENT for row in case.rows)]


def _name(case: Case, key: str) -> str:
    return key.split(":", 1)[1] if key.startswith("alias:") else case.names.get(key, key)


def _json_value(v: object, ascii_only: bool) -> str:
    if isinstance(v, Bare):
        return v.token
    return json.dumps(v, ensure_ascii=ascii_only)


def write_case(case: Case, path: Path) -> Path:
    if case.raw is not None:
        path.write_bytes(case.raw)
        return path
    if case.fmt == "jsonl":
        out = bytearray()
        for i, row in enumerate(case.rows):
            out += b"\n" * case.blank_before.get(i, 0)
            if i in case.raw_lines:
                out += case.raw_lines[i] + b"\n"
                continue
            body = ", ".join(f"{json.dumps(_name(case, k))}: {_json_value(v, case.ascii_json)}"
                             for k, v in row.items() if v is not ABSENT)
            out += ("{" + body + "}").encode("utf-8") + (b"\r\n" if case.crlf else b"\n")
        path.write_bytes(bytes(out))
    elif case.fmt == "csv":
        cols = _present_columns(case)
        buf = io.StringIO(newline="")
        # With "\n" line ends, the csv module would leave a lone "\r" unquoted, which every reader
        # (pandas, Python's csv) takes for a line end: such a file is broken, so quote every cell then.
        w = csv.writer(buf, lineterminator="\r\n" if case.crlf else "\n",
                       quoting=csv.QUOTE_MINIMAL if case.crlf else csv.QUOTE_ALL)
        w.writerow([_name(case, c) for c in cols])
        for row in case.rows:
            cells = []
            for c in cols:
                v = row.get(c)
                if v is None or v is ABSENT:
                    cells.append("")
                elif isinstance(v, list):
                    cells.append(json.dumps(v, ensure_ascii=False))
                elif isinstance(v, float):
                    cells.append(repr(v))
                else:
                    cells.append(str(v))
            w.writerow(cells)
        path.write_bytes(buf.getvalue().encode("utf-8", "surrogateescape"))
    else:
        cols = _present_columns(case)
        default = {"contexts": pa.list_(pa.string()), "faithfulness": pa.float64(), "context_recall": pa.float64()}
        arrays, names = [], []
        for c in cols:
            typ = case.types.get(c, default.get(c, pa.string()))
            arrays.append(pa.array([row.get(c) for row in case.rows], type=typ))
            names.append(_name(case, c))
        pq.write_table(pa.Table.from_arrays(arrays, names=names), path)
    return path


# -- checking -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    """One database for every example, holding one earlier run that must never change."""
    path = tmp_path_factory.mktemp("fuzz") / "fuzz.duckdb"
    with Store(path) as s:
        sample = EvalSample("keep-1", "q?", "a.", ("p.",), "g.")
        from lib.core.results import SampleResult

        s.record_run(RunRecord("earlier-run", datetime(2026, 1, 1), {"k": 1}, {MAIN: [sample]},
                               [MetricRecord("faithfulness", [SampleResult("keep-1", OK, 0.5)], "m", None, None)]))
        yield s


def _expected_samples(case: Case) -> dict[str, EvalSample]:
    out = {}
    for row in case.rows:
        ctx = row["contexts"]
        if isinstance(ctx, str):
            ctx = json.loads(ctx)
        sid = row["sample_id"]
        # a column left out of the whole file (one no metric receives) is stored as empty text
        text = {k: "" if row[k] is ABSENT else row[k] for k in TEXTS}
        out[str(sid)] = EvalSample(str(sid), text["question"], text["answer"], tuple(ctx),  # type: ignore[arg-type]
                                   text["ground_truth"])  # type: ignore[arg-type]
    return out


def _expected_score(v: object) -> float | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return float(v)  # type: ignore[arg-type]


def check(store: Store, case: Case, tmp: Path, n: int) -> None:
    path = write_case(case, tmp / f"case-{n}.{case.fmt}")
    before = store.counts()
    run_id = f"fuzz-{n}"
    try:
        ingest_file(store, path, run_id=run_id)
    except InputError as exc:
        assert store.counts() == before, "a failed ingest changed the database"
        assert not case.valid, f"{case.kind}: a valid file was refused: {exc}"
        assert str(exc).strip() and exc.reason.strip()
        assert exc.source == str(path)
        assert exc.row == case.want_row, f"{case.kind}: row {exc.row} != expected {case.want_row}: {exc}"
        if case.want_field != "any":
            assert exc.field == case.want_field, \
                f"{case.kind}: field {exc.field!r} != expected {case.want_field!r}: {exc}"
        if exc.row is not None:
            assert f"row {exc.row}" in str(exc)
        if exc.field is not None:
            assert repr(exc.field) in str(exc)
        return
    assert case.valid, f"{case.kind}: accepted, expected an error at row {case.want_row}, field {case.want_field!r}"
    try:
        expected = _expected_samples(case)
        got = {s.sample_id: s for s in store.samples(run_id)}
        assert got == expected, f"{case.kind}: the stored samples differ from the file"
        scores = store.sample_scores(run_id)
        assert len(scores) == len(case.rows) * len(METRICS)  # rows lost: 0
        by_key = {(r.metric, r.sample_id): r for r in scores.itertuples(index=False)}
        for row in case.rows:
            for m in METRICS:
                want = _expected_score(row[m])
                r = by_key[(m, str(row["sample_id"]))]
                if want is None:
                    assert (r.status, r.reason) == (FAILED, NO_SCORE) and math.isnan(r.score)
                else:
                    assert r.status == OK and r.score == want
        assert store.counts()["runs"] == before["runs"] + 1
    finally:
        store.delete_run(run_id)


_counter = iter(range(10**9))


@pytest.mark.parametrize("fmt", FORMATS)
@FUZZ
@given(data=st.data())
def test_fuzzed_files_are_ingested_whole_or_refused_naming_row_and_field(store: Store, tmp_path: Path, fmt: str,
                                                                       data: st.DataObject) -> None:
    check(store, data.draw(cases(fmt)), tmp_path, next(_counter))


KIND_FORMATS = [(b.id, f) for b in BAD_INPUTS if b.id != "random-bytes" for f in b.formats]


@pytest.mark.parametrize(("kind", "fmt"), KIND_FORMATS, ids=[f"{k}-{f}" for k, f in KIND_FORMATS])
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_bad_input_kind_is_tried_in_every_format_it_can_be_written_in(
        store: Store, tmp_path: Path, kind: str, fmt: str, data: st.DataObject) -> None:
    check(store, data.draw(cases(fmt, kind)), tmp_path, next(_counter))


@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(blob=st.one_of(st.binary(max_size=400),
                     st.text(ANY_CHARACTER, max_size=300).map(lambda t: t.encode("utf-8", "replace"))))
def test_random_bytes_are_an_input_error_or_a_clean_ingest_nothing_else(store: Store, tmp_path: Path, fmt: str,
                                                                      blob: bytes) -> None:
    path = tmp_path / f"blob-{next(_counter)}.{fmt}"
    path.write_bytes(blob)
    before = store.counts()
    try:
        run = ingest_file(store, path, run_id="blob-run")
    except InputError as exc:
        assert str(exc).strip()
        assert store.counts() == before
    else:
        assert len(store.samples("blob-run")) == run.n_samples
        store.delete_run("blob-run")


# -- bad command lines ----------------------------------------------------------------------------
@dataclass(frozen=True)
class CliResult:
    code: int
    stdout: str
    stderr: str


@pytest.fixture(scope="module")
def cli_results(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, CliResult], dict[str, object]]:
    """Every CLI case run through `lib.cli.parser.main` as `python -m lib` runs it (tests/support/cli.py)."""
    tmp = tmp_path_factory.mktemp("cli")
    db = copy_db(mini_demo(), tmp / "demo.duckdb")
    good = tmp / "good.jsonl"
    good.write_text(json.dumps({"question": "q?", "answer": "a.", "contexts": ["p."], "ground_truth": "g."}) + "\n"
                    + json.dumps({"question": "q2?", "answer": "b.", "contexts": [], "ground_truth": "h."}) + "\n",
                    encoding="utf-8")
    bad = tmp / "bad.jsonl"
    bad.write_text(good.read_text(encoding="utf-8").splitlines()[0] + "\n"
                   + json.dumps({"question": None, "answer": "b.", "contexts": [], "ground_truth": "h."}) + "\n",
                   encoding="utf-8")
    badcsv = tmp / "bad.csv"
    badcsv.write_text('question,answer,contexts,ground_truth,faithfulness\nq,a,"[]",g,0.5\nq,a,"[]",g,1\n'
                      'q,a,"[]",g,1.5\n', encoding="utf-8")
    notrun = tmp / "not.run.json"
    notrun.write_text('{"hello": 1}', encoding="utf-8")
    tpl = tmp / "template.txt"
    tpl.write_text("Judge {answer} against {vibes}.", encoding="utf-8")
    places = {"db": str(db), "new": str(tmp / "never-created.duckdb"), "good": str(good), "bad": str(bad),
              "badcsv": str(badcsv), "notrun": str(notrun), "tpl": str(tpl), "dir": str(tmp),
              "out": str(tmp / "report.md")}
    with Store(db) as s:
        counts = s.counts()
    copies = []

    def run(case: CliCase) -> tuple[str, CliResult]:
        own = dict(places)
        if any("{db}" in a for a in case.args):  # each its own copy: two at once would find it held
            own["db"] = str(copy_db(db, tmp / f"{case.id}.duckdb"))
            copies.append(Path(own["db"]))
        args = [a.format(**own) for a in case.args]
        # in this process (tests/support/cli.py): what a bad command line prints and returns is decided by
        # lib.cli.parser.main; an exception escaping it would fail the test here as a traceback would in a real process
        proc = run_cli(*args, env=child_env())
        return case.id, CliResult(proc.returncode, proc.stdout, proc.stderr)

    results = dict(map(run, CLI_CASES))   # one at a time: run_cli swaps this process's stdout and environment
    return results, {"dbs": [db, *copies], "counts": counts, "new": Path(places["new"])}


@pytest.mark.parametrize("case", CLI_CASES, ids=[c.id for c in CLI_CASES])
def test_a_bad_command_line_exits_2_with_one_clear_line_and_no_traceback(cli_results, case: CliCase) -> None:
    results, _ = cli_results
    r = results[case.id]
    assert r.code == 2, (r.code, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert re.search(case.message, lines[0], re.I), lines[0]
    assert r.stdout == ""


def test_bad_command_lines_change_no_database(cli_results) -> None:
    _, ctx = cli_results
    for db in ctx["dbs"]:
        with Store(db) as s:
            assert s.counts() == ctx["counts"], db.name
    assert not ctx["new"].exists()


# -- the README table -----------------------------------------------------------------------------
def test_readme_reliability_section_is_generated_from_the_cases() -> None:
    text = README.read_text(encoding="utf-8")
    assert readme_with_section(text) == text, f"tests/README.md's reliability section is stale: run `{UPDATE_COMMAND}`"
