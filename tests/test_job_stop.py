"""A hung judge holds nothing (issue 23 item 6): Stop ends a running job within seconds and it resumes; the
deadline cancels calls in flight; a free offline job never queues behind a model job; a SIGTERM releases the
database promptly. The judge is the real OpenAIJudge against a loopback server that holds every answer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lib import jobs
from lib.core.endpoints import normalise
from lib.diagnosis.ablation import AblationSpec
from lib.judging import OfflineJudge
from lib.judging.breaker import Limits
from lib.judging.openai_judge import OpenAIJudge
from lib.store import Store
from tests.conftest import offline_responder
from tests.support.openai_server import OpenAIServer
from tests.support.polling import wait_for

ROOT = Path(__file__).resolve().parent.parent
HANG = 60.0   # seconds the server holds each answer: longer than any test waits
# "within seconds" (issue 23), as a busy machine allows: a third of HANG still fails a stop that waited for a held
# answer (or for the judge's 120 s timeout), where the 3-6 s bounds before could fail a CI run at load 6-10
PROMPT = HANG / 3


@pytest.fixture
def hung() -> Iterator[OpenAIServer]:
    server = OpenAIServer(offline_responder, latency=HANG).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A small database: one run of six samples, faithfulness judged by its projected template."""
    import dataclasses

    from lib.core.records import MAIN
    from lib.core.results import OK, SampleResult
    from lib.core.samples import EvalSample
    from tests.test_validate import good_run

    run = good_run("night")
    samples = [EvalSample(f"s{i}", f"What is fact {i}?", f"Fact {i} is {i * 7}.", (f"Fact {i} is {i * 7}.",),
                          f"Fact {i} is {i * 7}.") for i in range(6)]
    metric = dataclasses.replace(run.metrics[0], results=[SampleResult(s.sample_id, OK, 1.0) for s in samples])
    path = tmp_path / "d.duckdb"
    with Store(path) as store:
        store.record_run(dataclasses.replace(run, samples={MAIN: samples}, metrics=[metric]))
    return path


def _model_spec(store: Store, server: OpenAIServer) -> AblationSpec:
    return AblationSpec(store.run_ids()[-1], ("faithfulness",), ("ground_truth",), limit=6, judge="hung-model",
                        endpoint=normalise(server.base_url), sequential=False)


def _judge_for(server: OpenAIServer):
    def judge_for(spec: AblationSpec):
        if spec.endpoint == "offline":
            return OfflineJudge()
        return OpenAIJudge(spec.judge, base_url=server.base_url, timeout=HANG * 2, max_attempts=1, concurrency=2)
    return judge_for


def test_a_free_offline_job_runs_while_a_model_job_hangs_and_stop_ends_the_model_job_in_seconds(
        db: Path, hung: OpenAIServer) -> None:
    with Store(db) as store:
        runner = jobs.JobRunner(store, _judge_for(hung))
        try:
            paid = runner.submit(_model_spec(store, hung))
            assert wait_for(lambda: hung.n_calls > 0, timeout=30)    # its calls are in flight, held
            free_spec = AblationSpec(store.run_ids()[-1], ("faithfulness",), ("question",), limit=6)
            free = runner.submit(free_spec)
            assert runner.wait(free, timeout=60) is not None        # never queued behind the hung job
            assert runner.status(free).state == "done"
            assert runner.status(paid).state == "running"
            assert runner.stop(paid)
            asked = time.monotonic()
            assert wait_for(lambda: runner.status(paid).state == jobs.STOPPED, timeout=PROMPT)
            took = time.monotonic() - asked
            assert took < PROMPT, took
            status = runner.status(paid)
            assert "Stop" in status.reason and "Resume" in status.reason
            hung.latency = 0.0                                      # the server answers again: Resume finishes it
            runner.submit(_model_spec(store, hung))
            runner.wait(paid, timeout=120)
            assert runner.status(paid).state == "done"
        finally:
            hung.latency = 0.0
            runner.shutdown()


def test_the_deadline_cancels_calls_in_flight(db: Path, hung: OpenAIServer) -> None:
    with Store(db) as store:
        spec = _model_spec(store, hung)
        judge = _judge_for(hung)(spec)
        start = time.monotonic()
        outcome = jobs.run_guarded(store, spec, judge, limits=Limits(deadline=1.0))
        took = time.monotonic() - start
        assert outcome.result is None and "deadline of 1 s" in outcome.stopped
        assert took < PROMPT, f"stopped {took:.1f} s after start with a 1 s deadline"
        assert store.ablation(spec.ablation_id)["status"] == jobs.STOPPED


def test_an_attempt_is_bounded_by_the_wall_clock(hung: OpenAIServer) -> None:
    from lib.core.calls import JudgeRequest, Message
    from lib.core.errors import JudgeError

    judge = OpenAIJudge("m", base_url=hung.base_url, timeout=0.5, max_attempts=1)
    start = time.monotonic()
    with pytest.raises(JudgeError, match="timed out"):
        judge.complete(JudgeRequest("m", (Message("user", "hi"),)))
    assert time.monotonic() - start < PROMPT   # 0.5 s asked; the server holds the answer for HANG


SCRIPT = textwrap.dedent("""
    import signal, sys, time
    from lib import jobs
    from lib.diagnosis.ablation import AblationSpec
    from lib.judging.openai_judge import OpenAIJudge
    from lib.store import Store
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))   # a graceful stop, as Streamlit's server makes
    db, base_url, endpoint = sys.argv[1:4]
    store = Store(db)
    judge = lambda spec: OpenAIJudge(spec.judge, base_url=base_url, timeout=600, max_attempts=1, concurrency=2)
    runner = jobs.JobRunner(store, judge)
    spec = AblationSpec(store.run_ids()[-1], ("faithfulness",), ("ground_truth",), limit=6, judge="hung-model",
                        endpoint=endpoint, sequential=False)
    runner.submit(spec)
    while runner.status(spec.ablation_id).state != "running":
        time.sleep(0.05)
    print("running", flush=True)
    while True:
        time.sleep(0.1)
""")


def test_sigterm_releases_the_database_promptly_while_a_call_hangs(db: Path, hung: OpenAIServer) -> None:
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(db), hung.base_url, normalise(hung.base_url)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ))
    try:
        assert proc.stdout.readline().strip() == "running", proc.stderr.read() if proc.poll() is not None else ""
        assert wait_for(lambda: hung.n_calls > 0, timeout=30)
        proc.send_signal(signal.SIGTERM)
        start = time.monotonic()
        proc.wait(timeout=HANG)
        took = time.monotonic() - start
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert took < PROMPT, f"the process held the database {took:.1f} s after SIGTERM"
    with Store(db) as store:   # released, and the job is stopped (Resume continues it)
        row = store.ablation(_model_spec(store, hung).ablation_id)
        assert row is not None and row["status"] == jobs.STOPPED
