"""The Ragas adapter against a real Ragas (its own environment) and the loopback judge server.

Ragas' dependencies (openai 2.x, langchain 0.3) conflict with ours, so Ragas
lives in a separate virtual environment (EVALDRIFT_RAGAS_PYTHON; .ci/run
builds one). The server answers Ragas' statement and verdict prompts with the
offline judge's lexical decision (tests/benchmarks/judge_server.py), so the
model is a stand-in and everything else, Ragas included, is real.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from lib.core.errors import InputError
from lib.core.samples import EvalSample
from lib.diagnosis.ablation import INCONCLUSIVE, LEAK, AblationSpec, run_ablation
from lib.diagnosis.ablation._engine import SENSITIVE
from lib.intake.ingest import run_from_frame
from lib.judging.scorers.ragas_metrics import score_with_ragas
from lib.store import Store
from tests.benchmarks.judge_server import respond
from tests.support import ragas_wirings, tool_runs
from tests.support.openai_server import OpenAIServer
from tests.support.warm_python import WarmPython

RAGAS_PYTHON = tool_runs.tool_path(*tool_runs.RAGAS_PYTHON)
N = 24

needs_ragas = pytest.mark.skipif(
    not Path(RAGAS_PYTHON).exists() and os.environ.get("CI") != "true",
    reason=f"no Ragas environment at {RAGAS_PYTHON} (.ci/run builds one)")


def samples() -> list[EvalSample]:
    """Answers with one claim the passage states and one only the reference states."""
    out = []
    for i in range(N):
        opens, closes = f"{8 + i % 3}:00", f"{17 + i % 4}:30"
        out.append(EvalSample(
            f"s{i:02d}", f"When is branch {i} open?",
            f"Branch {i} opens at {opens} on weekdays. Branch {i} closes at {closes} on weekdays.",
            (f"Branch {i} opens at {opens} on weekdays.",),
            f"Branch {i} opens at {opens} on weekdays. Branch {i} closes at {closes} on weekdays."))
    return out


@pytest.fixture(scope="module")
def warm_ragas() -> Iterator[str]:
    """The Ragas Python with Ragas imported once for the module (tests/support/warm_python.py): each adapter
    call still runs ragas_worker.py in that interpreter, in a forked child, without 5 s of imports. The openai
    SDK's resources are imported too: Ragas' `llm_factory` reaches `client.chat`, which imports every resource
    module of the SDK (7 CPU s a call here), so without them each call paid that again. So are the modules the
    first `llm_factory` and `ascore` import (instructor's v2 client, Ragas' LLM adapters, jinja2, httpcore):
    0.39 -> 0.33 CPU s a forked call."""
    if not Path(RAGAS_PYTHON).exists():
        yield RAGAS_PYTHON   # the cold path says what is missing
        return
    with WarmPython(RAGAS_PYTHON, ("ragas", "ragas.metrics.collections", "ragas.llms", "openai", "openai.resources",
                                   "ragas.llms.adapters.instructor", "ragas.llms.adapters.litellm",
                                   "instructor.v2.providers.openai.client", "instructor.v2.dsl", "jinja2.sandbox",
                                   "httpcore", "anyio._backends._asyncio", "docstring_parser"),
                    env={"RAGAS_DO_NOT_TRACK": "true", "DO_NOT_TRACK": "1"}) as warm:
        yield str(warm.path)


@pytest.fixture
def ragas_env(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest):
    server = OpenAIServer(respond).start()
    # one test runs the adapter on the Ragas Python itself, cold, as a user's does; the others on a warm one
    cold = request.node.get_closest_marker("cold_ragas") is not None
    monkeypatch.setenv("EVALDRIFT_RAGAS_PYTHON", RAGAS_PYTHON if cold else request.getfixturevalue("warm_ragas"))
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    monkeypatch.setenv("EVALDRIFT_JUDGE_MODEL", "judge-model")
    try:
        yield server
    finally:
        server.stop()


def record_as_scored(store: Store, run_id: str, scorer, metric: str = "faithfulness") -> list[float | None]:
    """Record the run as the team's harness scored it (an imported Ragas result)."""
    data = samples()
    scores = scorer(data)
    frame = pd.DataFrame({"id": [s.sample_id for s in data], "user_input": [s.question for s in data],
                          "response": [s.answer for s in data], "retrieved_contexts": [list(s.contexts) for s in data],
                          "reference": [s.ground_truth for s in data], metric: scores})
    store.record_run(run_from_frame(frame, source="ragas result", run_id=run_id, scorer="ragas"))
    return scores


def test_without_ragas_the_adapter_says_where_it_looked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALDRIFT_RAGAS_PYTHON", sys.executable)   # this project's Python: no Ragas here
    monkeypatch.setenv("EVALDRIFT_JUDGE_MODEL", "judge-model")
    with pytest.raises(InputError, match="Ragas is not installed for"):
        score_with_ragas("faithfulness", samples()[:1])
    monkeypatch.setenv("EVALDRIFT_RAGAS_PYTHON", "/nonexistent/ragas-venv/bin/python")   # a mistyped setting
    with pytest.raises(InputError, match=r"EVALDRIFT_RAGAS_PYTHON names a Python that cannot be run, "
                                         r"/nonexistent/ragas-venv/bin/python"):
        score_with_ragas("faithfulness", samples()[:1])
    monkeypatch.setenv("EVALDRIFT_JUDGE_MODEL", "offline-lexical-v2")
    with pytest.raises(InputError, match="Ragas needs a model judge"):
        score_with_ragas("faithfulness", samples()[:1])


@needs_ragas
@pytest.mark.cold_ragas
def test_the_adapter_runs_ragas_faithfulness_on_the_operators_endpoint(ragas_env: OpenAIServer) -> None:
    scores, version, errors = score_with_ragas("faithfulness", samples()[:4])
    assert version.startswith("0.") and not errors
    assert scores == [0.5, 0.5, 0.5, 0.5]            # one of two statements stated by the passage
    assert ragas_env.n_calls == 8                     # Ragas: statements, then verdicts, per sample


@needs_ragas
@pytest.mark.parametrize(("wiring", "leaks"), [("leaky", True), ("wired", False)])
def test_a_ragas_harness_that_hands_over_the_reference_comes_out_leak(
        ragas_env: OpenAIServer, fresh_db: Path, wiring: str, leaks: bool) -> None:
    with Store(fresh_db) as store:
        stored = record_as_scored(store, "r1", getattr(ragas_wirings, wiring))
        assert stored == ([1.0] * N if leaks else [0.5] * N)
        spec = AblationSpec("r1", ("faithfulness",), ("ground_truth",), repeats=1,
                            scorer=f"tests.support.ragas_wirings:{wiring}")
        result = run_ablation(store, spec, None)
    cells = {v.arm: v for v in result.verdicts}
    assert (cells["ground_truth"].kind == LEAK) is leaks, cells["ground_truth"].sentence
    # Ragas' faithfulness reads the question and scores nothing without it, so the joint arm (question and
    # reference blanked together) cannot clear the wiring: undecided, and the CI gate says so (never "clean")
    joint = cells["question+ground_truth"]
    assert joint.kind == INCONCLUSIVE and "no score" in joint.sentence, joint.sentence
    assert result.exit_code == (1 if leaks else 3), result.summary


@needs_ragas
def test_the_adapter_runs_ragas_context_recall_on_the_operators_endpoint(ragas_env: OpenAIServer) -> None:
    scores, version, errors = score_with_ragas("context_recall", samples()[:4])
    assert version.startswith("0.") and not errors
    assert scores == [0.5, 0.5, 0.5, 0.5]            # one of the reference's two sentences is in the passage
    assert ragas_env.n_calls == 4                     # Ragas: one classification call per sample


def test_every_ragas_metric_the_adapter_offers_has_a_row_in_the_wiring_table() -> None:
    from lib.core.metrics import METRIC_NAMES
    from lib.judging.scorers import ragas_metrics

    assert set(ragas_metrics.OFFERED) == {"faithfulness", "context_recall"} <= set(METRIC_NAMES)
    for metric in ragas_metrics.OFFERED:
        assert callable(getattr(ragas_metrics, metric))
    with pytest.raises(InputError, match="answer_relevance"):
        score_with_ragas("answer_relevance", samples()[:1])


@needs_ragas
@pytest.mark.parametrize(("wiring", "leaks"), [("recall_leaky", True), ("recall_wired", False)])
def test_a_ragas_context_recall_harness_that_hands_over_the_answer_comes_out_leak(
        ragas_env: OpenAIServer, fresh_db: Path, wiring: str, leaks: bool) -> None:
    with Store(fresh_db) as store:
        stored = record_as_scored(store, "r1", getattr(ragas_wirings, wiring), "context_recall")
        assert stored == ([1.0] * N if leaks else [0.5] * N)
        spec = AblationSpec("r1", ("context_recall",), ("answer",), repeats=1,
                            scorer=f"tests.support.ragas_wirings:{wiring}")
        result = run_ablation(store, spec, None)
    cells = {v.arm: v for v in result.verdicts}
    assert (cells["answer"].kind == LEAK) is leaks, cells["answer"].sentence


@needs_ragas
def test_the_adapter_blanks_as_ragas_accepts_and_passes_its_refusal_through(ragas_env: OpenAIServer,
                                                                           fresh_db: Path) -> None:
    from lib.judging.scorers import ragas_metrics

    with Store(fresh_db) as store:
        assert record_as_scored(store, "r1", ragas_metrics.faithfulness) == [0.5] * N
        spec = AblationSpec("r1", ("faithfulness",), ("question", "contexts"), repeats=1,
                            scorer="lib.judging.scorers.ragas_metrics:faithfulness")
        result = run_ablation(store, spec, None)
        rows = store.ablation_results(result.ablation_id)
    cells = {v.arm: v for v in result.verdicts}
    # blanked passages reach Ragas as one empty passage (it refuses an empty list): judged, and the score falls
    assert cells["contexts"].kind == SENSITIVE, cells["contexts"].sentence
    # a blank question Ragas refuses: each sample failed with Ragas' own reason, and never called a leak
    question = rows[rows.arm == "question"]
    assert set(question["status"]) == {"failed"}
    assert question["reason"].str.contains("user_input is missing").all(), question["reason"].iloc[0]
    assert cells["question"].kind != LEAK
