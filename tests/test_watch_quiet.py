"""`python -m lib watch` with nothing new answers before the whole command line is imported (lib.cli.watch_quiet,
lib.store.watch.quiet): it must say "nothing new" only when a full look would find nothing to do, and must not
load pandas, Apprise or the judges on the way (that is what kept a fresh process over a second of CPU)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from lib.cli.watch_quiet import quiet_watch
from lib.jobs import watch as wj
from lib.store import Store
from lib.store import watch as ws
from tests.support.cli import ROOT
from tests.support.watch_history import history, night

START = datetime(2026, 9, 1, 2, 0)
LOOKED = START + timedelta(days=11.5)   # the last look: half a day after night 11


class Keeper:
    channels = ("keeper://",)

    def send(self, channel: str, title: str, body: str) -> None:
        return None


class Refuser(Keeper):
    def send(self, channel: str, title: str, body: str) -> None:
        raise wj.DeliveryError(channel, "HTTP 500")


@pytest.fixture(scope="module")
def _looked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twelve quiet nights, looked at once: nothing to say, the watcher's state recorded."""
    db = tmp_path_factory.mktemp("quiet") / "h.duckdb"
    with Store(db) as store:
        history(store, [0.70] * 12, start=START)
    assert wj.look(db, Keeper(), now=LOOKED).claimed == ()
    return db


def _nothing(db: Path) -> datetime:
    return LOOKED + timedelta(hours=1)


def _new_run(db: Path) -> datetime:
    with Store(db) as store:
        night(store, 12, 0.70, start=START)
    return START + timedelta(days=12.5)


def _pending(db: Path) -> datetime:
    with Store(db) as store:
        night(store, 12, 0.40, pipeline={"retriever": "v2"}, start=START)
    assert wj.look(db, Refuser(), now=START + timedelta(days=12.5), retries=1).pending == 1
    return START + timedelta(days=12.6)


def _missing(db: Path) -> datetime:
    return START + timedelta(days=13)   # 2 days since night 11: the nightly run is missing, not yet announced


def _missing_announced(db: Path) -> datetime:
    assert [e.kind for e in wj.look(db, Keeper(), now=START + timedelta(days=13)).claimed] == ["missing run"]
    return START + timedelta(days=13, hours=1)


def _side_file(db: Path) -> datetime:
    with Store(ws.side_path(db)):
        pass
    return _nothing(db)


def _inbox(db: Path) -> datetime:
    (db.parent / "inbox").mkdir()
    (db.parent / "inbox" / "run.json").write_text(json.dumps({}))
    return _nothing(db)


def _never_looked(db: Path) -> datetime:
    with Store(db) as store:
        store.cursor().execute("DELETE FROM watch_meta")
    return _nothing(db)


def _held(db: Path) -> datetime:
    _held.store = Store(db)  # type: ignore[attr-defined]   # the dashboard owns the file
    return _nothing(db)


@pytest.mark.parametrize(("case", "quiet"), [
    (_nothing, True),
    (_new_run, False),             # a run recorded since the last look
    (_pending, False),             # a message owed to a channel
    (_missing, False),             # a missing run to announce
    (_missing_announced, True),    # ... already announced
    (_side_file, False),           # state kept beside the file while the dashboard held it
    (_inbox, False),               # a run handed over, waiting to be recorded
    (_never_looked, False),        # no look recorded yet
    (_held, False),                # the dashboard owns the file: the full look reads its snapshot
], ids=lambda c: c.__name__.strip("_") if callable(c) else str(c))
def test_quiet_only_when_a_look_would_find_nothing(case: Callable[[Path], datetime], quiet: bool, _looked: Path,
                                                  tmp_path: Path):
    db = Path(shutil.copy(_looked, tmp_path / "h.duckdb"))
    now = case(db)
    try:
        assert ws.quiet(db, inboxes=[db.parent / "inbox"], now=now, lock_wait=5) is quiet
    finally:
        held = getattr(case, "store", None)
        if held is not None:
            held.close()


def test_the_command_says_nothing_new_or_hands_over(_looked: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]):
    db = Path(shutil.copy(_looked, tmp_path / "h.duckdb"))
    monkeypatch.setenv("EVALDRIFT_NOTIFY", "json://127.0.0.1:9/alerts")
    now = _nothing(db)
    assert quiet_watch(["watch", "--db", str(db), "--ablate", "--budget", "10"], now=now) == 0
    assert capsys.readouterr().out == "nothing new\n"
    for argv in (["watch", "--db", str(db), "--every", "60s"], ["watch", "--db", str(db), "--test"],
                 ["watch", "--db", str(db), "--budget", "10"], ["watch", "--db", str(db), "--budget", "-1"],
                 ["watch", "--db", str(tmp_path / "none.duckdb")], ["runs", "--db", str(db)], ["watch", "--help"]):
        assert quiet_watch(argv, now=now) is None, argv   # the full command line decides, with its own messages
    monkeypatch.delenv("EVALDRIFT_NOTIFY")
    assert quiet_watch(["watch", "--db", str(db)], now=now) is None   # the full command says what is missing


def test_the_quiet_path_imports_no_pandas_apprise_or_judge():
    code = ("import sys; from lib.cli.watch_quiet import quiet_watch; import lib.store.watch, lib.core.settings; "
            "heavy = {'pandas', 'apprise', 'openai', 'plotly', 'lib.judging', 'lib.diagnosis'} & set(sys.modules); "
            "print(sorted(heavy))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr
