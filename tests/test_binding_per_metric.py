"""One metric's changed template marks that metric only (issue 46 item 6): the binding is per metric, at both doors.

`score --template faithfulness=leaky.txt --binding replay` used to need every metric's template, so the user gave
five, all five were recorded `replay`, and Trends drew five binding markers while every Overview card said "new
instrument" for one metric's change. Now the replay binding binds the metrics given a template of their own; the
others keep our projected defaults (their prompts are unchanged), and `ingest --binding` binds only the metrics it
was given a template for. Checked at the store (the recorded instruments) and where the user sees it: Trends'
change markers and the Overview cards.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from lib.core.errors import InputError
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED, REPLAY
from lib.core.samples import EvalSample
from lib.diagnosis.trends import change_events
from lib.intake.chunked import ingest_file
from lib.jobs._demo import LEAKY_FAITHFULNESS
from lib.judging import OfflineJudge
from lib.judging.scoring import check_templates, evaluate_run
from lib.presentation.views import card_steps, metric_cards
from lib.store import Store

T0 = datetime(2026, 11, 1, 2, 0)
SAMPLES = [EvalSample(f"s{i}", f"How many slots does the T{i}00 toaster have?", f"The T{i}00 has {i + 1} slots.",
                      [f"The T{i}00 toaster has {i + 1} slots."], f"The T{i}00 toaster has {i + 1} slots.")
           for i in range(1, 4)]


@pytest.mark.parametrize("templates, binding, expected", [
    ({}, PROJECTED, {m: PROJECTED for m in DEFAULT_TEMPLATES}),
    ({"faithfulness": LEAKY_FAITHFULNESS}, PROJECTED, None),   # projected refuses a template that reads more
    # replay binds the metric given its own template; the others keep the projected default
    ({"faithfulness": LEAKY_FAITHFULNESS}, REPLAY,
     {m: REPLAY if m == "faithfulness" else PROJECTED for m in DEFAULT_TEMPLATES}),
    (dict(DEFAULT_TEMPLATES), REPLAY, {m: REPLAY for m in DEFAULT_TEMPLATES}),   # every one given: every one replayed
    ({}, REPLAY, None),   # replay with no template of its own would bind nothing: refused
])
def test_each_metric_is_bound_as_its_own_template_asks(templates: dict, binding: str, expected: dict | None) -> None:
    run = None
    try:
        run = evaluate_run("r", SAMPLES, OfflineJudge(), templates=templates, binding=binding)
    except InputError as exc:   # the row's expectation: refused before any call
        assert expected is None, exc
        return
    assert expected is not None
    assert {m.metric: m.binding for m in run.metrics} == expected
    # a metric with no template of its own is scored with our default, whatever the binding
    assert {m.metric: m.template for m in run.metrics if m.metric not in templates} == \
        {m: DEFAULT_TEMPLATES[m] for m in DEFAULT_TEMPLATES if m not in templates}


def test_check_templates_still_refuses_a_replayed_template_that_reads_a_missing_field() -> None:
    with pytest.raises(InputError, match="does not have it"):
        check_templates(["faithfulness"], {"faithfulness": LEAKY_FAITHFULNESS}, REPLAY,
                        fields=("question", "answer", "contexts"))


def test_one_changed_template_marks_one_metric_on_trends_and_the_overview() -> None:
    with Store(":memory:") as store:
        for day in range(3):
            store.record_run(evaluate_run(f"n{day}", SAMPLES, OfflineJudge(), started_at=T0 + timedelta(days=day)))
        # the fourth night: faithfulness's template changes (it now shows the reference), nothing else
        store.record_run(evaluate_run("n3", SAMPLES, OfflineJudge(), templates={"faithfulness": LEAKY_FAITHFULNESS},
                                      binding=REPLAY, started_at=T0 + timedelta(days=3)))
        history = store.metric_history()
        events = change_events(history)
        # before: every metric's template was required, so five metrics changed binding at n3
        at = events[events["run_id"] == "n3"]
        assert sorted(at["kind"]) == ["binding", "prompt"], at.to_string()
        assert set(at["metric"]) == {"faithfulness"}, at.to_string()
        cards = metric_cards(history, paired=store.paired_steps(card_steps(history)))
    new = {c.metric for c in cards if c.previous_run is None}   # the card that says "new instrument"
    assert new == {"faithfulness"}
    assert {c.metric: c.previous_run for c in cards if c.metric != "faithfulness"} == \
        {m: "n2" for m in DEFAULT_TEMPLATES if m != "faithfulness"}


def test_ingest_binds_only_the_metrics_it_was_given_a_template_for(tmp_path: Path) -> None:
    path = tmp_path / "scored.csv"
    pd.DataFrame({"id": ["a", "b"], "question": ["Q1?", "Q2?"], "answer": ["A1.", "A2."],
                  "contexts": ['["P1."]', '["P2."]'], "ground_truth": ["G1.", "G2."],
                  "faithfulness": [1.0, 0.5], "context_recall": [1.0, 1.0]}).to_csv(path, index=False)
    with Store(tmp_path / "i.duckdb") as store:
        ingest_file(store, path, run_id="r", judge_model="gpt-judge",
                    templates={"faithfulness": LEAKY_FAITHFULNESS}, binding=REPLAY)
        assert store.instrument("r", "faithfulness").binding == REPLAY
        # before: recorded `replay` for context_recall too, a binding of no recorded template
        assert store.instrument("r", "context_recall").binding is None


def test_ingest_refuses_a_binding_with_no_template(tmp_path: Path) -> None:
    path = tmp_path / "scored.csv"
    pd.DataFrame({"id": ["a"], "question": ["Q1?"], "answer": ["A1."], "contexts": ['["P1."]'],
                  "ground_truth": ["G1."], "faithfulness": [1.0]}).to_csv(path, index=False)
    with Store(tmp_path / "i.duckdb") as store:
        # before: recorded `replay` on faithfulness, whose template was never given
        with pytest.raises(InputError, match="--template METRIC=FILE"):
            ingest_file(store, path, run_id="r", judge_model="gpt-judge", binding=REPLAY)
        assert store.run_ids() == []
