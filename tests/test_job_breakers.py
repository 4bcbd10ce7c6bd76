"""A judge that keeps failing stops a re-judge and `python -m lib score`, with the reason recorded, as it stops
an ablation (lib.judging.breaker): the job ends in a sentence saying why, never in thousands of recorded
failures, and what was answered before is kept so the job resumes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from lib.core.errors import JudgeError
from lib.core.prompts import DEFAULT_TEMPLATES
from lib.core.results import FAILED
from lib.diagnosis import rejudge
from lib.jobs import RejudgeRunner, job_log
from lib.judging import OfflineJudge
from lib.judging.breaker import Limits
from lib.judging.scoring import score_file
from lib.store import Store
from lib.store import history as hs

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "data" / "examples" / "kettle_faq.jsonl"     # 24 samples
REASON = "HTTP 500 from the judge server"


class Failing(OfflineJudge):
    """A judge whose every call fails for good, counting them."""

    def __init__(self) -> None:
        super().__init__("offline-lexical-v2")
        self._lock = threading.Lock()
        self.calls = 0

    def complete(self, request):
        with self._lock:
            self.calls += 1
        raise JudgeError(REASON)


SMALL_RUNS = 2   # the demo's first nightly runs in `small_demo_store` (tests/conftest.py)


# -- re-judged history --------------------------------------------------------------------------------------
def test_a_rejudge_whose_judge_keeps_failing_stops_with_its_reason_and_resumes(small_demo_store: Store) -> None:
    spec = rejudge.RejudgeSpec("faithfulness", tuple(small_demo_store.run_ids()), DEFAULT_TEMPLATES["faithfulness"])
    failing = Failing()
    runner = RejudgeRunner(small_demo_store, lambda s: failing, limits=Limits(failures=5))
    try:
        sid = runner.submit(spec)
        runner.wait(sid, timeout=120)
        status = runner.status(sid)
    finally:
        runner.shutdown()
    assert status.state == "stopped", status
    assert status.reason.startswith("stopped after 5 judge calls failed in a row") and REASON in status.reason
    assert failing.calls < 5 + 16                      # the limit, and at most the calls already in flight
    assert hs.series_done_runs(small_demo_store, sid) == set()    # nothing stored from the run the breaker cut short
    assert hs.series(small_demo_store, sid)["status"] == "stopped"  # type: ignore[index]
    # the reason is stored: another process (a new runner) reads why
    assert RejudgeRunner(small_demo_store, lambda s: failing).status(sid).reason == status.reason
    # launched again with a judge that answers: resumed to the end, no failure kept from the stopped attempt
    frame = rejudge.run_rejudge(small_demo_store, spec, OfflineJudge("offline-lexical-v2"))
    assert frame is not None and len(frame) == 2 and frame["n_failed"].sum() == 0
    assert hs.series(small_demo_store, sid)["status"] == "done"  # type: ignore[index]


def test_a_rejudge_without_failures_is_not_stopped(small_demo_store: Store) -> None:
    spec = rejudge.RejudgeSpec("faithfulness", tuple(small_demo_store.run_ids()[:1]), DEFAULT_TEMPLATES["faithfulness"])
    runner = RejudgeRunner(small_demo_store, lambda s: OfflineJudge("offline-lexical-v2"), limits=Limits(failures=1))
    try:
        sid = runner.submit(spec)
        runner.wait(sid, timeout=120)
        assert runner.status(sid).state == "done"
    finally:
        runner.shutdown()
    assert job_log.read(small_demo_store, sid) is None or job_log.read(small_demo_store, sid).state == job_log.DONE  # type: ignore[union-attr]


# -- python -m lib score --------------------------------------------------------------------------------------
def test_score_stops_when_the_judge_keeps_failing_and_records_nothing(fresh_db: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALDRIFT_BREAKER_FAILURES", "4")
    failing = Failing()
    with pytest.raises(JudgeError, match="stopped after 4 judge calls failed in a row") as info:
        score_file(fresh_db, EXAMPLE, run_id="n1", judge=failing)
    assert REASON in str(info.value)
    assert failing.calls < 4 + 16                      # of 120 judgings (24 samples, 5 metrics)
    assert not fresh_db.exists() or Store(fresh_db).run_ids() == []


class Flaky(OfflineJudge):
    """The offline judge, failing every tenth call."""

    def __init__(self) -> None:
        super().__init__("offline-lexical-v2")
        self._lock = threading.Lock()
        self.calls = 0

    def complete(self, request):
        with self._lock:
            self.calls += 1
            n = self.calls
        if n % 10 == 0:
            raise JudgeError(REASON)
        return super().complete(request)


def test_score_with_a_few_failures_records_them_as_failed(fresh_db: Path) -> None:
    scored = score_file(fresh_db, EXAMPLE, run_id="n1", judge=Flaky(), metrics=["faithfulness"])
    statuses = [r.status for r in scored.run.metrics[0].results]
    assert statuses.count(FAILED) == 2 and len(statuses) == 24   # counted, never scored; the run recorded
    with Store(fresh_db) as store:
        assert store.run_ids() == ["n1"]


def test_the_score_command_says_why_it_stopped_and_exits_non_zero(tmp_path: Path) -> None:
    # a model judge at a loopback port nothing listens on: every call fails to connect
    env = {**os.environ, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-none",
           "EVALDRIFT_JUDGE_TIMEOUT": "1", "EVALDRIFT_BREAKER_FAILURES": "3", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "lib", "score", str(EXAMPLE), "--db", str(tmp_path / "e.duckdb"),
                           "--run-id", "n1", "--metrics", "faithfulness", "--judge", "openai", "--model", "m"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stdout
    assert "stopped after 3 judge calls failed in a row" in proc.stderr, proc.stderr[-2000:]
    assert "recorded run" not in proc.stdout
