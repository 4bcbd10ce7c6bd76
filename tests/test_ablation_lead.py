"""An ablation's headline as the pages show it (lib/diagnosis/ablation/_lead.py): one sentence first (verdict,
field, change, interval, n, to the cells' three places), the caveats apart (issue 46 item 2)."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from lib.diagnosis.ablation import Headline, split_headline
from lib.diagnosis.ablation._lead import sentences
from lib.diagnosis.ablation._result import ArmVerdict
from lib.diagnosis.incidents import Incident
from lib.diagnosis.trends import Jump
from lib.presentation import ablation_views

REST = ("Re-judging faithfulness does not reproduce the stored score, so nothing here can clear the run. "
        "Judged sequentially (seeded order, a look every 20 samples): 2 of 2 measured arms stopped once decided by "
        "a 95% confidence sequence. The offline judge decided this: a lexical stand-in (AUC 0.95), not a model.")
CAVEATS = tuple(sentences(REST))


def cell(arm: str, kind: str = "LEAK", *, metric: str = "faithfulness", why: str = "measured move",
         delta: float | None = -0.1342, lo: float = -0.2461, hi: float = -0.0229, ratio: float | None = None,
         stop: str = "decided") -> ArmVerdict:
    return ArmVerdict(metric=metric, arm=arm, kind=kind, expected="invariant", baseline=0.8, ablated=0.67,
                      delta=delta, lo=lo, hi=hi, noise=None, ratio=ratio, n=99, n_failed=0, n_units=99,
                      flips_to_positive=0, flips_to_negative=10, flips_p=None, mde=None, sentence="", why=why,
                      stop=stop, judged=100)


LEAD = "wiring leak: faithfulness moves -0.134 when ground_truth is blanked (95% CS -0.246 to -0.023, n=99 samples"
OLD = ("wiring leak: faithfulness moves -0.13 when ground_truth is blanked (95% CS -0.246 to -0.023, n=99) "
       "(1 more leaking cell(s)). ")


@pytest.mark.parametrize(("cells", "summary", "lead"), [
    # a measured leak alone: said from its cell, to three places
    ([cell("ground_truth")], OLD + REST, LEAD + ")."),
    # the joint arm leaks too: named, not counted as "1 more leaking cell(s)"
    ([cell("ground_truth"), cell("question+ground_truth", delta=-0.1301)], OLD + REST,
     LEAD + "); also -0.130 when question and ground_truth are blanked together."),
    # the largest move leads, whatever the order of the cells
    ([cell("question+ground_truth", delta=-0.1301), cell("ground_truth")], OLD + REST,
     LEAD + "); also -0.130 when question and ground_truth are blanked together."),
    # another metric's leak found by its wiring alone: named with its metric
    ([cell("ground_truth"), cell("ground_truth", metric="answer_relevance", why="renders the field", delta=None)],
     OLD + REST, LEAD + "); also answer_relevance's wiring renders ground_truth."),
    # a small leak beside it (its interval excludes 0, not wholly beyond the effect): a move, never "renders"
    ([cell("ground_truth"), cell("question", why="a dependence below the effect", delta=-0.0312)], OLD + REST,
     LEAD + "); also -0.031 when question is blanked."),
    # a judge repeat band measured: the ratio stays in the sentence
    ([cell("ground_truth", ratio=7.16)], OLD + REST, LEAD + ", 7.2x the judge repeat band)."),
    # another judge than the run's own: the prefix that says so stays
    ([cell("ground_truth")], "With judge gpt-4.1-mini, not the run's own judge (x for faithfulness): " + OLD + REST,
     "With judge gpt-4.1-mini, not the run's own judge (x for faithfulness): " + LEAD + ")."),
    # an arm of another kind than blanking (a name with ':'): the summary's own first sentence
    ([cell("swap:ground_truth")], "wiring leak: faithfulness moves -0.13 when ground_truth is swapped (95% CS -0.246 "
     "to -0.023, n=99). " + REST, "wiring leak: faithfulness moves -0.13 when ground_truth is swapped (95% CS -0.246 "
     "to -0.023, n=99)."),
    # a leak seen in the wiring alone (no measured move): the summary's first sentence
    ([cell("ground_truth", why="renders the field", delta=0.001)],
     "wiring leak: faithfulness's wiring renders ground_truth, which it must never receive (no effect measured on "
     "these 99 samples). " + REST,
     "wiring leak: faithfulness's wiring renders ground_truth, which it must never receive (no effect measured on "
     "these 99 samples)."),
    # no dependence: its first sentence leads, the "this describes" sentence is a caveat
    ([cell("ground_truth", kind="CLEAN", why="null measured", delta=0.001)],
     "no dependence measured: on these 99 samples no metric tested moves by 0.05 or more when the fields it must "
     "never receive are blanked, alone or together. " + REST,
     "no dependence measured: on these 99 samples no metric tested moves by 0.05 or more when the fields it must "
     "never receive are blanked, alone or together."),
])
def test_the_lead_is_one_sentence_and_the_caveats_follow_once(cells: list[ArmVerdict], summary: str,
                                                               lead: str) -> None:
    got = split_headline(cells, summary)
    assert got.lead == lead
    assert got.caveats == CAVEATS
    assert len(sentences(got.lead)) == 1 and "cell(s)" not in got.lead


def test_a_summary_without_caveats_and_an_empty_one() -> None:
    assert split_headline([], "as expected: every metric tested moves when its own inputs are blanked (n=40 "
                              "samples).") == Headline("as expected: every metric tested moves when its own inputs "
                                                       "are blanked (n=40 samples).")
    assert split_headline([], "") == Headline("")
    assert Headline("x", ("a.", "b.")).small_print == "a. b."


# -- the next step beside a verdict (issue 46 item 1) ---------------------------------------------------------------
WEEK = (date(2026, 11, 24), date(2026, 11, 30))


@pytest.mark.parametrize(("launched", "week"), [
    (datetime(2026, 12, 6, 9, 0), WEEK),                                     # after the latest run: the latest week
    (datetime(2026, 11, 30, 23, 0), WEEK),                                   # on the latest run's day: the same
    (datetime(2026, 11, 12, 8, 0), (date(2026, 11, 6), date(2026, 11, 12))),  # before: the week ending that day
])
def test_the_review_week_that_carries_an_ablation(launched: datetime, week: tuple[date, date]) -> None:
    assert ablation_views.carrying_week(launched, WEEK) == week


def _incident(metric: str, run_id: str, end_run: str | None = None, *, canary: bool = False) -> Incident:
    if canary:
        return Incident(f"canary:{run_id}", "canary alarm", metric, run_id, datetime(2026, 10, 3), "canary alarmed")
    jump = Jump(metric=metric, run_id=run_id, prev_run_id="r8", started_at=datetime(2026, 10, 3), before=0.78,
                after=0.92, delta=0.14, threshold=0.05, noise_sd=0.01, suspects=())
    return Incident(f"jump:{metric}:{run_id}", "episode" if end_run else "jump", metric, run_id,
                    datetime(2026, 10, 3), f"{metric} moved at {run_id}", jumps=(jump,), end_run=end_run)


@pytest.mark.parametrize(("incidents", "answered"), [
    ([_incident("faithfulness", "r9")], "faithfulness moved at r9"),
    ([_incident("faithfulness", "r2", end_run="r9")], "faithfulness moved at r2"),   # the episode it ends
    ([_incident("context_recall", "r9")], None),                                       # another metric
    ([_incident("faithfulness", "r3")], None),                                         # another run
    ([_incident("faithfulness", "r9", canary=True), _incident("faithfulness", "r9")],   # the jump before the alarm
     "faithfulness moved at r9"),
])
def test_next_steps_name_the_incident_the_run_on_trends_and_the_review_week(incidents: list[Incident],
                                                                             answered: str | None) -> None:
    steps = ablation_views.next_steps(run_id="r9", metrics=("faithfulness",), run_day=date(2026, 10, 3),
                                      launched=datetime(2026, 12, 6, 9, 0), incidents=incidents, latest_week=WEEK)
    pages = [s.page for s in steps]
    assert pages == (["pages/overview.py"] if answered else []) + ["pages/trends.py", "pages/review.py"]
    if answered:
        assert steps[0].label.endswith(answered)
    assert steps[-2].query == {"metric": "faithfulness", "from": "2026-09-19", "to": "2026-10-17"}
    assert steps[-1].query == {"from": "2026-11-24", "to": "2026-11-30"}
