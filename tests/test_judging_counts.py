"""lib.presentation.judging_counts and the Review's ablation line: one vocabulary (judgings, calls, cached,
excluded) everywhere."""

from __future__ import annotations

from datetime import datetime

import pandas as pd
import pytest

from lib.core.results import EXCLUDED, FAILED, OK
from lib.presentation.ablation_views import AblationBrief
from lib.presentation.judging_counts import JudgingCounts, counts, progress_label
from lib.presentation.review import ablations_sentence


def rows(*spec: tuple[str, int, bool]) -> pd.DataFrame:
    return pd.DataFrame([{"status": s, "calls": c, "cached": k} for s, c, k in spec],
                        columns=["status", "calls", "cached"])


@pytest.mark.parametrize(("frame", "total", "want"), [
    (rows(), 4, JudgingCounts(4, 0, 0, 0, 0, 0, 0)),                                     # queued: nothing stored
    (rows((OK, 1, False), (OK, 0, True)), 2, JudgingCounts(2, 2, 2, 0, 0, 1, 1)),        # one from the cache
    (rows((OK, 1, False), (EXCLUDED, 0, False)), 2, JudgingCounts(2, 2, 1, 1, 0, 0, 1)),  # excluded: no call
    (rows((FAILED, 3, False), (OK, 2, False)), 3, JudgingCounts(3, 2, 1, 0, 1, 0, 5)),   # retries count as calls
])
def test_counts_split_every_judging_once(frame: pd.DataFrame, total: int, want: JudgingCounts) -> None:
    got = counts(frame, total)
    assert got == want
    assert got.scored + got.excluded + got.failed == got.stored


def test_the_sentence_names_each_count_with_the_same_words() -> None:
    done = JudgingCounts(2400, 2400, 2388, 12, 0, 0, 2388)
    assert done.sentence == ("2400 judgings: 2388 scored, 12 excluded before any call, 0 failed; 2388 judge calls, "
                             "0 judgings answered from the call cache.")
    assert "100 not done yet" in JudgingCounts(2400, 2300, 2300, 0, 0, 0, 2300).sentence
    assert progress_label(1200, 2400) == "Judging: 1200 of 2400 judgings (50%)"
    assert progress_label(0, 0).startswith("Queued")


def brief(aid: str, run: str, *cells: tuple[str, str, str]) -> AblationBrief:
    return AblationBrief(aid, run, datetime(2026, 10, 3), "done", 10, 10, ("faithfulness",), ("ground_truth",), 1,
                         None, "offline", "s", (), (), None, cells)


@pytest.mark.parametrize(("briefs", "want"), [
    ([brief("a", "r1", ("faithfulness", "question", "CLEAN"))],
     "1 ablation(s) in range; none found a leak or a miswired metric."),
    ([brief("a", "r1", ("faithfulness", "ground_truth", "LEAK")),
      brief("b", "r1", ("faithfulness", "ground_truth", "LEAK"), ("faithfulness", "contexts", "SENSITIVE"))],
     "2 ablation(s) in range; between them, 1 leak(s) or miswired metric(s): faithfulness on r1."),   # same finding
    ([brief("a", "r1", ("faithfulness", "ground_truth", "LEAK"), ("faithfulness", "ground_truth+question", "LEAK"))],
     "1 ablation(s) in range; between them, 1 leak(s) or miswired metric(s): faithfulness on r1."),   # two arms
    ([brief("a", "r1", ("faithfulness", "ground_truth", "LEAK")), brief("b", "r2", ("faithfulness", "q", "LEAK"))],
     "2 ablation(s) in range; between them, 2 leak(s) or miswired metric(s): faithfulness on r1, faithfulness on r2."),
    ([brief("a", "r1", ("answer_relevance", "question", "INSENSITIVE"))],
     "1 ablation(s) in range; between them, 1 leak(s) or miswired metric(s): answer_relevance on r1."),
])
def test_the_reviews_ablation_line_counts_distinct_findings(briefs: list[AblationBrief], want: str) -> None:
    assert ablations_sentence(briefs) == want
