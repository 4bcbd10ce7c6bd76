"""The gate's current instrument when the latest run is another tool's (issue 39, item 4).

An imported run records no template or binding of ours; the gate (`calibrate`, the Ablation page) crashed with
"unknown binding ''" whenever such a run was the latest and the suite had labels. The current instrument is the
newest run's that can be replayed (judge model, template and binding recorded); none is a one-line refusal.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lib.app.calibration import GateRequest, plan_gate
from lib.core import settings
from lib.core.errors import InputError
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.records import MAIN, MetricRecord, RunRecord
from lib.core.results import OK, SampleResult
from lib.core.samples import EvalSample
from lib.store import Store
from tests.support.cli import run_cli as cli
from tests.support.synthetic_runs import facts, record

APP = Path(__file__).resolve().parents[1] / "app.py"
INSPECT = "Inspect AI scorer model_graded_fact: its grading options\n{{\"template\": \"{{question}}\"}}"
# what each kind of run records for faithfulness: (judge model, template, binding, scorer)
KINDS = {
    "ours": ("offline-lexical-v2", DEFAULT_TEMPLATES["faithfulness"], PROJECTED, None),
    "tool without a template": ("gpt-4o-mini", None, None, "ragas 0.4.3"),
    "tool's recorded options": ("gpt-4o-mini", INSPECT, None, "inspect_ai 0.3.285"),
    "template without a judge": (None, DEFAULT_TEMPLATES["faithfulness"], PROJECTED, None),
}


def _items() -> list[EvalSample]:
    return [EvalSample(f"s{i:02d}", f.question, f"{f.fact1} {f.fact2}", (f"{f.fact1} {f.filler}",),
                       f"{f.fact1} {f.fact2}") for i, f in enumerate(facts(6))]


def _store_runs(db: Path, kinds: list[str], tmp_path: Path) -> None:
    """One run per kind, a day apart (the last is the latest), and people's labels of every claim."""
    items = _items()
    with Store(db) as store:
        for day, kind in enumerate(kinds):
            model, template, binding, scorer = KINDS[kind]
            if kind == "ours":
                record(store, f"r{day + 1}", items, "faithfulness", template, binding, day=day)
                continue
            store.record_run(RunRecord(
                f"r{day + 1}", datetime(2026, 10, 1, 2) + timedelta(days=day), {}, {MAIN: items},
                [MetricRecord("faithfulness", [SampleResult(s.sample_id, OK, 0.5) for s in items], model, template,
                              binding, scorer=scorer)]))
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"sample_id": s.sample_id, "metric": "faithfulness", "item": k,
                                          "label": k == 1}) + "\n" for s in items for k in (1, 2)))
    assert cli("labels", "import", "--db", db, labels, "--labeller", "ana").returncode == 0


@pytest.mark.parametrize(("kinds", "current"), [
    (["ours"], "r1"),
    (["ours", "ours"], "r2"),                                   # the newest of ours
    (["ours", "tool without a template"], "r1"),
    (["ours", "tool's recorded options"], "r1"),                # a template, but no binding of ours
    (["ours", "template without a judge"], "r1"),               # nothing to ask
    (["tool without a template"], None),
    (["tool's recorded options", "template without a judge"], None),
])
def test_the_current_instrument_is_the_newest_run_s_that_can_be_replayed(kinds: list[str], current: str | None,
                                                                        tmp_path: Path) -> None:
    from lib.diagnosis.agreement import current_instrument

    db = tmp_path / "e.duckdb"
    _store_runs(db, kinds, tmp_path)
    with Store(db) as store:
        if current is None:
            with pytest.raises(InputError) as exc:
                current_instrument(store, "faithfulness", MAIN)
            assert f"r{len(kinds)}" in str(exc.value) and "\n" not in str(exc.value)
            return
        found = current_instrument(store, "faithfulness", MAIN)
        assert found.run_id == current
        assert (found.judge_model, found.template, found.binding) == KINDS["ours"][:3]


def test_calibrate_and_the_gate_plan_read_past_a_tool_run(tmp_path: Path) -> None:
    db = tmp_path / "e.duckdb"
    _store_runs(db, ["ours", "tool without a template"], tmp_path)
    proc = cli("calibrate", "--db", db, "--judge", "offline", "--model", "offline-lexical-v1")
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    assert "6 labelled samples" in proc.stdout and "(current: offline-lexical-v2" in proc.stdout
    with Store(db) as store:
        plan = plan_gate(store, GateRequest(metric="faithfulness", model="offline-lexical-v1"), settings.load())
    assert plan.current_run == "r1" and "run r1" in plan.sentence and plan.n_samples == 6


def test_calibrate_refuses_in_one_line_when_no_run_can_be_replayed(tmp_path: Path) -> None:
    db = tmp_path / "e.duckdb"
    _store_runs(db, ["tool without a template"], tmp_path)
    proc = cli("calibrate", "--db", db, "--judge", "offline", "--model", "offline-lexical-v1")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stdout == ""
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("error: ") and "r1" in line and "ragas 0.4.3" in line


@pytest.mark.parametrize(("kinds", "shown"), [
    (["ours", "tool without a template"], "Before running: Calibration set"),
    (["tool without a template"], "The gate cannot run:"),
])
def test_the_ablation_page_loads_with_a_tool_run_latest(kinds: list[str], shown: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "e.duckdb"
    _store_runs(db, kinds, tmp_path)
    monkeypatch.setenv("EVALDRIFT_DB", str(db))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.switch_page("pages/ablation.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    texts = [str(x.value) for x in (*at.caption, *at.info)]
    assert any(t.startswith(shown) for t in texts), texts
    assert not any("unknown binding" in t for t in texts)
