"""The inbox: a poisoned hand-over file is set aside with its reason, the pages and later files carry on;
every command that writes drains the inbox first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from lib.app import ui
from lib.intake import inbox
from lib.intake.runjson import run_to_json
from lib.store import Store
from tests.support.cli import run_cli
from tests.test_validate import good_run

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("pages/overview.py", "pages/trends.py", "pages/run.py", "pages/compare.py", "pages/review.py",
         "pages/ablation.py", "pages/canary.py")


def poisoned(run_id: str) -> str:
    d = json.loads(run_to_json(good_run(run_id)))
    d["metrics"][0]["template"] = 5   # the reproduction: AttributeError in the drain on every page
    return json.dumps(d)


@pytest.fixture
def db_with_poisoned_inbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    db = tmp_path / "team.duckdb"
    with Store(db) as store:
        store.record_run(good_run("first"))
    box = tmp_path / "inbox"
    box.mkdir()
    (box / "a-poison.run.json").write_text(poisoned("poison"), encoding="utf-8")
    (box / "b-later.run.json").write_text(run_to_json(good_run("later")), encoding="utf-8")
    monkeypatch.setenv("EVALDRIFT_DB", str(db))
    yield db
    ui.open_store(str(db)).close()
    st.cache_resource.clear()
    st.cache_data.clear()


def test_a_poisoned_inbox_file_leaves_every_page_working_and_later_files_recorded(
        db_with_poisoned_inbox: Path) -> None:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    warnings = " ".join(w.value for w in at.warning)
    assert "1 run file(s) handed over through the inbox were refused" in warnings
    [reasons] = [t.value for t in at.dataframe if "reason" in t.value.columns]
    assert reasons["file"].tolist() == ["a-poison.run.json"]
    assert "'metrics[1].template'" in reasons["reason"][0] and "an integer" in reasons["reason"][0]
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.value for e in at.exception])
    assert sorted(ui.open_store(str(db_with_poisoned_inbox)).run_ids()) == ["first", "later"]
    box = db_with_poisoned_inbox.parent / "inbox"
    assert not list(box.glob("*.run.json"))
    assert (box / "rejected" / "a-poison.run.json.reason.txt").is_file()


# -- item 5: every command that writes drains first ---------------------------------------------
def cli(*args: object) -> subprocess.CompletedProcess[str]:
    """A real `python -m lib` process: where this test process holds the database, a second process is the point
    (in one process DuckDB would share the open file rather than find it held)."""
    return subprocess.run([sys.executable, "-m", "lib", *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=dict(os.environ))


def test_a_run_handed_over_between_two_cli_writers_is_recorded_by_the_next_command(tmp_path: Path) -> None:
    db = tmp_path / "nightly.duckdb"
    first, second = tmp_path / "first.run.json", tmp_path / "second.run.json"
    first.write_text(run_to_json(good_run("first")), encoding="utf-8")
    second.write_text(run_to_json(good_run("second")), encoding="utf-8")
    with Store(db):  # the first CLI writer holds the database: the second writer hands over
        proc = cli("record", "--db", db, second)
        assert proc.returncode == 0 and "through the inbox" in proc.stdout, proc.stderr
        busy = cli("runs", "--db", db)   # a reading command that cannot open it says what waits
        assert busy.returncode == 2 and "1 run(s) wait in the inbox" in busy.stderr, busy.stderr
    # free again: the next command to open the database drains first (in this process, tests/support/cli.py)
    proc = run_cli("runs", "--db", db, "--json")
    assert proc.returncode == 0, proc.stderr
    assert [r["run_id"] for r in json.loads(proc.stdout)] == ["second"]
    assert inbox.waiting(db.parent / "inbox") == 0
    proc = run_cli("record", "--db", db, first)
    assert proc.returncode == 0, proc.stderr
    with Store(db) as store:
        assert sorted(store.run_ids()) == ["first", "second"]


# -- issue 23 item 2: a hand-over names its database, and only that database takes it ----------------------
def _jsonl_run(path: Path) -> Path:
    rows = [{"sample_id": f"s{i}", "question": "Where?", "answer": "Paris.", "contexts": ["Paris is it."],
             "ground_truth": "Paris", "faithfulness": 1.0} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_run_handed_over_for_one_database_is_recorded_by_that_database_only(tmp_path: Path) -> None:
    dbdir = tmp_path / "dbdir"
    team_a, team_b = dbdir / "teamA.duckdb", dbdir / "teamB.duckdb"
    for db in (team_a, team_b):
        Store(db).close()
    source = _jsonl_run(tmp_path / "nightly.jsonl")
    with Store(team_a) as a, Store(team_b) as b:  # the dashboard holds both databases
        proc = cli("ingest", "--db", team_b, source, "--run-id", "for-b")
        assert proc.returncode == 0 and "through the inbox" in proc.stdout, proc.stderr
        box = inbox.folder_for(team_a)
        assert box == inbox.folder_for(team_b)  # one shared inbox: the file must say whose it is
        assert inbox.drain(a, box) == []  # teamA's page load leaves it alone
        assert "for-b" not in a.run_ids()
        assert inbox.waiting(box, team_a) == 0 and inbox.waiting(box, team_b) == 1
        assert inbox.drain(b, box) == ["for-b"]
        assert "for-b" in b.run_ids() and inbox.waiting(box) == 0


def test_a_run_whose_database_is_gone_stays_in_the_inbox_with_a_reason(tmp_path: Path) -> None:
    team_a, gone = tmp_path / "teamA.duckdb", tmp_path / "teamC.duckdb"
    box = tmp_path / "inbox"
    kept = inbox.drop(box, good_run("for-c"), target=gone)
    with Store(team_a) as a:
        assert inbox.drain(a, box) == [] and "for-c" not in a.run_ids()
    assert kept.is_file()
    reason = (box / (kept.name + inbox.REASON_SUFFIX)).read_text(encoding="utf-8")
    assert str(gone.resolve()) in reason and "does not exist" in reason
    assert inbox.rejected(box) == []
    with Store(gone) as c:  # the database is back: it takes its run, and the reason goes with it
        assert inbox.drain(c, box) == ["for-c"]
    assert not list(box.iterdir())


def test_a_file_without_a_target_is_still_recorded_by_the_database_that_drains(tmp_path: Path) -> None:
    box = tmp_path / "inbox"
    box.mkdir()
    (box / "old.run.json").write_text(run_to_json(good_run("old")), encoding="utf-8")
    with Store(tmp_path / "team.duckdb") as store:
        assert inbox.drain(store, box) == ["old"]


def test_a_target_named_later_in_the_file_is_still_honoured(tmp_path: Path) -> None:
    box = tmp_path / "inbox"
    box.mkdir()
    d = json.loads(run_to_json(good_run("late")))
    d["target"] = str((tmp_path / "other.duckdb").resolve())
    (box / "late.run.json").write_text(json.dumps(d), encoding="utf-8")
    with Store(tmp_path / "team.duckdb") as store:
        assert inbox.drain(store, box) == [] and "late" not in store.run_ids()


# -- issue 23 item 5: the inbox takes only regular files it owns ---------------------------------------------
def _drain_in_thread(store: Store, box: Path, seconds: float = 20.0) -> list[str]:
    import threading

    out: list[list[str]] = []
    worker = threading.Thread(target=lambda: out.append(inbox.drain(store, box)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "the drain blocked"
    return out[0]


def test_hostile_inbox_entries_are_set_aside_with_reasons_and_never_block_the_good_ones(tmp_path: Path) -> None:
    box = tmp_path / "inbox"
    box.mkdir()
    os.mkfifo(box / "a-fifo.run.json")                        # blocked every page on read
    (box / "b-folder.run.json").mkdir()                       # stopped every later hand-over
    os.symlink("c-loop.run.json", box / "c-loop.run.json")    # a symlink loop
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the inbox", encoding="utf-8")
    os.symlink(secret, box / "d-link.run.json")                # a symlink to a file elsewhere
    (box / "e-good.run.json").write_text(run_to_json(good_run("good")), encoding="utf-8")
    with Store(tmp_path / "team.duckdb") as store:
        assert _drain_in_thread(store, box) == ["good"]
        assert store.run_ids() == ["good"]
    assert sorted(p.name for p in box.iterdir()) == ["rejected"]
    reasons = {r.path.name: r.reason for r in inbox.rejected(box)}
    assert set(reasons) == {"a-fifo.run.json", "b-folder.run.json", "c-loop.run.json", "d-link.run.json"}
    assert "a FIFO" in reasons["a-fifo.run.json"]
    assert "a folder" in reasons["b-folder.run.json"]
    assert "a symbolic link" in reasons["c-loop.run.json"] and "a symbolic link" in reasons["d-link.run.json"]
    assert secret.read_text(encoding="utf-8") == "not for the inbox"  # the link was moved, not followed


@pytest.mark.parametrize("made", ["nothing", "the inbox"])
def test_no_rejected_folder_is_no_refused_run_and_no_warning(tmp_path: Path, made: str,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    """A fresh install has no inbox, or one nobody refused a file from: every page load used to log "inbox:
    cannot list .../rejected: No such file or directory" (seen starting the README's command on a fresh clone)."""
    box = tmp_path / "inbox"
    if made == "the inbox":
        box.mkdir()
    with caplog.at_level("WARNING"):
        assert inbox.rejected(box) == []
    assert caplog.records == []


def test_listing_rejects_never_raises_on_what_someone_put_in_rejected(tmp_path: Path) -> None:
    box = tmp_path / "inbox"
    rejected = box / "rejected"
    rejected.mkdir(parents=True)
    os.symlink(tmp_path / "nowhere", rejected / "dangling.run.json")
    os.mkfifo(rejected / "fifo.run.json")
    os.mkfifo(rejected / ("fifo.run.json" + inbox.REASON_SUFFIX))  # a reason that would block a reader
    secret = tmp_path / "secret.txt"
    secret.write_text("server secret", encoding="utf-8")
    (rejected / "real.run.json").write_text("{}", encoding="utf-8")
    os.symlink(secret, rejected / ("real.run.json" + inbox.REASON_SUFFIX))  # a reason that reads elsewhere
    listed = {r.path.name: r.reason for r in inbox.rejected(box)}
    assert set(listed) == {"dangling.run.json", "fifo.run.json", "real.run.json"}
    assert "server secret" not in " ".join(listed.values())


def test_an_oversized_inbox_file_is_rejected_before_it_is_read(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALDRIFT_MAX_INPUT_BYTES", "1000")
    box = tmp_path / "inbox"
    box.mkdir()
    big = good_run("big")
    text = run_to_json(big)
    (box / "big.run.json").write_text(text + " " * 2000, encoding="utf-8")
    with Store(tmp_path / "team.duckdb") as store:
        assert inbox.drain(store, box) == []
    [rejection] = inbox.rejected(box)
    assert "over the limit of 1,000" in rejection.reason and "EVALDRIFT_MAX_INPUT_BYTES" in rejection.reason
