"""Where a metric stands: its level now against the last trusted baseline, and what re-judging says.

The Overview leads with this, per metric with an unresolved incident:
"faithfulness 0.650 now; 0.787 before the 2026-10-03 instrument change; the
re-judged series says the system lost 0.145 on 2026-10-31". The baseline is
the level (median) of the comparable segment just before the earliest
incident of the metric that the team has not accepted; accepting an incident
moves the baseline past it. "Now" is also compared with the last run measured
with the same instrument, and with each re-judged series of the metric.

Every re-judged word names the runs its series covers (a series of the last two
runs says nothing of a drop on an earlier night), and a "now" measured by a
template that reads a field its metric must never receive says so, with the
score without it where a lint-clean re-judged series covers that run:
"faithfulness 0.790 now (its template reads ground_truth; 0.667 without it,
re-judged)".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from lib.core.formatting import signed
from lib.diagnosis.incidents._incidents import ACCEPTED, LAPSED, Incident
from lib.diagnosis.incidents._reading import clean_score, leaky_now_words, reads_never
from lib.diagnosis.rejudge import Series
from lib.diagnosis.trends import Jump, last_same_instrument, segment_index


@dataclass(frozen=True)
class Standing:
    metric: str
    now: float
    now_run: str
    same_instrument: tuple[str, float] | None    # the last earlier run with the latest's instrument, its score
    baseline: float | None
    baseline_what: str                           # 'before the 2026-10-03 instrument change'
    rejudged: tuple[str, ...]                    # what each re-judged series says, with the runs it covers
    now_reads: tuple[str, ...] = ()              # must-never-receive fields the latest run's template reads (lint)
    without: float | None = None                 # the latest run's score by a lint-clean re-judged series (None:
                                                 # none covers it)

    @property
    def now_words(self) -> str:
        """'0.790 now', or, measured by a template that reads a must-never-receive field, '0.790 now (its template
        reads ground_truth; 0.667 without it, re-judged)'."""
        note = leaky_now_words(self.metric, self.now_reads, self.without)
        return f"{self.now:.3f} now" + (f" ({note})" if note else "")

    @property
    def sentence(self) -> str:
        parts = [f"{self.metric} {self.now_words}"]
        if self.baseline is not None:
            parts.append(f"{self.baseline:.3f} {self.baseline_what}")
        parts += list(self.rejudged)
        return "; ".join(parts) + "."

    @property
    def same_instrument_sentence(self) -> str:
        if self.same_instrument is None:
            return f"{self.now_run} is the first run measured with its instrument: nothing comparable before it."
        rid, score = self.same_instrument
        return (f"Against {rid}, the last run measured with the same instrument: {signed(self.now - score)} "
                f"({score:.3f} -> {self.now:.3f}).")


def _baseline(history: pd.DataFrame, metric: str, incident: Incident) -> tuple[float, str] | None:
    first = incident.jumps[0] if incident.jumps else None
    if first is None:
        return None
    h = history[history["metric"] == metric].dropna(subset=["score"]).sort_values(["started_at", "run_id"]).copy()
    h["_seg"] = segment_index(h)
    prev = h[h["run_id"] == first.prev_run_id]
    if prev.empty:
        return None
    seg = int(prev["_seg"].iloc[0])
    before = h[(h["_seg"] == seg) & (h["started_at"] <= prev["started_at"].iloc[0])]
    return float(before["score"].median()), f"before the {first.started_at:%Y-%m-%d} {change_words(first)}"


def change_words(jump: Jump) -> str:
    """What the move that opened an incident was, as its baseline names it: 'instrument change', 'pipeline
    change', 'change' (another recorded change) or 'jump, with no recorded change'."""
    if jump.across_instruments:
        return "instrument change"
    kinds = {s.kind for s in jump.suspects}
    if "pipeline" in kinds:
        return "pipeline change"
    if kinds - {"none"}:
        return "change"
    return "jump, with no recorded change"


def series_words(s: Series) -> list[str]:
    """What a re-judged series says, a sentence per jump of its own (or that it has none), each naming the runs it
    covers (Series.covers): "the re-judged series (...), over r1 to r9 (9 runs), says the system lost 0.145 on
    2026-10-31"."""
    out = []
    head = f"the re-judged series ({s.label or s.series_id}), {s.covers},"
    for j in s.jumps:
        verb = "lost" if j.delta < 0 else "gained"
        when = pd.Timestamp(j.started_at).to_pydatetime()
        out.append(f"{head} says the system {verb} {abs(j.delta):.3f} on {when:%Y-%m-%d}")
    if not s.jumps:
        out.append(f"{head} shows no step beyond ±{s.threshold:.3f}" if s.threshold == s.threshold else
                   f"{head} has no step it can decide yet")
    return out


def standing(history: pd.DataFrame, incidents: Sequence[Incident], series: Sequence[Series], *,
             metrics: Sequence[str] | None = None, lint: pd.DataFrame | None = None) -> list[Standing]:
    """Per metric with an open incident (or each of `metrics`): now, the trusted baseline, the re-judged word.

    Args:
        history: the metric history (store.metric_history).
        incidents: incidents.load's incidents.
        series: finished re-judged series, newest first (rejudge.finished_series).
        metrics: the metrics to say (default: those with an open incident).
        lint: trends.lint_status: marks a "now" measured by a template that reads a must-never-receive field, and
            finds the lint-clean series whose score at that run is the score without it.
    """
    wanted = list(metrics) if metrics is not None else list(dict.fromkeys(i.metric for i in incidents if i.is_open))
    out = []
    for m in wanted:
        g = history[history["metric"] == m].dropna(subset=["score"]).sort_values(["started_at", "run_id"])
        if g.empty:
            continue
        mine = [i for i in incidents if i.metric == m and i.jumps and i.state not in (ACCEPTED, LAPSED)]
        base = _baseline(history, m, min(mine, key=lambda i: i.started_at)) if mine else None
        words = [w for s in series if s.metric == m for w in series_words(s)]
        now_run = str(g["run_id"].iloc[-1])
        reads = reads_never(history, lint, m, now_run)
        without = clean_score([s for s in series if s.metric == m], now_run, lint) if reads else None
        out.append(Standing(m, float(g["score"].iloc[-1]), now_run,
                            last_same_instrument(history, m), base[0] if base else None,
                            base[1] if base else "", tuple(words), reads, without))
    return out
