"""The Ablation page's "gate a new judge": the lib function against a loopback judge, and the page flow in AppTest."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lib.app.calibration import GateRequest, GateRunner, plan_gate, result_rows, run_gate, verdict_words
from lib.core import settings
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED, REPLAY
from lib.core.samples import EvalSample
from lib.intake.labels import labels_from_rows
from lib.store import Store
from tests.support.polling import rerun_until
from tests.support.synthetic_runs import LEAKY_FAITHFULNESS, facts, record

MODEL = "evaldrift-test-model"
N = 12
APP = Path(__file__).resolve().parents[1] / "app.py"


def half_supported(i: int, f) -> EvalSample:
    """Claim 1 is in the passage, claim 2 only in the reference: people say supported, not supported."""
    return EvalSample(f"s{i:02d}", f.question, f"{f.fact1} {f.fact2}", (f"{f.fact1} {f.filler}",),
                      f"{f.fact1} {f.fact2}")


@pytest.fixture
def labelled_db(fresh_db: Path) -> Path:
    """A run judged by a model on a server, and people's labels of every claim (12 samples, 24 labels)."""
    items = [half_supported(i, f) for i, f in enumerate(facts(N))]
    with Store(fresh_db) as store:
        record(store, "r1", items, "faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED, judge_model=MODEL)
        rows = [{"sample_id": s.sample_id, "metric": "faithfulness", "item": k, "label": k == 1} for s in items
                for k in (1, 2)]
        store.add_labels(labels_from_rows(store, rows, source="cli", labeller="ana"))
    return fresh_db


@pytest.fixture
def server_env(openai_server, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-planted-key")
    monkeypatch.setenv("EVALDRIFT_JUDGE_MODEL", MODEL)
    return openai_server


def test_an_equal_judge_passes_and_the_leaky_template_fails(labelled_db: Path, server_env) -> None:
    s = settings.load()
    with Store(labelled_db) as store:
        plan = plan_gate(store, GateRequest("faithfulness", MODEL), s)
        assert (plan.n_samples, plan.version, plan.current_model) == (N, 2 * N, MODEL)
        assert plan.candidate_calls == N and plan.paid == (MODEL,)   # the identical requests are asked once
        assert "v24" in plan.sentence and "12 labelled samples" in plan.sentence
        assert f"candidate ({MODEL}: 12 calls left after the call cache)" in plan.sentence
        assert server_env.n_calls == 0   # planning calls nothing

        same = run_gate(store, plan.request, s, plan.version)
        assert not same.worse and same.comparison.difference.value == 0.0
        assert verdict_words(same).startswith("PASS: ") and "not worse beyond the 0.02 margin" in verdict_words(same)
        assert plan_gate(store, plan.request, s).calls == 0   # the call cache now answers every request

        leaky = GateRequest("faithfulness", MODEL, template=LEAKY_FAITHFULNESS, binding=REPLAY)
        runner = GateRunner(store)
        try:
            gate_id = runner.submit(plan_gate(store, leaky, s), s)
            runner.wait(gate_id, timeout=60)
            status = runner.status(gate_id)
        finally:
            runner.shutdown()
    assert status.state == "done", status.error
    worse = status.result
    assert worse.worse and verdict_words(worse).startswith("FAIL: ") and "Candidate WORSE" in verdict_words(worse)
    rows = result_rows(worse)
    assert [r[""] for r in rows] == ["current", "candidate", "difference (candidate - current)"]
    assert rows[0]["accuracy"].startswith("1.000") and rows[1]["accuracy"].startswith("0.500")
    assert rows[2]["accuracy"].startswith("-0.500 [")
    assert rows[1]["bias (judge - people)"].startswith("+0.500")


def test_the_page_shows_the_cost_asks_for_a_paid_judge_and_shows_the_verdict(
        labelled_db: Path, server_env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALDRIFT_DB", str(labelled_db))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.switch_page("pages/ablation.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="gate_metric").set_value("context_recall").run()
    assert any("has no context" in i.value and "labels on stored samples" in i.value for i in at.info)
    assert at.button(key="gate_launch").disabled
    at.selectbox(key="gate_metric").set_value("faithfulness")
    at.selectbox(key="gate_model").set_value(MODEL)
    at.text_area(key="gate_template").set_value(LEAKY_FAITHFULNESS).run()
    at.radio(key="gate_binding").set_value(REPLAY)
    at.run()
    captions = " ".join(c.value for c in at.caption)
    assert "Calibration set v24" in captions and "12 labelled samples" in captions
    assert "paid judge: evaldrift-test-model" in captions
    assert at.button(key="gate_launch").disabled   # a paid judge waits for the confirmation
    assert server_env.n_calls == 0
    confirm = [c for c in at.checkbox if str(c.key).startswith("gate_confirm_")]
    assert len(confirm) == 1 and "Make up to 24 calls to the paid judge" in confirm[0].label   # 12 each, none cached
    confirm[0].check().run()
    at.button(key="gate_launch").click().run()
    at = rerun_until(at, lambda a: any(e.value.startswith("FAIL") for e in a.error), timeout=60)
    fails = [e.value for e in at.error if e.value.startswith("FAIL")]
    assert fails and "WORSE" in fails[0] and "0.02 margin" in fails[0]
    assert server_env.n_calls > 0
    table = next(f.value for f in at.dataframe if "instrument" in f.value.columns)
    assert list(table[""]) == ["current", "candidate", "difference (candidate - current)"]
    assert list(table["accuracy"].str[:6]) == ["1.000 ", "0.500 ", "-0.500"]
