"""Conclusions say what their evidence covers, and a jump's words follow its evidence (issue 40, items 1 and 2).

A small synthetic history: four healthy nights, a real drop of the system on the fifth, two more nights, then a
harness that hands the faithfulness judge the reference on the last two. A re-judge with a clean instrument covers
only the last three runs. Whatever the Overview and the Review export say from it must name the runs it covers (it
says nothing of the earlier drop), and the leaky "now" must say it was measured by a template that reads
ground_truth, with the score without it that the re-judge measured.
"""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path

import pytest

from lib.core.prompts import DEFAULT_TEMPLATES
from lib.core.results import aggregate
from lib.core.samples import EvalSample
from lib.diagnosis import incidents, trends
from lib.diagnosis.ablation import LEAK, AblationSpec, run_ablation
from lib.diagnosis.incidents import JumpEvidence
from lib.diagnosis.rejudge import RejudgeSpec, finished_series, run_rejudge, trusted_instrument
from lib.diagnosis.trends import Jump
from lib.diagnosis.trends._diagnose import Suspect
from lib.judging import OfflineJudge
from lib.judging.harness import Instrument, score_samples
from lib.presentation import review, views
from lib.store import Store
from tests.support import synthetic_runs as syn

N = 40


def healthy(i: int, f: syn.Facts) -> EvalSample:
    """Nine in ten answers fully supported by their passages, one half supported; the reference states fact2."""
    contexts = (f.fact1, f.fact2) if i % 10 else (f.fact1, f.filler)
    return EvalSample(f"s{i:03d}", f.question, f"{f.fact1} {f.fact2}", contexts, f.fact2)


def regressed(i: int, f: syn.Facts) -> EvalSample:
    """The retriever lost fact2's passage for six answers in ten: a real drop of the system."""
    contexts = (f.fact1, f.fact2) if i % 10 >= 6 else (f.fact1, f.filler)
    return EvalSample(f"s{i:03d}", f.question, f"{f.fact1} {f.fact2}", contexts, f.fact2)


CLEAN = DEFAULT_TEMPLATES["faithfulness"]
NIGHTS = ([("run-1", healthy, CLEAN, syn.PROJECTED), ("run-2", healthy, CLEAN, syn.PROJECTED),
           ("run-3", healthy, CLEAN, syn.PROJECTED), ("run-4", healthy, CLEAN, syn.PROJECTED),
           ("run-5", regressed, CLEAN, syn.PROJECTED), ("run-6", regressed, CLEAN, syn.PROJECTED),
           ("run-7", regressed, syn.LEAKY_FAITHFULNESS, syn.REPLAY),
           ("run-8", regressed, syn.LEAKY_FAITHFULNESS, syn.REPLAY)])


@pytest.fixture(scope="module")
def history_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The history, with faithfulness re-judged by its trusted (clean, projected) instrument over run-6 to run-8
    (the drop at run-5 is not among them)."""
    db = tmp_path_factory.mktemp("words") / "words.duckdb"
    judge = OfflineJudge("offline-lexical-v2")
    with Store(db) as store:
        for day, (rid, case, template, binding) in enumerate(NIGHTS):
            syn.record(store, rid, syn.samples(case, N), "faithfulness", template, binding, judge=judge, day=day,
                       pipeline={"retriever": "v2" if case is regressed else "v1"})
        trusted = trusted_instrument(store, "faithfulness")
        run_rejudge(store, RejudgeSpec("faithfulness", ("run-6", "run-7", "run-8"), trusted.template, trusted.binding,
                                       label=trusted.source), judge)
    return db


def clean_score(case: syn.Case) -> float:
    """The score a clean, projected faithfulness instrument gives these samples (by definition: no reference)."""
    score = aggregate(score_samples(syn.samples(case, N), Instrument("faithfulness", CLEAN, syn.PROJECTED),
                                    OfflineJudge("offline-lexical-v2"), seed=0)).score
    assert score is not None
    return score


def test_every_rejudged_sentence_names_the_runs_it_covers(history_db: Path) -> None:
    with Store(history_db) as store:
        found, series = incidents.load(store)
        said = [s.sentence for s in incidents.standing(store.metric_history(), found, series, metrics=["faithfulness"])]
        rev = review.review(store, *review.data_range(store))   # type: ignore[misc]
        exported = review.review_markdown(rev)
        drops = [j for j in trends.find_jumps(store) if j.run_id == "run-5"]
    assert drops and drops[0].delta < -0.2, "the history must hold a real drop before the re-judged runs"
    (faith,) = said
    assert "the re-judged series" in faith and "over run-6 to run-8 (3 runs)" in faith, faith
    conclusions = exported.split("## Re-judged conclusions")[1].split("##")[0]
    assert "over run-6 to run-8 (3 runs)" in conclusions, conclusions
    # the evidence lines an incident carries from the series name its runs too
    evidence = [e for i in found for e in i.evidence if "re-judged with one instrument" in e]
    assert evidence and all("over run-6 to run-8 (3 runs)" in e for e in evidence), evidence


def test_a_now_measured_by_a_template_that_reads_the_reference_is_marked_with_the_score_without_it(
        history_db: Path) -> None:
    with Store(history_db) as store:
        exported = review.review_markdown(review.review(store, *review.data_range(store)))   # type: ignore[misc]
        leaky_now = float(store.metric_history().query("run_id == 'run-8'")["score"].iloc[0])
    without = clean_score(regressed)
    assert leaky_now - without > 0.1, "the leak must flatter the score"
    words = f"{leaky_now:.3f} now (its template reads ground_truth; {without:.3f} without it, re-judged)"
    assert f"faithfulness {words}" in exported, exported
    with Store(history_db) as store:   # the Overview's line is the same Standing
        found, series = incidents.load(store)
        (faith,) = incidents.standing(store.metric_history(), found, series, metrics=["faithfulness"],
                                      lint=trends.lint_status(store))
    assert faith.sentence.startswith(f"faithfulness {words}"), faith.sentence


def test_the_overview_card_of_a_leaky_latest_score_carries_the_same_mark(history_db: Path) -> None:
    with Store(history_db) as store:
        h = store.metric_history()
        (card,) = views.metric_cards(h, lint=trends.lint_status(store), series=finished_series(store))
        (bare,) = views.metric_cards(h, lint=trends.lint_status(store))
    assert card.leak_note == f"its template reads ground_truth; {clean_score(regressed):.3f} without it, re-judged"
    assert bare.leak_note.startswith("its template reads ground_truth, which faithfulness must never receive")


def test_a_leaky_now_with_no_clean_rejudge_says_there_is_no_score_without_it_yet(history_db: Path) -> None:
    with Store(history_db) as store:
        found, _ = incidents.load(store)
        (faith,) = incidents.standing(store.metric_history(), found, [], metrics=["faithfulness"],
                                      lint=trends.lint_status(store))
    assert "(its template reads ground_truth, which faithfulness must never receive; no score without it yet" \
        in faith.sentence, faith.sentence


# -- item 2: a jump's words follow its evidence, and "likely noise" only with nothing pointing elsewhere -------------
T0 = datetime(2026, 10, 7)
REJUDGED_INSTRUMENT = ("re-judged (prompt p1 of r6, projected), over r6 to r8 (3 runs): re-judged with one "
                       "instrument, it moves +0.004 here, within its threshold ±0.021: the jump is the instrument's, "
                       "not the system's")
REJUDGED_SYSTEM = ("re-judged (prompt p1 of r6, projected), over r6 to r8 (3 runs): re-judged with one instrument, "
                   "it still moves -0.120 here (threshold ±0.021): the system changed")
NOW_READS = "its template reads ground_truth, which faithfulness must never receive"
CHANGED = "the instrument changed here: test it with the 2x2 split"
NOISE = "about 1x the threshold, likely noise"
LEAKED = "ablation abl-1 found faithfulness LEAK at this run"


def _jump(ratio: float, *, across: bool = False, suspect: str = "none") -> Jump:
    threshold = 0.02
    return Jump("faithfulness", "r7", "r6", T0, 0.7, 0.7 + ratio * threshold, ratio * threshold, threshold, 0.005,
                (Suspect(suspect, f"{suspect} changed", "split the jump"),), across)


@pytest.mark.parametrize(("jump", "evidence", "noise", "words"), [
    pytest.param(_jump(1.0), JumpEvidence(), True, NOISE, id="~1x, nothing else known: likely noise"),
    pytest.param(_jump(1.49), JumpEvidence(), True, NOISE, id="just under 1.5x: still about 1x"),
    pytest.param(_jump(1.5), JumpEvidence(), False, "", id="1.5x, nothing else known: no word added"),
    pytest.param(_jump(1.0, across=True), JumpEvidence(), False, CHANGED, id="~1x across instruments"),
    pytest.param(_jump(1.0, suspect="prompt"), JumpEvidence(), False, CHANGED, id="~1x, its prompt changed"),
    pytest.param(_jump(1.0, suspect="judge model"), JumpEvidence(), False, CHANGED, id="~1x, its judge changed"),
    pytest.param(_jump(1.0, suspect="binding"), JumpEvidence(), False, CHANGED, id="~1x, its binding changed"),
    pytest.param(_jump(1.0, suspect="scoring library"), JumpEvidence(), False, CHANGED,
                 id="~1x, its scoring library changed"),
    pytest.param(_jump(1.0, suspect="pipeline"), JumpEvidence(), True, NOISE, id="~1x at a pipeline change only"),
    pytest.param(_jump(1.0), JumpEvidence(reads_never=("ground_truth",)), False, NOW_READS,
                 id="~1x, a lint finding on its template"),
    pytest.param(_jump(1.0), JumpEvidence(leak="abl-1"), False, LEAKED, id="~1x, an ablation found a LEAK"),
    pytest.param(_jump(1.0), JumpEvidence(rejudged=REJUDGED_SYSTEM, system_changed=True), False, REJUDGED_SYSTEM,
                 id="~1x, the re-judge says the system changed"),
    pytest.param(_jump(1.0), JumpEvidence(rejudged=REJUDGED_INSTRUMENT), True, REJUDGED_INSTRUMENT,
                 id="~1x, the re-judge says the instrument's and nothing else is known: its words, no more"),
    pytest.param(_jump(1.0, across=True, suspect="prompt"), JumpEvidence(reads_never=("ground_truth",)), False,
                 f"{NOW_READS}; {CHANGED}", id="the leak's jump before any test: the lint, then the change"),
    pytest.param(_jump(1.0, across=True, suspect="prompt"), JumpEvidence(reads_never=("ground_truth",), leak="abl-1"),
                 False, f"{LEAKED}; {NOW_READS}; {CHANGED}", id="after the ablation said LEAK: that first"),
    pytest.param(_jump(1.0, across=True, suspect="prompt"),
                 JumpEvidence(reads_never=("ground_truth",), leak="abl-1", rejudged=REJUDGED_INSTRUMENT), False,
                 f"{REJUDGED_INSTRUMENT}; {LEAKED}; {NOW_READS}; {CHANGED}",
                 id="after the re-judge said the jump is the instrument's: that first"),
])
def test_a_jump_is_likely_noise_only_when_nothing_points_elsewhere_and_its_words_follow_the_latest_evidence(
        jump: Jump, evidence: JumpEvidence, noise: bool, words: str) -> None:
    assert incidents.likely_noise(jump, evidence) is noise
    assert incidents.reading(jump, evidence) == words
    line = incidents.jump_line(jump, evidence)
    assert line.endswith(f": {words}" if words else "within one instrument" if not jump.across_instruments
                         else "across instruments"), line
    assert ("likely noise" in line) is (words == NOISE)


def test_the_leaks_jump_is_read_from_the_lint_the_ablation_and_the_rejudge_in_the_store(
        history_db: Path, tmp_path: Path) -> None:
    db = Path(shutil.copy(history_db, tmp_path / "words.duckdb"))
    with Store(db) as store:
        (leak_jump,) = [j for j in trends.find_jumps(store) if j.run_id == "run-7"]
        before = incidents.load_jump_evidence(store, [leak_jump])[("faithfulness", "run-7")]
        result = run_ablation(store, AblationSpec("run-7", ("faithfulness",), ("ground_truth",), repeats=1),
                              OfflineJudge("offline-lexical-v2"))
        after = incidents.load_jump_evidence(store, [leak_jump])[("faithfulness", "run-7")]
    assert before.reads_never == ("ground_truth",) and not before.leak
    assert before.rejudged.startswith("re-judged (prompt ") and "over run-6 to run-8 (3 runs)" in before.rejudged
    assert before.rejudged.endswith("the jump is the instrument's, not the system's"), before.rejudged
    assert result.verdicts[0].kind == LEAK and after.leak == result.ablation_id
    words = incidents.reading(leak_jump, after)
    assert words.startswith(before.rejudged) and f"ablation {result.ablation_id} found faithfulness LEAK" in words
    assert not incidents.likely_noise(leak_jump, after)
