"""Where a sentinel's drift shows: a marker on Trends and an incident, at the run the drift night follows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import pandas as pd

from lib.core.records import MAIN
from lib.diagnosis.sentinel._run import DRIFT, Status, statuses
from lib.store import Store
from lib.store import sentinel as ss

EVENT_COLUMNS = ["run_id", "started_at", "kind", "metric", "text"]


@dataclass(frozen=True)
class Drift:
    """A sentinel that called drift, placed on the timeline.

    Attributes:
        status: the sentinel's status (its drift night is `status.drift`).
        run_id: the latest run of the suite started at or before the drift night (the first run when none was):
            the run the marker and the incident sit at.
        at: when the drift night was judged.
    """

    status: Status
    run_id: str
    at: datetime

    @property
    def metric(self) -> str:
        return self.status.pin.metric

    @property
    def title(self) -> str:
        d = self.status.drift
        assert d is not None
        p = self.status.pin
        return (f"the judge changed, the system did not: {p.metric} judge {p.judge_model} disagrees with its "
                f"{self.status.n_probes} pinned probe verdicts on {d.disagreement:.1%} of items on night {d.night} "
                f"(its own repeat disagreement at most {p.null_share:.1%}; e-value {d.e_value:.0f})")

    @property
    def evidence(self) -> tuple[str, ...]:
        s = self.status
        d = s.drift
        assert d is not None
        night = s.night(d.night)
        lines = [s.sentence,
                 f"the probes are pinned samples ({s.pin.source}): the system's outputs did not change; the same "
                 f"prompts, judged again with a seed per night, are answered differently"]
        if night is not None and night.served_model != s.pin.served_model:
            lines.append(f"the server said it served {night.served_model or 'nothing'} (pinned: "
                         f"{s.pin.served_model or 'nothing'})")
        lines += [f"night {n.night}: {n.disagreement:.1%} disagreement, {n.calls} calls"
                  for n in s.nights[-5:] if n.disagreement is not None]
        return tuple(lines)


def drifts(store: Store, suite: str = MAIN) -> list[Drift]:
    """Every sentinel of `suite` that has called drift, at the run its drift night follows."""
    runs = ss.runs_before(store, suite)
    out: list[Drift] = []
    for s in statuses(store):
        d = s.drift
        if d is None or s.pin.suite != suite or runs.empty:
            continue
        night = s.night(d.night)
        at = night.judged_at if night is not None else s.pin.pinned_at
        before = runs[runs["started_at"] <= pd.Timestamp(at)]
        run_id = str((before if not before.empty else runs).iloc[-1 if not before.empty else 0]["run_id"])
        out.append(Drift(s, run_id, at))
    return out


def drift_events(store: Store, suite: str = MAIN) -> pd.DataFrame:
    """Trends' judge-drift markers: rows shaped as lib.diagnosis.trends.change_events' (kind DRIFT)."""
    rows = [{"run_id": d.run_id, "started_at": pd.Timestamp(d.at), "kind": DRIFT, "metric": d.metric,
             "text": d.title} for d in drifts(store, suite)]
    return pd.DataFrame(rows, columns=EVENT_COLUMNS)


def with_drift(events: pd.DataFrame, store: Store, suite: str = MAIN) -> pd.DataFrame:
    """Trends' markers: the recorded changes (change_events) and the sentinels' drift nights, oldest first."""
    drift = drift_events(store, suite)
    if drift.empty:
        return events
    both = pd.concat([events.astype(object), drift.astype(object)], ignore_index=True) if len(events) else drift
    both["started_at"] = pd.to_datetime(both["started_at"])
    return both.sort_values("started_at", kind="stable").reset_index(drop=True)
