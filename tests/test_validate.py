"""One validation at every door: ingest, record, the Python API and the inbox drain refuse the same bad input.

Each bad input is one row per door. A refusal is exit 2 (or InputError) with
a message naming file, row and field, and nothing is written: no run in the
database, no file handed over. With the database held by another process,
`record` and `ingest` refuse before handing over, with the same message.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest

from lib.cli import parser as cli
from lib.core.errors import InputError
from lib.core.records import MAIN, MetricRecord, RunRecord
from lib.core.results import OK, SampleResult
from lib.core.samples import EvalSample
from lib.intake import inbox
from lib.intake.runjson import run_to_json
from lib.store import Store

ROOT = Path(__file__).resolve().parent.parent
DEEP = 100_000
LONG = "a" * 1_000_001   # one character over the default EVALDRIFT_MAX_FIELD_CHARS
OVER = ("over the limit of 1,000,000", "EVALDRIFT_MAX_FIELD_CHARS")


def good_run(run_id: str = "r1") -> RunRecord:
    samples = [EvalSample("s1", "What is the capital?", "Paris.", ("Paris is the capital.",), "Paris"),
               EvalSample("s2", "Largest planet?", "Jupiter.", ("Jupiter is largest.",), "Jupiter")]
    results = [SampleResult("s1", OK, 1.0), SampleResult("s2", OK, 0.5)]
    return RunRecord(run_id, datetime(2026, 10, 1, 2, 0), {"retriever": {"top_k": 3}}, {MAIN: samples},
                     [MetricRecord("faithfulness", results, "judge-x", "Claims: {answer}\nContext: {contexts}",
                                   "projected")])


# -- the run hand-over file (record, drain) ------------------------------------------
def _mutated(change: Callable[[dict], None]) -> str:
    d = json.loads(run_to_json(good_run()))
    change(d)
    return json.dumps(d)


def _set(path: str, value: object) -> Callable[[dict], None]:
    def change(d: dict) -> None:
        *parents, last = path.split("/")
        node = d
        for key in parents:
            node = node[int(key)] if key.isdigit() else node[key]
        node[int(last) if last.isdigit() else last] = value
    return change


BAD_RUN_FILES: dict[str, tuple[Callable[[], str], tuple[str, ...]]] = {
    # name: (file text, what the message must name)
    "contexts given as a string": (lambda: _mutated(_set("samples/main/0/contexts", "abc")),
                                   ("row 1", "'samples.main.contexts'", "a string")),
    "pipeline not an object": (lambda: _mutated(_set("pipeline", [1, 2])), ("'pipeline'", "a list")),
    "started_at year 9999": (lambda: _mutated(_set("started_at", "9999-12-31T00:00:00")),
                             ("'started_at'", "out of range")),
    "NUL in a question": (lambda: _mutated(_set("samples/main/1/question", "a\x00b")),
                          ("row 2", "'question'", "NUL")),
    "template given as a number": (lambda: _mutated(_set("metrics/0/template", 5)),
                                   ("'metrics[1].template'", "an integer")),
    "score of 10**400": (lambda: _mutated(_set("metrics/0/results/0/score", 10**400)),
                         ("row 1", "'metrics[1].results.score'", "401 digits")),
    "key given twice": (lambda: '{"run_id": "other", ' + run_to_json(good_run())[1:], ("'run_id'", "twice")),
    "nested 100,000 deep": (lambda: run_to_json(good_run())[:-1] + ', "deep": ' + "[" * DEEP + "]" * DEEP + "}",
                            ("nested too deeply",)),
    "an answer over the field limit": (lambda: _mutated(_set("samples/main/0/answer", LONG)),
                                       ("row 1", "'answer'", "1,000,001 characters", *OVER)),
    "passages together over the field limit": (
        lambda: _mutated(_set("samples/main/1/contexts", [LONG[:600_000], LONG[:600_000]])),
        ("row 2", "'contexts'", "passages together", *OVER)),
    "a verdict's evidence over the field limit": (
        lambda: _mutated(_set("metrics/0/results/1/verdicts", [{"item": "c", "label": True, "verdict": "yes",
                                                                "evidence": LONG}])),
        ("row 2", "'verdicts[1].evidence'", *OVER)),
}


def _assert_names(message: str, source: str, expected: tuple[str, ...]) -> None:
    assert source in message, message
    for part in expected:
        assert part in message, (part, message)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def held_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A database another process holds (as the dashboard does), for the whole module."""
    path = tmp_path_factory.mktemp("held") / "held.duckdb"
    holder = subprocess.Popen([sys.executable, "-c", "import sys; from lib.store import Store; s = Store(sys.argv[1]);"
                               " print('ready', flush=True); sys.stdin.read()", str(path)],
                              cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "ready"
    yield path
    holder.stdin.close()
    holder.wait(timeout=60)


def _assert_nothing_written(db: Path) -> None:
    assert not list((db.parent / "inbox").glob("*.run.json")), "a bad run was handed over"
    if db.exists():
        with Store(db) as store:
            assert store.run_ids() == []


@pytest.mark.parametrize("name", list(BAD_RUN_FILES))
def test_record_refuses_a_bad_run_file_naming_file_row_and_field(name: str, fresh_db: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    text, expected = BAD_RUN_FILES[name]
    bad = tmp_path / "bad.run.json"
    bad.write_text(text(), encoding="utf-8")
    code, out, err = run_cli(capsys, "record", "--db", fresh_db, bad)
    assert (code, out) == (2, ""), err
    _assert_names(err, str(bad), expected)
    _assert_nothing_written(fresh_db)


@pytest.mark.parametrize("name", list(BAD_RUN_FILES))
def test_record_refuses_before_handing_over_when_the_database_is_held(
        name: str, held_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, expected = BAD_RUN_FILES[name]
    bad = tmp_path / "bad.run.json"
    bad.write_text(text(), encoding="utf-8")
    code, out, err = run_cli(capsys, "record", "--db", held_db, bad)
    assert (code, out) == (2, ""), err
    _assert_names(err, str(bad), expected)
    assert not list((held_db.parent / "inbox").glob("*.run.json"))


@pytest.mark.parametrize("name", list(BAD_RUN_FILES))
def test_drain_sets_a_bad_file_aside_with_its_reason_and_records_the_later_ones(name: str, fresh_db: Path,
                                                                                tmp_path: Path) -> None:
    text, expected = BAD_RUN_FILES[name]
    box = tmp_path / "inbox"
    box.mkdir()
    (box / "a-bad.run.json").write_text(text(), encoding="utf-8")
    (box / "b-good.run.json").write_text(run_to_json(good_run("later")), encoding="utf-8")
    with Store(fresh_db) as store:
        assert inbox.drain(store, box) == ["later"]
        assert store.run_ids() == ["later"]
    [rejection] = inbox.rejected(box)
    assert rejection.path == box / "rejected" / "a-bad.run.json" and rejection.path.is_file()
    _assert_names(rejection.reason, "a-bad.run.json", expected)
    assert not list(box.glob("*.run.json"))


# -- the Python API ----------------------------------------------------------------------
def _replace_sample(**changes: object) -> RunRecord:
    import dataclasses
    run = good_run()
    samples = [dataclasses.replace(run.samples[MAIN][0], **changes), *run.samples[MAIN][1:]]
    return dataclasses.replace(run, samples={MAIN: samples})


def _replace(**changes: object) -> RunRecord:
    import dataclasses
    return dataclasses.replace(good_run(), **changes)


def _replace_metric(**changes: object) -> RunRecord:
    import dataclasses
    run = good_run()
    return dataclasses.replace(run, metrics=[dataclasses.replace(run.metrics[0], **changes)])


BAD_API_RUNS: dict[str, tuple[Callable[[], RunRecord], tuple[str, ...]]] = {
    "contexts given as a string": (lambda: _replace_sample(contexts="abc"), ("row 1", "'contexts'", "a string")),
    "pipeline not an object": (lambda: _replace(pipeline=[1, 2]), ("'pipeline'", "a list")),
    "started_at year 9999": (lambda: _replace(started_at=datetime(9999, 12, 31)), ("'started_at'", "out of range")),
    "NUL in a passage": (lambda: _replace_sample(contexts=("ok", "a\x00b")), ("row 1", "'contexts[2]'", "NUL")),
    "template given as a number": (lambda: _replace_metric(template=5), ("'template'", "an integer")),
    "score of 10**400": (lambda: _replace_metric(results=[SampleResult("s1", OK, 10**400)]),
                         ("row 1", "'score'", "401 characters")),
    "a question over the field limit": (lambda: _replace_sample(question=LONG), ("row 1", "'question'", *OVER)),
    "a reason over the field limit": (
        lambda: _replace_metric(results=[SampleResult("s1", "failed", reason=LONG)]), ("row 1", "'reason'", *OVER)),
}


@pytest.mark.parametrize("name", list(BAD_API_RUNS))
def test_store_record_run_refuses_a_bad_run(name: str, fresh_db: Path) -> None:
    run, expected = BAD_API_RUNS[name]
    with Store(fresh_db) as store, pytest.raises(InputError) as caught:
        store.record_run(run())
    _assert_names(str(caught.value), "run 'r1'", expected)
    _assert_nothing_written(fresh_db)


@pytest.mark.parametrize("name", list(BAD_API_RUNS))
def test_inbox_record_refuses_a_bad_run_before_handing_it_over(name: str, held_db: Path) -> None:
    run, expected = BAD_API_RUNS[name]
    with pytest.raises(InputError) as caught:
        inbox.record(held_db, run())
    _assert_names(str(caught.value), "run 'r1'", expected)
    assert not list((held_db.parent / "inbox").glob("*.run.json"))


# -- ingest --------------------------------------------------------------------------------
def _row(**changes: object) -> dict[str, object]:
    return {"sample_id": "s1", "question": "Q?", "answer": "A.", "contexts": ["p"], "ground_truth": "G",
            "faithfulness": 0.5, **changes}


def _jsonl(*lines: str) -> tuple[str, str]:
    return ".jsonl", "\n".join(lines) + "\n"


GOOD_LINE = json.dumps(_row(sample_id="s0"))
BAD_INGEST: dict[str, tuple[Callable[[], tuple[str, str]], tuple[str, ...], tuple[str, ...]]] = {
    # name: (file suffix and text, extra CLI arguments, what the message must name)
    "NUL in an answer": (lambda: _jsonl(GOOD_LINE, json.dumps(_row(answer="a\x00b"))), (),
                         ("row 2", "'answer'", "NUL")),
    "a line nested 100,000 deep": (lambda: _jsonl(GOOD_LINE, '{"question": ' + "[" * DEEP + "]" * DEEP + "}"), (),
                                   ("row 2", "nested too deeply")),
    "score of 10**400": (lambda: _jsonl(json.dumps(_row(faithfulness=10**400))), (),
                         ("row 1", "'faithfulness'", "401 digits")),
    "CSV with a column named twice": (lambda: (".csv", 'question,answer,contexts,ground_truth,question\n'
                                                       'Q?,A.,"[""p""]",G,other\n'), (),
                                      ("'question'", "more than once")),
    "JSON object with a key twice": (lambda: _jsonl(GOOD_LINE, '{"sample_id": "s1", "question": "a", '
                                                    '"question": "b", "answer": "A", "contexts": [], '
                                                    '"ground_truth": "G"}'), (), ("row 2", "'question'", "twice")),
    "contexts given as a string": (lambda: _jsonl(json.dumps(_row(contexts="abc"))), (),
                                   ("row 1", "'contexts'", "a string")),
    "started_at year 9999": (lambda: _jsonl(GOOD_LINE), ("--started-at", "9999-12-31"),
                             ("'started_at'", "out of range")),
    "pipeline not an object": (lambda: _jsonl(GOOD_LINE), ("--pipeline", "[1, 2]"), ("--pipeline", "JSON object")),
    "an answer over the field limit": (lambda: _jsonl(GOOD_LINE, json.dumps(_row(answer=LONG))), (),
                                       ("row 2", "'answer'", *OVER)),
    "a CSV reference over the field limit": (lambda: (".csv", f'question,answer,contexts,ground_truth\n'
                                                               f'Q?,A.,"[""p""]",{LONG}\n'), (),
                                             ("row 1", "'ground_truth'", *OVER)),
}


def _ingest(name: str, tmp_path: Path, db: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str, Path]:
    make, extra, _ = BAD_INGEST[name]
    suffix, text = make()
    bad = tmp_path / f"bad{suffix}"
    bad.write_text(text, encoding="utf-8")
    code, out, err = run_cli(capsys, "ingest", "--db", db, bad, "--run-id", "x", *extra)
    assert (code, out) == (2, ""), err
    assert len(err.strip().splitlines()) == 1, err
    return err, str(bad) if not name.startswith("pipeline") else "", bad


@pytest.mark.parametrize("name", list(BAD_INGEST))
def test_ingest_refuses_a_bad_file_naming_file_row_and_field(name: str, fresh_db: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    err, source, _ = _ingest(name, tmp_path, fresh_db, capsys)
    _assert_names(err, source, BAD_INGEST[name][2])
    assert not fresh_db.exists()


@pytest.mark.parametrize("name", list(BAD_INGEST))
def test_ingest_refuses_before_handing_over_when_the_database_is_held(name: str, held_db: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    err, source, _ = _ingest(name, tmp_path, held_db, capsys)
    _assert_names(err, source, BAD_INGEST[name][2])
    assert not list((held_db.parent / "inbox").glob("*.run.json"))
