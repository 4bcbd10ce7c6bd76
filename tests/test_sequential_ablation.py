"""Sequential ablations (issue 16): the same verdicts as judging every sample, for far fewer calls, and no more
false alarms than stated.

The demo's whole matrix on its leak run and synthetic runs (tests/support/seq_synthetic, not the demo) are
ablated both ways; the false-LEAK rate is simulated through the engine's own decision path
(tests/benchmarks/bench_sequential).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from lib.core.metrics import METRIC_NAMES
from lib.diagnosis.ablation import INSENSITIVE, LEAK, AblationResult, AblationSpec, run_ablation
from lib.diagnosis.ablation._engine import CLEAN, SENSITIVE, matrix_spec
from lib.diagnosis.ablation._sequential import EXHAUSTED, FALSE_LEAK_LEVEL, MOVE, NOTHING, NULL, STOPS
from lib.diagnosis.ablation._verdicts import MEASURED, UNCHANGED
from lib.diagnosis.ablation._verdicts import NULL as NULL_MEASURED
from lib.judging import OfflineJudge
from lib.judging.offline import STAND_IN_NOISE as JUDGE_NOISE
from lib.store import Store
from tests.benchmarks.bench_sequential import agreement, compare, simulate
from tests.support import seq_synthetic as syn


def judge() -> OfflineJudge:
    return OfflineJudge("offline-lexical-v2", noise=JUDGE_NOISE)


def as_json(result: AblationResult) -> object:
    return json.loads(json.dumps(result.to_dict()))


def kinds(result: AblationResult) -> dict[tuple[str, str], tuple[str, str]]:
    return {(v.metric, v.arm): (v.kind, v.why) for v in result.verdicts}


@pytest.fixture(scope="module")
def store(demo_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    path = tmp_path_factory.mktemp("sequential") / "d.duckdb"
    shutil.copy(demo_db, path)
    with Store(path) as s:
        yield s


@pytest.fixture(scope="module")
def demo_pairs(store: Store) -> list[tuple[AblationResult, AblationResult]]:
    """The whole matrix (5 metrics x 3 fields, joint arms too) on the run the leak starts at, judged both ways.

    One run, not also the last (fixed) one: this run's 20 cells hold all three kinds (2 LEAK, 7 SENSITIVE,
    11 CLEAN) and its sequential judging takes 4,062 calls of 21,528; the fixed run added 8 CPU s and the same
    kinds bar LEAK, and a field that does not leak reads CLEAN both ways on the synthetic clean harness below.
    """
    from lib.jobs._demo import run_plans

    leak_start = next(p.run_id for p in run_plans() if p.label == "harness refactor")
    return [compare(store, matrix_spec(leak_start, METRIC_NAMES), judge())]


# -- (a) the demo's matrix ----------------------------------------------------------------------------------

def test_the_demo_matrix_gets_the_same_verdicts_for_at_most_a_third_of_the_calls(demo_pairs) -> None:
    for seq, full in demo_pairs:
        assert kinds(seq) == kinds(full)
        assert agreement(seq, full) == (len(full.verdicts), len(full.verdicts))
        assert seq.sequential and not full.sequential and seq.ablation_id != full.ablation_id
    assert {k for seq, _ in demo_pairs for k, _ in kinds(seq).values()} >= {LEAK, SENSITIVE, CLEAN}
    assert 3 * sum(s.calls for s, _ in demo_pairs) <= sum(f.calls for _, f in demo_pairs)


def test_each_arm_says_how_many_samples_it_judged_and_why_it_stopped(demo_pairs) -> None:
    seq, full = demo_pairs[0]
    assert seq.planned == full.planned and seq.stopped_early > 0
    assert "judgings not needed (arms stopped once their verdicts were decided)" in seq.accounting
    assert "Judged sequentially" in seq.summary
    for v in seq.verdicts:
        if v.why == UNCHANGED:
            assert (v.stop, v.judged) == ("", 0)
            continue
        assert v.stop in STOPS and 0 < v.judged <= 400
        if v.stop == EXHAUSTED:
            assert v.judged == 400 and "Judged on all 400 samples" in v.sentence
        else:
            assert f"Judging stopped after {v.judged} of 400 samples (seeded order): {v.stop}." in v.sentence
    leak = next(v for v in seq.verdicts if (v.metric, v.arm) == ("faithfulness", "ground_truth"))
    assert (leak.kind, leak.why, leak.stop) == (LEAK, MEASURED, MOVE) and leak.judged < 400
    assert "95% CS" in leak.sentence and leak.interval_words == "95% CS" and "95% CS" in seq.summary
    assert seq.four is None and full.four is not None   # levels at different sample counts are not set side by side
    # the stored result reads back whole (format 3)
    assert as_json(AblationResult.from_dict(json.loads(json.dumps(seq.to_dict())))) == as_json(seq)
    assert {v.stop for v in seq.verdicts} >= {MOVE, NOTHING}


def test_a_finished_sequential_ablation_is_answered_from_the_store(store: Store, demo_pairs) -> None:
    seq, _ = demo_pairs[0]
    spec = seq.spec
    assert spec.sequential and spec.ablation_id == seq.ablation_id

    class NoCalls(OfflineJudge):
        def complete(self, request):  # type: ignore[no-untyped-def]
            raise AssertionError("a stored ablation was judged again")

    again = run_ablation(store, spec, NoCalls())
    assert again is not None and as_json(again) == as_json(seq)


def test_a_spec_stored_before_sequential_ablations_keeps_its_id_and_judges_every_sample() -> None:
    old = {"run_id": "r", "metrics": ["faithfulness"], "blanks": ["ground_truth"], "repeats": 2, "judge": "j",
           "endpoint": "offline", "suite": "main", "seed": 1000, "limit": None, "scorer": None, "min_effect": 0.02}
    spec = AblationSpec.from_dict(old)
    assert not spec.sequential
    assert spec.ablation_id == AblationSpec("r", ("faithfulness",), ("ground_truth",), repeats=2, judge="j",
                                            sequential=False).ablation_id
    assert AblationSpec("r", ("faithfulness",), ("ground_truth",), repeats=2, judge="j").sequential  # the default


def test_a_stopped_sequential_ablation_resumes_to_the_uninterrupted_result(demo_db: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    shutil.copy(demo_db, a)
    shutil.copy(demo_db, b)
    with Store(a) as s:
        spec = AblationSpec(s.run_ids()[35], ("faithfulness",), ("ground_truth", "contexts"), repeats=2, limit=200)
        calls = {"n": 0}

        def stop() -> bool:
            calls["n"] += 1
            return calls["n"] > 300

        assert run_ablation(s, spec, judge(), should_stop=stop) is None
        kept = len(s.ablation_results(spec.ablation_id))
        resumed = run_ablation(s, spec, judge())
        final = s.ablation_results(spec.ablation_id)
    with Store(b) as s:
        whole = run_ablation(s, spec, judge())
        expected = s.ablation_results(spec.ablation_id)
    assert resumed is not None and whole is not None and 0 < kept < len(final)
    assert kinds(resumed) == kinds(whole) and [v.judged for v in resumed.verdicts] == [v.judged for v in whole.verdicts]
    assert len(final) == len(expected) and not final.duplicated(["metric", "arm", "rep", "sample_id"]).any()


# -- (b) synthetic runs, not the demo ----------------------------------------------------------------------

@pytest.mark.parametrize(("harness", "ground_truth", "contexts"), [
    ("leaky", (LEAK, MEASURED), (INSENSITIVE, NULL_MEASURED)),  # the reference supplies what the passages held
    ("clean", (CLEAN, NULL_MEASURED), (SENSITIVE, MEASURED)),
])
def test_synthetic_runs_get_the_same_verdicts_both_ways(fresh_db: Path, harness: str, ground_truth: tuple[str, str],
                                                        contexts: tuple[str, str]) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "syn", syn.make_samples(400, seed=5), harness)
        spec = AblationSpec("syn", ("faithfulness",), ("ground_truth", "question", "contexts"), repeats=2,
                            scorer=f"tests.support.seq_synthetic:{harness}")
        seq, full = compare(store, spec, None)
    assert kinds(seq) == kinds(full)
    assert kinds(seq)[("faithfulness", "ground_truth")] == ground_truth
    assert kinds(seq)[("faithfulness", "contexts")] == contexts
    assert seq.judgings < full.judgings
    gt = next(v for v in seq.verdicts if v.arm == "ground_truth")
    if harness == "clean":   # an honest null: what was measured, on how many samples, and what the CS rules out
        assert gt.stop == NULL and gt.judged < 400
        assert f"no dependence of faithfulness on ground_truth measured on these {gt.n} samples" in gt.sentence
        assert "the CS holds 0 and rules out a move of" in gt.sentence and "95% CS" in gt.sentence
    else:
        assert gt.stop == MOVE and gt.judged < 200


# -- (c) false alarms, simulated ---------------------------------------------------------------------------

def test_the_false_leak_rate_over_200_simulated_clean_ablations_is_at_most_the_stated_level() -> None:
    none = simulate(200, effect=0.0, seed=3)
    # issue 41 item 1: a true move of 0.02 on a must-never-receive field is a leak, not a false one (the old rule
    # needed the interval wholly beyond 0.02 and called it LEAK in at most 5%): measured 51% LEAK, the rest CLEAN
    # (an interval that holds 0 and rules out 0.05), never anything else
    # 100 runs suffice here: 54% LEAK measured against the 40% asserted (a true rate of 50% passes with chance
    # 98%); the stated level keeps 200: 0 of 200 measured, and a rate twice the level (15%) passes with chance 0.1%
    edge = simulate(100, effect=0.02, seed=4)
    assert none["leak_rate"] <= FALSE_LEAK_LEVEL
    assert edge["leak_rate"] >= 0.4 and edge["leak_rate"] + edge.get("CLEAN", 0.0) == 1.0
    assert none["judged"] < 400                  # and a null is decided before the last sample on average
    real = simulate(20, effect=0.15, seed=5)     # the same path does call a real leak
    assert real["leak_rate"] == 1.0 and real["judged"] < 200


def test_judging_every_sample_stays_available(store: Store, demo_pairs) -> None:
    _, full = demo_pairs[0]
    assert all(v.stop == "" and v.judged == 0 for v in full.verdicts) and full.stopped_early == 0
    assert replace(full.spec, sequential=False).ablation_id == full.ablation_id
    assert not AblationSpec.from_dict({k: v for k, v in full.spec.to_dict().items() if k != "sequential"}).sequential


def test_the_cli_judges_sequentially_unless_told_to_judge_every_sample(fresh_db: Path) -> None:
    from tests.test_cli import cli

    with Store(fresh_db) as store:
        syn.record(store, "syn", syn.make_samples(200, seed=9), "leaky")
    args = ("ablate", "--db", fresh_db, "--run", "syn", "--metric", "faithfulness", "--blank", "ground_truth",
            "--scorer", "tests.support.seq_synthetic:leaky", "--repeats", "1", "--json")
    seq, every = cli(*args), cli(*args, "--all-samples")
    assert (seq.returncode, every.returncode) == (1, 1), (seq.stderr, every.stderr)
    a, b = json.loads(seq.stdout), json.loads(every.stdout)
    gt_a, gt_b = (next(v for v in r["verdicts"] if v["arm"] == "ground_truth") for r in (a, b))
    assert (a["sequential"], b["sequential"]) == (True, False)
    assert gt_a["kind"] == gt_b["kind"] == LEAK
    assert gt_a["stop"] == MOVE and 0 < gt_a["judged"] < 200 and (gt_b["stop"], gt_b["judged"]) == ("", 0)
    assert a["judgings"] < b["judgings"]
