"""Incidents (lib.diagnosis.incidents, lib.diagnosis.standing): what is still open on the demo, episodes,
states that persist.

On the demo re-judged with the trusted instrument, an engineer must be told
first that the 10-31 system change is open, with today's level against the
level before the leak; the leak and its fix must read as one episode; a state
set by one session must be seen by every other and survive a restart.
"""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from lib.app import ui
from lib.app.demo import run_plans
from lib.core.errors import InputError
from lib.diagnosis import incidents, standing
from lib.diagnosis.diagnose import Jump, Suspect
from lib.presentation import review
from lib.store import Store

ROOT = Path(__file__).resolve().parent.parent
PLANS = run_plans()
LEAK, REGRESSION, FIX = (PLANS[i].run_id for i in (30, 58, 75))
T0 = datetime(2026, 10, 1)


def jump(day: int, delta: float, *, metric: str = "faithfulness", across: bool = False) -> Jump:
    return Jump(metric, f"r{day}", f"r{day - 1}", T0 + timedelta(days=day), 0.8, 0.8 + delta, delta, 0.02, 0.005,
                (Suspect("none", "nothing recorded", "re-judge both runs"),), across)


# -- the episode rule: a row per condition --------------------------------------------------------------
@pytest.mark.parametrize(("first", "later", "expected"), [
    (jump(1, +0.15, across=True), jump(9, -0.19, across=True), True),        # leak in, leak out
    (jump(1, -0.10), jump(9, +0.06), True),                                  # regression and fix, 60% back
    (jump(1, +0.15, across=True), jump(9, +0.19, across=True), False),       # same sign: no reversal
    (jump(1, +0.15, across=True), jump(9, -0.05, across=True), False),       # under half the size
    (jump(1, +0.15, across=True), jump(9, -0.19), False),                    # one instrument, one system
    (jump(1, +0.15), jump(9, -0.19, metric="context_recall"), False),        # another metric
    (jump(9, +0.15), jump(1, -0.19), False),                                 # the later one came first
])
def test_a_later_jump_reverses_an_earlier_one_only_when_every_condition_holds(first: Jump, later: Jump,
                                                                              expected: bool) -> None:
    assert incidents.reverses(first, later) is expected


def test_a_leak_and_its_fix_group_into_one_episode_and_a_system_change_stays_apart() -> None:
    leak, dip, system, fix = (jump(3, +0.14, across=True), jump(18, -0.03, across=True), jump(31, -0.05),
                              jump(48, -0.19, across=True))
    groups = incidents.group_episodes([fix, system, dip, leak])
    assert groups == [(leak, dip, fix), (system,)]


# -- the demo ---------------------------------------------------------------------------------------------
@pytest.fixture
def db(rejudged_demo_db: Path, tmp_path: Path) -> Path:
    """A private copy of the re-judged demo (these tests write incident states)."""
    return Path(shutil.copy(rejudged_demo_db, tmp_path / "demo.duckdb"))


def test_the_demo_reads_as_one_leak_episode_and_an_open_system_change(db: Path) -> None:
    with Store(db) as store:
        found, series = incidents.load(store)
    faith = [i for i in found if i.metric == "faithfulness" and i.jumps]
    assert [(i.kind, i.run_id, i.end_run) for i in faith] == [("episode", LEAK, FIX), ("jump", REGRESSION, None)]
    episode, system = faith
    assert episode.across_instruments and not system.across_instruments
    assert any("the jump is the instrument's" in e for e in episode.evidence)
    assert any("the system changed" in e for e in system.evidence)
    assert system.is_open
    opened = incidents.open_first(found)
    assert [i.started_at for i in opened] == sorted(i.started_at for i in opened)

    (faithfulness,) = [s for s in standing.standing(store_history(db), found, series) if s.metric == "faithfulness"]
    assert faithfulness.now == pytest.approx(0.65, abs=0.02)
    assert faithfulness.baseline == pytest.approx(0.785, abs=0.01)
    assert f"before the {PLANS[30].started_at:%Y-%m-%d} instrument change" in faithfulness.sentence
    assert "lost 0.14" in faithfulness.sentence and f"on {PLANS[58].started_at:%Y-%m-%d}" in faithfulness.sentence
    assert faithfulness.same_instrument is not None and faithfulness.same_instrument[0] == PLANS[-2].run_id


def store_history(db: Path):
    with Store(db) as store:
        return store.metric_history()


def test_a_state_survives_a_restart_with_its_time_user_and_note(db: Path) -> None:
    system_id = incidents.incident_id("jump", "faithfulness", REGRESSION)
    with Store(db) as store:
        incidents.set_state(store, system_id, incidents.SYSTEM, note="retriever e5-small cut support", user="ana")
        incidents.set_state(store, system_id, incidents.ACCEPTED, user="ben")
    with Store(db) as store:
        found, _ = incidents.load(store)
    (system,) = [i for i in found if i.incident_id == system_id]
    assert system.state == incidents.ACCEPTED and not system.is_open
    assert [(c.state, c.user, c.note) for c in system.changes] == [
        (incidents.SYSTEM, "ana", "retriever e5-small cut support"), (incidents.ACCEPTED, "ben", "")]
    assert all(abs((c.at - datetime.now()).total_seconds()) < 120 for c in system.changes)


@pytest.mark.parametrize(("state", "user", "note", "field"), [
    ("fixed", "ana", "", "state"),
    (incidents.SYSTEM, "  ", "", "user"),
    (incidents.SYSTEM, "ana", "x" * (incidents.MAX_NOTE + 1), "note"),
])
def test_a_bad_state_change_is_refused_and_nothing_is_written(db: Path, state: str, user: str, note: str,
                                                              field: str) -> None:
    with Store(db) as store:
        with pytest.raises(InputError) as info:
            incidents.set_state(store, "jump:faithfulness:x", state, note=note, user=user)
        assert info.value.field == field
        found, _ = incidents.load(store)
    assert all(not i.changes for i in found)


def test_the_review_of_the_latest_week_lists_what_is_open_until_it_is_closed(db: Path) -> None:
    with Store(db) as store:
        start, end = review.default_range(store)  # type: ignore[misc]
        rev = review.review(store, start, end)
        text = review.review_markdown(rev)
        assert rev.still_open and any(REGRESSION in line or "2026-10-31" in line for line in rev.still_open)
        assert rev.headline[0].startswith(f"{len(rev.still_open)} incident(s) still open")
        assert "## Still open" in text and "faithfulness -0.052 at 2026-10-31" in text
        found, _ = incidents.load(store)
        for i in found:
            incidents.set_state(store, i.incident_id, incidents.ACCEPTED, user="ana")
        closed = review.review(store, start, end)
    assert closed.still_open == ()
    assert "Nothing is open" in review.review_markdown(closed)


# -- the Overview, in two sessions --------------------------------------------------------------------------
def overview(db: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("EVALDRIFT_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_overview_leads_with_what_is_open_and_a_state_set_in_one_session_shows_in_another(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system_id = incidents.incident_id("jump", "faithfulness", REGRESSION)
    try:
        first = overview(db, monkeypatch)
        assert first.subheader[0].value.startswith("Open incidents (")
        lead = first.markdown[0].value.replace("\\", "")
        assert lead.startswith("**faithfulness 0.6") and "before the 2026-10-03 instrument change" in lead
        assert "says the system lost 0.14" in lead
        titles = [m.value.replace("\\", "") for m in first.markdown if "· jump ·" in m.value or "· episode ·" in
                  m.value]
        assert "episode" in titles[0] and any("faithfulness -0.052 at 2026-10-31" in t for t in titles)

        first.text_input(key="incident_user").input("ana")
        first.selectbox(key=f"state_{system_id}").select(incidents.SYSTEM)
        first.text_input(key=f"note_{system_id}").input("retriever swap; see the re-judged line")
        first.button(key=f"record_{system_id}").click().run()
        assert not first.exception, [e.value for e in first.exception]

        second = overview(db, monkeypatch)
        shown = [m.value.replace("\\", "") for m in second.markdown]
        assert not any("open" in t and "faithfulness -0.052 at 2026-10-31" in t for t in shown)
        assert any(t.startswith(f":green[**{incidents.SYSTEM}**]") and "2026-10-31" in t for t in shown)
        assert any("ana: explained as system change (retriever swap; see the re-judged line)" in t.value
                   for t in second.text)
    finally:
        ui.open_store(str(db)).close()
        st.cache_resource.clear()
        st.cache_data.clear()
