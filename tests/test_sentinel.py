"""The judge sentinel (issue 45, A2-A3): pinned probes judged again each night, paired against their pinned
verdicts, with an e-process on the nightly disagreement; a drift marker on Trends and an incident.

The e-process's branches are a table of hand-computed rows; the loopback judge (the real openai SDK against
tests/support/openai_server.py) answers a pin and a few nights, one of them after a planted silent change (same
name, another grading rule on a share of items). Detection rates and nights to detect over many nights are
tests/benchmarks/bench_sentinel.py's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from lib.core import settings as settings_mod
from lib.core.errors import InputError
from lib.diagnosis import incidents, sentinel, watch
from lib.diagnosis.ablation import confidence_sequence
from lib.diagnosis.sentinel._eprocess import BET_CAP, bet, chernoff_bound
from lib.diagnosis.sentinel._run import night_probes
from lib.diagnosis.trends import change_events
from lib.jobs import sentinel as sj
from lib.jobs._demo import demo_samples
from lib.judging.harness import build_request
from lib.judging.openai_judge import OpenAIJudge
from lib.judging.scoring import evaluate_run
from lib.presentation.charts import CHANGE_COLOURS, trend_figure
from lib.store import Store
from lib.store import sentinel as ss
from tests.support.cli import run_cli
from tests.support.drifting_judge import DriftingResponder
from tests.support.openai_server import Fault, OpenAIServer

T0 = datetime(2026, 1, 1, 2, 0)
MODEL = "judge-x"


# -- the test, pure -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("past", "m0", "v0", "expected"), [
    ([], 0.02, 0.0, 0.0),                           # no night seen: nothing says the judge moved
    ([0.01, 0.02], 0.02, 0.0, 0.0),                 # the recent mean at or below m0: no bet
    ([0.05, 0.05], 0.02, 0.0, 1 / 0.03),            # Kelly's 1 / excess for constant nights, below the cap
    ([0.09, 0.07], 0.02, 0.0, 0.06 / ((0.0001 + 0.0001) / 3 + 0.06 ** 2)),   # the nights' spread shrinks it (< 1/0.06)
    ([0.05, 0.05], 0.02, 0.003, 0.03 / (0.001 + 0.03 ** 2)),                 # and so does the prior variance
    ([0.021, 0.021], 0.02, 0.0, BET_CAP / 0.02),    # capped: a night that agrees wholly costs at most 80% of K
    ([0.9, 0.0, 0.0], 0.02, 0.0, 0.0),              # only the last WINDOW nights are read
    ([0.5, 0.5], 0.0, 0.0, 0.0),                    # no bound to bet against
])
def test_bet_reads_the_last_nights_only(past: list[float], m0: float, v0: float, expected: float) -> None:
    assert bet(past, m0, v0) == pytest.approx(expected)


def _hand_e(ds: list[float], m0: float, n: int) -> list[float]:
    """K after each night, from the definition: K_k = K_{k-1} (1 + lambda_k (D_k - m0))."""
    v0, k, out = m0 * (1 - m0) / n, 1.0, []
    for i, d in enumerate(ds):
        k *= 1 + bet(ds[:i], m0, v0) * (d - m0)
        out.append(k)
    return out


@pytest.mark.parametrize(("ds", "drift_night"), [
    ([0.0] * 30, None),                              # an unchanged judge that repeats itself: K stays 1
    ([0.02] * 30, None),                             # nights at the bound: no bet, K stays 1
    ([0.0, 0.0, 0.10, 0.10, 0.10, 0.10, 0.10, 0.10], "7"),   # a 10% change from night 2: called on night 7
    ([0.10] * 6 + [0.0, 0.10], "5"),                          # ... and it stays called after an agreeing night
    ([0.10, 0.0] * 4, None),                                  # a change half the nights show: not in 8 nights
])
def test_e_process_calls_drift_when_k_reaches_one_over_alpha(ds: list[float], drift_night: str | None) -> None:
    m0, n = 0.02, 100
    looks = sentinel.e_process([(str(i), d) for i, d in enumerate(ds)], m0, n)
    assert [look.e_value for look in looks] == pytest.approx(_hand_e(ds, m0, n))
    first = sentinel.first_drift(looks)
    assert (first.night if first else None) == drift_night
    if first is not None:
        i = int(first.night)
        assert looks[i].e_value >= 1 / sentinel.ALPHA > max(look.e_value for look in looks[:i])
        assert all(look.drift for look in looks[i:])


def test_null_bound_is_the_tighter_of_chernoff_and_the_bernstein_sequence() -> None:
    assert sentinel.null_bound([]) == 1.0
    zeros = [0.0] * 200
    # all zeros: Chernoff's 1 - (alpha/2)^(1/n), the tighter one near 0
    assert sentinel.null_bound(zeros) == pytest.approx(1 - (sentinel.PIN_ALPHA / 2) ** (1 / 200), rel=1e-6)
    spread = [0.25] * 200   # a noisy judge's shares, all alike: the Bernstein sequence is the tighter
    _, hi = confidence_sequence(spread, alpha=sentinel.PIN_ALPHA, lower=0.0, upper=1.0)
    assert sentinel.null_bound(spread) == pytest.approx(float(hi[-1]))
    assert sentinel.null_bound(spread) < chernoff_bound(spread, sentinel.PIN_ALPHA / 2)
    assert 0.25 < sentinel.null_bound(spread) < 0.35


@pytest.mark.parametrize(("baseline", "now", "share"), [
    ([True, False, True], [True, False, True], 0.0),
    ([True, False, True, True], [True, True, True, True], 0.25),
    ([True, False], [True, False, False], 1 / 3),      # an item only one side has is a disagreement
    ([], [], 0.0),
])
def test_disagreement_is_the_share_of_items_whose_verdict_differs(baseline: list[bool], now: list[bool],
                                                                  share: float) -> None:
    assert sentinel.disagreement(baseline, now) == pytest.approx(share)


def test_each_night_has_its_own_seed_and_none_is_the_pins() -> None:
    nights = {sentinel.night_seed("pin-a", f"2026-01-{d:02d}") for d in range(1, 31)}
    pins = {sentinel.pin_seed("pin-a", k) for k in range(4)}
    assert len(nights) == 30 and len(pins) == 4 and not nights & pins
    assert sentinel.night_seed("pin-a", "2026-01-01") == sentinel.night_seed("pin-a", "2026-01-01")
    assert sentinel.night_seed("pin-a", "2026-01-01") != sentinel.night_seed("pin-b", "2026-01-01")


# -- the loopback judge ---------------------------------------------------------------------------------------------
@pytest.fixture
def responder() -> DriftingResponder:
    return DriftingResponder()


@pytest.fixture
def server(responder: DriftingResponder) -> Iterator[OpenAIServer]:
    with OpenAIServer(responder) as srv:
        srv.served_model = "judge-x-0613"
        yield srv


def _judge(server: OpenAIServer) -> OpenAIJudge:
    return OpenAIJudge(MODEL, base_url=server.base_url, api_key="sk-test", timeout=5.0, sleep=lambda s: None)


def _store_with_run(server: OpenAIServer, path: Path, n: int = 16) -> Store:
    store = Store(path)
    judge = _judge(server)
    try:
        run = evaluate_run("r1", [d.sample for d in demo_samples()[0][:n]], judge, metrics=["faithfulness"],
                           cache=store, started_at=T0, pipeline={"retriever": {"top_k": 3}})
    finally:
        judge.close()
    store.flush_cache()
    store.record_run(run)
    return store


def _calls(server: OpenAIServer) -> int:
    return len(server.requests)


def test_a_night_is_judged_fresh_then_answered_by_its_own_replies_and_sees_a_planted_change(
        server: OpenAIServer, responder: DriftingResponder, tmp_path: Path) -> None:
    store = _store_with_run(server, tmp_path / "s.duckdb")
    judge = _judge(server)
    before = _calls(server)
    p = sentinel.pin(store, judge, "faithfulness", size=10, repeats=1, at=T0 + timedelta(hours=1))
    ids = [s.sample_id for s in p.probes]   # doc-0013 has an empty answer: excluded before any call, not pinned
    assert len(ids) == 9 and "doc-0013" not in ids
    assert _calls(server) - before == 18 == p.row.calls   # baseline + 1 repeat, once
    assert p.row.repeat_share == 0.0 and p.row.served_model == "judge-x-0613"
    # no reply the run's judging left in the cache answers the pin: its seeds are its own
    base_keys = {build_request(s, p.instrument, MODEL, judge.endpoint, 0)[0].key for s in p.probes}  # type: ignore[union-attr]
    assert len(base_keys) == 9

    before = _calls(server)
    st = sentinel.run_night(store, judge, night="n1", at=T0 + timedelta(days=1))
    n1 = st.night("n1")
    assert n1 is not None and (n1.calls, n1.cached, n1.disagreement) == (9, 0, 0.0)
    assert _calls(server) - before == 9                        # not answered by the baseline's replies
    assert sentinel.night_calls(store, judge, p, "n1") == (0, 9)
    sentinel.run_night(store, judge, night="n1", at=T0 + timedelta(days=1))
    again = sentinel.status(store).night("n1")
    assert _calls(server) - before == 9 and again is not None and (again.calls, again.cached) == (0, 9)

    responder.share = 0.3                                      # same name, another rule on 30% of the items
    server.served_model = "judge-x-1106"
    before = _calls(server)
    st = sentinel.run_night(store, judge, night="n2", at=T0 + timedelta(days=2))
    n2 = st.night("n2")
    assert n2 is not None and n2.calls == 9 and _calls(server) - before == 9
    planted = []
    for s in p.probes:   # the changed items, read from the rule itself over the pinned prompts
        request, items = build_request(s, p.instrument, MODEL, judge.endpoint, 0)
        assert request is not None
        planted.append(sum(responder.changed(request.messages[-1].content, k) for k in range(1, len(items) + 1))
                       / len(items))
    assert n2.disagreement == pytest.approx(sum(planted) / len(planted)) and n2.disagreement > 0.1
    assert n2.served_model == "judge-x-1106"
    assert st.looks[-1].bet == 0.0 and st.drift is None        # one changed night is no evidence yet: no bet on it
    judge.close()
    store.close()


def _synthetic_nights(store: Store, p: sentinel.Pin, ds: list[float | None], start: datetime) -> None:
    for i, d in enumerate(ds):
        ss.put_night(store, ss.NightRow(p.row.pin_id, f"2026-01-{i + 2:02d}", 1, 10, 0 if d is not None else 10, 10,
                                        0, d, "{}", "judge-x-1106", start + timedelta(days=i)))


def test_drift_puts_a_marker_on_trends_and_opens_an_incident(server: OpenAIServer, tmp_path: Path) -> None:
    store = _store_with_run(server, tmp_path / "s.duckdb", n=12)
    judge = _judge(server)
    p = sentinel.pin(store, judge, "faithfulness", size=10, repeats=2, at=T0 + timedelta(hours=1))
    judge.close()
    _synthetic_nights(store, p, [0.0, None] + [0.6] * 8, T0 + timedelta(days=1))
    st = sentinel.status(store)
    assert st.drift is not None and len(st.looks) == 9          # the failed night is recorded, not counted
    drift_row = st.night(st.drift.night)
    assert drift_row is not None

    events = sentinel.drift_events(store)
    assert list(events["kind"]) == ["judge drift"] and list(events["run_id"]) == ["r1"]
    assert events["started_at"].iloc[0] == drift_row.judged_at
    assert events["text"].iloc[0].startswith("the judge changed, the system did not: faithfulness judge judge-x")

    history = store.metric_history()   # what Trends draws: the recorded changes and the drift, on the chart
    marks = sentinel.with_drift(change_events(history), store)
    fig = trend_figure(history[history["metric"] == "faithfulness"], metric="faithfulness", events=marks)
    changes = [t for t in fig.data if t.name == "recorded change"]
    assert len(changes) == 1 and list(changes[0].customdata) == ["r1"]
    assert changes[0].marker.color == (CHANGE_COLOURS["judge drift"],)
    assert changes[0].text[0].startswith("judge drift: the judge changed, the system did not")

    found, _ = incidents.load(store)
    drift = [i for i in found if i.kind == "judge drift"]
    assert len(drift) == 1 and drift[0].is_open and drift[0].run_id == "r1"
    assert drift[0].title == events["text"].iloc[0]
    assert any("served judge-x-1106 (pinned: judge-x-0613)" in line for line in drift[0].evidence)
    # the watcher reads incidents: it announces the drift with no change of its own
    told = [e.headline for e in watch.events(watch.observe(store, T0 + timedelta(days=12)), set()).events]
    assert told == [f"faithfulness judge drift at r1: {drift[0].title}"]
    store.close()


def test_a_budget_judges_a_fresh_seeded_subset_each_night(server: OpenAIServer, tmp_path: Path) -> None:
    store = _store_with_run(server, tmp_path / "s.duckdb", n=12)
    judge = _judge(server)
    p = sentinel.pin(store, judge, "faithfulness", size=12, repeats=1, at=T0)
    one, two = night_probes(p, "n1", 5), night_probes(p, "n2", 5)
    assert len(one) == len(two) == 5 and one != two and night_probes(p, "n1", 5) == one
    st = sentinel.run_night(store, judge, night="n1", budget=5, at=T0 + timedelta(days=1))
    n1 = st.night("n1")
    assert n1 is not None and (n1.judged, n1.calls) == (5, 5)
    with pytest.raises(InputError, match="pinned to judge"):
        sentinel.run_night(store, _other_judge(server), night="n2")
    # the watcher's hook: a paid judge's night is skipped with no budget, and judged within one
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
    out = sj.due_nights(store, settings_mod.load(env), at=T0 + timedelta(days=2))
    assert [o.skipped.split(" is paid")[0] for o in out] == ["judge judge-x"]
    out = sj.due_nights(store, settings_mod.load({**env, "EVALDRIFT_CALL_BUDGET": "4"}), at=T0 + timedelta(days=2))
    night = out[0].status.night("2026-01-03") if out[0].status else None
    assert night is not None and (night.judged, night.calls) == (4, 4)
    assert sj.due_nights(store, settings_mod.load({**env, "EVALDRIFT_CALL_BUDGET": "4"}),
                         at=T0 + timedelta(days=2)) == []            # judged once a night
    judge.close()
    store.close()


def _other_judge(server: OpenAIServer) -> OpenAIJudge:
    return OpenAIJudge("judge-y", base_url=server.base_url, api_key="sk-test", timeout=5.0, sleep=lambda s: None)


def test_the_command_line_pins_judges_a_night_and_exits_1_on_drift(server: OpenAIServer, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    _store_with_run(server, db, n=12).close()
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test", "PATH": "/usr/bin:/bin"}
    refused = run_cli("sentinel", "pin", "--db", db, "--metric", "faithfulness", "--probes", "6", "--repeats", "1",
                      env=env)
    assert refused.returncode == 2 and "makes 12 calls to judge-x" in refused.stderr and "--yes" in refused.stderr
    done = run_cli("sentinel", "pin", "--db", db, "--metric", "faithfulness", "--probes", "6", "--repeats", "1",
                   "--yes", env=env)
    assert done.returncode == 0, done.stderr
    assert "6 probes" in done.stdout and "Each night costs 6 calls" in done.stdout
    night = run_cli("sentinel", "night", "--db", db, "--night", "2026-01-02", "--yes", "--json", env=env)
    assert night.returncode == 0, night.stderr
    assert night.stdout.splitlines()[0] == "night 2026-01-02: 6 probes, 6 calls (0 answered by the call cache)"
    body = json.loads(night.stdout.split("\n", 1)[1])
    assert body["exit_code"] == 0 and body["nights"][0]["disagreement"] == 0.0 and not body["drift"]
    with Store(db) as store:
        _synthetic_nights(store, sentinel.current_pin(store), [0.0] + [1.0] * 12, T0)
    status = run_cli("sentinel", "status", "--db", db, env=env)
    assert status.returncode == 1 and "JUDGE DRIFT on night" in status.stdout
    assert "the judge changed, the system did not" in status.stdout


def _null_nights(seed: int, m0_from=sentinel.null_bound, n: int = 100, items: int = 4, eps: float = 0.03,
                 nights: int = 90) -> bool:
    """One unchanged noisy judge, simulated at the verdict level: does the sentinel ever call drift?"""
    rng = np.random.default_rng(seed)
    base = rng.random((n, items)) < eps

    def night() -> np.ndarray:
        return ((rng.random((n, items)) < eps) ^ base).mean(axis=1)

    m0 = m0_from([float(x) for _ in range(sentinel.REPEATS) for x in night()])
    looks = sentinel.e_process([(str(k), float(night().mean())) for k in range(nights)], m0, n)
    return sentinel.first_drift(looks) is not None


def test_an_unchanged_noisy_judge_raises_no_alarm_in_20_histories_of_90_nights() -> None:
    assert sum(_null_nights(seed) for seed in range(20)) == 0
    # the bound is what holds it: tested against the pin's plain mean instead, 4 of the same 20 histories alarm
    assert sum(_null_nights(seed, m0_from=lambda xs: sum(xs) / len(xs)) for seed in range(20)) >= 3


def test_a_night_whose_probes_fail_is_recorded_not_counted_and_resumed(server: OpenAIServer, tmp_path: Path) -> None:
    store = _store_with_run(server, tmp_path / "s.duckdb", n=8)
    judge = _judge(server)
    p = sentinel.pin(store, judge, "faithfulness", size=8, repeats=1, at=T0)
    server.fail_always(Fault("400"))          # the server refuses every call: faults, never scored 0 or 1
    st = sentinel.run_night(store, judge, night="n1", at=T0 + timedelta(days=1))
    n1 = st.night("n1")
    assert n1 is not None and n1.failed == len(p.probes) and n1.disagreement is None and st.looks == ()
    server.fail_always(None)
    before = len(server.requests)
    st = sentinel.run_night(store, judge, night="n1", at=T0 + timedelta(days=1))   # run again: asked again, counted
    n1 = st.night("n1")
    assert n1 is not None and (n1.failed, n1.disagreement) == (0, 0.0) and len(st.looks) == 1
    assert len(server.requests) - before == len(p.probes)
    judge.close()
    store.close()
