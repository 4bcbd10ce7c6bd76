"""A local model judge as issue 26 met it, mimicked on loopback: it reaches the verdict, keeps its schema, wastes
no call, keeps to its estimate and to its single slot.

The server behaves as llama-cpp-python's did with Qwen2.5-Coder-1.5B: it refuses `json_schema` with a 500 naming
the type and enforces a schema sent inside `json_object`; without a schema its model writes "ITEM 1" for an item
number; at temperature 0 it answers a request the same way whatever the seed; it has one slot, so calls queue
and a client's latency rises with the calls it has in flight while the server's time stays the same. Its "8 s"
calls are scaled down to 0.2 s, and the judge's 60 s timeout with them (to 1.5 s): the behaviour is what counts.
Where the time a call takes is not what a test checks (the ablations' calls, verdicts and texts), its calls take
0.05 s: one slot still queues them, and two ablations of about 50 calls each waited 10 s apiece at 0.2 s.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest

from lib.core.endpoints import normalise
from lib.core.results import FAILED, OK
from lib.core.samples import EvalSample
from lib.diagnosis.ablation import LEAK, AblationResult, AblationSpec, run_ablation
from lib.diagnosis.cost import estimate_ablation, needs_confirmation
from lib.judging.harness import Instrument, score_samples
from lib.judging.openai_judge import OpenAIJudge
from lib.judging.structured import JSON_OBJECT_SCHEMA, JSON_SCHEMA, MODES, ModeBook
from lib.store import Store
from tests.conftest import offline_responder
from tests.support import synthetic_runs as syn
from tests.support.openai_server import LLAMA_CPP_FORMATS, LLAMA_CPP_REFUSAL, OpenAIServer, request_mode, schema_of
from tests.support.synthetic_runs import LEAKY_FAITHFULNESS, REPLAY

MODEL = "qwen2.5-coder-1.5b-instruct"
N = 12
CALL = 0.2          # server seconds a call (the real judge's 8 s, scaled)
QUICK = 0.05        # server seconds a call where its time is not what the test checks
TIMEOUT = 1.5       # the judge's timeout, scaled as the call was (60 s for 8 s)


def reference_only(i: int, f: syn.Facts) -> EvalSample:
    """Correct but unsupported: the answer's second fact is stated by the reference, not by the passages."""
    return EvalSample(f"s{i:03d}", f.question, f"{f.fact1} {f.fact2}", (f.fact1, f.filler), f"{f.fact1} {f.fact2}")


def local_model(body: dict) -> str:
    """Deterministic verdicts (the offline judge's, whatever the seed); "ITEM n" for item numbers unless a schema
    is enforced."""
    verdicts = json.loads(offline_responder({**body, "seed": None}))["verdicts"]
    if schema_of(body) is None:
        verdicts = [{**v, "item": f"ITEM {v['item']}"} for v in verdicts]
    return json.dumps({"verdicts": verdicts})


def _llama(latency: float) -> OpenAIServer:
    return OpenAIServer(local_model, formats=LLAMA_CPP_FORMATS, refusal=LLAMA_CPP_REFUSAL, slots=1, latency=latency)


@pytest.fixture
def llama_server() -> Iterator[OpenAIServer]:
    """The local server, its calls at the scaled time (the pacer reads how its latency rises with calls queued)."""
    with _llama(CALL) as srv:
        yield srv


@pytest.fixture
def quick_llama() -> Iterator[OpenAIServer]:
    """The local server, one slot, its calls at QUICK: for a test of what is asked and answered, not of how long."""
    with _llama(QUICK) as srv:
        yield srv


@pytest.fixture
def leaky_db(fresh_db: Path) -> Path:
    """A run of 12 samples judged with a template that renders the reference (a planted leak)."""
    with Store(fresh_db) as store:
        syn.record(store, "leaky", syn.samples(reference_only, N), "faithfulness", LEAKY_FAITHFULNESS, REPLAY,
                   judge_model=MODEL)
    return fresh_db


def ablate(db: Path, srv: OpenAIServer) -> tuple[AblationResult, int, OpenAIJudge]:
    """The README's defaults (3 repeats, sequential, 8 in flight); returns the result and the estimate's calls."""
    spec = AblationSpec("leaky", ("faithfulness",), ("ground_truth",), judge=MODEL, endpoint=srv.base_url)
    judge = OpenAIJudge(MODEL, base_url=srv.base_url, api_key="local", timeout=TIMEOUT, concurrency=8)
    with Store(db) as store:
        estimate = estimate_ablation(store, spec, cacheable=True)
        result = run_ablation(store, spec, judge)
    assert result is not None
    return result, estimate.calls, judge


def test_a_planted_12_sample_leak_is_leak_in_little_more_than_one_pass(leaky_db: Path,
                                                                       quick_llama: OpenAIServer) -> None:
    result, estimated, judge = ablate(leaky_db, quick_llama)
    # the baseline, ground_truth blanked, the joint arm (question and ground_truth) and the positive control (the
    # claims given perfect support; the judge's floor is the joint arm's prompt, answered from the call cache)
    one_pass = 4 * N
    assert result.failures == {}, result.failures
    assert quick_llama.n_calls <= 1.2 * one_pass, (quick_llama.n_calls, result.accounting)
    assert quick_llama.n_calls <= estimated                  # the estimate is an upper bound, probes included
    # the schema kept: refused once as json_schema, then sent inside json_object on every call
    assert quick_llama.refused == [JSON_SCHEMA]
    assert {request_mode(b) for b in quick_llama.requests[1:]} == {JSON_OBJECT_SCHEMA}
    assert judge.output_mode == JSON_OBJECT_SCHEMA
    # deterministic: repeats stopped after the probe, and the text says so
    assert result.probe == 3 and "Repeats stopped" in result.summary
    cells = {v.arm: v.kind for v in result.verdicts}
    # LEAK at 12 samples needs the classifier's fix (issue 26 item 2, another branch): a rendering template, or a
    # move whose interval clears the smallest effect, is decided at any n
    assert cells["ground_truth"] == LEAK, [v.sentence for v in result.verdicts]


def test_one_slot_is_found_and_served_one_call_at_a_time(llama_server: OpenAIServer) -> None:
    """The issue's pacer climbed to 8 in flight against one slot (client median 23-40 s against the server's
    8.6 s). More calls in flight buy a single slot no throughput: the pacer settles at 1."""
    samples = syn.samples(reference_only, 16)
    judge = OpenAIJudge(MODEL, base_url=llama_server.base_url, api_key="local", timeout=TIMEOUT, concurrency=8)
    results = score_samples(samples, Instrument("faithfulness", LEAKY_FAITHFULNESS, REPLAY), judge)
    assert [r.status for r in results] == [OK] * len(samples), [r.reason for r in results]
    report = judge.pacing
    assert report.final == 1 and report.backoffs.get("queued") == 1 and report.peak <= 4, report
    server_median = statistics.median(llama_server.served)
    assert report.median is not None and report.median <= 1.5 * server_median, (report.median, server_median)
    assert "timed out" not in judge.retries


def test_calls_that_time_out_name_the_setting_to_raise() -> None:
    slow = OpenAIServer(local_model, latency=1.0)
    with slow:
        judge = OpenAIJudge(MODEL, base_url=slow.base_url, api_key="local", timeout=0.2, concurrency=1,
                            max_attempts=2, sleep=lambda s: None)
        [result] = score_samples(syn.samples(reference_only, 1), Instrument("faithfulness", LEAKY_FAITHFULNESS,
                                                                            REPLAY), judge)
    assert result.status == FAILED
    assert result.reason.startswith("judge call failed: timed out, after 2 attempts (they waited 0.2, 0.4 s at 1 "
                                    "in flight): raise EVALDRIFT_JUDGE_TIMEOUT"), result.reason


def test_the_cli_says_what_it_measured_and_a_rerun_costs_nothing_and_says_so(
        leaky_db: Path, quick_llama: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Off a terminal (a CI log) `ablate` prints progress lines; its text says the repeats stopped, as --json says;
    a re-run is answered from the store and says it made no call (the issue's re-run reprinted '147 judge calls')."""
    from tests.test_cli import cli

    for name, value in {"OPENAI_BASE_URL": quick_llama.base_url, "OPENAI_API_KEY": "local",
                        "EVALDRIFT_JUDGE_TIMEOUT": str(TIMEOUT)}.items():
        monkeypatch.setenv(name, value)
    args = ("ablate", "--db", leaky_db, "--run", "leaky", "--metric", "faithfulness", "--blank", "ground_truth",
            "--yes")
    first = cli(*args)
    assert first.returncode in (1, 3), first.stderr
    calls = quick_llama.n_calls
    progress = [x for x in first.stderr.splitlines() if x.startswith("ablating leaky: ")]
    assert progress and progress[-1].endswith("(100%)"), first.stderr
    assert "Repeats stopped: the judge gave identical verdicts in all 3 repeats of the first 3 samples" in \
        first.stdout
    assert "verdicts asked as json_object_schema" in first.stdout
    again = cli(*args)
    assert again.returncode == first.returncode and quick_llama.n_calls == calls
    # 66 judgings: 12 samples in five arms (baseline, ground_truth, the joint arm, the judge's floor and the positive
    # control), the first 3 samples' baseline three times before the repeats stopped
    assert "answered from the store: no judge call now (when it ran: 66 judgings:" in again.stdout
    # the Ablation page's estimate for it (the page offered "Launch up to 2 calls to the paid judge")
    spec = AblationSpec("leaky", ("faithfulness",), ("ground_truth",), judge=MODEL, endpoint=quick_llama.base_url)
    with Store(leaky_db) as store:
        estimate = estimate_ablation(store, spec, cacheable=True)
    assert estimate.calls == 0 and not needs_confirmation(estimate, None)
    assert estimate.sentence.startswith("180 judgings, already made: this ablation is done")   # 5 arms x 12 x 3


def test_a_call_slower_than_the_setting_but_within_four_median_calls_is_waited_for() -> None:
    """The README: an attempt's timeout is EVALDRIFT_JUDGE_TIMEOUT or four median calls, whichever is longer. On a
    shared machine a real model's calls went from 15 s to 70 s with the load; a judge whose median call is 20 s
    must wait for a 70 s call under a 60 s setting (scaled here: 0.5 s calls, a 1.0 s setting, one call of 1.4 s)
    rather than abandon a reply the one-slot server goes on computing."""
    srv = OpenAIServer(local_model, slots=1, latency=0.5)
    with srv:
        judge = OpenAIJudge(MODEL, base_url=srv.base_url, api_key="local", timeout=1.0, concurrency=1,
                            max_attempts=1, sleep=lambda s: None)
        instrument = Instrument("faithfulness", LEAKY_FAITHFULNESS, REPLAY)
        samples = syn.samples(reference_only, 4)
        first = score_samples(samples[:3], instrument, judge)
        srv.latency = 1.4   # the load rises: one call takes 2.8 median calls, over the setting
        [slow] = score_samples(samples[3:], instrument, judge)
    assert [r.status for r in first] == [OK] * 3, [r.reason for r in first]
    assert judge.pacer.timeout_for() >= 1.8   # four median calls of about 0.5 s, over the 1.0 s setting
    assert slow.status == OK, slow.reason
    assert srv.n_calls == 4 and "timed out" not in judge.retries


def test_a_call_that_timed_out_against_one_slot_is_asked_again_with_a_longer_wait() -> None:
    """A busy machine makes a real model's first call slower than the 60 s setting, before any call has been
    measured. The one-slot server goes on computing the abandoned call, so a retry with the same wait queues behind
    it and times out too, and so does every retry after it: the sample failed while the server computed each
    attempt in full (scaled: 1.3 s calls, a 1.0 s setting). A retry after a timeout waits twice as long."""
    srv = OpenAIServer(local_model, slots=1, latency=1.3)
    with srv:
        judge = OpenAIJudge(MODEL, base_url=srv.base_url, api_key="local", timeout=1.0, concurrency=1,
                            sleep=lambda s: None)
        [result] = score_samples(syn.samples(reference_only, 1), Instrument("faithfulness", LEAKY_FAITHFULNESS,
                                                                            REPLAY), judge)
    assert result.status == OK, result.reason
    assert srv.n_calls == 2 and judge.retries == ["timed out"]


def test_a_refused_form_is_remembered_when_the_next_form_is_accepted_but_the_call_fails() -> None:
    """On the real server at load 17-20 the first call in `json_object_schema` timed out after `json_schema` was
    refused; the refusal was forgotten (only an answer recorded it), so the next call was refused again, and so would
    every call be until one was answered. A form the server refused while it accepted the next one is remembered."""
    srv = OpenAIServer(local_model, formats=LLAMA_CPP_FORMATS, refusal=LLAMA_CPP_REFUSAL, slots=1, latency=0.6)
    modes = ModeBook()
    with srv:
        judge = OpenAIJudge(MODEL, base_url=srv.base_url, api_key="local", timeout=0.3, concurrency=1,
                            max_attempts=1, sleep=lambda s: None, modes=modes)
        results = score_samples(syn.samples(reference_only, 2), Instrument("faithfulness", LEAKY_FAITHFULNESS,
                                                                           REPLAY), judge)
    assert [r.status for r in results] == [FAILED, FAILED]
    assert srv.refused == [JSON_SCHEMA], srv.refused
    assert [request_mode(b) for b in srv.requests] == [JSON_SCHEMA, JSON_OBJECT_SCHEMA, JSON_OBJECT_SCHEMA]
    # the endpoint has not answered yet: what is left to find is the rest of the forms below json_schema
    assert modes.probes_left(normalise(srv.base_url), MODEL) == len(MODES) - 2


def test_unreadable_replies_cost_at_most_the_estimate_and_are_kept_with_their_failures(leaky_db: Path) -> None:
    """A judge whose every reply is unreadable (the issue's 90 of 147 calls produced nothing): each request is
    asked once, repairs stop at the job's allowance, the estimate holds, and what the judge wrote is stored with
    each failure for the Ablation page to show."""
    with OpenAIServer(lambda body: "I cannot judge ITEM 1 without more context.") as srv:
        spec = AblationSpec("leaky", ("faithfulness",), ("ground_truth",), judge=MODEL, endpoint=srv.base_url)
        judge = OpenAIJudge(MODEL, base_url=srv.base_url, api_key="local", timeout=5.0, concurrency=4)
        with Store(leaky_db) as store:
            estimate = estimate_ablation(store, spec, cacheable=True)
            result = run_ablation(store, spec, judge)
            failed = store.ablation_failures(spec.ablation_id)
        asked = srv.n_calls
    assert result is not None and sum(result.failures.values()) == result.judgings
    assert asked <= estimate.calls, (asked, estimate.sentence)
    # every distinct request once (the joint arm asks what the ground_truth arm asked: answered by its failure),
    # and no more repairs than the allowance
    assert asked <= estimate.requests + estimate.repairs and result.calls == asked   # type: ignore[operator]
    assert not failed.empty and set(failed["raw"]) == {"I cannot judge ITEM 1 without more context."}
    assert all(r.startswith("judge reply is not JSON: 'I cannot judge ITEM 1") for r in failed["reason"])
