"""The Parquet layout: the same tables, the same trend, read-only; and bulk loading back from it."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from lib.core.calls import JudgeReply, JudgeRequest, Message
from lib.core.errors import InputError, StoreError
from lib.core.labels import BINARY, Label, content_key
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.records import MAIN, MetricRecord, RunRecord
from lib.core.samples import EvalSample
from lib.diagnosis import sentinel
from lib.diagnosis.ablation import AblationSpec, run_ablation
from lib.diagnosis.rejudge import RejudgeSpec, run_rejudge
from lib.diagnosis.trends import canary_status, find_jumps, lint_status
from lib.jobs import job_log
from lib.judging import OfflineJudge
from lib.judging.harness import Instrument, score_samples
from lib.store import RunBatch, Store
from lib.store import batches as bs
from lib.store import history as hs
from lib.store import watch as ws
from lib.store.parquet import TABLES, ParquetStore, export_parquet, history_batch, open_store

KEYS = {
    "meta": ["key"], "migrations": ["name"], "prompts": ["prompt_hash"], "runs": ["run_id"],
    "run_metrics": ["run_id", "suite", "metric"],
    "samples": ["run_id", "suite", "sample_id"], "sample_scores": ["run_id", "suite", "metric", "sample_id"],
    "judge_cache": ["key"], "ablations": ["ablation_id"],
    "ablation_results": ["ablation_id", "metric", "arm", "rep", "sample_id"],
    "rejudges": ["series_id"], "rejudge_scores": ["series_id", "run_id", "sample_id"],
    "rejudge_runs": ["series_id", "run_id"], "incident_states": ["incident_id", "seq"], "job_log": ["ablation_id"],
    "batch_jobs": ["batch_id"], "batch_requests": ["batch_id", "key"], "batch_replies": ["batch_id", "key"],
    "batch_faults": ["batch_id", "key"], "labels": ["seq"], "archived_runs": ["archive_id"],
    "archived_run_metrics": ["archive_id", "suite", "metric"], "archived_samples": ["archive_id", "suite", "sample_id"],
    "archived_sample_scores": ["archive_id", "suite", "metric", "sample_id"],
    "watch_seen": ["key"], "watch_outbox": ["message_key", "channel"], "watch_meta": ["name"],
    "sentinels": ["pin_id"], "sentinel_nights": ["pin_id", "night"],
}
DAYS = (datetime(2026, 1, 30, 2, 0), datetime(2026, 1, 31, 2, 5), datetime(2026, 2, 1, 2, 10))


def _samples(n: int = 24) -> list[EvalSample]:
    out = []
    for i in range(n):
        fact = f"Audit logs for workspace {i} are retained for {30 + i} days."
        extra = f"Exports for workspace {i} run at {i % 12 + 1}:00 UTC."
        out.append(EvalSample(f"s-{i:02d}", f"How long are audit logs of workspace {i} kept?", f"{fact} {extra}",
                              (fact, "Owners receive a summary by email."), f"{fact} {extra}"))
    return out


def _run(k: int, samples: list[EvalSample]) -> RunRecord:
    judge = OfflineJudge(noise=0.05)
    metrics = []
    for metric in ("faithfulness", "answer_correctness"):
        inst = Instrument(metric, DEFAULT_TEMPLATES[metric], PROJECTED)
        metrics.append(MetricRecord(metric, score_samples(samples, inst, judge, seed=k), judge.model,
                                    inst.template, PROJECTED, MAIN, judge.model))
    return RunRecord(f"run-{k}", DAYS[k], {"retriever": {"top_k": 3 + k}}, {MAIN: samples}, metrics, f"run {k}")


@pytest.fixture(scope="module")
def _small_store_built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """small_store's database, built once for the module (never opened after: copied)."""
    path = tmp_path_factory.mktemp("small") / "small.duckdb"
    _build_small_store(path)
    assert not Path(f"{path}.wal").exists()   # closed and checkpointed: the file alone is the database
    return path


@pytest.fixture
def small_store(_small_store_built: Path, tmp_path: Path) -> Path:
    """Three runs over two months (one recorded twice), an ablation, a cached judge call and two labels: every
    table holds rows. A private copy for the test to write to."""
    return Path(shutil.copy(_small_store_built, tmp_path / "small.duckdb"))


def _build_small_store(path: Path) -> None:
    samples = _samples()
    with Store(path) as store:
        for k in range(3):
            store.record_run(_run(k, samples))
        store.record_run(_run(0, samples))   # recorded over: the earlier copy is kept in the archive tables
        run_ablation(store, AblationSpec("run-2", ("faithfulness",), ("ground_truth",), repeats=2),
                     OfflineJudge(noise=0.03))
        store.put(JudgeRequest("some-model", (Message("user", "a question"),), 0.0, 1),
                  JudgeReply('{"verdicts": []}', fingerprint="fp"))
        _team_records(store)
        first = samples[0]
        store.add_labels([Label(suite=MAIN, sample_id=first.sample_id, metric="faithfulness", item=item, kind=BINARY,
                                value=1.0, content=content_key("faithfulness", first), labeller="ana",
                                labelled_at=DAYS[0], source="test") for item in (1, None)])


def _team_records(store: Store) -> None:
    """What a team writes beside the runs: a re-judged series, incident states with notes, a job's note, a batch."""
    run_rejudge(store, RejudgeSpec("faithfulness", ("run-1", "run-2"), DEFAULT_TEMPLATES["faithfulness"]),
                OfflineJudge())
    hs.add_incident_state(store, "jump:faithfulness:run-2", "investigating", "the retriever's top_k moved", "ana")
    hs.add_incident_state(store, "jump:faithfulness:run-2", "explained", "top_k 4 -> 5 on purpose", "ben")
    job_log.record(store, store.ablations()["ablation_id"][0], job_log.JobNote(job_log.STOPPED, "breaker opened"))
    requests = pd.DataFrame({"key": ["k1", "k2"], "request": ['{"a": 1}', '{"a": 2}'], "items": [1, 2],
                             "labels": ['["yes"]', '["yes", "no"]']})
    bs.add_job(store, {"batch_id": "batch-1", "kind": "rejudge", "job_id": "job-1", "spec": {"metric": "x"},
                       "model": "m", "endpoint": "http://127.0.0.1:1/v1", "status": "in_progress", "total": 2,
                       "input_file_id": "file-1"}, requests)
    bs.add_replies(store, "batch-1", [("k1", '{"verdicts": []}', 10, 2, "fp")])
    bs.add_faults(store, "batch-1", {"k2": "unreadable reply"})
    ws.claim(store, [ws.OutboxRow("incident:jump:faithfulness:run-2", "json://127.0.0.1/alerts", "new episode",
                                  "jump:faithfulness:run-2", "run-2", "faithfulness moved", "faithfulness moved\n- x")],
             [("incident:jump:faithfulness:run-2", "new episode")])
    ws.set_meta(store, "last_look", DAYS[2].isoformat())
    judge = OfflineJudge(noise=0.03)   # a judge sentinel: its pin and a night
    sentinel.pin(store, judge, "faithfulness", size=4, repeats=1, at=DAYS[2])
    sentinel.run_night(store, judge, night="2026-02-02", at=DAYS[2] + timedelta(days=1))


def _table(store: Store, table: str) -> pd.DataFrame:
    frame = store.cursor().execute(f"SELECT * FROM {table}").df()
    if "contexts" in frame:
        frame["contexts"] = frame["contexts"].map(tuple)
    return frame.sort_values(KEYS[table]).reset_index(drop=True)


def test_the_trend_over_parquet_is_the_trend_over_duckdb(demo_db: Path, tmp_path: Path) -> None:
    with Store(demo_db) as store:
        export_parquet(store, tmp_path / "ds")
        history, jumps = store.metric_history(), find_jumps(store)
        canary, lint = canary_status(store), lint_status(store)
    with ParquetStore(tmp_path / "ds") as pq:
        pd.testing.assert_frame_equal(pq.metric_history(), history, check_exact=True)
        assert jumps and find_jumps(pq) == jumps
        pd.testing.assert_frame_equal(canary_status(pq).frame, canary.frame, check_exact=True)
        pd.testing.assert_frame_equal(lint_status(pq), lint, check_exact=True)


def test_every_table_round_trips_with_its_columns_and_types(small_store: Path, tmp_path: Path) -> None:
    with Store(small_store) as store:
        summary = export_parquet(store, tmp_path / "ds")
        expected = {t: _table(store, t) for t in TABLES}
    assert all(len(f) for f in expected.values()), "the fixture fills every table"
    assert summary.rows == {t: len(f) for t, f in expected.items()}
    assert summary.partitions == 2  # January and February
    with ParquetStore(tmp_path / "ds") as pq:
        for table in TABLES:
            pd.testing.assert_frame_equal(_table(pq, table), expected[table], check_exact=True, obj=table)
        assert pq.ablation(pq.ablations()["ablation_id"][0])["result"] is not None


def test_the_export_carries_every_table_the_migrations_make(fresh_db: Path) -> None:
    """A table a new migration adds goes to the dataset (and the round trip above) without being listed."""
    with Store(fresh_db) as store:
        tables = {r[0] for r in store.cursor().execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert set(TABLES) == tables
    assert set(KEYS) == tables, "every table has its key here, so the round trip compares it row by row"


def test_incident_states_and_notes_travel_and_read_from_a_dataset(small_store: Path, tmp_path: Path) -> None:
    with Store(small_store) as store:
        export_parquet(store, tmp_path / "ds")
        states, version = hs.incident_states(store), hs.version(store)
        note = job_log.read(store, store.ablations()["ablation_id"][0])
    with ParquetStore(tmp_path / "ds") as pq:
        got = hs.incident_states(pq)
        assert got["note"].tolist() == ["the retriever's top_k moved", "top_k 4 -> 5 on purpose"]
        pd.testing.assert_frame_equal(got, states, check_exact=True)
        assert hs.version(pq) == version
        assert job_log.read(pq, pq.ablations()["ablation_id"][0]) == note
        assert hs.series_list(pq)["metric"].tolist() == ["faithfulness"]
        assert bs.faults(pq, "batch-1") == {"k2": "unreadable reply"}


def test_the_layout_is_partitioned_by_run_date(small_store: Path, tmp_path: Path) -> None:
    with Store(small_store) as store:
        export_parquet(store, tmp_path / "days", granularity="day")
        export_parquet(store, tmp_path / "months")
        history = store.metric_history()
    days = sorted(p.name for p in (tmp_path / "days" / "sample_scores").iterdir())
    assert days == ["run_date=2026-01-30", "run_date=2026-01-31", "run_date=2026-02-01"]
    months = sorted(p.name for p in (tmp_path / "months" / "runs").iterdir())
    assert months == ["run_date=2026-01-01", "run_date=2026-02-01"]
    assert (tmp_path / "days" / "prompts" / "data_0.parquet").is_file()
    for dataset in ("days", "months"):
        with ParquetStore(tmp_path / dataset) as pq:
            pd.testing.assert_frame_equal(pq.metric_history(), history, check_exact=True)


def test_a_dataset_is_read_only(small_store: Path, tmp_path: Path) -> None:
    with Store(small_store) as store:
        export_parquet(store, tmp_path / "ds")
        run = _run(0, _samples(3))
    with ParquetStore(tmp_path / "ds") as pq:
        for write in (lambda: pq.record_run(run), lambda: pq.delete_run("run-0"),
                      lambda: pq.finish_ablation("abl-x", "done", None)):
            with pytest.raises(StoreError, match="read-only Parquet dataset"):
                write()
        assert pq.run_ids() == ["run-0", "run-1", "run-2"]


def test_an_empty_table_keeps_its_shape(tmp_path: Path) -> None:
    with Store(tmp_path / "one.duckdb") as store:
        store.record_run(_run(0, _samples(3)))
        export_parquet(store, tmp_path / "ds")
        expected = store.ablations()
    assert not (tmp_path / "ds" / "ablations").exists()
    with ParquetStore(tmp_path / "ds") as pq:
        got = pq.ablations()
        assert got.empty and list(got.columns) == list(expected.columns)
        assert got.dtypes.equals(expected.dtypes)
        assert pq.counts()["judge_cache"] == 0


def test_export_replaces_a_dataset_only_when_asked(small_store: Path, tmp_path: Path) -> None:
    dest = tmp_path / "ds"
    with Store(small_store) as store:
        export_parquet(store, dest)
        with pytest.raises(StoreError, match="exists"):
            export_parquet(store, dest)
        store.delete_run("run-0")
        export_parquet(store, dest, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "small.duckdb"]  # no partial or old copies left
    with ParquetStore(dest) as pq:
        assert pq.run_ids() == ["run-1", "run-2"]


def test_a_dataset_from_another_schema_version_is_refused(small_store: Path, tmp_path: Path) -> None:
    with Store(small_store) as store:
        export_parquet(store, tmp_path / "ds")
    meta = tmp_path / "ds" / "meta" / "data_0.parquet"
    duckdb.execute(f"COPY (SELECT 'schema_version' AS key, '99' AS value) TO '{meta}' (FORMAT parquet)")
    with pytest.raises(StoreError, match="schema 99"):
        ParquetStore(tmp_path / "ds")


def test_a_dataset_with_a_step_this_evaldrift_does_not_know_is_refused(small_store: Path, tmp_path: Path) -> None:
    with Store(small_store) as store:
        store.cursor().execute("INSERT INTO migrations VALUES ('watcher state', now())")
        export_parquet(store, tmp_path / "ds")
    with pytest.raises(StoreError, match="steps this evaldrift does not know: watcher state"):
        ParquetStore(tmp_path / "ds")


def test_open_store_tells_a_dataset_from_a_database(small_store: Path, tmp_path: Path) -> None:
    with Store(small_store) as store:
        export_parquet(store, tmp_path / "ds")
    with open_store(tmp_path / "ds") as pq:
        assert isinstance(pq, ParquetStore)
    with open_store(small_store) as db:
        assert type(db) is Store
    with pytest.raises(StoreError, match="no Parquet dataset"):
        ParquetStore(tmp_path / "nowhere")


def test_a_dataset_bulk_loads_back_into_a_store(small_store: Path, tmp_path: Path) -> None:
    with Store(small_store) as store:
        export_parquet(store, tmp_path / "ds")
        history = store.metric_history()
        scores = _table(store, "sample_scores")
    with ParquetStore(tmp_path / "ds") as pq, Store(tmp_path / "restored.duckdb") as restored:
        assert restored.record_runs_bulk([history_batch(pq)]) == 3
        pd.testing.assert_frame_equal(restored.metric_history(), history, check_exact=False, rtol=0, atol=1e-12)
        pd.testing.assert_frame_equal(_table(restored, "sample_scores"), scores, check_exact=True)
        restored.record_runs_bulk([history_batch(pq)])  # the same run ids again: replaced, not doubled
        assert restored.counts()["sample_scores"] == len(scores)


def _edited(batch: RunBatch, table: str, edit) -> RunBatch:
    frame = getattr(batch, table).to_pandas()
    edit(frame)
    fields = {f: getattr(batch, f) for f in ("runs", "samples", "sample_scores", "instruments", "prompts")}
    fields[table] = frame
    return RunBatch(**fields)


def _set(column: str, value: object, row: int = 5):
    def edit(frame: pd.DataFrame) -> None:
        frame[column] = frame[column].astype(object)
        frame.loc[row, column] = value
    return edit


@pytest.mark.parametrize(("table", "edit", "field", "message"), [
    ("sample_scores", _set("score", 1.5), "score", "an ok score must be a number in [0, 1]"),
    ("sample_scores", _set("metric", "helpfulness"), "metric", "unknown metric"),
    ("sample_scores", _set("status", "maybe"), "status", "unknown status"),
    ("sample_scores", _set("sample_id", "s-99"), "sample_id", "score for a sample that is not in the batch"),
    ("instruments", _set("binding", "telepathy", row=0), "binding", "unknown binding"),
    ("runs", _set("pipeline", "{not json", row=0), "pipeline", "pipeline config is not JSON"),
    ("runs", _set("pipeline", "[1, 2]", row=0), "pipeline", "pipeline config must be a JSON object"),
    ("runs", _set("started_at", pd.Timestamp("2999-12-31"), row=0), "started_at",
     "out of range: a run starts between 1970 and 2199"),
    ("samples", _set("question", "a\x00b"), "sample", "contains a NUL character"),
    ("samples", _set("contexts", ["ok", "a\x00b"]), "sample", "contains a NUL character"),
], ids=["score-1.5", "unknown-metric", "unknown-status", "unknown-sample", "unknown-binding", "bad-pipeline",
        "pipeline-list", "started-2999", "nul-question", "nul-passage"])
def test_a_bad_bulk_row_is_named_and_nothing_is_written(small_store: Path, tmp_path: Path, table: str, edit,
                                                        field: str, message: str) -> None:
    with Store(small_store) as store:
        batch = _edited(history_batch(store), table, edit)
    with Store(tmp_path / "fresh.duckdb") as fresh:
        with pytest.raises(InputError, match="run 'run-") as err:
            fresh.record_runs_bulk([batch])
        assert err.value.field == field and err.value.reason == message
        assert fresh.counts()["runs"] == fresh.counts()["sample_scores"] == 0


def test_a_duplicate_bulk_row_is_refused_whole(small_store: Path, tmp_path: Path) -> None:
    with Store(small_store) as store:
        batch = history_batch(store)
    doubled = RunBatch(batch.runs, batch.samples, pd.concat([batch.sample_scores.to_pandas()] * 2),
                       batch.instruments, batch.prompts)
    with Store(tmp_path / "fresh.duckdb") as fresh:
        with pytest.raises(InputError, match="duplicate row"):
            fresh.record_runs_bulk([doubled])
        assert fresh.counts()["sample_scores"] == 0
