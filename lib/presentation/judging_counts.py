"""How many judgings an ablation planned, and what became of each, in one vocabulary on every page.

A **judging** is one sample scored for one metric in one arm and one repeat;
the progress bar counts judgings, the Review lists them, and the result
splits them: scored, excluded before any call (a sample the metric cannot
meaningfully score, lib.core.degenerate), failed (retried, then recorded with its
reason). Of the scored ones, some were answered from the **call cache** (no new
request); **judge calls** are the requests sent, a retried judging counting
each attempt. Pure functions over the stored per-judging rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from lib.core.results import EXCLUDED, FAILED, OK


@dataclass(frozen=True)
class JudgingCounts:
    judgings: int    # planned: samples x metrics x arms x repeats
    stored: int      # finished so far (each scored, excluded or failed)
    scored: int
    excluded: int
    failed: int
    cached: int      # scored judgings answered from the call cache
    calls: int       # requests sent to the judge

    @property
    def sentence(self) -> str:
        """'2400 judgings: 2388 scored, 12 excluded before any call, 0 failed; 2388 judge calls, 0 judgings
        answered from the call cache.' (with 'N not stored yet' while it runs)."""
        left = self.judgings - self.stored
        waiting = f", {left} not done yet" if left > 0 else ""
        return (f"{self.judgings} judgings: {self.scored} scored, {self.excluded} excluded before any call, "
                f"{self.failed} failed{waiting}; {self.calls} judge calls, {self.cached} judgings answered from the "
                "call cache.")


def counts(rows: pd.DataFrame, judgings: int) -> JudgingCounts:
    """The counts of an ablation from its stored rows (Store.ablation_results: status, calls, cached) and the
    number of judgings it planned (its stored total)."""
    status = rows["status"] if len(rows) else pd.Series([], dtype=object)
    ok = status == OK
    cached = int(rows.loc[ok, "cached"].astype(bool).sum()) if len(rows) else 0
    calls = int(rows["calls"].sum()) if len(rows) else 0
    return JudgingCounts(judgings, len(rows), int(ok.sum()), int((status == EXCLUDED).sum()),
                         int((status == FAILED).sum()), cached, calls)


def progress_label(done: int, total: int) -> str:
    """The progress bar's words: judgings, as the result and the Review count them."""
    return f"Judging: {done} of {total} judgings ({done / total:.0%})" if total else "Queued: waiting for the worker..."


HELP = ("A judging is one sample scored for one metric, in one arm, in one repeat. Excluded: samples the metric "
        "cannot meaningfully score (no passages; a refusal, for faithfulness), decided before any call. Judge calls: "
        "requests sent (a retry is another call). Cached: judgings answered from the call cache, with no new call.")
