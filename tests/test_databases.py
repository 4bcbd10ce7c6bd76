"""Which files the dashboard opens: the operator's list by name, never a path from the browser, never a foreign file.

- The sidebar offers EVALDRIFT_DB and EVALDRIFT_DB_DIR's *.duckdb files by name;
  there is no box to type a path into, and no query parameter names one.
- Another application's DuckDB file (or a file that is no database at all) is
  refused after a look that only reads: its bytes stay as they were, no WAL appears.
- The choice survives moving between pages (issue 14 item 3).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from lib.core.settings import load
from lib.store import Store, databases
from lib.store.databases import ForeignDatabaseError
from tests.conftest import small_demo
from tests.support.browser import SIDEBAR_NAV, StreamlitServer, exceptions_shown, wait_for_app
from tests.support.cli import run_cli
from tests.test_validate import good_run

if TYPE_CHECKING:
    from playwright.sync_api import Page

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app.py"


def foreign_duckdb(path: Path) -> Path:
    """Another application's DuckDB file, checkpointed (no WAL)."""
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE orders (id INTEGER, item VARCHAR)")
    con.execute("INSERT INTO orders VALUES (1, 'tea'), (2, 'cake')")
    con.close()
    return path


def foreign_duckdb_with_log(path: Path) -> Path:
    """Another application's DuckDB file whose last insert is still in its write-ahead log, as after a crash."""
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE orders (id INTEGER, item VARCHAR)")
    con.execute("CHECKPOINT")
    con.execute("PRAGMA disable_checkpoint_on_shutdown")   # the insert stays in the log
    con.execute("INSERT INTO orders VALUES (1, 'tea')")
    con.close()
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def untouched(path: Path, before: str) -> bool:
    return digest(path) == before and not Path(f"{path}.wal").exists()


@pytest.fixture
def team(tmp_path: Path) -> dict[str, Path]:
    """A folder of databases as an operator sets one up: the team's, an empty evaldrift one, a foreign one.

    The team's is two of the demo's nights, not all 90: which file is open is the point here, not what it holds,
    and the dashboard's first page on the whole demo costs its server (or the AppTest) about 1.5 CPU s more."""
    folder = tmp_path / "dbs"
    main = small_demo(2, folder / "team.duckdb")
    with Store(folder / "second.duckdb"):
        pass
    other = foreign_duckdb(folder / "billing.duckdb")
    (folder / "notes.txt").write_text("not offered: not *.duckdb\n")
    return {"main": main, "second": folder / "second.duckdb", "foreign": other, "folder": folder}


# -- the list -------------------------------------------------------------------------------------------------
def test_the_operator_offers_evaldrift_db_first_then_the_folders_duckdb_files_by_name(
        team: dict[str, Path]) -> None:
    s = load(environ={"EVALDRIFT_DB": str(team["main"]), "EVALDRIFT_DB_DIR": str(team["folder"])})
    assert databases.offered(s) == {"team.duckdb": team["main"], "billing.duckdb": team["foreign"],
                                    "second.duckdb": team["second"]}
    assert list(databases.offered(load(environ={"EVALDRIFT_DB": str(team["main"])}))) == ["team.duckdb"]


# -- foreign files ------------------------------------------------------------------------------------------------
def test_a_foreign_duckdb_file_is_refused_read_only_and_never_written(tmp_path: Path) -> None:
    other = foreign_duckdb(tmp_path / "other.duckdb")
    before = digest(other)
    with pytest.raises(ForeignDatabaseError, match=r"other\.duckdb is not an evaldrift database"):
        Store(other)
    assert untouched(other, before)
    con = duckdb.connect(str(other), read_only=True)   # and it is not left locked
    assert [t for (t,) in con.execute("SHOW TABLES").fetchall()] == ["orders"]
    con.close()


def test_a_foreign_file_with_a_pending_log_is_refused_and_neither_it_nor_its_log_is_written(tmp_path: Path) -> None:
    """A read-write open replays a write-ahead log into its file, so a file that has one is looked at read-only."""
    other = foreign_duckdb_with_log(tmp_path / "other.duckdb")
    wal = Path(f"{other}.wal")
    before = digest(other), digest(wal)
    with pytest.raises(ForeignDatabaseError, match=r"other\.duckdb is not an evaldrift database"):
        Store(other)
    assert (digest(other), digest(wal)) == before


def test_an_evaldrift_file_with_a_pending_log_opens_with_what_the_log_holds(tmp_path: Path) -> None:
    path = tmp_path / "team.duckdb"
    with Store(path):
        pass
    con = duckdb.connect(str(path))
    con.execute("PRAGMA disable_checkpoint_on_shutdown")
    con.execute("INSERT INTO meta VALUES ('left-in-the-log', 'yes')")
    con.close()
    assert Path(f"{path}.wal").exists()
    with Store(path) as store:
        assert store.cursor().execute("SELECT value FROM meta WHERE key = 'left-in-the-log'").fetchone() == ("yes",)


def test_an_empty_file_offered_in_the_folder_becomes_a_new_evaldrift_database(tmp_path: Path) -> None:
    """As lib/app/README.md says (issue 39 item 8: DuckDB refused a 0-byte file, "not a valid DuckDB database")."""
    folder = tmp_path / "dbs"
    folder.mkdir()
    (folder / "fresh.duckdb").touch()
    s = load(environ={"EVALDRIFT_DB": str(tmp_path / "team.duckdb"), "EVALDRIFT_DB_DIR": str(folder)})
    offered = databases.offered(s)
    assert offered["fresh.duckdb"] == folder / "fresh.duckdb"
    with Store(offered["fresh.duckdb"]) as store:
        assert store.run_ids() == []
        store.record_run(good_run("r1"))
    with Store(offered["fresh.duckdb"]) as store:
        assert store.run_ids() == ["r1"]


def test_a_file_that_is_no_database_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    text = tmp_path / "passwd.duckdb"
    text.write_text("root:x:0:0:root:/root:/bin/bash\n")
    before = digest(text)
    with pytest.raises(ForeignDatabaseError, match="not a DuckDB file"):
        Store(text)
    assert untouched(text, before)


def test_the_cli_refuses_a_foreign_file_with_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    other = foreign_duckdb(tmp_path / "other.duckdb")
    before = digest(other)
    proc = run_cli("runs", "--db", other)
    assert proc.returncode == 2
    assert "not an evaldrift database" in proc.stderr and "Traceback" not in proc.stderr
    assert untouched(other, before)


# -- the page -------------------------------------------------------------------------------------------------
def test_the_sidebar_has_no_path_box_and_a_foreign_choice_is_refused_on_the_page(
        team: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALDRIFT_DB", str(team["main"]))
    monkeypatch.setenv("EVALDRIFT_DB_DIR", str(team["folder"]))
    before = digest(team["foreign"])
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.query_params.update({"db": "/etc/passwd", "db_path": "/etc/passwd", "database": str(team["foreign"])})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.sidebar.text_input) == 0                       # nowhere to type a path
    picker = at.selectbox(key="db_choice")
    assert picker.options == ["team.duckdb", "billing.duckdb", "second.duckdb"]
    assert picker.value == "team.duckdb"                         # the URL chose nothing

    picker.set_value("billing.duckdb").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("billing.duckdb is not an evaldrift database" in e.value for e in at.error)
    assert not any(str(team["folder"]) in e.value for e in at.error)   # no server paths on the page
    assert untouched(team["foreign"], before)


def test_the_chosen_database_stays_chosen_across_pages_in_the_browser(
        team: dict[str, Path], tmp_path: Path, page: Page) -> None:
    env = {"EVALDRIFT_DB_DIR": str(team["folder"])}
    with StreamlitServer(team["main"], env=env, log_dir=tmp_path / "server") as server:
        page.goto(server.url + "/")
        wait_for_app(page)
        picker = page.locator(".st-key-db_choice")
        picker.click()
        page.get_by_role("option", name="second.duckdb").click()
        wait_for_app(page)
        assert "no runs" in page.inner_text("body").lower()
        for title in ("Trends", "Ablation", "Overview"):
            page.locator(f'{SIDEBAR_NAV} a', has_text=title).first.click()
            wait_for_app(page)
            assert picker.locator("input").input_value() == "second.duckdb", title
            assert exceptions_shown(page) == []
