"""What the server says it served: recorded per call and per metric, and marked on Trends when it changes under
one configured judge name (issue 45, A1)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from lib.diagnosis.trends import change_events, run_changes
from lib.diagnosis.trends._diagnose import served_as, suspects_for
from lib.jobs._demo import demo_samples
from lib.judging.openai_judge import OpenAIJudge
from lib.judging.scoring import evaluate_run
from lib.store import Store
from tests.support.openai_server import OpenAIServer

T0 = datetime(2026, 1, 1)


def _judged(server: OpenAIServer, store: Store, run_id: str, day: int, first: int = 0) -> None:
    """Judge three demo samples (from `first`) for faithfulness with "judge-x" and record the run."""
    judge = OpenAIJudge("judge-x", base_url=server.base_url, api_key="sk-test", timeout=5.0, sleep=lambda s: None)
    try:
        samples = [d.sample for d in demo_samples()[0][first:first + 3]]
        run = evaluate_run(run_id, samples, judge, metrics=["faithfulness"], cache=store,
                           started_at=T0 + timedelta(days=day), pipeline={"retriever": {"top_k": 3}})
    finally:
        judge.close()
    store.flush_cache()
    store.record_run(run)


def test_a_model_swapped_behind_one_judge_name_gets_a_marker_and_a_suspect(
        openai_server: OpenAIServer, tmp_path: Path) -> None:
    store = Store(tmp_path / "served.duckdb")
    openai_server.served_model, openai_server.model_fingerprint = "judge-x-0613", "fp_a"
    _judged(openai_server, store, "r1", 0)
    _judged(openai_server, store, "r2", 1)     # same samples: answered from the call cache, as served then
    openai_server.served_model, openai_server.model_fingerprint = "judge-x-1106", "fp_b"
    _judged(openai_server, store, "r3", 2, first=3)   # new samples: new calls, served by the new snapshot

    metrics = store.run_metrics("r3").set_index("metric")
    assert metrics.loc["faithfulness", "judge_model"] == "judge-x"
    assert metrics.loc["faithfulness", "served_model"] == "judge-x-1106"
    assert store.run_metrics("r2").set_index("metric").loc["faithfulness", "served_model"] == "judge-x-0613"

    events = change_events(store.metric_history())
    served = events[events["kind"] == "served model"]
    assert list(served["run_id"]) == ["r3"]
    assert served["text"].iloc[0] == ("faithfulness served under judge-x: judge-x-0613 (fp_a) -> "
                                      "judge-x-1106 (fp_b)")
    assert "judge model" not in set(events["kind"])    # the configured name never changed

    said = [s.description for s in suspects_for(run_changes(store, "r3"), "faithfulness")]
    assert said == ["the server served another model under the name judge-x: judge-x-0613 (fp_a) -> "
                    "judge-x-1106 (fp_b)"]
    store.close()


def test_the_served_model_is_kept_with_each_cached_reply(openai_server: OpenAIServer, tmp_path: Path) -> None:
    store = Store(tmp_path / "cache.duckdb")
    openai_server.served_model = "judge-x-0613"
    _judged(openai_server, store, "r1", 0)
    store.close()
    reopened = Store(tmp_path / "cache.duckdb")
    openai_server.served_model = "judge-x-1106"   # the cached replies say what served them when they were called
    _judged(openai_server, reopened, "r2", 1)
    assert reopened.run_metrics("r2").set_index("metric").loc["faithfulness", "served_model"] == "judge-x-0613"
    reopened.close()


def _history(rows: list[tuple[str, str | None, str | None, str | None]]) -> pd.DataFrame:
    """Runs of faithfulness: (run, judge name, served model, fingerprint), a day apart."""
    return pd.DataFrame([{"run_id": r, "started_at": T0 + timedelta(days=i), "pipeline": "{}", "metric": "faithfulness",
                          "score": 0.8, "judge_model": j, "prompt_hash": "p", "binding": "projected", "scorer": None,
                          "served_model": s, "fingerprint": f} for i, (r, j, s, f) in enumerate(rows)])


@pytest.mark.parametrize(("rows", "expected"), [
    # another snapshot under one name: marked
    ([("a", "x", "x-0613", None), ("b", "x", "x-1106", None)], ["faithfulness served under x: x-0613 -> x-1106"]),
    # the same model, another fingerprint: marked
    ([("a", "x", "x-1", "fp_a"), ("b", "x", "x-1", "fp_b")], ["faithfulness served under x: x-1 (fp_a) -> x-1 (fp_b)"]),
    # nothing changed: no marker
    ([("a", "x", "x-1", "fp_a"), ("b", "x", "x-1", "fp_a")], []),
    # another configured name: the judge model marker says it, not this one
    ([("a", "x", "x-1", None), ("b", "y", "y-1", None)], []),
    # a run that said nothing (an import, an older run) is no change; the next is compared with the last that said
    ([("a", "x", "x-1", None), ("b", "x", None, None), ("c", "x", "x-1", None)], []),
    ([("a", "x", "x-1", None), ("b", "x", None, None), ("c", "x", "x-2", None)],
     ["faithfulness served under x: x-1 -> x-2"]),
    # back to a name: compared with the last run under that name
    ([("a", "x", "x-1", None), ("b", "y", "y-1", None), ("c", "x", "x-2", None)],
     ["faithfulness served under x: x-1 -> x-2"]),
    # no judge name recorded: nothing to compare under
    ([("a", None, "x-1", None), ("b", None, "x-2", None)], []),
])
def test_served_model_markers(rows: list[tuple[str, str | None, str | None, str | None]],
                              expected: list[str]) -> None:
    events = change_events(_history(rows))
    assert list(events.loc[events["kind"] == "served model", "text"]) == expected


@pytest.mark.parametrize(("model", "fp", "expected"), [
    ("x-1", "fp_a", "x-1 (fp_a)"), ("x-1", None, "x-1"), (None, "fp_a", "fingerprint fp_a"), (None, None, None),
    ("", "", None),
])
def test_served_as(model: str | None, fp: str | None, expected: str | None) -> None:
    assert served_as(model, fp) == expected
