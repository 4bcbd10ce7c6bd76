"""Judge faults, through the real openai SDK against the loopback server made to misbehave.

Each fault of tests/reliability_cases.py is tried twice: once (it lifts: the
sample is retried and scored as the offline judge scores it) and for good (the
sample is marked failed with the fault in its reason, never scored 0 or 1).
Then the layers above: aggregates count failures apart, and an ablation
whose judgings mostly fail says INCONCLUSIVE in words.
"""

from __future__ import annotations

import json
import math
import threading
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lib.core.calls import JudgeRequest, Message
from lib.core.errors import JudgeError
from lib.core.metrics import split_sentences
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.records import MAIN, MetricRecord, RunRecord
from lib.core.results import FAILED, OK, aggregate
from lib.core.samples import EvalSample
from lib.diagnosis.ablation import LEAK, AblationSpec, run_ablation
from lib.jobs._demo import demo_samples
from lib.judging import OfflineJudge
from lib.judging.harness import Instrument, score_sample, score_samples
from lib.judging.openai_judge import OpenAIJudge
from lib.store import Store
from tests.conftest import offline_responder
from tests.reliability_cases import (
    FAULT_SAMPLE,
    FAULT_SAMPLE_CLAIMS,
    JUDGE_FAULTS,
    JUDGE_TIMEOUT,
    TRANSPORT,
    JudgeFault,
    RawReply,
)
from tests.support.openai_server import Fault, OpenAIServer
from tests.support.reliability_support import copy_db, mini_demo, mini_demo_run_ids

MODEL = "evaldrift-test-model"
FAITHFULNESS = Instrument("faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)
SAMPLE = EvalSample(**{**FAULT_SAMPLE, "contexts": tuple(FAULT_SAMPLE["contexts"])})  # type: ignore[arg-type]
BACKOFF = 0.2
MAX_BACKOFF = 2.0


class RawServer:
    """A loopback HTTP server answering chat completions as the offline judge, or with scripted raw replies.

    For what tests/support/openai_server.py cannot send: any status code, content type and body bytes.
    Same interface as OpenAIServer for faults: script(), fail_always(), n_calls, base_url.
    """

    def __init__(self) -> None:
        self._faults: deque[RawReply] = deque()
        self._always: RawReply | None = None
        self._lock = threading.Lock()
        self.n_calls = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                with owner._lock:
                    owner.n_calls += 1
                    raw = owner._faults.popleft() if owner._faults else owner._always
                if raw is None:
                    text = offline_responder(body)
                    raw = RawReply(200, "application/json", json.dumps({
                        "id": "chatcmpl-raw", "object": "chat.completion", "created": 0, "model": body["model"],
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                     "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode())
                self.send_response(raw.status)
                self.send_header("Content-Type", raw.content_type)
                self.send_header("Content-Length", str(len(raw.body)))
                self.end_headers()
                self.wfile.write(raw.body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def script(self, *raw: RawReply) -> None:
        with self._lock:
            self._faults.extend(raw)

    def fail_always(self, raw: RawReply | None) -> None:
        with self._lock:
            self._always = raw

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def raw_server() -> Iterator[RawServer]:
    server = RawServer()
    try:
        yield server
    finally:
        server.stop()


def _server(case: JudgeFault, openai_server: OpenAIServer, raw_server: RawServer) -> OpenAIServer | RawServer:
    return raw_server if isinstance(case.server, RawReply) else openai_server


class Sleeps:
    """Records the waits a judge asks for instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def make_judge(server: OpenAIServer | RawServer, case: JudgeFault | None = None, **options: object) -> OpenAIJudge:
    timeout = JUDGE_TIMEOUT if case is not None and case.id == "timeout" else 10.0
    options.setdefault("sleep", Sleeps())
    options.setdefault("backoff", BACKOFF)
    options.setdefault("max_backoff", MAX_BACKOFF)
    return OpenAIJudge(MODEL, base_url=server.base_url, api_key="sk-test", timeout=timeout,
                       **options)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def offline_result():
    """The offline judge's own verdicts on the fault sample (what a lifted fault must give back)."""
    assert len(split_sentences(SAMPLE.answer)) == FAULT_SAMPLE_CLAIMS
    result = score_sample(SAMPLE, FAITHFULNESS, OfflineJudge())
    assert result.status == OK and 0.0 < result.score < 1.0  # type: ignore[operator]
    return result


def _check_waits(case: JudgeFault, waits: list[float]) -> None:
    for w in waits:
        assert math.isfinite(w) and 0.0 <= w <= MAX_BACKOFF, f"{case.id}: wait {w!r} outside [0, {MAX_BACKOFF}]"


@pytest.mark.parametrize("case", JUDGE_FAULTS, ids=[c.id for c in JUDGE_FAULTS])
def test_a_fault_that_lifts_is_retried_and_the_sample_scored(openai_server: OpenAIServer, raw_server: RawServer,
                                                             offline_result, case: JudgeFault) -> None:
    server = _server(case, openai_server, raw_server)
    judge = make_judge(server, case, max_attempts=4)
    server.script(case.server)  # type: ignore[arg-type]
    result = score_sample(SAMPLE, FAITHFULNESS, judge, parse_attempts=3)
    if case.final:   # refused: asking again would not help, so the sample fails at once, with the reason
        assert result.status == FAILED and case.reason in result.reason and result.score is None
        assert server.n_calls == 1 and judge.attempts == 1 and judge._sleep.waits == []  # type: ignore[attr-defined]
        return
    assert result.status == OK, result.reason
    assert result.verdicts == offline_result.verdicts
    assert result.score == offline_result.score
    assert server.n_calls == 2
    waits = judge._sleep.waits  # type: ignore[attr-defined]
    _check_waits(case, waits)
    if case.retried_by == TRANSPORT:
        assert judge.attempts == 2
        assert len(judge.retries) == 1 and case.reason in judge.retries[0]
        assert len(waits) == 1
        if case.id == "429-retry-after":
            assert waits == [0.7]                      # the server's Retry-After, honoured
        elif case.id == "429-retry-after-huge":
            assert waits == [MAX_BACKOFF]              # honoured up to the cap, never an hour
        else:
            assert 0.0 <= waits[0] <= BACKOFF          # full jitter in [0, backoff * 2**0]
    else:
        assert waits == []                             # a readable reply is asked for again at once
        assert result.calls == 2
        assert judge.attempts == 2


@pytest.mark.parametrize("case", JUDGE_FAULTS, ids=[c.id for c in JUDGE_FAULTS])
def test_a_fault_that_never_lifts_fails_the_sample_with_its_reason(openai_server: OpenAIServer,
                                                                   raw_server: RawServer, case: JudgeFault) -> None:
    server = _server(case, openai_server, raw_server)
    judge = make_judge(server, case, max_attempts=3)
    server.fail_always(case.server)  # type: ignore[arg-type]
    result = score_sample(SAMPLE, FAITHFULNESS, judge, parse_attempts=3)
    assert result.status == FAILED
    assert result.score is None and result.verdicts == ()
    assert case.reason in result.reason, result.reason
    if case.final:
        assert server.n_calls == 1 and judge.attempts == 1
        return
    assert "after 3 attempts" in result.reason
    assert server.n_calls == 3                         # bounded: exactly the attempts allowed, no more
    waits = judge._sleep.waits  # type: ignore[attr-defined]
    _check_waits(case, waits)
    if case.retried_by == TRANSPORT:
        assert judge.attempts == 3
        assert len(waits) == 2                         # between attempts, none after the last
        if case.id == "429-retry-after":
            assert waits == [0.7, 0.7]
    else:
        assert result.calls == 3
        assert waits == []
        if not isinstance(case.server, Fault) or case.server.kind != "text" or case.server.text:
            assert result.raw                          # the unreadable reply is kept for the record


def test_backoff_grows_with_full_jitter_and_is_capped(openai_server: OpenAIServer) -> None:
    attempts, backoff, cap = 6, 0.1, 0.5
    sleeps = Sleeps()
    judge = make_judge(openai_server, max_attempts=attempts, backoff=backoff, max_backoff=cap, sleep=sleeps)
    openai_server.fail_always(Fault("503"))
    calls = 12
    request = JudgeRequest(MODEL, (Message("user", "CLAIMS:\nITEM 1: A claim."),))
    for _ in range(calls):
        with pytest.raises(JudgeError, match=r"server error \(503\), after 6 attempts"):
            judge.complete(request)
    assert openai_server.n_calls == calls * attempts
    assert len(sleeps.waits) == calls * (attempts - 1)
    by_retry = [sleeps.waits[k::attempts - 1] for k in range(attempts - 1)]
    bounds = [min(cap, backoff * 2 ** k) for k in range(attempts - 1)]
    assert bounds == [0.1, 0.2, 0.4, 0.5, 0.5]
    for waits, bound in zip(by_retry, bounds, strict=True):
        assert all(0.0 <= w <= bound for w in waits)   # each wait within its exponential bound, capped
    assert max(by_retry[-1]) > bounds[0]               # later waits do grow past the first bound
    assert max(max(w) for w in by_retry) <= cap
    assert len(set(sleeps.waits)) > len(sleeps.waits) // 2  # jittered, not a fixed schedule


# -- aggregates ------------------------------------------------------------------------------------
def _first_claim(sample: EvalSample) -> str:
    return split_sentences(sample.answer)[0]


def test_failures_are_counted_apart_and_never_scored_0_or_1(openai_server: OpenAIServer, tmp_path: Path) -> None:
    samples = [d.sample for d in demo_samples()[0] if d.sample.answer.strip()][:16]
    markers = [_first_claim(s) for s in samples]
    assert len(set(markers)) == len(markers)
    server_error = {markers[i] for i in (2, 9)}        # the server fails these for good (500)
    prose = {markers[i] for i in (5, 11, 14)}          # and answers these with prose, never JSON

    def responder(body: dict) -> str:
        prompt = "\n".join(m["content"] for m in body["messages"])   # a repair request too: never JSON
        if any(m in prompt for m in server_error):
            raise RuntimeError("scripted outage for this sample")
        if any(m in prompt for m in prose):
            return "I think most of these claims look fine."
        return offline_responder(body)

    openai_server.responder = responder
    judge = make_judge(openai_server, max_attempts=2, concurrency=4)
    results = score_samples(samples, FAITHFULNESS, judge, concurrency=4)
    assert [r.sample_id for r in results] == [s.sample_id for s in samples]
    failed = {r.sample_id: r.reason for r in results if r.status == FAILED}
    assert set(failed) == {samples[i].sample_id for i in (2, 9, 5, 11, 14)}
    for i in (2, 9):
        assert failed[samples[i].sample_id].startswith("judge call failed: server error (500), after 2 attempts")
    for i in (5, 11, 14):
        assert "not JSON" in failed[samples[i].sample_id]
    assert all(r.score is None for r in results if r.status == FAILED)

    ok = [r.score for r in results if r.status == OK]
    offline = score_samples(samples, FAITHFULNESS, OfflineJudge())
    assert ok == [o.score for o, r in zip(offline, results, strict=True) if r.status == OK]
    agg = aggregate(results)
    assert (agg.n, agg.n_failed) == (11, 5)
    assert agg.score == pytest.approx(math.fsum(ok) / 11)
    as_zero, as_one = math.fsum(ok) / 16, (math.fsum(ok) + 5) / 16
    assert agg.score != pytest.approx(as_zero) and agg.score != pytest.approx(as_one)

    # the store keeps the same n, n_failed and score, and every sample's row (failed ones with no score)
    run = RunRecord("faults-run", __import__("datetime").datetime(2026, 1, 1), {}, {MAIN: samples},
                    [MetricRecord("faithfulness", results, MODEL, FAITHFULNESS.template, PROJECTED)])
    with Store(tmp_path / "faults.duckdb") as store:
        store.record_run(run)
        row = store.run_metrics("faults-run").iloc[0]
        assert (int(row["n"]), int(row["n_failed"])) == (11, 5)
        assert row["score"] == pytest.approx(agg.score)
        scores = store.sample_scores("faults-run", metric="faithfulness")
        assert len(scores) == 16                        # rows lost: 0
        bad = scores[scores["status"] == FAILED]
        assert len(bad) == 5 and bad["score"].isna().all() and (bad["reason"].str.len() > 0).all()


# -- ablations -------------------------------------------------------------------------------------
@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    return copy_db(mini_demo(), tmp_path / "demo.duckdb")


def _spec(server: OpenAIServer) -> AblationSpec:
    leak_run = mini_demo_run_ids()[1]
    return AblationSpec(leak_run, ("faithfulness",), ("ground_truth",), repeats=2, judge=MODEL,
                        endpoint=server.base_url, limit=30)


def test_an_ablation_whose_judge_always_fails_scores_nothing_and_says_so(openai_server: OpenAIServer,
                                                                         demo_copy: Path) -> None:
    openai_server.fail_always(Fault("500"))
    judge = make_judge(openai_server, max_attempts=2, concurrency=4)
    spec = _spec(openai_server)
    with Store(demo_copy) as store:
        result = run_ablation(store, spec, judge)
        assert result is not None
        v, joint = result.verdicts   # the arm asked for, and the joint question+ground_truth arm
        # the leak run's template renders ground_truth: static evidence decides LEAK before any count check
        # (issue 26), with what was measured beside it: nothing, every judging failed, none scored 0 or 1
        assert v.kind == joint.kind == LEAK
        # samples with an empty answer have no claims: excluded (not judged, not failed), 2 arms x 2 repeats
        excluded = 4 * sum(not s.answer.strip() for s in store.samples(spec.run_id)[:30])
        failed = 120 - excluded
        assert "nothing measured beside it" in v.sentence
        assert f"{failed} of 120 judgings failed" in v.sentence and "server error (500)" in v.sentence
        assert v.delta is None and v.n == 0 and v.n_failed == failed
        # the model is not the judge that recorded this run, and the headline says so before the finding
        assert result.summary.startswith("With judge evaldrift-test-model, not the run's own judge "
                                         "(offline-lexical-v2 for faithfulness): wiring leak")
        assert result.exit_code == 1
        # over the five arms (baseline, ground_truth, joint, the judge's floor, the positive control): five times
        # an arm's judgings, half the cell's two
        every = failed // 2 * 5
        assert result.failures == {"judge call failed: server error (500), after 2 attempts": every}
        row = store.ablation(spec.ablation_id)
        assert row is not None and row["status"] == "done" and row["done"] == row["total"] == 300
        stored = store.ablation_results(spec.ablation_id)
        assert len(stored) == 300 and stored["score"].isna().all()       # rows lost: 0, none scored
        assert (stored["status"] == FAILED).sum() == every
    assert openai_server.n_calls == 2 * every   # two attempts at each of the five arms' judgings


def test_an_ablation_with_few_failures_still_decides_and_counts_them(openai_server: OpenAIServer,
                                                                     demo_copy: Path) -> None:
    spec = _spec(openai_server)
    with Store(demo_copy) as store:
        samples = store.samples(spec.run_id)[:30]
    judged = [s for s in samples if s.answer.strip()]
    doomed = {_first_claim(s) for s in judged[:2]}     # 2 of 30 samples fail in every arm and repeat

    def responder(body: dict) -> str:
        if any(m in body["messages"][-1]["content"] for m in doomed):
            raise RuntimeError("scripted outage for this sample")
        return offline_responder(body)

    openai_server.responder = responder
    judge = make_judge(openai_server, max_attempts=2, concurrency=4)
    with Store(demo_copy) as store:
        result = run_ablation(store, spec, judge)
    assert result is not None
    v, joint = result.verdicts   # the arm asked for, and the joint question+ground_truth arm
    assert v.kind == LEAK, v.sentence                  # the demo's leaking run, found through the faults
    assert (v.n, v.n_failed, v.n_units) == (len(judged) - 2, 8, 120)
    assert joint.kind == LEAK and joint.joint
    assert sum(result.failures.values()) == 20         # 2 samples x 5 arms (the floor's and control's too) x 2
