"""`python -m lib watch` end to end, with real receivers started here: a loopback webhook taking Apprise's JSON and
a Slack-format webhook, an SMTP server (aiosmtpd) taking the email; exactly once under two watchers at once, a
kill -9 mid-send, a receiver that fails and recovers, and the dashboard owning the database."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from lib.jobs import watch as wj
from lib.store import Store
from lib.store import watch as ws
from lib.store.parquet import TABLES
from lib.store.snapshot import write_snapshot
from tests.support.cli import ROOT, run_cli
from tests.support.receivers import http_receiver, smtp_receiver
from tests.support.watch_history import history, night

KEY = "evaldrift-key: "
FLAT = [0.70] * 12
# the commands look at the clock: night 12 was last night, so no run is missing
START = datetime.now().replace(microsecond=0) - timedelta(days=13)


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twelve quiet nights, looked at once (nothing to say), then a night whose retriever change moved the score:
    built once a module (0.6 CPU s a build), each test given a copy (`_watched_db`)."""
    db = tmp_path_factory.mktemp("watched") / "runs.duckdb"
    with Store(db) as store:
        history(store, FLAT, start=START)
    with http_receiver() as rec:
        assert wj.look(db, wj.AppriseNotifier([rec.json_url()]), now=START + timedelta(days=11.5)).claimed == ()
        assert rec.posts == []
    with Store(db) as store:
        night(store, 12, 0.45, pipeline={"retriever": "<b>v2</b>"}, start=START)
    assert not db.with_name(f"{db.name}.wal").exists() and not wj.side_path(db).exists()   # closed whole: one file
    return db


def _watched_db(tmp_path: Path, watched: Path) -> Path:
    """A copy of the module's watched database for one test (which sends its messages and records them)."""
    return Path(shutil.copy(watched, tmp_path / "runs.duckdb"))


def _keys(texts: list[str]) -> list[str]:
    return [t.rsplit(KEY, 1)[1].strip() for t in texts]


def _env(*urls: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALDRIFT_", "OPENAI_"))}
    return {**env, "EVALDRIFT_NOTIFY": " ".join(urls), "PYTHONPATH": str(ROOT)}


def test_watch_tables_are_migrated_and_exported():
    assert {"watch_seen", "watch_outbox", "watch_meta"} <= set(TABLES)


def test_a_message_is_claimed_once():
    store = Store(":memory:")
    row = ws.OutboxRow("incident:x", "json://h/p", "new episode", "x", "r1", "head", "body")
    assert ws.claim(store, [row], [("incident:x", "new episode")])
    assert not ws.claim(store, [row], [("incident:x", "new episode")])
    assert not ws.claim(store, [ws.OutboxRow("incident:y", "json://h/p", "new episode", "y", "r1", "h", "b")],
                        [("incident:y", "new episode"), ("incident:x", "new episode")])   # one fact taken: nothing
    assert [r.message_key for r in ws.outbox(store)] == ["incident:x"]
    assert ws.seen_keys(store) == {"incident:x"}


def test_json_slack_and_email_receive_the_cause_first(tmp_path: Path, watched: Path):
    with http_receiver() as rec, smtp_receiver() as mail:
        db = _watched_db(tmp_path, watched)
        rec.posts.clear()
        env = {"EVALDRIFT_NOTIFY": f"{rec.json_url()}, {rec.slack_url()} {mail.url()}",
               "EVALDRIFT_PUBLIC_URL": "https://evaldrift.example"}
        first = run_cli("watch", "--db", db, env=env)
        assert first.returncode == 1, first.stderr
        assert "new episode: faithfulness -0.2" in first.stdout
        json_post, slack_post = sorted(rec.posts, key=lambda p: p.path)
        assert json_post.path == "/alerts" and set(json_post.body) >= {"version", "title", "message", "type"}
        assert slack_post.path == "/hooks/abc123" and "text" in slack_post.body   # Slack's payload shape
        for text in rec.texts():
            lines = text.splitlines()
            assert lines[0].startswith("faithfulness -0.2")
            assert "on night-012: the system changed: the pipeline changed that night (retriever: v1 -> <b>v2</b>)" \
                in lines[0]
            assert any("jump threshold" in ln for ln in lines)
            assert "Open: https://evaldrift.example/run?run=night-012&metric=faithfulness" in lines
            assert lines[-1] == f"{KEY}incident:jump:faithfulness:night-012"
        (email,) = mail.messages
        assert str(email["Subject"]).startswith("faithfulness -0.2")   # the cause is the subject
        parts = {p.get_content_type(): p.get_payload(decode=True).decode() for p in email.walk()
                 if not p.is_multipart()}
        assert set(parts) == {"text/plain", "text/html"}
        assert "suspect pipeline: pipeline retriever: v1 -> <b>v2</b>" in parts["text/plain"]
        assert "&lt;b&gt;v2&lt;/b&gt;" in parts["text/html"] and "<b>v2</b>" not in parts["text/html"]
        again = run_cli("watch", "--db", db, env=env)
        assert (again.returncode, again.stdout.strip()) == (0, "nothing new")
        assert len(rec.posts) == 2 and len(mail.messages) == 1


def test_a_failed_delivery_stays_pending_and_goes_out_next_look_with_its_key(tmp_path: Path, watched: Path):
    with http_receiver(fail_first=3) as rec:
        db = _watched_db(tmp_path, watched)
        notifier = wj.AppriseNotifier([rec.json_url()])
        waits: list[float] = []
        failed = wj.look(db, notifier, now=START + timedelta(days=12.5), backoff=0.5, sleep=waits.append)
        assert (len(failed.claimed), failed.delivered, failed.pending) == (1, 0, 1)
        assert waits == [0.5, 1.0] and rec.refused == 3 and rec.posts == []   # three tries, doubling waits
        with Store(db) as store:
            (row,) = [r for r in ws.outbox(store) if r.status == ws.PENDING]
            assert row.attempts == 1 and "500" in (row.last_error or "")
        later = wj.look(db, notifier, now=START + timedelta(days=12.6), sleep=waits.append)
        assert (later.claimed, later.delivered, later.pending) == ((), 1, 0)
        assert _keys(rec.texts()) == ["incident:jump:faithfulness:night-012"]


def test_the_cli_exits_3_while_a_channel_fails(tmp_path: Path, watched: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(wj, "BACKOFF", 0.01)
    with http_receiver(fail_first=100) as rec:
        db = _watched_db(tmp_path, watched)
        done = run_cli("watch", "--db", db, env={"EVALDRIFT_NOTIFY": rec.json_url()})
        assert done.returncode == 3, done.stderr
        assert "pending: incident:jump:faithfulness:night-012 to json://127.0.0.1" in done.stderr
        assert rec.refused == 3


def test_a_watcher_killed_mid_send_resends_once_with_the_same_key(tmp_path: Path, watched: Path):
    with http_receiver(hold=30) as rec:
        db = _watched_db(tmp_path, watched)
        rec.arrived.clear()
        child = subprocess.Popen([sys.executable, "-m", "lib", "watch", "--db", str(db)], env=_env(rec.json_url()),
                                 cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert rec.arrived.wait(60), child.communicate(timeout=5)
            child.send_signal(signal.SIGKILL)   # the receiver has it; the watcher never recorded it
            child.wait(timeout=10)
        finally:
            if child.poll() is None:
                child.kill()
        rec.release.set()
        rec.hold = 0
        notifier = wj.AppriseNotifier([rec.json_url()])
        resent = wj.look(db, notifier, now=START + timedelta(days=12.6))
        assert (resent.claimed, resent.delivered, resent.pending) == ((), 1, 0)
        assert wj.look(db, notifier, now=START + timedelta(days=12.7)).delivered == 0
        assert _keys(rec.texts()) == ["incident:jump:faithfulness:night-012"] * 2   # once more, same key


def test_two_watchers_at_once_send_each_message_once(tmp_path: Path, watched: Path):
    with http_receiver() as rec:
        db = _watched_db(tmp_path, watched)
        with Store(db) as store:
            night(store, 13, 0.45, pipeline={"retriever": "<b>v2</b>"}, judge_model="gpt-judge-2",
                  start=START, hours=23)   # a second event, before the watchers look
        children = [subprocess.Popen([sys.executable, "-m", "lib", "watch", "--db", str(db)],
                                     env=_env(rec.json_url()), cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True) for _ in range(2)]
        codes = sorted(c.wait(timeout=120) for c in children)
        for c in children:
            c.communicate()
        assert codes == [0, 1]
        keys = _keys(rec.texts())
        assert sorted(keys) == ["incident:jump:faithfulness:night-012", "instrument:night-013:faithfulness:judge model"]


def test_while_the_dashboard_owns_the_database_the_watcher_reads_its_snapshot(tmp_path: Path, watched: Path):
    with http_receiver() as rec:
        db = _watched_db(tmp_path, watched)
        owner = Store(db)   # the dashboard: holds the file; its snapshot is what other processes read
        try:
            write_snapshot(owner)
            child = subprocess.run([sys.executable, "-m", "lib", "watch", "--db", str(db)], env=_env(rec.json_url()),
                                   cwd=ROOT, capture_output=True, text=True, timeout=120)
            assert child.returncode == 1, child.stderr
            assert "the dashboard holds the database" in child.stdout
            assert wj.side_path(db).is_file()
            log = wj.sent_log(owner, db)   # what the Overview shows: the side file's rows too
            assert [(r.message_key, r.status) for r in log] == [("incident:jump:faithfulness:night-012", "delivered")]
        finally:
            owner.close()
        notifier = wj.AppriseNotifier([rec.json_url()])
        after = wj.look(db, notifier, now=START + timedelta(days=12.7))   # free again: the side file folded in
        assert (after.claimed, after.delivered, after.snapshot) == ((), 0, False)
        assert not wj.side_path(db).exists()
        with Store(db) as store:
            assert [r.status for r in ws.outbox(store)] == ["delivered"]
        assert len(rec.posts) == 1


def test_test_and_digest_send_to_every_channel(tmp_path: Path, watched: Path):
    with http_receiver() as rec:
        db = _watched_db(tmp_path, watched)
        env = {"EVALDRIFT_NOTIFY": rec.json_url()}
        done = run_cli("watch", "--test", env=env)
        assert done.returncode == 0 and "test message sent to 1 of 1 channel(s)" in done.stdout
        assert rec.texts()[0].startswith("evaldrift: test message\nA test message from `python -m lib watch --test`")
        digest = run_cli("watch", "--digest", "--db", db, env=env)
        assert digest.returncode == 0, digest.stderr
        assert rec.posts[1].body["title"].startswith("evaldrift review: ")
        assert "Still open" in rec.texts()[1] and "night-012" in rec.texts()[1]


@pytest.mark.parametrize(("env", "args", "said"), [
    ({}, ["--test"], "no channel to alert: set EVALDRIFT_NOTIFY"),
    ({"EVALDRIFT_NOTIFY": "nosuch://secret-token@host"}, ["--test"], "notification URL 1 (nosuch://...)"),
    ({"EVALDRIFT_NOTIFY_FILE": "/nonexistent/urls"}, ["--test"], "cannot read /nonexistent/urls"),
    ({"EVALDRIFT_NOTIFY": "json://127.0.0.1:9/x"}, ["--db", "/nonexistent/x.duckdb"], "no database at"),
    ({"EVALDRIFT_NOTIFY": "json://127.0.0.1:9/x"}, ["--every", "0.5s"], "at least 1 second"),
    ({"EVALDRIFT_NOTIFY": "json://127.0.0.1:9/x"}, ["--budget", "5"], "--budget counts the judge calls of --ablate"),
    ({"EVALDRIFT_NOTIFY": "json://127.0.0.1:9/x"}, ["--ablate", "--budget", "-1"], "at least 0, got '-1'"),
])
def test_bad_input_is_one_line_and_exit_2(env: dict[str, str], args: list[str], said: str):
    done = run_cli("watch", *args, env=env)
    assert done.returncode == 2
    assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "secret-token" not in done.stderr


def _record(db: Path, day: int, **kw: object) -> None:
    """Record a night while a watcher may hold the file for a look: tried again until it is free."""
    for _ in range(200):
        try:
            with Store(db) as store:
                night(store, day, 0.45, pipeline={"retriever": "<b>v2</b>"}, start=START, hours=23,
                      **kw)  # type: ignore[arg-type]
            return
        except Exception:   # StoreBusyError: a look is under way
            time.sleep(0.05)
    raise AssertionError("the database stayed busy")


def test_every_sends_a_run_recorded_meanwhile_within_one_interval(tmp_path: Path, watched: Path):
    with http_receiver() as rec:
        db = _watched_db(tmp_path, watched)
        child = subprocess.Popen([sys.executable, "-m", "lib", "watch", "--db", str(db), "--every", "2s"],
                                 env=_env(rec.json_url()), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        try:
            deadline = time.monotonic() + 60
            while not rec.posts and time.monotonic() < deadline:
                time.sleep(0.05)
            assert rec.posts, "the first look sent nothing"
            _record(db, 13, judge_model="gpt-judge-2")
            recorded = time.monotonic()
            while len(rec.posts) < 2 and time.monotonic() < recorded + 30:
                time.sleep(0.05)
            took = time.monotonic() - recorded
        finally:
            child.send_signal(signal.SIGTERM)
            out, err = child.communicate(timeout=30)
        assert child.returncode == 0, err
        assert _keys(rec.texts()) == ["incident:jump:faithfulness:night-012",
                                      "instrument:night-013:faithfulness:judge model"]
        # sent by the running watcher's next looks, not after a restart; the figure against the target (one interval
        # plus 5 s) is the benchmark's (tests/benchmarks/bench_watch.py every): here it took 8.5 s once at load 20
        assert took < 2 + 25, took
        assert "new episode: faithfulness -0.2" in out


def test_alerts_frame_newest_first_with_pending_errors():
    from lib.presentation.alerts import alerts_frame, announced

    t = datetime(2026, 10, 3, 8, 0)
    rows = [ws.OutboxRow("incident:a", "json://h/p", "new episode", "a", "r1", "faithfulness +0.138 ...", "b",
                         status=ws.DELIVERED, attempts=1, created_at=t, delivered_at=t),
            ws.OutboxRow("close:b", "json://h/p", "close", "b", "r2", "context_recall back", "b", attempts=2,
                         last_error="HTTP 500", created_at=t + timedelta(hours=1))]
    frame = alerts_frame(rows)
    assert frame["message"].tolist() == ["context_recall back", "faithfulness +0.138 ..."]
    assert frame["status"].tolist() == ["pending: HTTP 500", "delivered"]
    assert announced(rows) == {"a"}   # a pending message has announced nothing yet


def test_the_overview_shows_what_was_sent_and_marks_the_incident_announced(tmp_path: Path, watched: Path,
                                                                             monkeypatch: pytest.MonkeyPatch):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from lib.app import ui

    with http_receiver() as rec:
        db = _watched_db(tmp_path, watched)
        assert wj.look(db, wj.AppriseNotifier([rec.json_url()]), now=START + timedelta(days=12.5)).delivered == 1
    monkeypatch.setenv("EVALDRIFT_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    try:
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        sent = next(d.value for d in at.dataframe if "channel" in d.value.columns)
        assert sent["event"].tolist() == ["new episode"] and sent["status"].tolist() == ["delivered"]
        assert sent["message"].iloc[0].startswith("faithfulness -0.2")
        assert any("announced" in m.value and "faithfulness -0.2" in m.value for m in at.markdown)
    finally:
        ui.open_store(str(db)).close()
        st.cache_resource.clear()
        st.cache_data.clear()


@pytest.mark.parametrize(("text", "urls"), [
    ("json://h:1/a", ("json://h:1/a",)),
    ("json://h:1/a, slack://T/B/C", ("json://h:1/a", "slack://T/B/C")),          # comma before a scheme
    ("json://h:1/a slack://T/B/C", ("json://h:1/a", "slack://T/B/C")),           # white space
    ("mailto://u@h?to=a@x,b@x", ("mailto://u@h?to=a@x,b@x",)),                   # a comma inside a URL stays
    ("# the team\njson://h:1/a\n\n  # old: slack://x\nmsteams://t", ("json://h:1/a", "msteams://t")),   # a file
    ("", ()),
])
def test_notification_urls_split_where_a_url_ends(text: str, urls: tuple[str, ...]):
    from lib.core.settings import notify_urls

    assert notify_urls(text) == urls
