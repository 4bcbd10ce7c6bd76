"""The background job runner: ablations off the page thread, joined when submitted twice, progress from the store."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lib.core.calls import JudgeReply, JudgeRequest
from lib.diagnosis.ablation import AblationSpec
from lib.jobs import Job, JobRunner, Runner
from lib.judging import OfflineJudge
from lib.judging.offline import STAND_IN_NOISE
from lib.store import Store


class GatedJudge:
    """The offline judge, holding its first call until the test opens the gate, and counting calls."""

    concurrency = 1
    cacheable = False

    def __init__(self) -> None:
        self._inner = OfflineJudge(noise=STAND_IN_NOISE)
        self.model = self._inner.model
        self.gate = threading.Event()
        self.calls = 0
        self._lock = threading.Lock()

    def complete(self, request: JudgeRequest) -> JudgeReply:
        assert self.gate.wait(timeout=30), "the test never opened the gate"
        with self._lock:
            self.calls += 1
        return self._inner.complete(request)


@pytest.fixture
def store(demo_db: Path, tmp_path: Path) -> Iterator[Store]:
    path = tmp_path / "d.duckdb"
    shutil.copy(demo_db, path)
    with Store(path) as s:
        yield s


@pytest.fixture
def spec(store: Store) -> AblationSpec:
    return AblationSpec(store.run_ids()[-1], ("faithfulness",), ("ground_truth",), limit=40)


def test_an_ablation_runs_in_the_background_to_done(store: Store, spec: AblationSpec) -> None:
    judge = GatedJudge()
    runner = JobRunner(store, lambda s: judge)
    try:
        aid = runner.submit(spec)
        assert aid == spec.ablation_id
        # held at its first judge call: submitted, not finished
        assert runner.status(aid).state in ("queued", "running")
        judge.gate.set()
        result = runner.wait(aid, timeout=60)
        status = runner.status(aid)
    finally:
        runner.shutdown()
    assert result is not None and result.ablation_id == aid
    assert status.state == "done"
    # metric x (baseline + ground_truth + the joint question+ground_truth) x repeats x samples, of which the two
    # blanked arms need no call (the fixed template renders neither field): the job counts the judgings it makes
    assert result.planned == 1 * 3 * 3 * 40 and result.not_rejudged == 2 * 3 * 40
    assert status.total == result.judgings == 1 * 1 * 3 * 40
    assert status.done == status.total
    assert status.fraction == 1.0
    assert store.ablation(aid)["status"] == "done"  # type: ignore[index]


def test_submitting_the_same_spec_while_it_runs_joins_it(store: Store, spec: AblationSpec) -> None:
    judge = GatedJudge()
    runner = JobRunner(store, lambda s: judge, workers=2)
    try:
        first = runner.submit(spec)
        second = runner.submit(AblationSpec.from_dict(spec.to_dict()))
        assert first == second
        judge.gate.set()
        runner.wait(first, timeout=60)
    finally:
        runner.shutdown()
    results = store.ablation_results(first)
    assert len(results) == runner.status(first).total
    assert not results.duplicated(["metric", "arm", "rep", "sample_id"]).any()
    # one set of work: every judge call is accounted for by exactly one stored result
    assert judge.calls == int(results["calls"].sum())
    assert store.counts()["ablations"] == 1


def test_a_finished_ablation_submitted_again_makes_no_new_calls(store: Store, spec: AblationSpec) -> None:
    judge = GatedJudge()
    judge.gate.set()
    runner = JobRunner(store, lambda s: judge)
    try:
        runner.wait(runner.submit(spec), timeout=60)
        calls = judge.calls
        runner.wait(runner.submit(spec), timeout=60)
    finally:
        runner.shutdown()
    assert judge.calls == calls
    assert runner.status(spec.ablation_id).state == "done"


def test_a_job_that_fails_reports_why(store: Store) -> None:
    runner = JobRunner(store, lambda s: OfflineJudge())
    bad = AblationSpec("no-such-run", ("faithfulness",), ("ground_truth",))
    try:
        aid = runner.submit(bad)
        assert runner.wait(aid, timeout=60) is None
        status = runner.status(aid)
    finally:
        runner.shutdown()
    assert status.state == "failed"
    assert "no-such-run" in status.error


def test_an_ablation_left_running_by_a_gone_process_is_stalled_and_resumes(store: Store,
                                                                          spec: AblationSpec) -> None:
    # what a killed dashboard leaves behind: a 'running' row, no worker
    store.start_ablation(spec.ablation_id, spec.run_id, spec.suite, spec.to_dict(), spec.judge, 360)
    judge = GatedJudge()
    judge.gate.set()
    runner = JobRunner(store, lambda s: judge)
    try:
        assert runner.status(spec.ablation_id).state == "stalled"
        assert runner.status("abl-unknown").state == "unknown"
        runner.wait(runner.submit(spec), timeout=60)
        status = runner.status(spec.ablation_id)
    finally:
        runner.shutdown()
    # the row a gone process left said 360; the resumed plan's judgings (baseline only: the arms need no call)
    assert status.state == "done" and status.done == status.total == 120


# -- the one runner, parameterised by what a job does (lib.jobs.Runner) -------------------------------------------
class Held:
    """Work whose jobs wait for the test to let them go, counting runs; a job named 'bad' raises."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.ran: list[str] = []
        self.recorded: list[str] = []

    def job_id(self, spec: str) -> str:
        return spec

    def lane(self, spec: str) -> str:
        return "slow" if spec.startswith("slow") else "fast"

    def run(self, spec: str, job: Job) -> str:
        self.ran.append(spec)
        if spec.startswith("slow"):
            assert self.go.wait(timeout=30), "the test never let the job go"
        if spec == "bad":
            raise ValueError("no such thing")
        return spec.upper()

    def failed(self, spec: str, exc: Exception) -> str:
        self.recorded.append(spec)
        return f"{type(exc).__name__}: {exc}"


def test_one_runner_keeps_lanes_apart_stops_a_queued_job_and_records_a_failure() -> None:
    work = Held()
    runner: Runner[str, str] = Runner(work, name="held", lanes=("slow", "fast"))
    try:
        runner.submit("slow-1")
        runner.submit("slow-2")                                 # queued behind slow-1 in its lane
        assert runner.wait(runner.submit("fast"), timeout=30) == "FAST"   # never queued behind the slow lane
        assert runner.running("slow-2") and runner.stop("slow-2")
        runner.wait(runner.submit("bad"), timeout=30)
        assert runner.error("bad") == "ValueError: no such thing" and work.recorded == ["bad"]
        work.go.set()
        assert runner.wait("slow-1", timeout=30) == "SLOW-1"
        assert runner.wait("slow-2", timeout=30) is None        # stopped while queued: never started
        assert "slow-2" not in work.ran and not runner.stop("slow-2")   # nothing left to stop
        assert not runner.known("other") and runner.result("slow-1") == "SLOW-1"
    finally:
        runner.shutdown()


@pytest.mark.parametrize(("rerun_done", "runs"), [(True, 2), (False, 1)])
def test_a_finished_job_submitted_again_runs_again_only_when_the_work_says_so(rerun_done: bool, runs: int) -> None:
    work = Held()
    runner: Runner[str, str] = Runner(work, name="held", lanes=("fast",), rerun_done=rerun_done)
    try:
        runner.wait(runner.submit("fast"), timeout=30)
        runner.wait(runner.submit("fast"), timeout=30)
        runner.wait(runner.submit("bad"), timeout=30)
        runner.wait(runner.submit("bad"), timeout=30)            # a failed job always runs again
    finally:
        runner.shutdown()
    assert work.ran.count("fast") == runs and work.ran.count("bad") == 2
