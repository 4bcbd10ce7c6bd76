"""Imported runs ablated through the tool's own scorer, on files the real tools wrote in this test session.

An Inspect run is re-scored by Inspect itself (`inspect_ai.score_async` rebuilding the log's scorer, in
Inspect's environment), a promptfoo run re-graded by promptfoo itself (`promptfoo eval` on the file's tests,
same assertion and grader, the stored answers given back), with a field blanked, paired with the stored
scores, repeated for a noise band. What a user checks: the reference shown to a faithfulness grader comes out
LEAK; the question, which model_graded_fact and context-faithfulness show their grader by design, is never
called a LEAK (Inspect's moves the score: SENSITIVE); the re-scored baseline reproduces the stored one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from lib.store import Store
from tests.support.tool_runs import INSPECT_PYTHON, LEAK_ROWS, PROMPTFOO_DIR, tool_env
from tests.support.warm_python import WarmPython
from tests.test_cli import assert_usage_error, cli

INSPECT_SCORER = "lib.judging.scorers.inspect_scorer:rescore@{}"


@pytest.fixture(scope="module")
def warm_inspect() -> Iterator[Path]:
    """Inspect's Python with Inspect imported once for the module (tests/support/warm_python.py): the reader and
    the re-scorer still run in that interpreter, each call in a forked child, without 1.5 CPU s of imports. The
    model API the re-scorer's grader reaches (openai-api/loop: Inspect's OpenAI providers, the openai SDK's
    types, aiohttp, numpy, markdown-it) is imported too: each re-scorer child imported 869 modules of it."""
    with WarmPython(tool_env(*INSPECT_PYTHON), ("inspect_ai", "inspect_ai.log", "inspect_ai._eval.score",
                                                "inspect_ai.model._providers.openai",
                                                "inspect_ai.model._providers.openai_compatible",
                                                "inspect_ai.model._openai_responses", "inspect_ai.hooks",
                                                "openai", "openai.types.responses", "openai.resources.chat",
                                                "aiohttp", "numpy", "markdown_it", "rich.markdown", "truststore"),
                    flags=("-I",)) as warm:
        yield warm.path


@pytest.fixture
def inspect_env(monkeypatch: pytest.MonkeyPatch, tool_judge, warm_inspect: Path) -> None:
    """What the user's shell had when Inspect ran: its Python, and its provider's server (openai-api/loop/...)."""
    monkeypatch.setenv("EVALDRIFT_INSPECT_PYTHON", str(warm_inspect))
    monkeypatch.setenv("LOOP_BASE_URL", tool_judge.base_url)
    monkeypatch.setenv("LOOP_API_KEY", "sk-loopback")


def ablated(db: Path, run_id: str, metric: str, blank: str, log: Path) -> tuple[int, dict]:
    proc = cli("ablate", "--db", db, "--run", run_id, "--metric", metric, "--blank", blank, "--repeats", "2",
               "--all-samples", "--scorer", INSPECT_SCORER.format(log), "--json")
    assert proc.returncode in (0, 1, 3), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def cells(result: dict) -> dict[str, dict]:
    return {v["arm"]: v for v in result["verdicts"]}


def test_the_reference_shown_to_an_inspect_faithfulness_grader_is_a_leak_and_the_clean_template_is_not(
        fresh_db: Path, inspect_logs, inspect_env) -> None:
    for name in ("insp-faith-leaky", "insp-faith"):
        proc = cli("import", "--db", fresh_db, inspect_logs[name], "--run-id", name,
                   "--metric-map", "model_graded_fact=faithfulness")
        assert proc.returncode == 0, proc.stderr
    log = inspect_logs["insp-faith-leaky"]
    code, leaky = ablated(fresh_db, "insp-faith-leaky", "faithfulness", "ground_truth", log)
    gt = cells(leaky)["ground_truth"]
    assert gt["kind"] == "LEAK", gt["sentence"]
    assert code == 1
    # six of the eight answers are stated only by the reference: blanked, Inspect's grader no longer finds them
    assert (gt["baseline"], gt["ablated"], gt["n"]) == (1.0, 0.25, len(LEAK_ROWS))
    [replay] = leaky["replay"]
    assert not replay["mismatch"] and replay["stored"] == replay["rerun"] == 1.0, replay["sentence"]
    assert gt["noise"] == 0.0                        # two repeats, identical: the grader repeats itself

    _, clean = ablated(fresh_db, "insp-faith", "faithfulness", "ground_truth", inspect_logs["insp-faith"])
    gt = cells(clean)["ground_truth"]
    assert gt["kind"] != "LEAK" and gt["delta"] == 0.0 and gt["baseline"] == 0.25, gt["sentence"]


def test_blanking_the_question_model_graded_fact_shows_by_design_is_never_a_leak(fresh_db: Path, inspect_logs,
                                                                                inspect_env) -> None:
    log = inspect_logs["insp-fact"]
    assert cli("import", "--db", fresh_db, log, "--run-id", "fact").returncode == 0
    code, result = ablated(fresh_db, "fact", "answer_correctness", "question", log)
    by_arm = cells(result)
    question = by_arm["question"]
    # the grader reads the question (it moves every score), as Inspect documents: measured, and not a leak
    assert (question["baseline"], question["ablated"]) == (1.0, 0.0), question["sentence"]
    assert question["kind"] == "SENSITIVE", question["sentence"]
    # the joint arm blanks what model_graded_fact must never see: the passages, not the question it shows by design
    assert set(by_arm) == {"question", "contexts"} and by_arm["contexts"]["kind"] != "LEAK"
    assert code != 1


# -- promptfoo -------------------------------------------------------------------------------------------------
@pytest.fixture
def promptfoo_env(monkeypatch: pytest.MonkeyPatch, tool_judge) -> None:
    """What the user's shell had when promptfoo ran: promptfoo on PATH, and the grader's server and key."""
    folder = tool_env(*PROMPTFOO_DIR)
    monkeypatch.setenv("PATH", f"{folder / 'node_modules' / '.bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("OPENAI_BASE_URL", tool_judge.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")


def test_the_reference_in_a_promptfoo_faithfulness_rubric_is_a_leak_and_the_question_is_not(
        fresh_db: Path, promptfoo_results, promptfoo_env) -> None:
    path = promptfoo_results["pf-faith-leaky"]
    assert cli("import", "--db", fresh_db, path, "--run-id", "pf").returncode == 0
    # every arm and repeat re-graded by one `promptfoo eval` of the file's own context-faithfulness assertion
    proc = cli("ablate", "--db", fresh_db, "--run", "pf", "--metric", "faithfulness", "--blank", "ground_truth",
               "--blank", "question", "--repeats", "2", "--all-samples", "--json",
               "--scorer", f"lib.judging.scorers.promptfoo_assertions:faithfulness@{path}")
    result = json.loads(proc.stdout)
    by_arm = cells(result)
    gt = by_arm["ground_truth"]
    assert gt["kind"] == "LEAK", gt["sentence"]
    assert (gt["baseline"], gt["ablated"], gt["n"]) == (1.0, 0.25, len(LEAK_ROWS))
    assert proc.returncode == 1
    # context-faithfulness makes its statements from the question by design: blanking it is never a leak, and
    # the joint arm is the reference alone (the one field promptfoo's faithfulness must never see)
    assert by_arm["question"]["kind"] != "LEAK", by_arm["question"]["sentence"]
    assert set(by_arm) == {"ground_truth", "question"}
    [replay] = result["replay"]
    assert not replay["mismatch"] and replay["stored"] == replay["rerun"] == 1.0, replay["sentence"]


# -- the static lint, under the run's tool profile -------------------------------------------------------------------
def test_lint_reads_an_inspect_template_under_inspects_profile(fresh_db: Path, inspect_logs) -> None:
    for name, args in (("fact", ()), ("faith-leaky", ("--metric-map", "model_graded_fact=faithfulness"))):
        proc = cli("import", "--db", fresh_db, inspect_logs[f"insp-{name}"], "--run-id", name, *args)
        assert proc.returncode == 0, proc.stderr
    proc = cli("lint", "--db", fresh_db)
    assert proc.returncode == 1, proc.stdout
    lines = {line.split()[1]: line for line in proc.stdout.splitlines() if line.startswith(("FINDING", "ok "))}
    # model_graded_fact's own template shows the question, by design under Inspect's profile: not flagged
    fact = lines["answer_correctness"]
    assert fact.startswith("ok ") and "question (by design: inspect_ai)" in fact, fact
    # the faithfulness template that shows the reference ({criterion}) is flagged, whatever the tool
    faith = lines["faithfulness"]
    assert faith.startswith("FINDING") and "reads answer, contexts, ground_truth;" in faith, faith
    assert "ground_truth" in faith.split(";", 1)[1] and "question" not in faith.split(";", 1)[1], faith


def test_ablating_an_imported_run_without_a_scorer_names_the_tools_own(fresh_db: Path, inspect_logs) -> None:
    assert cli("import", "--db", fresh_db, inspect_logs["insp-fact"], "--run-id", "fact").returncode == 0
    line = assert_usage_error(cli("ablate", "--db", fresh_db, "--run", "fact", "--metric", "answer_correctness",
                                  "--blank", "question"))
    assert "scored by inspect_ai" in line and "--scorer 'lib.judging.scorers.inspect_scorer:rescore@LOG.eval'" in line


def test_the_run_pages_template_change_reads_inspect_templates_under_inspects_profile(fresh_db: Path,
                                                                                      inspect_logs) -> None:
    from lib.diagnosis.trends import run_changes

    runs = [("clean", "insp-faith", "faithfulness"), ("leaky", "insp-faith-leaky", "faithfulness"),
            ("passages", "insp-faith", "answer_correctness"), ("fact", "insp-fact", "answer_correctness")]
    for day, (run_id, log, metric) in enumerate(runs, start=1):
        proc = cli("import", "--db", fresh_db, inspect_logs[log], "--run-id", run_id, "--started-at",
                   f"2026-11-0{day}T02:00", "--metric-map", f"model_graded_fact={metric}")
        assert proc.returncode == 0, proc.stderr
    with Store(fresh_db) as store:
        [leaky] = run_changes(store, "leaky", "clean").templates
        [fact] = run_changes(store, "fact", "passages").templates
    # the new template shows the faithfulness grader the reference: flagged on the Run page
    assert (leaky.fields_before, leaky.fields_after) == (("answer", "contexts"), ("answer", "contexts", "ground_truth"))
    assert leaky.newly_forbidden == ("ground_truth",)
    # model_graded_fact's own template newly shows the question: by design under Inspect's profile, not flagged
    assert "question" in fact.fields_after and "question" not in fact.fields_before
    assert fact.newly_forbidden == ()
