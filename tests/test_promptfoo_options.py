"""promptfoo results written with the options the first readers did not meet: an assertion with its own grader
(`provider`), an assertion type that is no metric of ours, and a `rubricPrompt` (tests/support/tool_runs.py:
pf-own, pf-faith-leaky). Files the real promptfoo writes in this test session.

What a user checks: each metric names the grader that graded it; what was not read is listed; the rubric a grader
was given is the metric's template (a prompt hash, and lint reads the fields it shows the grader).
"""

from __future__ import annotations

import json
from pathlib import Path

from lib.intake.importers import prepare_import
from tests.support.tool_runs import LEAKY_NLI
from tests.test_cli import assert_usage_error, cli


def test_an_assertion_with_its_own_provider_records_that_grader_for_its_metric(promptfoo_results) -> None:
    plan = prepare_import(promptfoo_results["pf-own"], run_id="pf")
    judges = {m.metric: m.judge_model for m in plan.run.metrics}
    # the two graders were joined into one name for the whole run ("a, b"): a judge change on every metric
    assert judges == {"faithfulness": "openai:chat:grader-lenient", "context_recall": "openai:chat:grader-strict"}
    assert plan.grader_sources["faithfulness"] == "the assertion's provider"


def test_assertion_types_that_are_not_read_are_listed(promptfoo_results) -> None:
    plan = prepare_import(promptfoo_results["pf-own"], run_id="pf")
    assert any("assertions not read (no metric of ours): icontains" in w for w in plan.warnings), plan.warnings


def test_a_rubric_prompt_is_stored_as_the_metrics_template_and_lint_reads_it(fresh_db: Path,
                                                                             promptfoo_results) -> None:
    plan = prepare_import(promptfoo_results["pf-faith-leaky"], run_id="pf")
    faith = next(m for m in plan.run.metrics if m.metric == "faithfulness")
    assert faith.template is not None and faith.prompt_hash is not None
    assert "{{{{ground_truth}}}}" in faith.template or "ground_truth" in faith.template
    assert cli("import", "--db", fresh_db, promptfoo_results["pf-faith-leaky"], "--run-id", "pf").returncode == 0
    proc = cli("lint", "--db", fresh_db)
    faith_line = next(line for line in proc.stdout.splitlines() if line.split()[1:2] == ["faithfulness"])
    # the rubric shows the faithfulness grader the reference: a finding, whatever the tool
    assert faith_line.startswith("FINDING") and "ground_truth" in faith_line.split(";", 1)[1], faith_line
    assert proc.returncode == 1
    assert LEAKY_NLI.split("\n")[0] in faith.template


def test_a_metric_map_for_promptfoo_is_refused_not_ignored(fresh_db: Path, promptfoo_results) -> None:
    line = assert_usage_error(cli("import", "--db", fresh_db, promptfoo_results["pf-own"], "--run-id", "pf",
                                  "--metric-map", "icontains=answer_correctness"))
    assert "--metric-map" in line and "promptfoo" in line, line


def test_a_file_with_no_rag_assertion_names_the_assertion_types_read(fresh_db: Path, promptfoo_results,
                                                                     tmp_path: Path) -> None:
    # the real file with its RAG assertions' results taken out: only icontains is left
    data = json.loads(promptfoo_results["pf-own"].read_text(encoding="utf-8"))
    for result in data["results"]["results"]:
        grading = result.get("gradingResult") or {}
        grading["componentResults"] = [c for c in grading.get("componentResults") or []
                                       if (c.get("assertion") or {}).get("type") == "icontains"]
    path = tmp_path / "pf-icontains.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    line = assert_usage_error(cli("import", "--db", fresh_db, path, "--run-id", "pf"))
    assert "unmapped: icontains" in line and "assertion types: context-faithfulness (faithfulness)" in line, line
    assert "our metrics' own names" not in line
