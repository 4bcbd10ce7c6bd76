"""Ablations on the demo history: verdicts against the wiring table, four readings, replay, external scorers.

Which runs leak is read from the store itself (runs whose faithfulness template
lints with ground_truth), never typed in by index; every ablation here writes,
so it runs on a copy of the session's demo database.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from lib.core.calls import JudgeReply, JudgeRequest
from lib.core.errors import InputError
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.records import CANARY, MAIN, MetricRecord, RunRecord
from lib.core.results import EXCLUDED, OK, SampleResult
from lib.diagnosis.ablation import (
    INCONCLUSIVE,
    INSENSITIVE,
    LEAK,
    REPLAY_MISMATCH,
    AblationResult,
    AblationSpec,
    four_readings_spec,
    per_sample_deltas,
    run_ablation,
)
from lib.diagnosis.ablation._engine import CLEAN, SENSITIVE, ArmVerdict, matrix_spec
from lib.diagnosis.ablation._verdicts import IGNORES_INPUTS, UNCHANGED
from lib.diagnosis.trends import change_events, find_jumps, lint_status
from lib.jobs._demo import demo_samples
from lib.judging import OfflineJudge
from lib.judging.offline import STAND_IN_NOISE
from lib.store import Store


def judge(model: str = "offline-lexical-v2") -> OfflineJudge:
    """The offline judge with the run-to-run noise the demo history was recorded with."""
    return OfflineJudge(model, noise=STAND_IN_NOISE)


class NoCallJudge:
    """A judge that fails the test if it is ever called."""

    model = "offline-lexical-v2"
    concurrency = 1
    cacheable = False

    def complete(self, request: JudgeRequest) -> JudgeReply:
        raise AssertionError("the judge was called for an ablation that is already stored")


@dataclass(frozen=True)
class DemoRuns:
    """The demo's runs, classified from what the store recorded."""

    ids: list[str]
    leaky: list[str]        # faithfulness template reads ground_truth (lint)
    clean: list[str]
    regression: str         # the run whose pipeline config changed

    @property
    def leak_start(self) -> str:
        """The first leaky run: where the leak jump happened."""
        return self.leaky[0]

    @property
    def before_leak(self) -> str:
        """The clean run just before the leak started."""
        return self.ids[self.ids.index(self.leak_start) - 1]


def classify_runs(store: Store) -> DemoRuns:
    lint = lint_status(store)
    leaky_hashes = set(lint.loc[(lint["metric"] == "faithfulness") & lint["findings"].str.contains("ground_truth"),
                                "prompt_hash"])
    history = store.metric_history(suite=MAIN)
    faith = history[history["metric"] == "faithfulness"]
    leaky = faith.loc[faith["prompt_hash"].isin(leaky_hashes), "run_id"].tolist()
    clean = faith.loc[~faith["prompt_hash"].isin(leaky_hashes), "run_id"].tolist()
    events = change_events(history)
    pipeline_runs = events.loc[events["kind"] == "pipeline", "run_id"].tolist()
    assert len(pipeline_runs) == 1, pipeline_runs
    return DemoRuns(store.run_ids(), leaky, clean, pipeline_runs[0])


@pytest.fixture(scope="module")
def store(demo_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    path = tmp_path_factory.mktemp("ablation") / "d.duckdb"
    shutil.copy(demo_db, path)
    with Store(path) as s:
        yield s


@pytest.fixture(scope="module")
def runs(store: Store) -> DemoRuns:
    r = classify_runs(store)
    assert r.leaky and r.clean and r.ids.index(r.leak_start) > 0
    return r


@pytest.fixture(scope="module")
def leaky_four(store: Store, runs: DemoRuns) -> AblationResult:
    """Four readings of faithfulness on the run where the leak started (all 400 samples, 3 repeats)."""
    result = run_ablation(store, four_readings_spec(runs.leak_start), judge())
    assert result is not None
    return result


@pytest.fixture(scope="module")
def clean_run(store: Store, runs: DemoRuns) -> AblationResult:
    """Faithfulness with contexts, or question, blanked on the clean run before the leak."""
    spec = AblationSpec(runs.before_leak, ("faithfulness",), ("contexts", "question"), limit=100)
    result = run_ablation(store, spec, judge())
    assert result is not None
    return result


@pytest.fixture(scope="module")
def regression_matrix(store: Store, runs: DemoRuns) -> AblationResult:
    """The full matrix for recall and faithfulness on the retriever-regression run."""
    result = run_ablation(store, matrix_spec(runs.regression, ("context_recall", "faithfulness"), limit=100),
                          judge())
    assert result is not None
    return result


def as_stored(result: AblationResult) -> dict[str, object]:
    """A result as the store keeps it (JSON: tuples become lists)."""
    return json.loads(json.dumps(result.to_dict()))


def cell(result: AblationResult, metric: str, arm: str) -> ArmVerdict:
    [v] = [v for v in result.verdicts if v.metric == metric and v.arm == arm]
    return v


# -- the leak ---------------------------------------------------------------------------------

def test_blanking_ground_truth_on_a_leaky_run_is_a_leak_ten_times_the_noise_band(leaky_four: AblationResult) -> None:
    v = cell(leaky_four, "faithfulness", "ground_truth")
    assert v.kind == LEAK and v.expected == "invariant"
    assert v.noise is not None and v.noise > 0
    assert v.delta is not None and v.delta < 0  # the reference only ever adds support
    assert abs(v.delta) >= 10 * v.noise
    assert v.ratio == pytest.approx(abs(v.delta) / v.noise)
    assert v.hi is not None and v.hi < 0
    assert v.n >= 390
    assert leaky_four.exit_code == 1
    assert leaky_four.summary.startswith("wiring leak: faithfulness")


def test_a_verdict_sentence_carries_the_change_its_interval_the_band_the_ratio_and_n(
        leaky_four: AblationResult) -> None:
    v = cell(leaky_four, "faithfulness", "ground_truth")
    s = v.sentence
    assert s.startswith("LEAK:")
    assert f"{v.delta:+.3f}" in s
    assert f"{v.lo:+.3f} to {v.hi:+.3f}" in s
    assert f"±{v.noise:.3f}, 3 repeats" in s
    assert f"{v.ratio:.1f}x" in s
    assert f"n={v.n}" in s


def test_the_leaky_run_still_reproduces_its_stored_score(leaky_four: AblationResult) -> None:
    [check] = leaky_four.replay
    assert not check.mismatch
    assert "reproduces" in check.sentence


def test_four_readings_of_a_leaky_run(leaky_four: AblationResult, clean_run: AblationResult) -> None:
    four = leaky_four.four
    assert four is not None
    assert four.as_wired > four.without_reference + 0.1
    assert four.leak == pytest.approx(four.as_wired - four.without_reference)
    # the reference behaves as a second, independent channel of support
    expected = 1 - (1 - four.without_reference) * (1 - four.without_contexts)
    assert four.independence == pytest.approx(expected)
    assert abs(four.independence - four.as_wired) <= 0.03
    assert four.independence_gap == pytest.approx(four.as_wired - four.independence)
    # with the passages blanked, a clean judge finds almost nothing; this one still finds most claims supported
    clean_blanked = cell(clean_run, "faithfulness", "contexts").ablated
    assert clean_blanked is not None
    assert four.without_contexts > clean_blanked + 0.3
    # with both channels gone, nothing is left to support the claims
    assert four.without_both is not None and four.without_both < clean_blanked + 0.1
    assert f"{four.independence:.3f}" in four.sentence


# -- as the wiring table expects -----------------------------------------------------------------

def test_blanking_contexts_on_a_clean_run_collapses_faithfulness(clean_run: AblationResult) -> None:
    v = cell(clean_run, "faithfulness", "contexts")
    assert v.kind == SENSITIVE and v.expected == "sensitive"
    assert v.delta is not None and v.noise is not None
    assert v.delta < -0.5 and abs(v.delta) > 10 * v.noise


def test_blanking_question_leaves_faithfulness_clean(clean_run: AblationResult,
                                                    regression_matrix: AblationResult) -> None:
    for result in (clean_run, regression_matrix):  # a clean template and a leaky one: neither reads question
        v = cell(result, "faithfulness", "question")
        assert v.kind == CLEAN and v.why == UNCHANGED   # the prompts are identical: nothing to re-judge
        assert v.delta is None and v.lo is None and v.n == 0   # and no measurement is claimed
        assert "prompt unchanged: not re-judged" in v.sentence and "does not render question" in v.sentence
        assert result.not_rejudged == result.spec.repeats * 100 * sum(
            x.why == UNCHANGED for x in result.verdicts)
    assert clean_run.exit_code == 0
    assert all(v.as_expected for v in clean_run.verdicts)


def test_the_regression_run_is_wiring_clean_for_recall_and_its_drop_stands(
        store: Store, runs: DemoRuns, regression_matrix: AblationResult) -> None:
    recall = [v for v in regression_matrix.verdicts if v.metric == "context_recall"]
    assert {v.arm for v in recall} == {"ground_truth", "question", "contexts", "question+answer"}  # + the joint arm
    assert not {v.kind for v in recall} & {LEAK, INSENSITIVE}
    assert all(v.as_expected for v in recall)
    # blanking ground_truth leaves recall no statements to judge: sensitive by construction
    assert cell(regression_matrix, "context_recall", "ground_truth").kind == SENSITIVE
    assert cell(regression_matrix, "context_recall", "question").kind == CLEAN
    assert not any(r.mismatch for r in regression_matrix.replay)
    # ... and the recall drop at that run stands as a jump, with the pipeline change as a suspect
    jumps = [j for j in find_jumps(store, metrics=["context_recall"]) if j.run_id == runs.regression]
    assert len(jumps) == 1
    assert jumps[0].delta < 0
    assert "pipeline" in {s.kind for s in jumps[0].suspects}


def test_faithfulness_on_the_regression_run_leaks_only_where_its_template_lints(
        runs: DemoRuns, regression_matrix: AblationResult) -> None:
    # In the demo the retriever regressed while the leaky faithfulness template was still in use,
    # so the matrix must find that leak (and only it) for faithfulness on this run.
    faith = {v.arm: v.kind for v in regression_matrix.verdicts if v.metric == "faithfulness"}
    leaky = runs.regression in runs.leaky
    assert faith == {"ground_truth": LEAK if leaky else CLEAN, "question": CLEAN, "contexts": SENSITIVE,
                     "question+ground_truth": LEAK if leaky else CLEAN}  # the joint arm every ablation adds
    if leaky:
        assert regression_matrix.summary.startswith("wiring leak: faithfulness")


def test_per_sample_deltas_put_the_biggest_moves_first(store: Store, leaky_four: AblationResult) -> None:
    frame = per_sample_deltas(store, leaky_four.ablation_id, "faithfulness", "ground_truth")
    assert list(frame.columns[-3:]) == ["baseline", "ablated", "delta"]
    assert (frame["delta"] == frame["ablated"] - frame["baseline"]).all()
    moves = frame["delta"].abs().tolist()
    assert moves == sorted(moves, reverse=True)
    assert frame["delta"].mean() == pytest.approx(cell(leaky_four, "faithfulness", "ground_truth").delta)


# -- stored, resumable, answered from the store -------------------------------------------------------

def test_an_identical_ablation_is_answered_from_the_store(store: Store, runs: DemoRuns,
                                                          leaky_four: AblationResult) -> None:
    before = store.counts()
    seen: list[tuple[int, int]] = []
    t0 = time.perf_counter()
    again = run_ablation(store, four_readings_spec(runs.leak_start), NoCallJudge(),
                         progress=lambda d, t: seen.append((d, t)))
    elapsed = time.perf_counter() - t0
    assert as_stored(again) == as_stored(leaky_four)
    assert store.counts()["ablation_results"] == before["ablation_results"]
    assert store.counts()["ablations"] == before["ablations"]
    assert elapsed < 2.0  # a lookup, not a re-run (the re-run takes seconds)
    total = int(store.ablation(leaky_four.ablation_id)["total"])  # type: ignore[index]
    assert seen == [(total, total)]


def test_a_finished_ablation_is_stored_with_its_spec_and_every_result(store: Store,
                                                                     leaky_four: AblationResult) -> None:
    row = store.ablation(leaky_four.ablation_id)
    assert row is not None
    assert row["status"] == "done"
    # metric x arms (baseline + 3 asked + the joint question+ground_truth + the positive control) x repeats x samples
    assert row["done"] == row["total"] == 1 * 6 * 3 * 400
    assert AblationSpec.from_dict(row["spec"]).ablation_id == leaky_four.ablation_id  # type: ignore[arg-type]
    assert as_stored(AblationResult.from_dict(row["result"])) == as_stored(leaky_four)  # type: ignore[arg-type]
    frame = store.ablation_results(leaky_four.ablation_id)
    assert len(frame) == row["total"]
    assert not frame.duplicated(["metric", "arm", "rep", "sample_id"]).any()


# -- external harnesses (scorer) ------------------------------------------------------------------------

def scorer_spec(run_id: str, name: str, blanks: tuple[str, ...], limit: int = 60) -> AblationSpec:
    return AblationSpec(run_id, ("faithfulness",), blanks, scorer=f"tests.support.scorers:{name}", limit=limit)


def test_a_scorer_that_fails_most_samples_is_inconclusive(store: Store, runs: DemoRuns) -> None:
    result = run_ablation(store, scorer_spec(runs.before_leak, "mostly_failing", ("ground_truth",)), None)
    assert result is not None
    v = cell(result, "faithfulness", "ground_truth")
    assert v.kind == INCONCLUSIVE
    assert v.n_failed > 0.5 * v.n_units
    assert "failed" in v.sentence and "scorer returned no score" in v.sentence
    assert result.exit_code == 3
    assert result.failures["scorer returned no score"] >= v.n_failed  # also counts the joint arm's failures


def test_a_scorer_that_ignores_its_inputs_is_never_cleared(store: Store, runs: DemoRuns) -> None:
    result = run_ablation(store, scorer_spec(runs.before_leak, "constant", ("contexts", "ground_truth")), None)
    assert result is not None
    # its own input, and it does not move; with every field but the answer blanked it still gives 0.5 (the floor
    # is its baseline, no room to show a fall), and with perfect support it gives 0.5 too: the positive control
    # names it (issue 41 item 2: it used to read INCONCLUSIVE, exit 3, which a gate failing on exit 1 let through)
    own = cell(result, "faithfulness", "contexts")
    assert (own.kind, own.why) == (INSENSITIVE, IGNORES_INPUTS) and own.headroom == pytest.approx(0.0)
    assert "the judge does not read its inputs" in own.sentence
    assert cell(result, "faithfulness", "support").kind == INSENSITIVE and result.exit_code == 1
    # no room either for a null about the reference; and its constant 0.5 does not reproduce the stored score
    assert result.replay[0].mismatch
    assert cell(result, "faithfulness", "ground_truth").kind == INCONCLUSIVE
    assert result.exit_code != 0 and "does not reproduce" in result.summary


def test_a_leak_in_an_external_harness_is_caught_where_no_template_shows_it(store: Store, runs: DemoRuns) -> None:
    # the run's stored template is clean; the leak lives in the harness code
    assert runs.before_leak in runs.clean
    leaky = run_ablation(store, scorer_spec(runs.before_leak, "leaky_faithfulness", ("ground_truth",), 100), None)
    wired = run_ablation(store, scorer_spec(runs.before_leak, "wired_faithfulness", ("ground_truth",), 100), None)
    assert leaky is not None and wired is not None
    assert cell(leaky, "faithfulness", "ground_truth").kind == LEAK
    assert cell(wired, "faithfulness", "ground_truth").kind == CLEAN
    assert (leaky.exit_code, wired.exit_code) == (1, 0)


@pytest.mark.parametrize("target", ["tests.support.scorers:nope", "no_such_module:f", "tests.support.scorers"])
def test_a_scorer_that_cannot_be_loaded_is_an_input_error_and_starts_nothing(store: Store, runs: DemoRuns,
                                                                            target: str) -> None:
    spec = AblationSpec(runs.before_leak, ("faithfulness",), ("question",), scorer=target, limit=20)
    with pytest.raises(InputError, match="scorer"):
        run_ablation(store, spec, None)
    assert store.ablation(spec.ablation_id) is None


def test_an_ablation_without_judge_or_scorer_is_an_input_error_and_starts_nothing(store: Store,
                                                                                 runs: DemoRuns) -> None:
    spec = AblationSpec(runs.before_leak, ("faithfulness",), ("question",), limit=20)
    with pytest.raises(InputError, match="judge"):
        run_ablation(store, spec, None)
    assert store.ablation(spec.ablation_id) is None


# -- replay ----------------------------------------------------------------------------------------------

def test_a_rerun_that_does_not_reproduce_the_stored_score_is_a_replay_mismatch(fresh_db: Path) -> None:
    main, canary = demo_samples()
    samples = [d.sample for d in main[:40]]
    # a run whose stored faithfulness says 1.0 for every sample: no judge produced that
    results = [SampleResult(s.sample_id, OK, 1.0) if s.answer else SampleResult(s.sample_id, EXCLUDED, reason="empty")
               for s in samples]
    run = RunRecord("tiny-1", datetime(2026, 9, 1, 2, 0), {"retriever": {"top_k": 3}},
                    {MAIN: samples, CANARY: canary},
                    [MetricRecord("faithfulness", results, "offline-lexical-v2", DEFAULT_TEMPLATES["faithfulness"],
                                  PROJECTED)])
    with Store(fresh_db) as store:
        store.record_run(run)
        result = run_ablation(store, AblationSpec("tiny-1", ("faithfulness",), ("question",)), judge())
    assert result is not None
    [check] = result.replay
    assert check.mismatch
    assert check.stored == pytest.approx(1.0)
    assert check.rerun is not None and check.rerun < 0.95
    assert check.sentence.startswith(REPLAY_MISMATCH)
    assert "replay check" in result.summary and "cannot clear the run" in result.summary
    # blanking question does nothing to faithfulness here, but a replay that did not reproduce the
    # instrument cannot clear the run: the cell says so and the gate does not pass
    v = cell(result, "faithfulness", "question")
    assert v.kind == REPLAY_MISMATCH and "cannot clear the run" in v.sentence
    assert result.exit_code == 3


# -- the spec ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    {"metrics": ()},
    {"metrics": ("fluency",)},
    {"blanks": ()},
    {"blanks": ("reference",)},
    {"blanks": ("none",)},
    {"repeats": 0},
    {"repeats": 21},
    {"limit": 0},
])
def test_a_bad_spec_is_an_input_error(kwargs: dict[str, object]) -> None:
    base: dict[str, object] = {"run_id": "r", "metrics": ("faithfulness",), "blanks": ("ground_truth",)}
    with pytest.raises(InputError):
        AblationSpec(**{**base, **kwargs})  # type: ignore[arg-type]


def test_spec_identity_ignores_how_an_arm_is_spelled_and_nothing_else() -> None:
    a = AblationSpec("r", ("faithfulness",), ("ground_truth+contexts",))
    b = AblationSpec("r", ("faithfulness",), ("contexts+ground_truth", "ground_truth+contexts"))
    assert a.blanks == b.blanks == ("contexts+ground_truth",)
    assert a.ablation_id == b.ablation_id
    assert AblationSpec.from_dict(a.to_dict()) == a
    assert AblationSpec("r", ("faithfulness",), ("ground_truth",), repeats=2).ablation_id != AblationSpec(
        "r", ("faithfulness",), ("ground_truth",)).ablation_id
    assert a.arms == ("none", "contexts+ground_truth")

