"""The smaller holes of issue 23 (item 12): a change to or from an unrecorded judge never reads "nan", an empty
DuckDB file is taken as a new database, and a stalled ablation reads "stalled" in the list of a run's ablations."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from lib.core.records import MetricRecord, RunRecord
from lib.core.results import OK, SampleResult
from lib.core.samples import EvalSample
from lib.diagnosis.ablation import AblationSpec
from lib.diagnosis.trends import change_events
from lib.store import Store
from lib.store.databases import ForeignDatabaseError

ROOT = Path(__file__).resolve().parents[1]


def run(run_id: str, day: int, judge: str | None) -> RunRecord:
    samples = [EvalSample(f"s{i}", f"q{i}?", f"a{i}.", (f"a{i}.",), f"a{i}.") for i in range(3)]
    return RunRecord(run_id, datetime(2026, 11, day, 2), {"retriever": "v1"}, {"main": samples},
                     [MetricRecord("faithfulness", [SampleResult(s.sample_id, OK, 1.0) for s in samples], judge, None,
                                   None)])


# A run that did not record its judge says nothing about it (issue 24, issue 28 item 5): no marker is drawn from
# it, and no marker or export ever reads "nan" (the Review export said "judge model: nan").
@pytest.mark.parametrize(("before", "after", "texts"), [
    (None, "gpt-judge", []),
    ("gpt-judge", None, []),
    ("gpt-judge", "gpt-judge-2", ["faithfulness judge model: gpt-judge -> gpt-judge-2"]),
])
def test_a_change_to_or_from_an_unrecorded_judge_draws_no_marker_and_never_nan(
        tmp_path: Path, before: str | None, after: str | None, texts: list[str]) -> None:
    with Store(tmp_path / "e.duckdb") as store:
        store.record_run(run("r1", 1, before))
        store.record_run(run("r2", 2, after))
        events = change_events(store.metric_history())
    assert events[events["kind"] == "judge model"]["text"].tolist() == texts
    assert not events["text"].astype(str).str.contains("nan").any()


def test_an_empty_duckdb_file_is_a_new_database_and_one_with_tables_is_refused(tmp_path: Path) -> None:
    duckdb.connect(str(tmp_path / "new.duckdb")).close()          # what `duckdb new.duckdb` leaves: no table
    with Store(tmp_path / "new.duckdb") as store:
        store.record_run(run("r1", 1, "j"))
        assert store.run_ids() == ["r1"]
    con = duckdb.connect(str(tmp_path / "theirs.duckdb"))
    con.execute("CREATE TABLE orders (id INTEGER)")
    con.close()
    with pytest.raises(ForeignDatabaseError, match="no evaldrift schema"):
        Store(tmp_path / "theirs.duckdb")


def test_an_ablation_whose_process_is_gone_reads_stalled_in_the_runs_list(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "e.duckdb"
    spec = AblationSpec("r1", ("faithfulness",), ("ground_truth",), judge="offline-lexical-v2", endpoint="offline")
    with Store(db) as store:
        store.record_run(run("r1", 1, "offline-lexical-v2"))
        store.start_ablation(spec.ablation_id, "r1", spec.suite, spec.to_dict(), spec.judge, 3)   # left 'running'
    monkeypatch.setenv("EVALDRIFT_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/ablation.py")
    at.query_params.update(run="r1")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    [label] = [p.proto.label for p in at.get("page_link") if spec.ablation_id in p.proto.label.replace("\\", "")]
    assert " · stalled · " in label
