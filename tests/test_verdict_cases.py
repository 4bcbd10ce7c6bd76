"""Issue 10's failures, each rebuilt on a small synthetic run made in the test (not the demo).

Each case records a run whose stored scores its own instrument produced, then
ablates it and checks what the verdict may say (README.md's verdict table, lib/diagnosis/README.md).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import pytest

from lib.core.calls import JudgeReply, JudgeRequest
from lib.core.errors import JudgeError
from lib.core.prompts import DEFAULT_TEMPLATES
from lib.core.records import MAIN, MetricRecord, RunRecord
from lib.core.results import EXCLUDED, OK, SampleResult
from lib.core.samples import EvalSample
from lib.diagnosis.ablation import INCONCLUSIVE, LEAK, AblationResult, AblationSpec, four_readings_spec, run_ablation
from lib.diagnosis.ablation._engine import CLEAN, ArmVerdict
from lib.diagnosis.ablation._plan import SMALL_PROBE, probe_size
from lib.diagnosis.ablation._verdicts import FLOOR, MEASURED, STATIC, UNCHANGED
from lib.diagnosis.trends import RunChanges
from lib.diagnosis.trends._diagnose import TemplateChange, split_jump, suspects_for
from lib.judging import OfflineJudge
from lib.judging.harness import Instrument, score_sample, score_samples
from lib.presentation.views import PAGE_COMPARE, suspect_actions
from lib.store import Store
from tests.support import synthetic_runs as syn
from tests.support.cli import run_cli
from tests.support.synthetic_runs import LEAKY_FAITHFULNESS, PROJECTED, REPLAY, WHOLE_SAMPLE_FAITHFULNESS

FAITH = DEFAULT_TEMPLATES["faithfulness"]
ROOT = Path(__file__).resolve().parent.parent


def coinciding(i: int, f: syn.Facts) -> EvalSample:
    """The reference states only what the passages already state."""
    return EvalSample(f"s{i:03d}", f.question, f"{f.fact1} {f.fact2}", (f.fact1, f.fact2), f.fact1)


def reference_only(i: int, f: syn.Facts) -> EvalSample:
    """The answer's second fact is stated by the reference, not by the passages."""
    return EvalSample(f"s{i:03d}", f.question, f"{f.fact1} {f.fact2}", (f.fact1, f.filler), f"{f.fact1} {f.fact2}")


def overlapping(i: int, f: syn.Facts) -> EvalSample:
    """The second fact is stated by the question and by the reference, not by the passages."""
    return EvalSample(f"s{i:03d}", f"{f.question} {f.fact2}", f"{f.fact1} {f.fact2}", (f.fact1, f.filler), f.fact2)


def ablate(store: Store, run_id: str, blanks: tuple[str, ...], **kw: object) -> AblationResult:
    spec = AblationSpec(run_id, ("faithfulness",), blanks, repeats=kw.pop("repeats", 2), **kw)  # type: ignore[arg-type]
    result = run_ablation(store, spec, None if spec.scorer else OfflineJudge())
    assert result is not None
    return result


def cell(result: AblationResult, arm: str) -> ArmVerdict:
    [v] = [v for v in result.verdicts if v.arm == arm]
    return v


# -- 2. CLEAN says only what was measured, and static evidence is never cleared ----------------------------

def test_a_template_that_renders_the_reference_is_not_cleared_when_its_support_coincides(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(coinciding), "faithfulness", LEAKY_FAITHFULNESS, REPLAY)
        result = ablate(store, "r1", ("ground_truth",))
    v = cell(result, "ground_truth")
    assert v.delta == pytest.approx(0.0)  # the numbers alone would clear it
    assert result.exit_code == 1
    assert v.kind == LEAK
    assert "renders ground_truth" in v.sentence and "no effect measured on these 40 samples" in v.sentence
    assert v.why == STATIC and v.renders is not None and "ground_truth" in v.renders
    assert result.summary.startswith("wiring leak: faithfulness's wiring renders ground_truth")


def test_an_external_scorer_is_clean_only_as_far_as_these_samples_show(fresh_db: Path) -> None:
    # the scorer serialises the whole sample; on this data the reference adds nothing the passages lack
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(coinciding), "faithfulness", FAITH, PROJECTED)
        result = ablate(store, "r1", ("ground_truth",), scorer="tests.support.scorers:whole_sample_faithfulness")
    v = cell(result, "ground_truth")
    assert v.kind == CLEAN
    assert "no dependence of faithfulness on ground_truth measured on these 40 samples" in v.sentence
    assert "the interval holds 0 and rules out a move of 0.000" in v.sentence
    assert "code that was not read" in v.sentence
    assert "does not read" not in v.sentence and "does not read" not in result.summary
    assert v.renders is None  # nothing static to read: the --json says so


# -- 3. a leak hidden by overlap shows when the forbidden fields are blanked together -------------------------

def test_a_leak_of_the_set_shows_only_in_the_joint_arm(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(overlapping), "faithfulness", WHOLE_SAMPLE_FAITHFULNESS, REPLAY)
        result = ablate(store, "r1", ("question", "ground_truth"),
                        scorer="tests.support.scorers:whole_sample_faithfulness")
    assert cell(result, "question").kind == CLEAN and cell(result, "ground_truth").kind == CLEAN
    joint = cell(result, "question+ground_truth")
    assert joint.joint and (joint.kind, joint.why) == (LEAK, MEASURED)
    assert joint.delta == pytest.approx(-0.5)
    assert "when question and ground_truth are blanked" in joint.sentence and "a leak of the set" in joint.sentence
    assert "clears nothing" in cell(result, "question").sentence
    assert result.exit_code == 1
    assert "when question and ground_truth are blanked together" in result.summary


def test_a_sample_template_is_never_cleared_and_its_joint_arm_measures_the_leak(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(overlapping), "faithfulness", WHOLE_SAMPLE_FAITHFULNESS, REPLAY)
        result = ablate(store, "r1", ("question",))   # the joint arm is added without being asked for
    assert result.exit_code == 1
    assert (cell(result, "question").kind, cell(result, "question").why) == (LEAK, STATIC)
    assert (cell(result, "question+ground_truth").kind, cell(result, "question+ground_truth").why) == (LEAK, MEASURED)
    assert result.summary.startswith("wiring leak: faithfulness moves -0.50 when question and ground_truth are")


# -- 4. no room to move is inconclusive, not miswired -----------------------------------------------------------

def test_a_metric_at_its_floor_is_inconclusive_not_insensitive(fresh_db: Path) -> None:
    fs = syn.facts(40)
    # correct wiring, but every answer is paired with another question's passages: faithfulness ~0
    items = [EvalSample(f"s{i:03d}", f.question, f"{f.fact1} {f.fact2}",
                        (fs[(i + 1) % 40].fact1, fs[(i + 1) % 40].filler), f.fact1) for i, f in enumerate(fs)]
    with Store(fresh_db) as store:
        syn.record(store, "r1", items, "faithfulness", FAITH, PROJECTED)
        result = ablate(store, "r1", ("contexts",))
    v = cell(result, "contexts")
    assert result.exit_code == 3
    assert not result.summary.startswith("miswired")
    assert v.kind == INCONCLUSIVE
    assert f"already at {v.baseline:.3f}, only " in v.sentence and "blanking contexts cannot lower it" in v.sentence
    assert v.why == FLOOR and v.headroom is not None and v.headroom < 0.05


# -- issue 24 item 9 / 26 item 2: a move decides at any n, the wiring before any count --------------------------

def test_a_ten_sample_leak_is_decided_on_its_exact_interval(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(reference_only, 10), "faithfulness", LEAKY_FAITHFULNESS, REPLAY)
        result = ablate(store, "r1", ("ground_truth",), repeats=1)
    v = cell(result, "ground_truth")
    assert (v.kind, v.why, v.n) == (LEAK, MEASURED, 10)
    assert v.hi is not None and v.hi < -0.02 and v.lo is not None and v.lo >= -1.0
    assert result.exit_code == 1


def test_a_ten_sample_wiring_that_renders_the_reference_is_a_leak_with_the_count_beside_it(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(coinciding, 10), "faithfulness", LEAKY_FAITHFULNESS, REPLAY)
        result = ablate(store, "r1", ("ground_truth",), repeats=1)
    v = cell(result, "ground_truth")
    assert (v.kind, v.why) == (LEAK, STATIC) and result.exit_code == 1
    assert "no effect measured on these 10 samples" in v.sentence and "only 10 samples" in v.sentence


# -- 5. a deterministic judge: noise band 0, no ratio to it --------------------------------------------------

def test_identical_repeats_give_a_zero_band_and_the_interval_decides(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(reference_only), "faithfulness", LEAKY_FAITHFULNESS, REPLAY)
        result = ablate(store, "r1", ("ground_truth",), repeats=3)
    v = cell(result, "ground_truth")
    assert v.kind == LEAK
    assert "x the judge repeat band" not in v.sentence and "x the judge repeat band" not in result.summary
    assert v.noise == 0.0 and v.ratio is None
    # 40 samples: the first 10 repeated identically, so the rest were judged once and the interval decides
    assert "repeats stopped" in v.sentence and "the interval over samples decides" in v.sentence
    assert v.why == MEASURED and result.probe == probe_size(40) == 10


def test_identical_repeats_on_a_run_no_bigger_than_the_probe_repeat_in_full(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(reference_only, SMALL_PROBE), "faithfulness", LEAKY_FAITHFULNESS, REPLAY)
        result = ablate(store, "r1", ("ground_truth",), repeats=3)
    v = cell(result, "ground_truth")
    assert v.noise == 0.0                                 # every repeat judged: the band is measured, and 0
    assert result.probe == 0 and result.repeats_skipped == 0 and "Repeats stopped" not in result.summary


# -- 9. only the readings the wiring makes meaningful ----------------------------------------------------------

def test_four_readings_are_computed_only_when_the_wiring_renders_the_reference(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "clean", syn.samples(reference_only), "faithfulness", FAITH, PROJECTED)
        syn.record(store, "leaky", syn.samples(reference_only), "faithfulness", LEAKY_FAITHFULNESS, REPLAY, day=1)
        clean = run_ablation(store, four_readings_spec("clean", repeats=2), OfflineJudge())
        leaky = run_ablation(store, four_readings_spec("leaky", repeats=2), OfflineJudge())
    assert clean is not None and leaky is not None
    assert clean.four is None   # "the reference alone supports ..." would be noise: it is never rendered
    assert leaky.four is not None and leaky.four.leak == pytest.approx(0.5)


# -- 1 and 10. a jump is explained by its split; an unscored cell is not zero ------------------------------------

class FailingJudge:
    model = "offline-lexical-v2"
    concurrency = 1
    cacheable = False

    def complete(self, request: JudgeRequest) -> JudgeReply:
        raise JudgeError("server error (503)")


def test_a_split_whose_cells_are_unscored_says_so_instead_of_zero(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "a", syn.samples(reference_only), "faithfulness", FAITH, PROJECTED)
        syn.record(store, "b", syn.samples(reference_only, seed=8), "faithfulness", FAITH, PROJECTED, day=1)
        split = split_jump(store, "faithfulness", "a", "b", lambda model: FailingJudge())
    assert split.a_with_a is None and split.b_with_b is None and split.instrument is None and split.total is None
    assert "4 of the 4 cells are unscored" in split.sentence and "server error (503)" in split.sentence
    assert "instrument)" not in split.sentence and "0.000" not in split.sentence


def test_an_ablation_headline_says_nothing_about_a_jump_between_runs(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(reference_only), "faithfulness", FAITH, PROJECTED)
        result = ablate(store, "r1", ("question", "ground_truth"), limit=20)
        mixed = ablate(store, "r1", ("contexts", "question"), limit=20)
    assert result.exit_code == 0
    assert "pipeline" not in result.summary and "not the wiring" not in result.summary
    assert "split of that jump" in result.summary
    # the projected template renders neither field: nothing re-judged, and the headline claims no measurement
    assert result.summary.startswith("not re-judged: the run's wiring renders none of the fields blanked")
    baseline = probe_size(20) * 2 + (20 - probe_size(20))   # the offline judge repeats itself: repeats stop
    assert {v.why for v in result.verdicts} == {UNCHANGED} and result.judgings == baseline
    assert result.not_rejudged == 3 * 2 * 20 and result.calls == baseline and result.planned == 4 * 2 * 20
    # measured cells and unchanged ones: the headline speaks of the measured, then names the unchanged
    assert mixed.summary.startswith("as expected: every metric tested moves when its own inputs are blanked "
                                    "(n=20 samples). Not re-judged (prompt unchanged, nothing measured): "
                                    "faithfulness with question blanked and faithfulness with question and "
                                    "ground_truth blanked.")


def test_the_suggested_test_for_every_jump_is_its_split() -> None:
    changes = RunChanges("b", "a", judge_models={"faithfulness": ("m1", "m2")},
                         templates=[TemplateChange("faithfulness", "h1", "h2", "", ("answer", "contexts"),
                                                   ("answer", "contexts", "ground_truth"), ("ground_truth",))],
                         bindings={"faithfulness": ("projected", "replay")}, pipeline={"retriever.k": (3, 5)})
    from lib.diagnosis.trends import Jump
    jump = Jump("faithfulness", "b", "a", datetime(2026, 10, 2), 0.7, 0.9, 0.2, 0.05, 0.01,
                suspects_for(changes, "faithfulness"))
    actions = suspect_actions(jump)
    assert actions and all(a.page == PAGE_COMPARE for a in actions)
    assert all(a.params == {"run": "b", "run_b": "a", "metric": "faithfulness", "split": "1"} for a in actions)
    assert all("split" in a.test for a in actions)


# -- 6. the judge that replays the run, and the --json a CI job reads ---------------------------------------------

def cli(*args: object) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)


def ablate_json(db: Path, *extra: object) -> tuple[int, dict]:
    proc = cli("ablate", "--db", db, "--run", "r1", "--metric", "faithfulness", "--blank", "question",
               "--repeats", "2", "--json", *extra)
    assert proc.returncode != 2, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_ablate_replays_the_run_with_its_own_judge_by_default(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(reference_only), "faithfulness", FAITH, PROJECTED,
                   judge=OfflineJudge("offline-lexical-v1"))
    code, out = ablate_json(fresh_db)
    assert out["spec"]["judge"] == "offline-lexical-v1"
    assert out["judge_note"] == "" and not out["summary"].startswith("With judge")
    assert code == out["exit_code"] == 0
    code, out = ablate_json(fresh_db, "--judge", "offline")
    assert out["spec"]["judge"] == "offline-lexical-v2"
    assert out["summary"].startswith("With judge offline-lexical-v2, not the run's own judge "
                                     "(offline-lexical-v1 for faithfulness): ")


def test_ablate_json_carries_every_input_of_each_verdict(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(reference_only), "faithfulness", LEAKY_FAITHFULNESS, REPLAY)
    code, out = ablate_json(fresh_db)
    assert code == out["exit_code"] == 1
    cells = {c["arm"]: c for c in out["verdicts"]}
    assert set(cells) == {"question", "question+ground_truth"}
    joint = cells["question+ground_truth"]
    assert joint["expected"] == "invariant" and joint["joint"] is True
    assert joint["renders"] == ["answer", "contexts", "ground_truth"]
    assert joint["kind"] == "LEAK" and joint["lo"] <= joint["delta"] <= joint["hi"] < 0
    # the baseline is re-judged with the ablation's 3% verdict noise: near 1, not exactly 1
    assert joint["noise"] >= 0 and joint["headroom"] == pytest.approx(1.0, abs=0.08)
    assert joint["min_effect"] == 0.02 and joint["rule_out"] == 0.05
    assert joint["sentence"].startswith("LEAK:")
    assert cells["question"]["kind"] == "CLEAN" and "does not render question" in cells["question"]["sentence"]


def test_a_run_judged_by_a_model_is_never_silently_replayed_by_the_offline_judge(fresh_db: Path) -> None:
    # stored scores no offline judge reproduces, recorded as judged by a model
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(reference_only), "faithfulness", FAITH, PROJECTED,
                   judge_model="acme-judge-1", fixed_score=0.95)
    proc = cli("ablate", "--db", fresh_db, "--run", "r1", "--metric", "faithfulness", "--blank", "question")
    assert proc.returncode == 2 and "acme-judge-1" in proc.stderr and "OPENAI_BASE_URL" in proc.stderr
    code, out = ablate_json(fresh_db, "--judge", "offline")
    assert out["replay"][0]["mismatch"] is True
    assert code == out["exit_code"] == 3   # the gate does not pass on an instrument it did not reproduce
    assert out["summary"].startswith("With judge offline-lexical-v2, not the run's own judge (acme-judge-1 for "
                                     "faithfulness): not reproduced")
    assert {c["kind"] for c in out["verdicts"]} == {"REPLAY MISMATCH"}


# -- 7. degenerate samples are excluded before any call --------------------------------------------------------

class NoCallJudge:
    model = "offline-lexical-v2"
    concurrency = 1
    cacheable = False

    def complete(self, request: JudgeRequest) -> JudgeReply:
        raise AssertionError("a degenerate sample reached the judge")


@pytest.mark.parametrize("contexts", [(), ("",), ("", "   ", "\n")])
@pytest.mark.parametrize("metric", ["faithfulness", "context_precision", "context_recall"])
def test_a_sample_with_no_passages_is_excluded_before_any_judge_call(metric: str, contexts: tuple[str, ...]) -> None:
    [f] = syn.facts(1)
    sample = EvalSample("s1", f.question, f.fact1, contexts, f.fact1)
    result = score_sample(sample, Instrument(metric, DEFAULT_TEMPLATES[metric], PROJECTED), NoCallJudge())
    assert result.status == EXCLUDED and result.score is None and result.calls == 0
    assert result.reason.startswith("no passages")


def test_no_passages_never_score_by_chance_with_a_noisy_judge() -> None:
    items = syn.samples(lambda i, f: EvalSample(f"s{i:03d}", f.question, f"{f.fact1} {f.fact2}", (), f.fact1), 100)
    results = score_samples(items, Instrument("faithfulness", FAITH, PROJECTED), OfflineJudge(noise=0.03))
    assert [r.status for r in results] == [EXCLUDED] * 100
    relevance = score_samples(items, Instrument("answer_relevance", DEFAULT_TEMPLATES["answer_relevance"],
                                                PROJECTED), OfflineJudge())
    assert {r.status for r in relevance} == {OK}   # relevance never looks at the passages


@pytest.mark.parametrize("answer", ["I don't know.", "I do not know", "Sorry, I cannot answer that question.",
                                    "The context does not mention it."])
def test_a_refusal_is_excluded_from_faithfulness_and_judged_for_relevance(answer: str) -> None:
    [f] = syn.facts(1)
    sample = EvalSample("s1", f.question, answer, (f.fact1,), f.fact1)
    faith = score_sample(sample, Instrument("faithfulness", FAITH, PROJECTED), NoCallJudge())
    assert faith.status == EXCLUDED and faith.reason.startswith("refusal")
    relevance = score_sample(sample, Instrument("answer_relevance", DEFAULT_TEMPLATES["answer_relevance"],
                                                PROJECTED), OfflineJudge())
    assert relevance.status == OK


@pytest.mark.parametrize("answer", ["...", "?", "It is.", "Yes.", "  it, is  "])
@pytest.mark.parametrize("judge", ["offline", "offline noisy", "scorer"])
def test_an_answer_with_no_claim_is_excluded_from_faithfulness_on_every_path(answer: str, judge: str) -> None:
    from lib.diagnosis.ablation._judging import score_group
    from tests.support.scorers import whole_sample_faithfulness

    [f] = syn.facts(1)
    sample = EvalSample("s1", f.question, answer, (f.fact1,), f.fact1)
    if judge == "scorer":
        [result] = score_group(whole_sample_faithfulness, "faithfulness", "ground_truth", [sample])
    else:
        result = score_sample(sample, Instrument("faithfulness", FAITH, PROJECTED),
                              OfflineJudge(noise=0.5 if judge == "offline noisy" else 0.0))
    assert result.status == EXCLUDED and result.reason.startswith("no claim"), result
    relevance = score_sample(sample, Instrument("answer_relevance", DEFAULT_TEMPLATES["answer_relevance"],
                                                PROJECTED), OfflineJudge())
    assert relevance.status == OK   # "It is." does not address the question: relevance judges that


def test_an_empty_answer_is_excluded_for_an_external_scorer_as_for_the_judge(fresh_db: Path) -> None:
    def case(i: int, f: syn.Facts) -> EvalSample:
        return EvalSample(f"s{i:03d}", f.question, "" if i % 4 == 0 else f"{f.fact1} {f.fact2}", (f.fact1, f.fact2),
                          f.fact1)

    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(case), "faithfulness", FAITH, PROJECTED)
        result = ablate(store, "r1", ("ground_truth",), scorer="tests.support.scorers:whole_sample_faithfulness")
        frame = store.ablation_results(result.ablation_id)
    assert "failed" not in set(frame["status"])
    empty = frame[frame["sample_id"].isin([f"s{i:03d}" for i in range(0, 40, 4)])]
    assert set(empty["status"]) == {EXCLUDED} and empty["reason"].str.startswith("no claims to judge").all()
    assert cell(result, "ground_truth").kind != INCONCLUSIVE and cell(result, "ground_truth").n == 30


def test_an_answer_that_only_starts_like_a_refusal_is_judged() -> None:
    [f] = syn.facts(1)
    sample = EvalSample("s1", f.question, f"I don't know the exact figure, but {f.fact1} {f.fact2}", (f.fact1,),
                        f.fact1)
    assert score_sample(sample, Instrument("faithfulness", FAITH, PROJECTED), OfflineJudge()).status == OK


@pytest.mark.parametrize("scorer", [None, "tests.support.scorers:whole_sample_faithfulness"])
def test_an_ablation_excludes_degenerate_samples_in_every_arm(fresh_db: Path, scorer: str | None) -> None:
    def case(i: int, f: syn.Facts) -> EvalSample:
        return EvalSample(f"s{i:03d}", f.question, f"{f.fact1} {f.fact2}", () if i % 5 == 0 else (f.fact1, f.fact2),
                          f.fact1)

    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(case), "faithfulness", FAITH, PROJECTED)
        result = ablate(store, "r1", ("contexts",), scorer=scorer)
        frame = store.ablation_results(result.ablation_id)
    degenerate = frame[frame["sample_id"].isin([f"s{i:03d}" for i in range(0, 40, 5)])]
    assert len(degenerate) and set(degenerate["status"]) == {EXCLUDED}
    assert degenerate["reason"].str.startswith("no passages").all()
    rest = frame[~frame.index.isin(degenerate.index)]
    assert set(rest["status"]) == {OK}   # blanking contexts is the measurement: the blanked arm is judged
    assert cell(result, "contexts").n == 32


def test_a_stored_score_on_a_sample_with_no_passages_is_a_lint_finding(fresh_db: Path) -> None:
    [f, g] = syn.facts(2)
    items = [EvalSample("s1", f.question, f.fact1, (), f.fact1), EvalSample("s2", g.question, g.fact1, (g.fact1,),
                                                                            g.fact1)]
    run = RunRecord("imported-1", datetime(2026, 10, 1), {}, {MAIN: items},
                    [MetricRecord("faithfulness", [SampleResult("s1", OK, 1.0), SampleResult("s2", OK, 1.0)],
                                  "acme-judge-1", FAITH, PROJECTED)])
    with Store(fresh_db) as store:
        store.record_run(run)
        frame = store.chance_scores()
    assert frame[["run_id", "metric", "sample_id", "score"]].values.tolist() == [["imported-1", "faithfulness",
                                                                                   "s1", 1.0]]
    proc = cli("lint", "--db", fresh_db)
    assert proc.returncode == 1
    assert ("run imported-1: 1 faithfulness score(s) on samples with no passages (1 of them 1.0), e.g. s1"
            in proc.stdout)


@pytest.fixture(scope="module")
def whitespace_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """One store for the blanks below, a run each (a new store costs more than the check)."""
    with Store(tmp_path_factory.mktemp("blanks") / "blanks.duckdb") as store:
        yield store


@pytest.mark.parametrize("blank", [" ", "   \n\t ", "\r\n", "\x0b\x0c", "\u00a0", "\u3000\u2009", "\x1c\x85", ""],
                         ids=["space", "spaces tab newline", "crlf", "vtab formfeed", "nbsp", "ideographic thin",
                              "separators nel", "empty"])
def test_a_passage_of_any_whitespace_is_no_passage_in_python_and_in_sql(whitespace_store: Store, blank: str) -> None:
    [f, g] = syn.facts(2)
    items = [EvalSample("s1", f.question, f.fact1, (blank, blank), f.fact1),
             EvalSample("s2", g.question, g.fact1, (g.fact1,), g.fact1)]
    run_id = f"imported-{blank.encode('unicode_escape').decode()}"
    run = RunRecord(run_id, datetime(2026, 10, 1), {}, {MAIN: items},
                    [MetricRecord("faithfulness", [SampleResult("s1", OK, 1.0), SampleResult("s2", OK, 1.0)],
                                  "acme-judge-1", FAITH, PROJECTED)])
    whitespace_store.record_run(run)
    frame = whitespace_store.chance_scores(run_id)
    assert frame["sample_id"].tolist() == ["s1"]          # the lint's SQL
    sample = items[0]
    result = score_sample(sample, Instrument("faithfulness", FAITH, PROJECTED), NoCallJudge())
    assert result.status == EXCLUDED and result.reason.startswith("no passages")   # the harness's Python


@contextmanager
def page(db: Path, path: str, monkeypatch: pytest.MonkeyPatch, **params: str) -> Iterator[object]:
    """A dashboard page on `db`, opened as a deep link; the store and caches are released after."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from lib.app import ui

    monkeypatch.setenv("EVALDRIFT_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    try:
        at.query_params.update(params)
        at.switch_page(path).run()
        assert not at.exception, [e.value for e in at.exception]
        yield at
    finally:
        ui.open_store(str(db)).close()
        st.cache_resource.clear()
        st.cache_data.clear()


def test_the_run_page_flags_a_score_on_a_sample_with_no_passages(fresh_db: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    [f, g] = syn.facts(2)
    items = [EvalSample("s1", f.question, f.fact1, ("", " "), f.fact1),
             EvalSample("s2", g.question, g.fact1, (g.fact1,), g.fact1)]
    with Store(fresh_db) as store:
        store.record_run(RunRecord("imported-1", datetime(2026, 10, 1), {}, {MAIN: items},
                                   [MetricRecord("faithfulness", [SampleResult("s1", OK, 1.0),
                                                                  SampleResult("s2", OK, 1.0)],
                                                 "acme-judge-1", FAITH, PROJECTED)]))
    with page(fresh_db, "pages/run.py", monkeypatch, run="imported-1") as at:
        warnings = [w.value.replace("\\", "") for w in at.warning]  # type: ignore[attr-defined]
    assert any("1 faithfulness score(s) on samples with no passages (1 of them 1.0)" in w for w in warnings)


def test_the_ablation_page_defaults_to_the_run_s_own_judge(fresh_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(reference_only), "faithfulness", FAITH, PROJECTED,
                   judge=OfflineJudge("offline-lexical-v1"))
    with page(fresh_db, "pages/ablation.py", monkeypatch, run="r1", metric="faithfulness") as at:
        choice = at.radio(key="abl_judge")  # type: ignore[attr-defined]
        assert choice.value == "offline-lexical-v1"
        assert choice.options[0].startswith("offline-lexical-v1 (the run's own)")


# -- the demo, from the engine's own output (calibration) ------------------------------------------------------

def test_the_demo_latest_run_passes_the_gate_with_its_own_judge(demo_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "demo.duckdb"
    shutil.copy(demo_db, db)
    proc = cli("ablate", "--db", db, "--run", "latest", "--metric", "faithfulness", "--blank", "ground_truth",
               "--blank", "question", "--limit", "200", "--repeats", "2", "--json")
    out = json.loads(proc.stdout)
    with Store(db) as store:
        own = store.instrument(store.run_ids()[-1], "faithfulness").judge_model
    assert out["spec"]["judge"] == own and out["judge_note"] == ""
    assert proc.returncode == out["exit_code"] == 0, out["summary"]
    assert {c["kind"] for c in out["verdicts"]} == {"CLEAN"}


@pytest.mark.parametrize(("judge", "generator", "said"), [
    ("offline-lexical-v2", "acme-rag", True),      # the stand-in on a team's own data says what it cannot tell
    ("offline-lexical-v1", None, True),
    ("offline-lexical-v2", "gen-model-a", False),  # the demo's pipeline: the stand-in is what the demo is built for
    ("acme-judge-1", "acme-rag", False),           # a model judge
    (None, "acme-rag", False),                     # an external scorer
])
def test_a_verdict_of_the_offline_judge_on_other_data_says_what_it_cannot_tell(judge: str | None,
                                                                              generator: str | None,
                                                                              said: bool) -> None:
    from lib.diagnosis.ablation._verdict_words import OFFLINE_REACH, reach_note

    assert (reach_note(judge, generator == "gen-model-a") == OFFLINE_REACH) is said


def test_an_ablation_of_a_teams_run_with_the_offline_judge_ends_with_its_reach(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(coinciding, 20), "faithfulness", FAITH, PROJECTED,
                   pipeline={"generator": {"model": "acme-rag"}})
        result = ablate(store, "r1", ("contexts",))
    assert result.summary.endswith("its CLEAN is not a model judge's CLEAN.")
    assert "sees word overlap, not meaning" in result.summary


# -- issue 25 item 5: the replay check compares like with like -------------------------------------------------
def _deltas(*pairs: tuple[float, int]) -> list[float]:
    return [d for d, k in pairs for _ in range(k)]


REPLAYS = [
    # (id, per-sample re-run minus stored, mismatch)
    ("a deterministic judge reproduces exactly", _deltas((0.0, 40)), False),
    ("0.020 stored, 0.051 re-judged: 2.5x is not a replay", _deltas((0.25, 5), (0.0, 35)), True),
    ("a noisy judge's changes around zero", _deltas((0.25, 6), (-0.25, 6), (0.0, 28)), False),
    ("a consistent shift below the smallest effect", _deltas((0.01, 40)), False),
    ("twenty noisy samples: beyond the effect but the interval holds zero", _deltas((0.5, 3), (-0.25, 2), (0.0, 15)),
     False),
    ("a small baseline with a clear shift is still a mismatch", _deltas((0.5, 8)), True),
]
BANDED = [
    # (id, deltas, judge repeat band, mismatch): a noisy judge at a ceiling of 1.0 can only lower a score
    ("a fall within the judge's repeat band", _deltas((-0.5, 4), (0.0, 36)), 0.05, False),
    ("a fall beyond the judge's repeat band", _deltas((-0.5, 8), (0.0, 32)), 0.05, True),
]


@pytest.mark.parametrize(("deltas", "mismatch"), [r[1:] for r in REPLAYS], ids=[r[0] for r in REPLAYS])
def test_each_branch_of_the_replay_check(deltas: list[float], mismatch: bool) -> None:
    from lib.diagnosis.ablation._analysis import replay_mismatch

    assert replay_mismatch(deltas, min_effect=0.02)[0] is mismatch


@pytest.mark.parametrize(("deltas", "band", "mismatch"), [r[1:] for r in BANDED], ids=[r[0] for r in BANDED])
def test_a_replay_move_must_clear_the_judges_repeat_band(deltas: list[float], band: float, mismatch: bool) -> None:
    from lib.diagnosis.ablation._analysis import replay_mismatch

    assert replay_mismatch(deltas, min_effect=0.02, band=band)[0] is mismatch


def test_a_replay_with_another_judge_is_named_as_such(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(reference_only, 20), "faithfulness", FAITH, PROJECTED,
                   judge=OfflineJudge("offline-lexical-v1"))
        result = run_ablation(store, AblationSpec("r1", ("faithfulness",), ("question",), repeats=2,
                                                  judge="offline-lexical-v2"), OfflineJudge())
    assert result is not None
    (check,) = result.replay
    assert "by offline-lexical-v2, not the run's own judge (offline-lexical-v1), so not a replay" in check.sentence
    assert "95% CI" in check.sentence and "over 20 samples" in check.sentence
