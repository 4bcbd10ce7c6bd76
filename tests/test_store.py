"""The DuckDB run store: idempotent, all-or-nothing writes, schema, reopening, one owning process."""

from __future__ import annotations

import dataclasses
import gzip
import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

from lib.core.errors import InputError, NotFoundError, StoreError
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED, prompt_hash
from lib.core.records import CANARY, MAIN, MetricRecord, RunRecord
from lib.core.results import EXCLUDED, FAILED, OK, SampleResult, Verdict
from lib.core.samples import EvalSample
from lib.jobs import job_log
from lib.store import SCHEMA_VERSION, Store
from lib.store import batches as bs
from lib.store import history as hs

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = DEFAULT_TEMPLATES["faithfulness"]

SAMPLES = [
    EvalSample("s-1", "How long are backups kept?", "Backups are kept for 30 days.",
               ("Backups are kept for 30 days.", "Exports run nightly."), "Backups are kept for 30 days."),
    EvalSample("s-2", "When do exports run?", "Exports run at 02:00 UTC. They are encrypted.",
               ("Exports run at 02:00 UTC.",), "Exports run at 02:00 UTC."),
    EvalSample("s-3", "What does it cost?", "", (), "It costs 5 dollars per seat."),
]
RESULTS = [
    SampleResult("s-1", OK, 1.0, (Verdict("Backups are kept for 30 days.", True, "supported",
                                          "Backups are kept for 30 days."),)),
    SampleResult("s-2", OK, 0.5, (Verdict("Exports run at 02:00 UTC.", True, "supported", "Exports run at 02:00 UTC."),
                                  Verdict("They are encrypted.", False, "unsupported", ""))),
    SampleResult("s-3", EXCLUDED, reason="no claims to judge: answer is empty"),
]


def make_run(run_id: str = "nightly-1", *, day: int = 1, samples: list[EvalSample] | None = None,
             results: list[SampleResult] | None = None, metric: str = "faithfulness") -> RunRecord:
    return RunRecord(
        run_id=run_id,
        started_at=datetime(2026, 9, day, 2, 0),
        pipeline={"retriever": {"top_k": 3}},
        samples={MAIN: SAMPLES if samples is None else samples},
        metrics=[MetricRecord(metric, RESULTS if results is None else results, "offline-lexical-v2", TEMPLATE,
                              PROJECTED, MAIN, "fp-1")],
        label="first",
    )


def test_recorded_run_reads_back_with_its_instrument_and_aggregate(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        store.record_run(make_run())
        assert store.run_ids() == ["nightly-1"]
        assert store.run("nightly-1").pipeline == {"retriever": {"top_k": 3}}
        assert store.samples("nightly-1") == SAMPLES
        row = store.run_metrics("nightly-1").iloc[0]
        # two scored samples (1.0 and 0.5), one excluded
        assert row["score"] == pytest.approx(0.75)
        assert (row["n"], row["n_failed"], row["n_excluded"]) == (2, 0, 1)
        assert (row["judge_model"], row["prompt_hash"], row["binding"]) == (
            "offline-lexical-v2", prompt_hash(TEMPLATE), PROJECTED)
        assert store.prompt(prompt_hash(TEMPLATE)) == TEMPLATE
        scores = store.sample_scores("nightly-1", metric="faithfulness").set_index("sample_id")
        assert scores.loc["s-3", "status"] == EXCLUDED
        assert scores.loc["s-3", "reason"] == "no claims to judge: answer is empty"
        assert json.loads(scores.loc["s-2", "verdicts"])[1] == {
            "item": "They are encrypted.", "label": False, "verdict": "unsupported", "evidence": ""}


def test_recording_the_same_run_twice_leaves_one_copy(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        store.record_run(make_run())
        once = store.counts()
        store.record_run(make_run())
        assert store.counts() == once
        assert once["runs"] == 1 and once["samples"] == 3 and once["sample_scores"] == 3


def test_rerecording_a_run_replaces_its_content(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        store.record_run(make_run())
        store.record_run(make_run(samples=SAMPLES[:1], results=RESULTS[:1]))
        assert [s.sample_id for s in store.samples("nightly-1")] == ["s-1"]
        assert store.run_metrics("nightly-1").iloc[0]["score"] == 1.0


def _duplicate_id() -> RunRecord:
    return make_run(samples=[SAMPLES[0], SAMPLES[1], dataclasses.replace(SAMPLES[2], sample_id="s-1")],
                    results=RESULTS[:2])


def _score_out_of_range() -> RunRecord:
    return make_run(results=[RESULTS[0], dataclasses.replace(RESULTS[1], score=1.5), RESULTS[2]])


def _unknown_metric() -> RunRecord:
    return make_run(metric="groundedness")


def _unknown_sample() -> RunRecord:
    return make_run(results=[*RESULTS, SampleResult("s-9", OK, 1.0)])


@pytest.mark.parametrize(
    ("bad_run", "field", "row", "words"),
    [
        (_duplicate_id, "sample_id", 3, "duplicate sample id 's-1'"),
        (_score_out_of_range, "score", 2, "1.5"),
        (_unknown_metric, "metric", None, "unknown metric"),
        (_unknown_sample, "sample_id", 4, "unknown sample 's-9'"),
    ],
    ids=["duplicate-sample-id", "score-1.5", "unknown-metric", "score-for-unknown-sample"],
)
def test_a_bad_record_names_its_field_and_row_and_changes_nothing(
        fresh_db: Path, bad_run, field: str, row: int | None, words: str) -> None:
    with Store(fresh_db) as store:
        store.record_run(make_run())
        before = store.counts()
        with pytest.raises(InputError) as err:
            store.record_run(bad_run())  # same run id: a half-done replace would show
        assert err.value.field == field
        assert err.value.row == row
        assert words in str(err.value) and f"field {field!r}" in str(err.value)
        if row is not None:
            assert f"row {row}" in str(err.value)
        assert store.counts() == before
        assert store.samples("nightly-1") == SAMPLES


def test_a_failed_sample_with_a_score_is_refused(fresh_db: Path) -> None:
    with Store(fresh_db) as store, pytest.raises(InputError) as err:
        store.record_run(make_run(results=[SampleResult("s-1", FAILED, 0.0, reason="judge reply is not JSON")]))
    assert (err.value.field, err.value.row) == ("score", 1)


def test_schema_version_is_kept_in_meta(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        rows = store.cursor().execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
    assert rows == [(str(SCHEMA_VERSION),)]


def test_a_schema_2_database_made_by_the_old_code_migrates_with_its_records(tmp_path: Path) -> None:
    """tests/fixtures/schema2.duckdb.gz was written by evaldrift c49410d (make_schema2.py there): schema 2, with the
    side tables (re-judged series, incident states, the job log, batch jobs) made lazily by the modules using them."""
    path = tmp_path / "old.duckdb"
    path.write_bytes(gzip.decompress((FIXTURES / "schema2.duckdb.gz").read_bytes()))
    columns = {t: _columns_of(path, t) for t in MIGRATED}   # later migrations may add columns: compare these
    before = {t: _rows_of(path, t, columns[t]) for t in MIGRATED}
    for _ in range(2):   # and opening it again changes nothing
        with Store(path) as store:
            assert store.cursor().execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall() == [
                (str(SCHEMA_VERSION),)]
            assert store.run_ids() == ["run-0", "run-1"]
            assert hs.incident_states(store)["note"].tolist() == ["top_k moved on purpose"]
            # kept, with its job note, but listed for no copy: nothing says which copy of its run it measured
            (old_ablation,) = store.cursor().execute("SELECT ablation_id FROM ablations").fetchone()
            assert store.ablations().empty and store.ablation(old_ablation, any_copy=True)["current"] is False
            assert job_log.read(store, old_ablation) == job_log.JobNote(job_log.DONE)
            assert bs.faults(store, "batch-1") == {"k1": "unreadable reply"}
            assert hs.series_list(store)["done"].tolist() == [8]
        assert {t: _rows_of(path, t, columns[t]) for t in MIGRATED} == before


MIGRATED = ("runs", "sample_scores", "ablation_results", "rejudges", "rejudge_scores", "rejudge_runs",
            "incident_states", "job_log", "batch_jobs", "batch_requests", "batch_faults")
FIXTURES = Path(__file__).parent / "fixtures"


def _columns_of(path: Path, table: str) -> list[str]:
    with duckdb.connect(str(path), read_only=True) as con:
        return [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]


def _rows_of(path: Path, table: str, columns: list[str]) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as con:
        names = ", ".join(f'"{c}"' for c in columns)
        return sorted(con.execute(f"SELECT {names} FROM {table}").fetchall(), key=repr)


def test_a_migration_that_raises_leaves_the_file_closed(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        store.cursor().execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="newer than this evaldrift") as err:
        Store(fresh_db)
    # the refused store's connection is closed: this process can open the file again (a leaked read-write
    # connection would hold it, and DuckDB refuses a read-only one beside it)
    with duckdb.connect(str(fresh_db), read_only=True) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall() == [("99",)]
    assert err.value is not None


def test_reopening_a_file_keeps_its_runs(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        store.record_run(make_run())
        store.record_run(make_run("nightly-2", day=2))
        counts = store.counts()
    with Store(fresh_db) as store:
        assert store.counts() == counts
        assert store.run_ids() == ["nightly-1", "nightly-2"]
        assert store.samples("nightly-2")[1].contexts == ("Exports run at 02:00 UTC.",)
        assert store.previous_run("nightly-2") == "nightly-1"
        assert store.resolve_run("latest") == "nightly-2"


def test_opening_and_closing_a_current_database_writes_nothing_to_it(fresh_db: Path) -> None:
    """Every command and page opens the store: an open that only reads leaves the file as it was."""
    with Store(fresh_db) as store:
        store.record_run(make_run())
    before = fresh_db.read_bytes(), fresh_db.stat().st_mtime_ns
    with Store(fresh_db) as store:
        assert store.run_ids() == ["nightly-1"]
    assert (fresh_db.read_bytes(), fresh_db.stat().st_mtime_ns) == before
    assert not Path(f"{fresh_db}.wal").exists()


def test_unknown_run_is_not_found(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        with pytest.raises(NotFoundError):
            store.run("nightly-404")
        with pytest.raises(NotFoundError):
            store.resolve_run("latest")


def test_suites_are_kept_apart(fresh_db: Path) -> None:
    canary = [EvalSample("c-1", "q", "Backups are kept for 30 days.", ("Backups are kept for 30 days.",), "r")]
    run = dataclasses.replace(make_run(), samples={MAIN: SAMPLES, CANARY: canary}, metrics=[
        *make_run().metrics,
        MetricRecord("faithfulness", [SampleResult("c-1", OK, 1.0)], "offline-lexical-v2", TEMPLATE, PROJECTED,
                     CANARY)])
    with Store(fresh_db) as store:
        store.record_run(run)
        assert store.suites("nightly-1") == [CANARY, MAIN]
        assert len(store.samples("nightly-1", CANARY)) == 1
        assert store.run_metrics("nightly-1", CANARY).iloc[0]["n"] == 1
        assert store.run_metrics("nightly-1", MAIN).iloc[0]["n"] == 2


CHILD = """
import sys
from lib.core.errors import StoreBusyError
from lib.store import Store
try:
    Store(sys.argv[1]).close()
except StoreBusyError as exc:
    print(exc, file=sys.stderr, flush=True)
    print("busy", flush=True)
else:
    print("opened", flush=True)
    sys.exit(0)
sys.stdin.readline()  # the owner lets go
Store(sys.argv[1]).close()
print("opened", flush=True)
"""


def test_a_second_process_is_told_the_database_is_busy_until_the_owner_lets_go(fresh_db: Path) -> None:
    store = Store(fresh_db)
    try:
        store.record_run(make_run())
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(fresh_db)], cwd=ROOT, text=True,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        first = child.stdout.readline().strip()  # type: ignore[union-attr]
        # the owner is unaffected
        assert store.run_ids() == ["nightly-1"]
    finally:
        store.close()
    out, err = child.communicate("\n", timeout=60)
    assert first == "busy", err
    assert "held by another process" in err and str(fresh_db) in err
    assert (child.returncode, out.strip()) == (0, "opened")
