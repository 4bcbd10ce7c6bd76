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
    proc = cli("runs", "--db", db, "--json")  # the next command to open the database drains first
    assert proc.returncode == 0, proc.stderr
    assert [r["run_id"] for r in json.loads(proc.stdout)] == ["second"]
    assert inbox.waiting(db.parent / "inbox") == 0
    proc = cli("record", "--db", db, first)
    assert proc.returncode == 0, proc.stderr
    with Store(db) as store:
        assert sorted(store.run_ids()) == ["first", "second"]
