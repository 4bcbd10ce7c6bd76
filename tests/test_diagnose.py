"""Diagnosis on the demo history: changes, jumps and suspects, the instrument/outputs split, provenance, canaries.

Expected values come from the demo's own definition (its run plans and
templates) or from the store; nothing here writes, so the session's demo
database is opened as it is.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from lib.core.metrics import METRIC_NAMES
from lib.core.prompts import REPLAY, prompt_hash
from lib.core.records import MAIN
from lib.diagnosis.provenance import provenance, provenance_summary
from lib.diagnosis.trends import canary_status, change_events, config_diff, find_jumps, lint_status, run_changes
from lib.diagnosis.trends._diagnose import split_jump
from lib.jobs._demo import FIXED_FAITHFULNESS, INSTRUCTED_FAITHFULNESS, LEAKY_FAITHFULNESS, run_plans
from lib.judging import OfflineJudge
from lib.store import Store


def judge_for(model: str | None) -> OfflineJudge:
    return OfflineJudge(model or "offline-lexical-v2")


@pytest.fixture(scope="module")
def store(demo_db: Path) -> Iterator[Store]:
    with Store(demo_db) as s:
        yield s


@pytest.fixture(scope="module")
def history(store: Store) -> pd.DataFrame:
    return store.metric_history(suite=MAIN)


@pytest.fixture(scope="module")
def leaky(store: Store, history: pd.DataFrame) -> list[str]:
    """Runs whose faithfulness template lints with ground_truth, oldest first."""
    lint = lint_status(store)
    flagged = set(lint.loc[lint["findings"].str.contains("ground_truth"), "prompt_hash"])
    faith = history[history["metric"] == "faithfulness"]
    runs = faith.loc[faith["prompt_hash"].isin(flagged), "run_id"].tolist()
    assert runs
    return runs


@pytest.fixture(scope="module")
def pipeline_run(history: pd.DataFrame) -> str:
    events = change_events(history)
    [run] = events.loc[events["kind"] == "pipeline", "run_id"].tolist()
    return run


def previous(store: Store, run_id: str) -> str:
    prev = store.previous_run(run_id)
    assert prev is not None
    return prev


# -- lint and change events ------------------------------------------------------------------------

def test_lint_flags_the_leaky_templates_only(store: Store) -> None:
    lint = lint_status(store)
    flagged = lint[lint["findings"] != ""]
    assert set(flagged["prompt_hash"]) == {prompt_hash(LEAKY_FAITHFULNESS), prompt_hash(INSTRUCTED_FAITHFULNESS)}
    assert (flagged["metric"] == "faithfulness").all()
    assert flagged["findings"].str.contains("'ground_truth'").all()
    assert (flagged["bindings"] == REPLAY).all()
    assert set(lint["metric"]) == set(METRIC_NAMES)
    # every template the history used is listed, with how many runs used it
    assert lint.groupby("metric")["runs"].sum().to_dict() == dict.fromkeys(METRIC_NAMES, len(store.run_ids()))


def test_change_events_list_the_judge_model_prompt_binding_and_pipeline_changes(history: pd.DataFrame) -> None:
    plans = run_plans()
    expected: set[tuple[str, str, str | None]] = set()
    for prev, cur in itertools.pairwise(plans):
        if cur.judge_model != prev.judge_model:
            expected |= {(cur.run_id, "judge model", m) for m in METRIC_NAMES}
        if cur.faithfulness_template != prev.faithfulness_template:
            expected.add((cur.run_id, "prompt", "faithfulness"))
        if cur.faithfulness_binding != prev.faithfulness_binding:
            expected.add((cur.run_id, "binding", "faithfulness"))
        if cur.pipeline != prev.pipeline:
            expected.add((cur.run_id, "pipeline", None))
    events = change_events(history)
    got = {(r.run_id, r.kind, r.metric if isinstance(r.metric, str) else None) for r in events.itertuples()}
    assert got == expected
    assert {k for _, k, _ in got} == {"judge model", "prompt", "binding", "pipeline"}
    [pipe] = events.loc[events["kind"] == "pipeline", "text"].tolist()
    [(key, (before, after))] = config_diff(plans[0].pipeline, plans[-1].pipeline).items()
    assert pipe == f"{key}: {before} -> {after}"


def test_run_changes_at_the_leak_name_the_reference_the_new_template_reads(store: Store, leaky: list[str]) -> None:
    changes = run_changes(store, leaky[0])
    assert changes.prev_run_id == previous(store, leaky[0])
    [t] = changes.templates
    assert t.metric == "faithfulness"
    assert t.newly_forbidden == ("ground_truth",)
    assert "ground_truth" in t.fields_after and "ground_truth" not in t.fields_before
    assert "+" in t.diff and "{ground_truth}" in t.diff
    assert changes.bindings == {"faithfulness": ("projected", "replay")}
    assert changes.pipeline == {} and changes.judge_models == {}


def test_a_run_without_a_predecessor_has_no_changes(store: Store) -> None:
    first = store.run_ids()[0]
    changes = run_changes(store, first)
    assert changes.prev_run_id is None and changes.is_empty


# -- jumps and suspects ---------------------------------------------------------------------------------

def test_the_leak_jump_is_found_with_the_prompt_change_as_first_suspect(store: Store, leaky: list[str]) -> None:
    up = [j for j in find_jumps(store, metrics=["faithfulness"]) if j.delta > 0.1]
    assert [j.run_id for j in up] == [leaky[0]]
    jump = up[0]
    assert jump.prev_run_id == previous(store, leaky[0])
    assert jump.delta > jump.threshold > 0
    first = jump.suspects[0]
    assert first.kind == "prompt"
    assert "ground_truth" in first.description
    assert first.blank == "ground_truth"
    # the jump's test is its split; the ablation only checks the new wiring
    assert first.test == ("split faithfulness's jump into instrument and outputs; ablating faithfulness with "
                          "ground_truth blanked checks the new wiring")
    assert first.description in jump.sentence


def test_the_recall_drop_at_the_pipeline_change_is_a_jump_with_the_pipeline_as_suspect(
        store: Store, pipeline_run: str) -> None:
    [jump] = [j for j in find_jumps(store, metrics=["context_recall"]) if j.run_id == pipeline_run]
    assert jump.delta < -0.1
    [suspect] = [s for s in jump.suspects if s.kind == "pipeline"]
    assert "retriever.embedding_model" in suspect.description


def test_the_judge_model_change_moves_nothing_beyond_the_jump_threshold(store: Store, history: pd.DataFrame) -> None:
    events = change_events(history)
    judge_runs = set(events.loc[events["kind"] == "judge model", "run_id"])
    assert len(judge_runs) == 1
    assert not [j for j in find_jumps(store, history=history) if j.run_id in judge_runs]


# -- instrument versus outputs ------------------------------------------------------------------------------

def test_the_leak_jump_is_the_instrument(store: Store, leaky: list[str]) -> None:
    split = split_jump(store, "faithfulness", previous(store, leaky[0]), leaky[0], judge_for)
    assert split.total > 0.1
    assert split.instrument + split.outputs == pytest.approx(split.total, abs=1e-12)
    assert abs(split.instrument) > 0.8 * abs(split.total)
    assert "mostly the measurement" in split.sentence
    assert split.n == 400


def test_the_recall_drop_is_the_outputs(store: Store, pipeline_run: str) -> None:
    split = split_jump(store, "context_recall", previous(store, pipeline_run), pipeline_run, judge_for)
    assert split.total < -0.1
    assert split.instrument + split.outputs == pytest.approx(split.total, abs=1e-12)
    assert abs(split.outputs) > 0.8 * abs(split.total)
    assert "mostly the system's outputs" in split.sentence
    assert split.stored_delta is not None and split.stored_delta < -0.1


def test_the_fix_jump_is_the_instrument_not_the_pipeline(store: Store, history: pd.DataFrame) -> None:
    # demo calibration: the run where faithfulness's template stops rendering the reference (the fix)
    fixed = prompt_hash(FIXED_FAITHFULNESS)
    faith = history[history["metric"] == "faithfulness"]
    fix_run = faith.loc[faith["prompt_hash"] == fixed, "run_id"].iloc[0]
    [jump] = [j for j in find_jumps(store, metrics=["faithfulness"]) if j.run_id == fix_run]
    assert jump.suspects[0].test.startswith("split faithfulness's jump")
    split = split_jump(store, "faithfulness", jump.prev_run_id, fix_run, judge_for)
    assert split.instrument is not None and split.total is not None
    assert abs(split.instrument) > 0.8 * abs(split.total)
    assert "mostly the measurement" in split.sentence


# -- evidence provenance ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def boundary_provenance(store: Store, leaky: list[str]) -> pd.DataFrame:
    """Provenance summary on the first and last run and on both sides of each start and end of the leak."""
    ids = store.run_ids()
    picked = {ids[0], ids[-1]}
    for a, b in itertools.pairwise(ids):
        if (a in leaky) != (b in leaky):
            picked |= {a, b}
    frame = pd.concat([provenance(store, r) for r in sorted(picked)], ignore_index=True)
    return provenance_summary(frame).set_index("run_id")


def test_evidence_from_ground_truth_appears_only_during_the_leak(boundary_provenance: pd.DataFrame,
                                                                 leaky: list[str]) -> None:
    summary = boundary_provenance
    is_leaky = summary.index.isin(leaky)
    assert is_leaky.sum() >= 2 and (~is_leaky).sum() >= 3
    assert (summary.loc[is_leaky, "ground_truth"] > 0).all()
    assert (summary.loc[~is_leaky, "ground_truth"] == 0).all()
    assert (summary[["question", "answer"]] == 0).all().all()


def test_outside_share_is_near_zero_on_clean_runs_and_large_on_leaky_runs(boundary_provenance: pd.DataFrame,
                                                                          leaky: list[str]) -> None:
    summary = boundary_provenance
    is_leaky = summary.index.isin(leaky)
    clean, leak = summary.loc[~is_leaky, "outside_share"], summary.loc[is_leaky, "outside_share"]
    # On a clean run the only evidence outside the passages is 'nowhere': verdicts the judge's noise
    # flipped to supported carry no evidence string.
    assert (clean < 0.05).all()
    assert (leak > 0.1).all()
    assert leak.min() > 4 * clean.max()
    assert ((summary["supported"] - summary["contexts"])[~is_leaky] == summary.loc[~is_leaky, "nowhere"]).all()


def test_provenance_of_a_leaky_run_locates_reference_only_evidence(store: Store, leaky: list[str]) -> None:
    frame = provenance(store, leaky[0])
    samples = {s.sample_id: s for s in store.samples(leaky[0])}
    from_reference = frame[frame["location"] == "ground_truth"]
    assert len(from_reference) > 0
    for r in from_reference.head(50).itertuples():
        s = samples[r.sample_id]
        assert r.evidence.lower() in s.ground_truth.lower()
        assert r.evidence.lower() not in " ".join(s.contexts).lower()


# -- canaries ---------------------------------------------------------------------------------------------

def test_the_canary_alarms_on_the_leaky_runs_and_is_quiet_at_the_end(store: Store, leaky: list[str]) -> None:
    status = canary_status(store)
    ids = store.run_ids()
    alarms = set(status.alarm_runs)
    mismatched = alarms ^ set(leaky)
    assert len(mismatched) <= 1
    for run in mismatched:  # the only disagreement allowed is at a start or end of the leak
        i = ids.index(run)
        neighbours = {ids[j] for j in (i - 1, i + 1) if 0 <= j < len(ids)}
        assert any((n in leaky) != (run in leaky) for n in neighbours)
    assert status.latest_alarm is False
    assert status.baseline is not None and status.threshold is not None
    assert status.threshold > status.baseline
    assert status.frame["alarm"].sum() == len(alarms)
    assert f"alarmed on {len(alarms)} earlier run(s)" in status.sentence
