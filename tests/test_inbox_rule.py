"""One rule for where a hand-over goes, the same in the recorder and the dashboard (issue 39, item 7).

Recorders with `--db` and EVALDRIFT_INBOX but no EVALDRIFT_DB dropped their runs into `<db dir>/inbox`, said
"the owner records it on its next page load", and the dashboard (EVALDRIFT_DB and EVALDRIFT_INBOX set) never
drained that folder. The rule now: a hand-over goes to EVALDRIFT_INBOX when it is set, whatever the database,
else beside the database; an owner drains its EVALDRIFT_INBOX and the folder beside the database, so a recorder
without the owner's settings is drained too; and a recorder that hands over to EVALDRIFT_INBOX says the owner
takes it only if its EVALDRIFT_INBOX names that folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lib.core.records import MetricRecord, RunRecord
from lib.core.results import SampleResult
from lib.core.samples import EvalSample
from lib.core.settings import load
from lib.intake import inbox
from lib.intake.runjson import run_to_json
from lib.store import Store
from tests.support.cli import run_cli

APP = Path(__file__).resolve().parents[1] / "app.py"


def _run(run_id: str) -> RunRecord:
    sample = EvalSample("s1", "Where is it?", "It is in Paris.", ("It is in Paris.",), "Paris.")
    return RunRecord(run_id, datetime(2026, 12, 1), {}, {"main": [sample]},
                     [MetricRecord("faithfulness", [SampleResult("s1", "ok", 1.0)], "offline-lexical-v2", None, None)])


@contextlib.contextmanager
def _held(db: Path) -> Iterator[None]:
    """Another process holds the database file (as the dashboard does), until the block ends."""
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys; c = duckdb.connect(sys.argv[1]); "
                               "print('held', flush=True); sys.stdin.readline()", str(db)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.communicate("\n", timeout=30)


def _env(**settings: Path) -> dict[str, str]:
    """This process's (cleaned) environment without evaldrift's settings, plus `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALDRIFT_")}
    return env | {k: str(v) for k, v in settings.items()}


@pytest.fixture
def place(tmp_path: Path) -> dict[str, Path]:
    """A database in one folder, a shared inbox in another, and three nightly hand-over files."""
    db = tmp_path / "dbs" / "evals.duckdb"
    db.parent.mkdir()
    Store(db).close()
    out = {"db": db, "box": tmp_path / "shared-inbox"}
    for name in ("r1", "r2", "r3"):
        out[name] = tmp_path / f"{name}.run.json"
        out[name].write_text(run_to_json(_run(name)), encoding="utf-8")
    return out


@pytest.mark.parametrize(("recorder", "goes_to"), [
    ({"EVALDRIFT_INBOX": "box"}, "box"),                       # the recorder: no EVALDRIFT_DB
    ({"EVALDRIFT_INBOX": "box", "EVALDRIFT_DB": "db"}, "box"),  # the owner's own settings
    ({}, "beside"),                                            # no settings: beside the database
])
def test_recorders_hand_over_by_one_rule_and_the_owner_drains_what_they_left(
        place: dict[str, Path], recorder: dict[str, str], goes_to: str) -> None:
    env = _env(**{k: place[v] for k, v in recorder.items()})
    with _held(place["db"]):   # the dashboard holds the database
        proc = run_cli("record", "--db", place["db"], place["r1"], env=env)
    assert proc.returncode == 0 and "through the inbox" in proc.stdout, proc.stdout + proc.stderr
    folder = place["box"] if goes_to == "box" else place["db"].parent / "inbox"
    assert inbox.waiting(folder, place["db"]) == 1
    assert (str(folder) in proc.stdout) and ("EVALDRIFT_INBOX" in proc.stdout) == (goes_to == "box")
    owner = _env(EVALDRIFT_DB=place["db"], EVALDRIFT_INBOX=place["box"])
    listed = run_cli("runs", "--db", place["db"], "--json", env=owner)   # the owner opens it: drains first
    assert listed.returncode == 0, listed.stderr
    assert [r["run_id"] for r in json.loads(listed.stdout)] == ["r1"]
    assert inbox.waiting(folder) == 0


def test_the_dashboard_drains_its_inbox_and_the_folder_beside_the_database(place: dict[str, Path],
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    with _held(place["db"]):
        for name, env in (("r2", _env(EVALDRIFT_INBOX=place["box"])), ("r3", _env())):
            assert run_cli("record", "--db", place["db"], place[name], env=env).returncode == 0
    assert inbox.waiting(place["box"]) == 1 and inbox.waiting(place["db"].parent / "inbox") == 1
    monkeypatch.setenv("EVALDRIFT_DB", str(place["db"]))
    monkeypatch.setenv("EVALDRIFT_INBOX", str(place["box"]))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert inbox.waiting(place["box"]) == 0 and inbox.waiting(place["db"].parent / "inbox") == 0


@pytest.mark.parametrize(("environ", "folder"), [
    ({}, "beside"),
    ({"EVALDRIFT_DB": "other"}, "beside"),
    ({"EVALDRIFT_DB": "db"}, "beside"),
    ({"EVALDRIFT_INBOX": "box"}, "box"),
    ({"EVALDRIFT_INBOX": "box", "EVALDRIFT_DB": "other"}, "box"),
    ({"EVALDRIFT_INBOX": "box", "EVALDRIFT_DB": "db"}, "box"),
])
def test_where_a_hand_over_goes_depends_on_evaldrift_inbox_alone(tmp_path: Path, environ: dict[str, str],
                                                                 folder: str) -> None:
    paths = {"db": tmp_path / "a" / "evals.duckdb", "other": tmp_path / "b" / "x.duckdb", "box": tmp_path / "box"}
    settings = load(environ={k: str(paths[v]) for k, v in environ.items()})
    expected = paths["box"] if folder == "box" else paths["db"].parent / "inbox"
    assert inbox.folder_for(paths["db"], settings) == expected
    assert inbox.folders_drained(paths["db"], settings) == tuple(dict.fromkeys(
        [expected, paths["db"].parent / "inbox"]))
