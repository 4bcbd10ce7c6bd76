"""Inspect AI logs written with the options the first readers did not meet: samples without ids, two scorers each
with its own grader, and two epochs reduced by `max` (tests/support/tool_runs.py, insp-multi and insp-multi-rev:
the same task, its samples in reverse order). Files the real Inspect writes in this test session.

What a user checks: one scorer is never dropped for another without a word; each metric names the grader that
graded it (no judge marker between two metrics of one run); the samples of two reordered runs pair by what they
ask, not by Inspect's position numbers; the stored score is the one Inspect reports, reduced as Inspect reduced it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lib.intake.importers import prepare_import
from lib.intake.uploads import plan_table
from tests.support.tool_runs import BY_QUESTION, INSPECT_PYTHON, tool_env
from tests.test_cli import assert_usage_error, cli

MAP = {"model_graded_qa": "faithfulness"}


def test_two_scorers_that_map_to_one_metric_are_refused_naming_metric_map(fresh_db: Path, inspect_logs) -> None:
    # model_graded_fact and model_graded_qa are both answer_correctness by default: one was dropped with no word
    line = assert_usage_error(cli("import", "--db", fresh_db, inspect_logs["insp-multi"], "--run-id", "m"))
    assert "model_graded_fact and model_graded_qa" in line and "answer_correctness" in line, line
    assert "--metric-map" in line, line


def test_each_metric_records_the_grader_of_its_own_scorer(inspect_logs) -> None:
    plan = prepare_import(inspect_logs["insp-multi"], run_id="m", metric_map=MAP)
    judges = {m.metric: m.judge_model for m in plan.run.metrics}
    assert judges == {"answer_correctness": "openai-api/loop/grader-strict",
                      "faithfulness": "openai-api/loop/grader-flip"}
    detected = dict(zip(plan_table(plan)["what"], plan_table(plan)["detected"], strict=True))
    assert "grader-flip" in detected["metric faithfulness"] and "grader-strict" not in detected["metric faithfulness"]


def test_samples_without_ids_pair_by_content_across_reordered_runs(inspect_logs) -> None:
    runs = [prepare_import(inspect_logs[name], run_id=name, metric_map=MAP).run
            for name in ("insp-multi", "insp-multi-rev")]
    by_id = [{s.sample_id: s.question for s in run.samples["main"]} for run in runs]
    # Inspect numbered both runs' samples 1..4 by position: reversed, id 1 named another question
    assert by_id[0] == by_id[1] and set(by_id[0].values()) == set(BY_QUESTION)
    assert all(sid.startswith("c-") for sid in by_id[0])
    plan = prepare_import(inspect_logs["insp-multi"], run_id="m", metric_map=MAP)
    detected = dict(zip(plan_table(plan)["what"], plan_table(plan)["detected"], strict=True))
    assert "own ids" not in detected["sample ids"] and "position" in detected["sample ids"], detected["sample ids"]


def test_epochs_reduced_by_max_store_the_score_inspect_reports(inspect_logs) -> None:
    plan = prepare_import(inspect_logs["insp-multi"], run_id="m", metric_map=MAP)
    faith = next(m for m in plan.run.metrics if m.metric == "faithfulness")
    # grader-flip graded each sample C in one epoch and I in the other: max is 1 (Inspect's accuracy 1.0), the
    # mean would be 0.5
    assert [r.score for r in faith.results] == [1.0] * 4
    assert plan.notes["epochs_reducer"] == {"answer_correctness": "max", "faithfulness": "max"}
    assert any("reduced by max" in w for w in plan.warnings), plan.warnings


@pytest.mark.parametrize("given, target", [
    ("What is the warranty?", "Two years."),
    ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": [{"type": "text", "text": "Hi?"}]}],
     ["Two years.", "2 years"]),
    ("Fragen über Wasserkocher", None),
])
def test_inspects_rescorer_names_id_less_samples_as_the_importer_does(given: object, target: object) -> None:
    # the re-scorer runs in Inspect's Python and never imports evaldrift: its copy of the rule must agree
    import importlib.util

    from lib.intake.importers.base import content_id
    from lib.intake.importers.inspect import _text
    from lib.judging.scorers import inspect_scorer

    spec = importlib.util.spec_from_file_location("score_worker", inspect_scorer.WORKER)
    assert spec is not None and spec.loader is not None
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    assert worker.content_id(worker._text(given), worker._text(target)) == content_id(_text(given), _text(target))


def test_an_id_less_run_is_ablated_through_inspects_own_scorer_like_for_like(
        fresh_db: Path, inspect_logs, tool_judge, monkeypatch: pytest.MonkeyPatch) -> None:
    """insp-multi's faithfulness is model_graded_qa graded by grader-flip (C, then I) over 2 epochs reduced by max:
    Inspect reports 1.0. Re-scored by Inspect's own scorer twice a sample, the replay reduces the two by max, as
    Inspect did (tests/test_epoch_replay.py: the rule; one judging a sample is said not to replay it)."""
    monkeypatch.setenv("LOOP_BASE_URL", tool_judge.base_url)
    monkeypatch.setenv("LOOP_API_KEY", "sk-loopback")
    monkeypatch.setenv("EVALDRIFT_INSPECT_PYTHON", str(tool_env(*INSPECT_PYTHON)))
    log = inspect_logs["insp-multi"]
    assert cli("import", "--db", fresh_db, log, "--run-id", "m", "--metric-map",
               "model_graded_qa=faithfulness").returncode == 0
    proc = cli("ablate", "--db", fresh_db, "--run", "m", "--metric", "faithfulness", "--blank", "ground_truth",
               "--repeats", "2", "--all-samples", "--json", "--scorer",
               f"lib.judging.scorers.inspect_scorer:rescore@{log}#model_graded_qa")
    result = json.loads(proc.stdout)
    # every content-named sample found in the log and re-scored (the log's ids are 1..4)
    assert result["failures"] == {}, result["failures"]
    [replay] = result["replay"]
    # before: "reads 0.500 against the stored 1.000 (-0.500, ...): no mismatch shown", the mean of C and I read
    # against their max
    assert replay["stored"] == replay["rerun"] == 1.0 and not replay["mismatch"], replay["sentence"]
    assert "max over 2 judgings" in replay["sentence"], replay["sentence"]
