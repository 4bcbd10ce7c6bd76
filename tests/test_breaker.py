"""A job's circuit breaker and deadline (issue 9 item 9): a judge that fails every call stops the job, says why,
and leaves it to resume; nothing is scored from a call that was not answered."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lib.core.errors import InputError
from lib.core.results import CALL_FAILED, OK
from lib.core.settings import load
from lib.diagnosis.ablation import AblationSpec
from lib.jobs import STOPPED, JobRunner, job_log, run_guarded
from lib.judging.breaker import Breaker, Limits, trips
from lib.judging.openai_judge import OpenAIJudge
from lib.store import Store
from tests.conftest import offline_responder
from tests.support.cli import run_cli
from tests.support.openai_server import Fault, OpenAIServer
from tests.support.reliability_support import ROOT, child_env, copy_db, mini_demo, mini_demo_run_ids

MODEL = "evaldrift-test-model"
CAP = 20.0   # OpenAIJudge max_backoff: the longest one wait, Retry-After included


# -- the rule ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("limits", "in_a_row", "failed", "total", "elapsed", "rule"), [
    (Limits(10, None), 0, 0, 100, 5.0, None),                   # nothing wrong
    (Limits(10, None), 9, 9, 100, 5.0, None),                   # one short of the run
    (Limits(10, None), 10, 10, 100, 5.0, "consecutive"),        # the run of failures
    (Limits(0, None), 50, 19, 100, 5.0, None),                  # the run rule off, the share not reached
    (Limits(10, None), 3, 20, 100, 5.0, None),                  # exactly the share: a cell could still decide
    (Limits(10, None), 3, 21, 100, 5.0, "share"),               # beyond it: the result would be INCONCLUSIVE
    (Limits(10, None), 3, 21, 0, 5.0, None),                    # no total known yet: no share
    (Limits(10, 60.0), 0, 0, 100, 59.9, None),                  # before the deadline
    (Limits(10, 60.0), 0, 0, 100, 60.0, "deadline"),            # at the deadline
    (Limits(10, 60.0), 10, 30, 100, 61.0, "deadline"),          # the deadline named first
])
def test_which_rule_stops_a_job(limits: Limits, in_a_row: int, failed: int, total: int, elapsed: float,
                                rule: str | None) -> None:
    assert trips(limits, in_a_row=in_a_row, failed=failed, total=total, elapsed=elapsed) == rule


def test_an_answer_ends_a_run_of_failures() -> None:
    said: list[str] = []
    breaker = Breaker(Limits(3, None), lambda: 1000, on_trip=said.append)
    for ok in (False, False, True, False, False, True, False, False):
        breaker.record(ok, "rate limited (429)")
    assert not breaker.tripped and said == []
    breaker.record(False, "rate limited (429), after 4 attempts")
    assert breaker.tripped
    assert said == ["stopped after 3 judge calls failed in a row (the last: rate limited (429), after 4 attempts)"]


@pytest.mark.parametrize(("environ", "failures", "deadline"), [
    ({}, 10, None),
    ({"EVALDRIFT_BREAKER_FAILURES": "0", "EVALDRIFT_JOB_DEADLINE": "90"}, 0, 90.0),
    ({"EVALDRIFT_JOB_DEADLINE": "0.5"}, 10, 0.5),
])
def test_the_settings_name_the_limits(environ: dict[str, str], failures: int, deadline: float | None) -> None:
    limits = Limits.from_settings(load(environ))
    assert (limits.failures, limits.deadline) == (failures, deadline)


@pytest.mark.parametrize(("name", "value"), [("EVALDRIFT_JOB_DEADLINE", "inf"), ("EVALDRIFT_JOB_DEADLINE", "-3"),
                                             ("EVALDRIFT_JOB_DEADLINE", "soon"), ("EVALDRIFT_BREAKER_FAILURES", "-1"),
                                             ("EVALDRIFT_BREAKER_FAILURES", "ten")])
def test_a_bad_limit_setting_is_refused_naming_it(name: str, value: str) -> None:
    with pytest.raises(InputError, match=name):
        load({name: value})


# -- jobs against failing servers -------------------------------------------------------------------------
@pytest.fixture
def db(tmp_path: Path) -> Path:
    return copy_db(mini_demo(), tmp_path / "team.duckdb")


def spec_on(server: OpenAIServer, **kw: object) -> AblationSpec:
    # every sample judged: the failure shares below are of the plan's fixed total
    options: dict[str, object] = {"repeats": 2, "limit": 30, "sequential": False, **kw}
    return AblationSpec(mini_demo_run_ids()[1], ("faithfulness",), ("ground_truth",), judge=MODEL,
                        endpoint=server.base_url, **options)  # type: ignore[arg-type]


def judge_on(server: OpenAIServer, **options: object) -> OpenAIJudge:
    options.setdefault("timeout", 2.0)
    return OpenAIJudge(MODEL, base_url=server.base_url, api_key="sk-test", **options)  # type: ignore[arg-type]


def no_unanswered_scores(store: Store, aid: str) -> None:
    """What a stopped job keeps: answered judgings only; no failed call stays to be counted, none is scored."""
    frame = store.ablation_results(aid)
    assert not frame["reason"].fillna("").str.startswith(CALL_FAILED).any()
    assert frame[frame["status"] != OK]["score"].isna().all()


def test_an_always_429_server_with_a_huge_retry_after_stops_within_the_deadline(db: Path) -> None:
    """A Retry-After of a billion seconds, waited 20 s (the cap) at a time before, with 4 attempts a call; the job
    deadline ends the waits, and Resume finishes the job once the server answers again."""
    with OpenAIServer(offline_responder) as server, Store(db) as store:
        server.fail_always(Fault("429", retry_after=1e9))
        spec = spec_on(server)
        begun = time.monotonic()
        outcome = run_guarded(store, spec, judge_on(server), limits=Limits(failures=1000, deadline=1.5))
        took = time.monotonic() - begun
        assert outcome.result is None
        # without the deadline each attempt waits the judge's cap (max_backoff, 20 s): a stop before one such wait
        # is the deadline's, however busy the machine (CI runs at load 6-10)
        assert took < CAP - 2, f"stopped {took:.1f} s after its start, past its 1.5 s deadline"
        assert outcome.stopped.startswith("stopped at the job's deadline of 1.5 s (EVALDRIFT_JOB_DEADLINE)")
        row = store.ablation(spec.ablation_id)
        assert row is not None and row["status"] == STOPPED and row["result"] is None
        assert job_log.read(store, spec.ablation_id).reason == outcome.stopped  # type: ignore[union-attr]
        no_unanswered_scores(store, spec.ablation_id)
        runner = JobRunner(store, lambda s: judge_on(server))
        status = runner.status(spec.ablation_id)
        runner.shutdown()
        assert (status.state, status.reason) == (STOPPED, outcome.stopped)

        server.fail_always(None)    # the server answers again: Resume does the rest
        resumed = run_guarded(store, spec, judge_on(server), limits=Limits(deadline=60.0))
        assert resumed.result is not None and resumed.result.failures == {}
        row = store.ablation(spec.ablation_id)
        assert row["status"] == "done" and row["done"] == row["total"]  # type: ignore[index]
        assert resumed.judge.output_mode == "json_schema" and resumed.judge.pacing is not None


def test_an_always_429_server_with_an_infinite_retry_after_stops_at_once(db: Path) -> None:
    """Retry-After: inf is "never": each call fails at its first attempt, and the breaker stops the job with the
    default limits long before the deadline (waited on 20 s at a time forever before)."""
    with OpenAIServer(offline_responder) as server, Store(db) as store:
        server.fail_always(Fault("429", retry_after=float("inf")))
        spec = spec_on(server)
        begun = time.monotonic()
        outcome = run_guarded(store, spec, judge_on(server), limits=Limits(deadline=120.0))
        assert time.monotonic() - begun < CAP - 2   # no wait at the cap (20 s a time before), whatever the load
        assert outcome.stopped.startswith("stopped after 10 judge calls failed in a row (the last: rate limited "
                                          "(429), the server asks to wait forever (Retry-After: inf))")
        assert server.n_calls <= 10 + 8     # one attempt a call: the failed ones and those in flight
        no_unanswered_scores(store, spec.ablation_id)


def test_a_run_of_failed_calls_stops_the_job_after_the_setting(db: Path) -> None:
    with OpenAIServer(offline_responder) as server, Store(db) as store:
        server.fail_always(Fault("429", retry_after=0))
        spec = spec_on(server)
        outcome = run_guarded(store, spec, judge_on(server, max_attempts=2, concurrency=4),
                              limits=Limits(failures=5))
        assert outcome.result is None
        assert outcome.stopped.startswith("stopped after 5 judge calls failed in a row (the last: rate limited "
                                          "(429), after 2 attempts)")
        # bounded: the failed calls, and at most the calls in flight when it tripped, each with its attempts
        assert server.n_calls <= (5 + 4) * 2
        assert store.ablation(spec.ablation_id)["status"] == STOPPED  # type: ignore[index]
        no_unanswered_scores(store, spec.ablation_id)


def test_failures_beyond_the_inconclusive_share_stop_the_job(db: Path) -> None:
    with Store(db) as store:
        samples = [s for s in store.samples(mini_demo_run_ids()[1])[:30] if s.answer.strip()]
    doomed = {s.answer.split(".")[0] for s in samples[::3]}    # a third of the samples fail, never two in a row

    def responder(body: dict) -> str:
        if any(d in body["messages"][-1]["content"] for d in doomed):
            raise RuntimeError("scripted outage for this sample")
        return offline_responder(body)

    with OpenAIServer(responder) as server, Store(db) as store:
        spec = spec_on(server)
        # the failures-in-a-row rule out of the way (the positive control's judgings of the doomed samples come
        # together, in a row): the share decides
        outcome = run_guarded(store, spec, judge_on(server, max_attempts=1, concurrency=1),
                              limits=Limits(failures=1000))
        assert outcome.result is None
        total = store.ablation(spec.ablation_id)["total"]  # type: ignore[index]
        assert outcome.stopped.startswith(f"stopped: {int(0.2 * total) + 1} judge calls failed, more than 20% of "
                                          f"the job's {total} judgings, so its result would be INCONCLUSIVE")
        no_unanswered_scores(store, spec.ablation_id)


def test_the_dashboards_runner_stops_a_job_by_the_operators_limits(db: Path) -> None:
    with OpenAIServer(offline_responder) as server, Store(db) as store:
        server.fail_always(Fault("429", retry_after=0))
        spec = spec_on(server)
        runner = JobRunner(store, lambda s: judge_on(server, max_attempts=1), limits=lambda: Limits(failures=3))
        try:
            runner.submit(spec)
            assert runner.wait(spec.ablation_id, timeout=60) is None
            status = runner.status(spec.ablation_id)
        finally:
            runner.shutdown()
    assert status.state == STOPPED
    assert status.reason.startswith("stopped after 3 judge calls failed in a row (the last: rate limited (429)")


def test_the_cli_says_why_the_job_stopped_and_exits_inconclusive(db: Path) -> None:
    with OpenAIServer(offline_responder) as server:
        server.fail_always(Fault("429", retry_after=1e9))
        env = child_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test", EVALDRIFT_JOB_DEADLINE="1",
                        EVALDRIFT_JUDGE_TIMEOUT="2")
        proc = run_cli("ablate", "--db", db, "--run", mini_demo_run_ids()[1], "--metric", "faithfulness", "--blank",
                       "ground_truth", "--judge", "openai", "--model", MODEL, "--limit", "10", "--yes", env=env)
    assert proc.returncode == 3, proc.stderr
    assert "stopped at the job's deadline of 1 s (EVALDRIFT_JOB_DEADLINE)" in proc.stderr
    assert "run the same command to resume" in proc.stderr
    with OpenAIServer(offline_responder) as server:   # the JSON a CI job reads says why as well
        server.fail_always(Fault("500"))
        env = child_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test", EVALDRIFT_BREAKER_FAILURES="3")
        proc = run_cli("ablate", "--db", db, "--run", mini_demo_run_ids()[1], "--metric", "faithfulness", "--blank",
                       "ground_truth", "--judge", "openai", "--model", MODEL, "--limit", "10", "--yes", "--json",
                       env=env)
    out = json.loads(proc.stdout)
    assert proc.returncode == out["exit_code"] == 3
    assert out["stopped"].startswith("stopped after 3 judge calls failed in a row (the last: server error (500)")


# -- the Ablation page -------------------------------------------------------------------------------------
def open_ablation(ablation_id: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/ablation.py")
    at.query_params.update({"ablation": ablation_id})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def unescaped(elements) -> list[str]:
    return [re.sub(r"\\(.)", r"\1", e.value) for e in elements]


def test_the_ablation_page_says_why_a_job_stopped_offers_resume_and_shows_the_judge(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with OpenAIServer(offline_responder) as server:
        monkeypatch.setenv("EVALDRIFT_DB", str(db))
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("EVALDRIFT_JUDGE_MODEL", MODEL)
        server.fail_always(Fault("429", retry_after=float("inf")))
        spec = spec_on(server, limit=10)
        with Store(db) as store:
            stopped = run_guarded(store, spec, judge_on(server), limits=Limits(deadline=1.0)).stopped
        at = open_ablation(spec.ablation_id)
        assert any(stopped in w and "Resume asks the rest" in w for w in unescaped(at.warning)), stopped
        assert "abl_resume" in {b.key for b in at.button if b.key}

        server.fail_always(None)
        with Store(db) as store:
            assert run_guarded(store, spec, judge_on(server)).result is not None
        at = open_ablation(spec.ablation_id)
        judged = [c for c in unescaped(at.caption) if "Judge: verdicts asked as json_schema; concurrency" in c]
        assert judged, unescaped(at.caption)
