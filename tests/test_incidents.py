"""Incidents (lib.diagnosis.incidents, lib.diagnosis.incidents): what is still open on the demo, episodes,
states that persist.

On the demo re-judged with the trusted instrument, an engineer must be told
first that the 10-31 system change is open, with today's level against the
level before the leak; the leak and its fix must read as one episode; a state
set by one session must be seen by every other and survive a restart.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from lib.app import ui
from lib.core.errors import InputError
from lib.diagnosis.incidents import _incidents as incidents
from lib.diagnosis.incidents import _standing as standing
from lib.diagnosis.trends import CanaryStatus, Jump
from lib.diagnosis.trends._diagnose import Suspect
from lib.jobs._demo import run_plans
from lib.presentation import review
from lib.store import Store
from lib.store import history as hs

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


def _with(kinds: tuple[str, ...], *, across: bool = False) -> Jump:
    return Jump("faithfulness", "r9", "r8", T0, 0.8, 0.7, -0.1, 0.02, 0.005,
                tuple(Suspect(k, f"{k} changed", "split the jump") for k in kinds), across)


# -- how a baseline names the move that opened the incident: a row per branch --------------------------
@pytest.mark.parametrize(("jump_", "words"), [
    (_with(("prompt", "binding"), across=True), "instrument change"),
    (_with(("pipeline",), across=True), "instrument change"),      # the instrument changed too: it leads
    (_with(("pipeline",)), "pipeline change"),
    (_with(("judge model",)), "change"),                           # recorded, yet the same instrument
    (_with(("none",)), "jump, with no recorded change"),
], ids=["instrument", "instrument-and-pipeline", "pipeline", "other-recorded", "nothing-recorded"])
def test_the_baseline_names_what_moved_the_metric(jump_: Jump, words: str) -> None:
    assert standing.change_words(jump_) == words


def test_a_leak_and_its_fix_group_into_one_episode_and_a_system_change_stays_apart() -> None:
    leak, dip, system, fix = (jump(3, +0.14, across=True), jump(18, -0.03, across=True), jump(31, -0.05),
                              jump(48, -0.19, across=True))
    groups = incidents.group_episodes([fix, system, dip, leak])
    assert groups == [(leak, dip, fix), (system,)]


def test_an_incident_carries_its_suspects_tests_and_the_verdicts_of_ablations_on_its_run() -> None:
    j = jump(31, -0.05)
    ablations = pd.DataFrame([
        {"ablation_id": "abl-1", "run_id": "r31", "status": "done",
         "result": json.dumps({"summary": "as expected: faithfulness moves when its own inputs are blanked"})},
        {"ablation_id": "abl-2", "run_id": "r31", "status": "running", "result": None},     # not finished: left out
        {"ablation_id": "abl-3", "run_id": "r9", "status": "done", "result": json.dumps({"summary": "LEAK"})},
    ])
    (incident,) = incidents.build([j], ablations=ablations)
    assert incident.evidence == (
        "2026-11-01 r31: 0.800 -> 0.750 (-0.050), within one instrument",
        "suspect none: nothing recorded; test: re-judge both runs",
        "ablation abl-1: as expected: faithfulness moves when its own inputs are blanked")
    assert incident.is_open and incident.state == incidents.OPEN


# -- canary alarms and lint findings are incidents too: a row per branch ------------------------------------
def canary(alarms: str) -> CanaryStatus:
    """A canary over len(alarms) runs; 'x' marks an alarmed run."""
    n = len(alarms)
    frame = pd.DataFrame({"run_id": [f"r{i}" for i in range(n)],
                          "started_at": [T0 + timedelta(days=i) for i in range(n)],
                          "score": [0.9 if a == "x" else 0.1 for a in alarms], "alarm": [a == "x" for a in alarms]})
    return CanaryStatus(frame, 0.1, 0.3, tuple(frame.loc[frame["alarm"], "run_id"]), alarms.endswith("x"), "canary")


@pytest.mark.parametrize(("alarms", "expected"), [
    ("....", []),                                   # never alarmed: nothing
    (".xx.", [("r1", "2 run(s), r1 to r2")]),       # one stretch: one incident from its first run
    ("x.x.", [("r0", "1 run(s), r0 to r0"), ("r2", "1 run(s), r2 to r2")]),   # two stretches: two
    ("..xx", [("r2", "2 run(s), r2 to r3")]),       # still alarming at the latest run
    ("", []),                                       # no canary runs
])
def test_each_stretch_of_canary_alarms_is_one_incident(alarms: str, expected: list) -> None:
    found = incidents.canary_incidents(canary(alarms))
    assert [(i.run_id, i.title.split("alarmed on ")[1].split(" (")[0]) for i in found] == expected
    assert all(i.kind == "canary alarm" and i.is_open and i.incident_id == f"canary:faithfulness:{i.run_id}"
               for i in found)


def lint_row(findings: str, runs: int, prompt_hash: str = "p1") -> dict:
    return {"metric": "faithfulness", "prompt_hash": prompt_hash, "reads": "answer, contexts, ground_truth",
            "findings": findings, "runs": runs, "last_run": "r2" if runs else None, "bindings": "replay"}


@pytest.mark.parametrize(("row", "expected"), [
    (lint_row("reads 'ground_truth'", 2), ["r1"]),            # a finding on a template in use: from its first run
    (lint_row("", 2), []),                                    # a clean template: nothing
    (lint_row("reads 'ground_truth'", 0), []),                # a finding on a template no run used: nothing
    (lint_row("reads 'ground_truth'", 1, "p9"), []),          # counted as used, but not in this history
])
def test_a_lint_finding_on_a_template_in_use_is_an_incident(row: dict, expected: list) -> None:
    history = pd.DataFrame({"run_id": ["r2", "r1", "r0"], "prompt_hash": ["p1", "p1", "p0"],
                            "started_at": [T0 + timedelta(days=d) for d in (2, 1, 0)]})
    found = incidents.lint_incidents(pd.DataFrame([row]), history)
    assert [i.run_id for i in found] == expected
    assert all(i.kind == "lint finding" and "reads 'ground_truth'" in i.title for i in found)


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
    # the leak also set off the canary and lint: each an open incident from the leak's run
    canaries = [i for i in found if i.kind == "canary alarm"]
    assert [i.run_id for i in canaries] == [LEAK] and all(i.is_open for i in canaries)
    linted = [i for i in found if i.kind == "lint finding"]
    assert linted and linted[0].run_id == LEAK and all("ground_truth" in i.title for i in linted)
    opened = incidents.open_first(found)
    assert [i.started_at for i in opened] == sorted(i.started_at for i in opened)
    # without evidence (the Ablation page's start and next steps): the same incidents, only what they read emptied
    with Store(db) as store:
        light, no_series = incidents.load(store, evidence=False)
    assert light == [dataclasses.replace(i, evidence=(), agreement=(), corrected=()) for i in found]
    assert no_series == [] and series and any(i.agreement or i.corrected for i in found)

    standings = standing.standing(store_history(db), found, series)   # read once for both checks below
    (faithfulness,) = [s for s in standings if s.metric == "faithfulness"]
    by_metric = {s.metric: s for s in standings}
    assert faithfulness.now == pytest.approx(0.65, abs=0.02)
    assert faithfulness.baseline == pytest.approx(0.785, abs=0.01)
    assert f"before the {PLANS[30].started_at:%Y-%m-%d} instrument change" in faithfulness.sentence
    assert "lost 0.14" in faithfulness.sentence and f"on {PLANS[58].started_at:%Y-%m-%d}" in faithfulness.sentence
    assert faithfulness.same_instrument is not None and faithfulness.same_instrument[0] == PLANS[-2].run_id
    # a metric moved by the pipeline says so; one that moved with nothing recorded is not called a change
    assert f"before the {PLANS[58].started_at:%Y-%m-%d} pipeline change" in by_metric["context_precision"].sentence
    # judge noise at 1.02x the spread-only threshold, within its paired interval: no incident, no standing
    assert "answer_relevance" not in by_metric


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
        # nothing written: the table every incident's changes are read from (incidents.load) is still empty
        assert hs.incident_states(store).empty


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
