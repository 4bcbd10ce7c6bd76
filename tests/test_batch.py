"""Ablations and re-judges through the OpenAI Batch API (lib.diagnosis.batch), with the real openai SDK against a
loopback server implementing /v1/files and /v1/batches (tests/support/batch_api.py).

The server's model is the offline judge, so a batch's verdicts must equal a live job's exactly.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lib.core.errors import InputError
from lib.core.results import FAILED, OK
from lib.core.samples import EvalSample
from lib.diagnosis.ablation import AblationSpec, run_ablation
from lib.diagnosis.batch import _batch as bt
from lib.diagnosis.rejudge import RejudgeSpec
from lib.judging.openai_judge import OpenAIJudge
from lib.store import Store
from lib.store import batches as bs
from lib.store import history as hs
from tests.conftest import offline_responder
from tests.support.cli import run_cli
from tests.support.openai_server import OpenAIServer
from tests.support.synthetic_runs import LEAKY_FAITHFULNESS, REPLAY, record, samples

ROOT = Path(__file__).resolve().parents[1]
MODEL = "judge-model"


def _case(i: int, f) -> EvalSample:
    return EvalSample(f"s{i:02d}", f.question, f"{f.fact1} {f.fact2}", (f"{f.fact1} {f.filler}",), f.fact2)


@pytest.fixture(scope="module")
def base_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("batch") / "base.duckdb"
    with Store(path) as store:
        items = samples(_case, 24)
        record(store, "r1", items, "faithfulness", LEAKY_FAITHFULNESS, REPLAY, day=0)
        record(store, "r2", items, "faithfulness", LEAKY_FAITHFULNESS, REPLAY, day=1)
    return path


@pytest.fixture
def db(base_db: Path, tmp_path: Path) -> Path:
    path = tmp_path / "work.duckdb"
    shutil.copy(base_db, path)
    return path


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(offline_responder) as srv:
        yield srv


def spec_for(server: OpenAIServer, run_id: str = "r1") -> AblationSpec:
    return AblationSpec(run_id, ("faithfulness",), ("ground_truth",), repeats=1, judge=MODEL,
                        endpoint=server.base_url)


def judge_for(server: OpenAIServer) -> OpenAIJudge:
    return OpenAIJudge(MODEL, base_url=server.base_url, api_key="sk-test", timeout=5.0, concurrency=4,
                       sleep=lambda s: None)


def wait_ended(store: Store, client, batch_id: str) -> bt.BatchJob:
    for _ in range(200):
        job = bt.poll(store, client, batch_id)
        if job.collected:
            return job
        time.sleep(0.02)
    raise AssertionError(f"batch {batch_id} did not end")


def live_results(db: Path, spec: AblationSpec, tmp_path: Path):
    path = tmp_path / "live.duckdb"
    shutil.copy(db, path)
    with OpenAIServer(offline_responder) as srv, Store(path) as store:
        live_spec = AblationSpec.from_dict({**spec.to_dict(), "endpoint": srv.base_url})
        result = run_ablation(store, live_spec, judge_for(srv))
        frame = store.ablation_results(live_spec.ablation_id)
    return result, frame


def _scores(frame):
    columns = ["arm", "sample_id", "status", "score", "verdicts"]
    return frame.sort_values(["arm", "sample_id"])[columns].reset_index(drop=True)


def _calls(frame):
    """Calls made and judgings answered from the cache, per sample and judging. Arms whose prompts are the same
    share one call, and which of them asks first is the live run's thread order (a fresh-clone CI run had the
    other arm ask), so the count is compared, not which arm holds it."""
    return frame.astype({"cached": int}).groupby(["sample_id", "verdicts"])[["calls", "cached"]].sum().reset_index()


def differing_rows(a, b) -> str:
    """The rows where two frames of the same shape differ, both sides, for an assertion's message."""
    if a.shape != b.shape:
        return f"shapes differ: {a.shape} against {b.shape}"
    differ = (a != b).any(axis=1)
    return f"batch:\n{a[differ].to_string()}\nlive:\n{b[differ].to_string()}"


def test_an_ablation_through_a_batch_equals_the_live_one_and_fills_the_call_cache(db: Path, server: OpenAIServer,
                                                                                tmp_path: Path) -> None:
    spec = spec_for(server)
    client = bt.client_for(server.base_url, "sk-test")
    with Store(db) as store:
        job = bt.submit(store, client, kind=bt.ABLATION, spec=spec)
        assert job is not None and job.total > 0 and server.batch_api.created == 1
        assert server.n_calls == 0                       # nothing asked live
        job = wait_ended(store, client, job.batch_id)
        assert (job.status, job.replies, job.faults) == ("completed", job.total, 0)
        keys = [k for k, *_ in bs.requests(store, job.batch_id)]
        result = bt.finish(store, job.batch_id, judge_for(server))
        assert server.n_calls == 0                       # every judging answered from the batch's replies
        assert hs.cached_keys(store, keys) == set(keys)  # then kept in the call cache, as live calls' are
        frame = store.ablation_results(spec.ablation_id)
        assert bt.load(store, job.batch_id).finished
        assert bt.submit(store, client, kind=bt.ABLATION, spec=spec) is None   # nothing left to ask
    live, live_frame = live_results(db, spec, tmp_path)
    assert result.summary == live.summary                # type: ignore[attr-defined]
    batch_rows, live_rows = _scores(frame), _scores(live_frame)
    assert batch_rows.equals(live_rows), differing_rows(batch_rows, live_rows)
    batch_calls, live_calls = _calls(frame), _calls(live_frame)
    assert batch_calls.equals(live_calls), differing_rows(batch_calls, live_calls)


def test_a_restarted_process_polls_the_same_batch_and_shows_its_progress(db: Path, server: OpenAIServer) -> None:
    spec = spec_for(server)
    server.batch_api.gate.clear()                        # the server holds the work in progress
    with Store(db) as store:
        job = bt.submit(store, bt.client_for(server.base_url, "sk-test"), kind=bt.ABLATION, spec=spec)
        assert job is not None
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
    # what the batch is is read from the database alone: the status here (in this process, tests/support/cli.py),
    # the poll that finishes the job by a new process that never saw the submission
    status = run_cli("batch", "status", "--db", db, env=env)
    assert status.returncode == 0, status.stderr
    assert job.batch_id in status.stdout and "in_progress" in status.stdout and f"of {job.total}" in status.stdout
    server.batch_api.gate.set()
    poll = ["poll", "--db", str(db), "--wait", "--interval", "0.1", "--finish"]
    done = subprocess.run([sys.executable, "-m", "lib", "batch", *poll], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "completed" in done.stdout and "job finished" in done.stdout
    assert server.n_calls == 0
    with Store(db) as store:
        assert store.ablation(spec.ablation_id)["status"] == "done"  # type: ignore[index]
        assert bs.job_ids(store, unfinished=True) == []


def test_the_ablation_page_shows_each_batch_as_its_last_poll_stored_it(db: Path, server: OpenAIServer,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.testing.v1 import AppTest

    spec = spec_for(server)
    server.batch_api.gate.clear()                        # the server holds the work in progress
    client = bt.client_for(server.base_url, "sk-test")
    with Store(db) as store:
        job = bt.submit(store, client, kind=bt.ABLATION, spec=spec)
        assert job is not None
        bt.poll(store, client, job.batch_id)
    monkeypatch.setenv("EVALDRIFT_DB", str(db))

    def batch_bars() -> list:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.switch_page("pages/ablation.py")
        at.run()
        assert not at.exception
        shown = [(p.proto.text.replace("\\", ""), p.proto.value) for p in at.get("progress")]   # Markdown-escaped
        return [(text, value) for text, value in shown if job.batch_id in text]

    ((text, value),) = batch_bars()
    assert "in_progress" in text and f"0 of {job.total} answered" in text and value == 0
    server.batch_api.gate.set()
    with Store(db) as store:
        wait_ended(store, client, job.batch_id)
        bt.finish(store, job.batch_id, judge_for(server))
    ((text, value),) = batch_bars()
    assert "completed" in text and "job finished" in text and value == 100


def test_failed_unreadable_and_expired_lines_are_recorded_asked_live_and_never_scored(db: Path,
                                                                                    server: OpenAIServer) -> None:
    spec = spec_for(server)
    api = server.batch_api
    api.fail_lines, api.garble_lines, api.expire_after = {0}, {1}, 10
    client = bt.client_for(server.base_url, "sk-test")
    with Store(db) as store:
        job = bt.submit(store, client, kind=bt.ABLATION, spec=spec)
        assert job is not None
        job = wait_ended(store, client, job.batch_id)
        faults = bs.faults(store, job.batch_id)
        assert job.status == "expired" and job.replies == 8 and job.faults == job.total - 8 == len(faults)
        reasons = sorted(set(faults.values()))
        assert any("500" in r for r in reasons) and any("unreadable" in r for r in reasons)
        assert any("batch_expired" in r for r in reasons)
        assert not hs.cached_keys(store, list(faults))    # a fault never reaches the call cache
        again = bt.submit(store, client, kind=bt.ABLATION, spec=spec)   # resumable: only what is missing
        assert again is not None and again.total == len(faults)
        api.fail_lines, api.garble_lines, api.expire_after = set(), set(), None
        server.fail_always(None)
        from tests.support.openai_server import Fault
        server.fail_always(Fault("500"))                  # the live judge cannot answer the faults either
        bt.finish(store, job.batch_id, OpenAIJudge(MODEL, base_url=server.base_url, timeout=5.0, max_attempts=1,
                                                   concurrency=2, sleep=lambda s: None))
        frame = store.ablation_results(spec.ablation_id)
    failed = frame[frame["status"] == FAILED]
    assert len(failed) > 0 and failed["score"].isna().all()          # faults: failed with a reason, not scored
    assert failed["reason"].str.contains("judge call failed").all()
    ok = frame[frame["status"] == OK]
    assert len(ok) > 0 and (ok["calls"] == 1).all() and not ok["cached"].any()   # the batch's calls, as live


def test_a_rejudge_goes_through_a_batch_with_one_request_per_distinct_prompt(db: Path,
                                                                             server: OpenAIServer) -> None:
    client = bt.client_for(server.base_url, "sk-test")
    with Store(db) as store:
        spec = RejudgeSpec("faithfulness", ("r1", "r2"), LEAKY_FAITHFULNESS, REPLAY, judge=MODEL,
                           endpoint=server.base_url)
        job = bt.submit(store, client, kind=bt.REJUDGE, spec=spec)
        assert job is not None and job.total == 24       # two runs of the same 24 samples: 24 requests
        wait_ended(store, client, job.batch_id)
        series = bt.finish(store, job.batch_id, judge_for(server))
        assert server.n_calls == 0 and len(series) == 2  # type: ignore[arg-type]


def test_the_settings_decide_the_endpoint_never_the_database(db: Path, server: OpenAIServer) -> None:
    with Store(db) as store, OpenAIServer(offline_responder) as other:
        job = bt.submit(store, bt.client_for(server.base_url, "sk-test"), kind=bt.ABLATION, spec=spec_for(server))
        assert job is not None
        with pytest.raises(InputError, match="settings point at"):
            bt.poll(store, bt.client_for(other.base_url, "sk-test"), job.batch_id)
        with pytest.raises(InputError, match="settings point at"):
            bt.submit(store, bt.client_for(other.base_url, "sk-test"), kind=bt.ABLATION, spec=spec_for(server))
        assert other.batch_api.created == 0


LABELS = ["supported", "unsupported"]
GOOD = {"choices": [{"message": {"content": '{"verdicts": [{"item": 1, "verdict": "supported"}]}'}}]}


@pytest.mark.parametrize(("entry", "fault"), [
    ({"response": {"status_code": 200, "body": GOOD}, "error": None}, ""),
    ({"response": {"status_code": 200, "body": {"choices": [{"message": {"content": "prose"}}]}}, "error": None},
     "unreadable reply"),
    ({"response": {"status_code": 200, "body": {"no": "choices"}}, "error": None}, "unreadable reply"),
    ({"response": {"status_code": 500, "body": {"error": {"message": "boom"}}}, "error": None},
     "batch line failed (500: boom)"),
    ({"response": None, "error": {"code": "batch_expired", "message": "x"}},
     "batch line failed (no response: batch_expired)"),
    ({}, "batch line failed (no response: no reason given)"),
], ids=["readable", "prose", "no-completion", "status-500", "expired", "empty"])
def test_what_a_batch_line_comes_to(entry: dict, fault: str) -> None:
    reply, why = bt._outcome(entry, 1, LABELS)
    assert (reply is None) == bool(fault)
    assert why.startswith(fault) if fault else why == ""
