"""A metric is called "unattributed" only when nothing says who scored it (issue 40 item 12).

`runs` labelled an imported metric "unattrib" (the missing prompt hash, cut to 8 characters) although its grader was
recorded: a Ragas or promptfoo metric keeps its grader and no template. The run report's prompt and binding cells
said the same. A part of the instrument that was not recorded is said to be not recorded; "unattributed" is kept for
a score whose grader nobody recorded.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from lib.cli.listing import format_runs
from lib.core.prompts import DEFAULT_TEMPLATES
from lib.core.records import MAIN, MetricRecord, RunRecord
from lib.core.results import OK, SampleResult
from lib.core.samples import EvalSample
from lib.presentation.report import run_report
from lib.presentation.run_list import runs_data
from lib.store import Store

TEMPLATE = DEFAULT_TEMPLATES["faithfulness"]
HASH = MetricRecord("faithfulness", (), None, TEMPLATE, None).prompt_hash


@pytest.mark.parametrize(("judge", "template", "binding", "scorer", "cell", "judges"), [
    pytest.param("gpt-judge", TEMPLATE, "projected", None, f"{HASH}"[:8], "gpt-judge", id="everything recorded"),
    pytest.param("gpt-4o-mini", None, None, "ragas 0.4.3 faithfulness", "no prompt", "gpt-4o-mini",
                 id="a tool's metric: its grader, no template"),
    pytest.param(None, None, None, "ragas 0.4.3 faithfulness", "no prompt", "grader not recorded",
                 id="a tool's metric: its scorer, no grader"),
    pytest.param(None, None, None, None, "unattributed", "unattributed", id="nothing recorded"),
])
def test_runs_calls_a_metric_unattributed_only_when_nothing_says_who_scored_it(
        fresh_db: Path, judge: str | None, template: str | None, binding: str | None, scorer: str | None, cell: str,
        judges: str) -> None:
    samples = [EvalSample("s1", "q?", "An answer.", ("A passage.",), "A reference.")]
    with Store(fresh_db) as store:
        store.record_run(RunRecord("r1", datetime(2026, 10, 1), {}, {MAIN: samples}, [MetricRecord(
            "faithfulness", [SampleResult("s1", OK, 0.5)], judge, template, binding, scorer=scorer)]))
        data = runs_data(store)
        report = run_report(store, "r1")
    line = next(ln for ln in format_runs(data).splitlines() if ln.startswith("r1 "))
    assert f"0.500 n=1 {cell}" in line, line
    assert judges in line, line
    assert ("unattrib" in line) is (cell == "unattributed"), line
    metrics = report.split("## Metrics")[1].split("##")[0]
    row = next(ln for ln in metrics.splitlines() if ln.startswith("| faithfulness"))
    assert ("unattributed" in row) is (cell == "unattributed"), row
