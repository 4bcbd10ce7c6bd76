"""The watcher's core (lib.diagnosis.watch): which messages one look sends, with the cause first, on small
histories built here (tests/support/watch_history.py), and nothing a second time."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from lib.core.cadence import missing_run
from lib.core.records import CANARY
from lib.diagnosis import incidents
from lib.diagnosis.watch import (
    CLOSE,
    FAILURES,
    INSTRUMENT,
    MISSING,
    NEW,
    UPDATE,
    AblationVerdict,
    Decision,
    FailureShare,
    Observation,
    events,
    failures_rising,
    observe,
)
from lib.store import Store
from tests.support.watch_history import EDITED, LEAKY, at, history, night, run_id

FLAT = [0.70] * 12   # twelve quiet nights: the run-to-run spread is measured by the end


def _look(store: Store, seen: set[str], when: datetime, **kw: bool) -> Decision:
    decision = events(observe(store, when), seen, **kw)
    seen.update(k for e in decision.events for k, _ in e.facts)
    seen.update(k for k, _ in decision.silent)
    return decision


Case = Callable[[Store, set[str]], Decision]


def _flat(case: Case) -> Case:
    """A case that starts from FLAT's twelve quiet nights, already looked at once (the `flat` fixture's copy)."""
    case.flat = True  # type: ignore[attr-defined]
    return case


@pytest.fixture(scope="module")
def _flat_built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, frozenset[str]]:
    path = tmp_path_factory.mktemp("flat") / "flat.duckdb"
    seen: set[str] = set()
    with Store(path) as store:
        history(store, FLAT)
        _look(store, seen, at(11.5))
    return path, frozenset(seen)


def _store_for(case: Case, built: tuple[Path, frozenset[str]], tmp_path: Path) -> tuple[Store, set[str]]:
    if getattr(case, "flat", False):
        return Store(shutil.copy(built[0], tmp_path / "h.duckdb")), set(built[1])
    return Store(":memory:"), set()


@_flat
def _pipeline_jump(store: Store, seen: set[str]) -> Decision:
    night(store, 12, 0.45, pipeline={"retriever": "v2"})
    return _look(store, seen, at(12.5))


@_flat
def _unexplained_jump(store: Store, seen: set[str]) -> Decision:
    night(store, 12, 0.95)
    return _look(store, seen, at(12.5))


@_flat
def _leak(store: Store, seen: set[str]) -> Decision:
    night(store, 12, 0.92, template=LEAKY, binding="replay")
    return _look(store, seen, at(12.5))


def _leak_fixed(store: Store, seen: set[str]) -> Decision:
    history(store, FLAT)
    for d in range(12, 16):
        night(store, d, 0.92, template=LEAKY, binding="replay")
    _look(store, seen, at(15.5))
    night(store, 16, 0.70)
    return _look(store, seen, at(16.5))


@_flat
def _judge_changed(store: Store, seen: set[str]) -> Decision:
    night(store, 12, 0.70, judge_model="gpt-judge-2")
    return _look(store, seen, at(12.5))


@_flat
def _prompt_edited(store: Store, seen: set[str]) -> Decision:
    night(store, 12, 0.71, template=EDITED)
    return _look(store, seen, at(12.5))


@_flat
def _lint_without_jump(store: Store, seen: set[str]) -> Decision:
    night(store, 12, 0.70, template=LEAKY, binding="replay")
    return _look(store, seen, at(12.5))


@_flat
def _missing(store: Store, seen: set[str]) -> Decision:
    return _look(store, seen, at(13.0))


@_flat
def _on_time(store: Store, seen: set[str]) -> Decision:
    return _look(store, seen, at(12.4))


@_flat
def _failures(store: Store, seen: set[str]) -> Decision:
    night(store, 12, 0.70, failed=8)
    return _look(store, seen, at(12.5))


@_flat
def _closed_by_team(store: Store, seen: set[str]) -> Decision:
    _pipeline_jump(store, seen)
    incidents.set_state(store, "jump:faithfulness:night-012", incidents.STATES[2], note="new retriever", user="ana")
    return _look(store, seen, at(12.6))


@_flat
def _rejudged(store: Store, seen: set[str]) -> Decision:
    from lib.diagnosis.rejudge import RejudgeSpec, run_rejudge
    from lib.judging import OfflineJudge
    from tests.support.watch_history import DEFAULT

    _leak(store, seen)
    spec = RejudgeSpec("faithfulness", tuple(run_id(d) for d in range(10, 13)), DEFAULT, "projected")
    run_rejudge(store, spec, OfflineJudge("offline-lexical-v2"))
    return _look(store, seen, at(12.7))


@_flat
def _verdict(store: Store, seen: set[str]) -> Decision:
    _leak(store, seen)
    obs = observe(store, at(12.7))
    obs = replace(obs, verdicts=(AblationVerdict("abl-1", run_id(12), "LEAK: faithfulness moves -0.210 when "
                                                                         "ground_truth is blanked"),))
    return events(obs, seen)


def _canary(store: Store, seen: set[str]) -> Decision:
    for d in range(12):
        night(store, d, 0.30, suite=CANARY)
    _look(store, seen, at(11.5))
    night(store, 12, 0.85, suite=CANARY)
    return _look(store, seen, at(12.5))


def _step(size: float, **kw: object) -> Case:
    @_flat
    def case(store: Store, seen: set[str]) -> Decision:
        night(store, 12, 0.70 + size, **kw)  # type: ignore[arg-type]
        return _look(store, seen, at(12.5))

    case.__name__ = f"_step_{size}_{'_'.join(kw) or 'unexplained'}"
    return case


def _early_unexplained_jump(store: Store, seen: set[str]) -> Decision:
    history(store, [0.70] * 3)
    _look(store, seen, at(2.5), first_look=True)
    night(store, 3, 0.95)   # decided by the paired interval alone: the spread is not measured yet
    return _look(store, seen, at(3.5))


def _early_pipeline_jump(store: Store, seen: set[str]) -> Decision:
    history(store, [0.70] * 3)
    _look(store, seen, at(2.5), first_look=True)
    night(store, 3, 0.45, pipeline={"retriever": "v2"})
    return _look(store, seen, at(3.5))


CASES = [
    # (case, the kinds sent, words the first message's first line holds)
    (_pipeline_jump, [NEW], ["faithfulness -0.2", "on night-012", "the system changed",
                             "the pipeline changed that night (retriever: v1 -> v2)"]),
    (_unexplained_jump, [NEW], ["faithfulness +0.2", "nothing recorded changed that night"]),
    (_early_unexplained_jump, [], []),   # held back until the run-to-run spread is measured
    (_step(0.06), [], []),               # 1.46x its threshold, nothing recorded changed: likely noise, held back
    (_step(0.06, pipeline={"retriever": "v2"}), [NEW], ["faithfulness +0.0", "the pipeline changed"]),
    (_step(0.08), [NEW], ["faithfulness +0.1", "nothing recorded changed"]),   # 1.79x
    (_early_pipeline_jump, [NEW], ["faithfulness -0.2", "the pipeline changed that night"]),
    (_leak, [NEW], ["faithfulness +0.2", "the measurement changed",
                    "the faithfulness judge's prompt changed that night and now reads ground_truth"]),
    (_leak_fixed, [CLOSE], ["faithfulness -0.2", "on night-016", "episode opened on 2026-09-13",
                            "is reversed", "no longer reads ground_truth"]),
    (_judge_changed, [INSTRUMENT], ["the measurement changed on night-012", "within noise",
                                    "jump threshold ±0.0"]),
    (_prompt_edited, [INSTRUMENT], ["the measurement changed on night-012", "faithfulness +0.0", "within noise"]),
    (_lint_without_jump, [NEW], ["lint finding at night-012", "the faithfulness judge's prompt changed that night "
                                 "and reads ground_truth, which faithfulness must never receive", "within noise"]),
    (_missing, [MISSING], ["no run since night-011", "runs came every 24 h"]),
    (_on_time, [], []),
    (_failures, [FAILURES], ["failed or unreadable replies are rising on night-012", "8/40 (20%, was 0%)"]),
    (_closed_by_team, [CLOSE], ["closed: explained as system change (ana): new retriever"]),
    (_rejudged, [UPDATE], ["the re-judge answered", "no step beyond"]),
    (_verdict, [UPDATE], ["ablation of night-012: LEAK: faithfulness moves -0.210"]),
    (_canary, [NEW], ["canary alarm at night-012", "canary faithfulness alarmed on 1 run(s)"]),
]


# each case's decision, as the test below made it: the tests after it read the same look's messages again
# rather than record and look again (each alone makes its own)
_DECIDED: dict[str, Decision] = {}


def _decided(case: Case, built: tuple[Path, frozenset[str]], tmp_path: Path) -> Decision:
    if case.__name__ not in _DECIDED:
        _DECIDED[case.__name__] = case(*_store_for(case, built, tmp_path))
    return _DECIDED[case.__name__]


@pytest.mark.parametrize(("case", "kinds", "words"), CASES, ids=[c[0].__name__.strip("_") for c in CASES])
def test_one_look_sends_what_is_new_with_the_cause_first(case: Case, kinds: list[str], words: list[str],
                                                        _flat_built: tuple[Path, frozenset[str]], tmp_path: Path):
    store, seen = _store_for(case, _flat_built, tmp_path)
    decision = _DECIDED[case.__name__] = case(store, seen)
    assert [e.kind for e in decision.events] == kinds, [e.headline for e in decision.events]
    if words:
        first_line = decision.events[0].text().splitlines()[0]
        for w in words:
            assert w in first_line, first_line
    # and the next look sends none of it again
    again = events(observe(store, decision.events[0].at if decision.events else at(12.5)),
                   seen | {k for e in decision.events for k, _ in e.facts} | {k for k, _ in decision.silent})
    assert [e for e in again.events if e.kind != MISSING] == []


def test_the_leak_message_tells_the_lint_finding_and_the_instrument_change_inside_it(
        _flat_built: tuple[Path, frozenset[str]], tmp_path: Path):
    (e,) = _decided(_leak, _flat_built, tmp_path).events
    kinds = {k.split(":")[0] for k, _ in e.facts}
    assert kinds == {"incident", "instrument"}   # the jump and the lint finding (incidents), the prompt change
    assert any("lint finding: faithfulness prompt" in line for line in e.evidence)
    assert any(line.startswith("suspect prompt:") for line in e.evidence)
    assert "jump threshold" in "\n".join(e.evidence)


def test_a_message_links_to_its_run_and_carries_its_key(_flat_built: tuple[Path, frozenset[str]], tmp_path: Path):
    (e,) = _decided(_pipeline_jump, _flat_built, tmp_path).events
    text = e.text("https://evaldrift.example/")
    assert "Open: https://evaldrift.example/run?run=night-012&metric=faithfulness" in text
    assert text.splitlines()[-1] == f"evaldrift-key: {e.key}"
    assert "Open:" not in e.text(None)


def test_the_first_look_announces_only_what_is_open():
    store = Store(":memory:")
    history(store, FLAT)
    night(store, 12, 0.70, judge_model="gpt-judge-2")           # an instrument change long past
    for d in range(13, 16):
        night(store, d, 0.92, template=LEAKY, binding="replay", judge_model="gpt-judge-2")
    night(store, 16, 0.70, judge_model="gpt-judge-2")           # a leak in and out: a closed episode
    for d in range(17, 20):
        night(store, d, 0.70, judge_model="gpt-judge-2")
    night(store, 20, 0.40, judge_model="gpt-judge-2", pipeline={"retriever": "v2"})   # open
    first = events(observe(store, at(20.5)), set(), first_look=True)
    assert [(e.kind, e.run_id) for e in first.events if e.kind == NEW and "jump" in e.key] == \
        [(NEW, "night-013"), (NEW, "night-020")]   # both still open (nobody explained the episode)
    assert not [e for e in first.events if e.kind in (INSTRUMENT, CLOSE)]
    assert ("instrument:night-012:faithfulness:judge model", INSTRUMENT) in first.silent
    # not the first look: the past instrument change is news
    later = events(observe(store, at(20.5)), set(), first_look=False)
    assert any(e.kind == INSTRUMENT and e.run_id == "night-012" for e in later.events)


NOW = datetime(2026, 9, 20, 2, 0)


def _times(n: int, every: timedelta) -> tuple[tuple[str, datetime], ...]:
    return tuple((f"r{k}", NOW - every * (n - 1 - k)) for k in range(n))


@pytest.mark.parametrize(("n", "every", "since", "missing"), [
    (10, timedelta(days=1), timedelta(hours=37), True),    # 1.54 cadences: missing
    (10, timedelta(days=1), timedelta(hours=35), False),   # 1.46 cadences: not yet
    (4, timedelta(days=1), timedelta(days=5), False),      # too few runs to learn a cadence
    (10, timedelta(hours=1), timedelta(hours=2), True),    # an hourly cadence, learned
    (10, timedelta(0), timedelta(days=5), False),          # runs all at one time: no cadence
])
def test_a_run_is_missing_past_one_and_a_half_cadences(n: int, every: timedelta, since: timedelta, missing: bool):
    found = missing_run(_times(n, every), NOW + since)
    assert (found is not None) == missing
    if missing:
        assert found is not None and found[0] == f"r{n - 1}" and found[1] == every


def _share(failed: int, judged: int, baseline: float | None) -> FailureShare:
    return FailureShare("faithfulness", "r1", NOW, judged, failed, baseline)


@pytest.mark.parametrize(("share", "rising"), [
    (_share(8, 40, 0.0), True),      # 20% against 0%
    (_share(2, 40, 0.0), False),     # fewer than 3 failures
    (_share(8, 40, None), False),    # no earlier run to compare with
    (_share(9, 40, 0.19), False),    # 22.5% against 19%: less than 5 points more
    (_share(12, 40, 0.2), False),    # 30% against 20%: 10 points more but not twice
    (_share(16, 40, 0.2), True),     # 40% against 20%
])
def test_failed_judgings_rise_by_count_points_and_ratio(share: FailureShare, rising: bool):
    assert failures_rising(share) == rising


def test_an_absence_is_no_event():
    assert events(Observation(now=NOW), {"incident:x"}).events == ()
