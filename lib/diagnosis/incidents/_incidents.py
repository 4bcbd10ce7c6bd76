"""Incidents: what is still open, with its evidence and the state the team set.

An incident is a jump beyond noise (or a leak-in/leak-out pair of jumps shown
as one episode), a canary alarm, a lint finding on a template in use, or a
judge sentinel's drift (lib.diagnosis.sentinel: the judge changed, the system did not), with
its evidence: suspects and their tests, the ablations run, and what a
re-judged series says at the same runs. The team sets its state (open,
explained as instrument, explained as system change, accepted) with a note;
each change is stored with its time and user (lib.store.history), so the
record survives restarts and every session reads the same one. An incident's
id is stable (kind, metric, first run), so its state follows it as history grows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import pandas as pd

from lib.core.errors import InputError
from lib.core.records import MAIN
from lib.diagnosis.ablation import AblationResult, split_headline
from lib.diagnosis.rejudge import Series, finished_series
from lib.diagnosis.sentinel import DRIFT, Drift, drifts
from lib.diagnosis.trends import CanaryStatus, Jump
from lib.store import Store
from lib.store import history as hs

OPEN = "open"
INSTRUMENT = "explained as instrument"
SYSTEM = "explained as system change"
ACCEPTED = "accepted"
STATES = (OPEN, INSTRUMENT, SYSTEM, ACCEPTED)
LAPSED = "no longer beyond the threshold"   # set by evaldrift, with the reason, when a threshold moved past a jump
AUTO_USER = "evaldrift"
REVERSAL_SHARE = 0.5   # a later opposite jump at least this share of the first one's size reverses it
MAX_NOTE = 2000


@dataclass(frozen=True)
class StateChange:
    state: str
    note: str
    user: str
    at: datetime


@dataclass(frozen=True)
class Incident:
    """Something that moved or alarmed, with its evidence and its state."""

    incident_id: str
    kind: str                      # 'jump' | 'episode' | 'canary alarm' | 'lint finding' | 'judge drift'
    metric: str
    run_id: str                    # where it starts
    started_at: datetime
    title: str
    evidence: tuple[str, ...] = ()
    jumps: tuple[Jump, ...] = ()
    end_run: str | None = None     # an episode: the run whose jump reversed it
    changes: tuple[StateChange, ...] = field(default_factory=tuple)
    agreement: tuple[str, ...] = ()   # at an instrument change: people's agreement with both instruments
    corrected: tuple[str, ...] = ()   # where people labelled the metric: the judge's score beside the corrected one

    @property
    def state(self) -> str:
        return self.changes[-1].state if self.changes else OPEN

    @property
    def is_open(self) -> bool:
        return self.state == OPEN

    @property
    def across_instruments(self) -> bool:
        return any(j.across_instruments for j in self.jumps)


def incident_id(kind: str, metric: str, run_id: str) -> str:
    return f"{kind}:{metric}:{run_id}"


# -- episodes -------------------------------------------------------------------------------
def reverses(first: Jump, later: Jump) -> bool:
    """Does `later` undo `first`: same metric, opposite sign, the same nature (across instruments or not),
    and at least REVERSAL_SHARE of its size?"""
    return (later.metric == first.metric and later.started_at > first.started_at
            and (later.delta > 0) != (first.delta > 0)
            and later.across_instruments == first.across_instruments
            and abs(later.delta) >= REVERSAL_SHARE * abs(first.delta))


def group_episodes(jumps: Sequence[Jump]) -> list[tuple[Jump, ...]]:
    """Jumps grouped into incidents, oldest first: a jump alone, or a jump, the jumps of the same nature
    in between, and the first later jump that reverses it (leak in, leak out) as one episode."""
    ordered = sorted(jumps, key=lambda j: (j.started_at, j.metric))
    used: set[int] = set()
    groups: list[tuple[Jump, ...]] = []
    for i, a in enumerate(ordered):
        if i in used:
            continue
        end = next((k for k in range(i + 1, len(ordered)) if k not in used and reverses(a, ordered[k])), None)
        if end is None:
            groups.append((a,))
            continue
        members = [k for k in range(i + 1, end) if k not in used and ordered[k].metric == a.metric
                   and ordered[k].across_instruments == a.across_instruments]
        group = (i, *members, end)
        used.update(group)
        groups.append(tuple(ordered[k] for k in group))
    return sorted(groups, key=lambda g: g[0].started_at)


# -- evidence -------------------------------------------------------------------------------
def series_step(series: pd.DataFrame, run_id: str, threshold: float) -> str | None:
    """What a re-judged series says at a run: its step from the run before, against its own threshold."""
    s = series.dropna(subset=["score"]).reset_index(drop=True)
    hit = s.index[s["run_id"] == run_id]
    if len(hit) == 0 or hit[0] == 0:
        return None
    i = int(hit[0])
    delta = float(s.loc[i, "score"] - s.loc[i - 1, "score"])
    if "step_threshold" in s and not math.isnan(float(s.loc[i, "step_threshold"])):
        threshold = float(s.loc[i, "step_threshold"])   # the step's own (rejudge.load_series: one rule)
    if abs(delta) > threshold:
        return (f"re-judged with one instrument, it still moves {delta:+.3f} here (threshold ±{threshold:.3f}): "
                "the system changed")
    return (f"re-judged with one instrument, it moves {delta:+.3f} here, within its threshold ±{threshold:.3f}: "
            "the jump is the instrument's, not the system's")


def _jump_lines(j: Jump) -> list[str]:
    where = "across instruments (test: the 2x2 split)" if j.across_instruments else "within one instrument"
    lines = [f"{j.started_at:%Y-%m-%d} {j.run_id}: {j.before:.3f} -> {j.after:.3f} ({j.delta:+.3f}), {where}"]
    lines += [f"suspect {s.kind}: {s.description}; test: {s.test}" for s in j.suspects[:3]]
    return lines


def _jump_incident(group: tuple[Jump, ...], ablations: pd.DataFrame, series: dict[str, tuple[pd.DataFrame, float]],
                   label: dict[str, str], agreement: dict[tuple[str, str], str] | None = None,
                   corrected: dict[tuple[str, str], str] | None = None) -> Incident:
    first, last = group[0], group[-1]
    kind = "episode" if len(group) > 1 else "jump"
    if kind == "episode":
        title = (f"{first.metric}: {first.delta:+.3f} at {first.started_at:%Y-%m-%d}, reversed by {last.delta:+.3f} "
                 f"at {last.started_at:%Y-%m-%d} (one episode"
                 f"{', across instruments' if first.across_instruments else ''})")
    else:
        nature = "across instruments" if first.across_instruments else "within one instrument"
        title = f"{first.metric} {first.delta:+.3f} at {first.started_at:%Y-%m-%d} ({nature})"
    evidence: list[str] = []
    agreed: list[str] = []
    through: list[str] = []
    for j in group:
        evidence += _jump_lines(j)
        if (j.metric, j.run_id) in (corrected or {}):   # the move seen through people's labels
            moved = (corrected or {})[(j.metric, j.run_id)]
            through.append(f"{j.started_at:%Y-%m-%d} through people's labels: {moved}")
            evidence.append(through[-1])
        if (j.metric, j.run_id) in (agreement or {}):   # an instrument change: is the new one righter, or wronger?
            agreed.append(f"{j.started_at:%Y-%m-%d} {(agreement or {})[(j.metric, j.run_id)]}")
            evidence.append(agreed[-1])
        for sid, (frame, threshold) in series.items():
            said = series_step(frame, j.run_id, threshold)
            if said:
                evidence.append(f"{label.get(sid, sid)}: {said}")
        for r in ablations[ablations["run_id"] == j.run_id].itertuples(index=False) if not ablations.empty else ():
            if r.status == "done" and isinstance(r.result, str):
                raw = json.loads(r.result)
                try:
                    cells = AblationResult.from_dict(raw).verdicts
                except InputError:   # a result another version wrote: its summary's first sentence still says it
                    cells = []
                # its verdict in one sentence; the caveats are the Ablation page's and the Review's small print
                evidence.append(f"ablation {r.ablation_id}: {split_headline(cells, str(raw.get('summary', ''))).lead}")
    return Incident(incident_id("jump", first.metric, first.run_id), kind, first.metric, first.run_id,
                    first.started_at, title, tuple(evidence), group, last.run_id if kind == "episode" else None,
                    agreement=tuple(agreed), corrected=tuple(through))


def canary_incidents(canary: CanaryStatus, metric: str = "faithfulness") -> list[Incident]:
    """One incident per stretch of consecutive canary alarms."""
    out: list[Incident] = []
    current: list = []
    for r in [*canary.frame.itertuples(index=False), None]:
        if r is not None and bool(r.alarm):
            current.append(r)
            continue
        if current:
            a, b = current[0], current[-1]
            peak = max(float(x.score) for x in current)
            out.append(Incident(incident_id("canary", metric, a.run_id), "canary alarm", metric, a.run_id,
                                pd.Timestamp(a.started_at).to_pydatetime(),
                                f"canary {metric} alarmed on {len(current)} run(s), {a.run_id} to {b.run_id} "
                                f"(peak {peak:.2f}, threshold {canary.threshold or 0:.2f})",
                                (canary.sentence,)))
            current = []
    return out


def lint_incidents(lint: pd.DataFrame, history: pd.DataFrame) -> list[Incident]:
    """One incident per stored template with a lint finding that some run used."""
    out: list[Incident] = []
    for r in lint[(lint["findings"].astype(str) != "") & (lint["runs"] > 0)].itertuples(index=False):
        used = history[history["prompt_hash"] == r.prompt_hash].sort_values("started_at")
        if used.empty:
            continue
        first = used.iloc[0]
        out.append(Incident(incident_id("lint", r.metric, r.prompt_hash), "lint finding", str(r.metric),
                            str(first["run_id"]), pd.Timestamp(first["started_at"]).to_pydatetime(),
                            f"{r.metric} prompt {r.prompt_hash}: {r.findings} (used by {r.runs} run(s), last "
                            f"{r.last_run})", (f"reads {r.reads}",)))
    return out


def drift_incidents(found: Sequence[Drift]) -> list[Incident]:
    """One incident per sentinel that called drift, at the run its drift night follows (its id: the pin)."""
    return [Incident(incident_id("sentinel", d.metric, d.status.pin.pin_id), DRIFT, d.metric, d.run_id, d.at,
                     d.title, d.evidence) for d in found]


def build(jumps: Sequence[Jump], *, canary: CanaryStatus | None = None, lint: pd.DataFrame | None = None,
          history: pd.DataFrame | None = None, ablations: pd.DataFrame | None = None,
          series: dict[str, tuple[pd.DataFrame, float]] | None = None, series_labels: dict[str, str] | None = None,
          states: pd.DataFrame | None = None, lapsed: Sequence[Jump] = (),
          agreement: dict[tuple[str, str], str] | None = None,
          corrected: dict[tuple[str, str], str] | None = None, drift: Sequence[Drift] = ()) -> list[Incident]:
    """Every incident, oldest first, each with its recorded state changes.

    An incident never disappears because a threshold moved: a step that was beyond its threshold as of its own
    run and is within the one measured now (`lapsed`) stays an incident, marked LAPSED by evaldrift with the
    reason, and a person's state set on it (before or after) still counts.

    Args:
        jumps: diagnose.find_jumps of the recorded history.
        lapsed: the lapsed steps of diagnose.steps_beyond.
        canary, lint, history: the canary status, diagnose.lint_status and the metric history.
        ablations: store.ablations() (their verdicts become evidence).
        series: re-judged series id -> (its history, its jump threshold), of the same metric as the jumps.
        series_labels: series id -> how to name it, with the runs it covers (Series.covers: what it says at a run
            reaches no further).
        states: history_store.incident_states.
        agreement: (metric, run id) -> the sentence of people's agreement before and after the instrument change
            at that run (lib.diagnosis.agreement._trend), added to a jump's evidence there.
        drift: the judge sentinels that called drift (lib.diagnosis.sentinel.drifts).
        corrected: (metric, run id) -> the run's score by the judge and corrected by people's labels, with the run
            before's (lib.diagnosis.agreement.corrected_at_steps), added to a jump's evidence there.
    """
    abl = ablations if ablations is not None else pd.DataFrame()
    out = []
    for group in group_episodes(jumps):
        own = {k: v for k, v in (series or {}).items() if v[0]["metric"].eq(group[0].metric).any()}
        out.append(_jump_incident(group, abl, own, series_labels or {}, agreement, corrected))
    auto: dict[str, StateChange] = {}
    for j in lapsed:
        inc = _jump_incident((j,), abl, {}, series_labels or {})
        out.append(Incident(**{**inc.__dict__, "evidence": (*inc.evidence, f"no longer beyond the threshold: "
                                                                            f"{j.lapsed}")}))
        auto[inc.incident_id] = StateChange(LAPSED, j.lapsed, AUTO_USER, j.started_at)
    if canary is not None:
        out += canary_incidents(canary)
    if lint is not None and history is not None:
        out += lint_incidents(lint, history)
    out += drift_incidents(drift)
    changes: dict[str, list[StateChange]] = {}
    if states is not None:
        for r in states.itertuples(index=False):
            changes.setdefault(r.incident_id, []).append(
                StateChange(r.state, r.note, r.user_name, pd.Timestamp(r.set_at).to_pydatetime()))
    out = [Incident(**{**i.__dict__, "changes": (*((auto[i.incident_id],) if i.incident_id in auto else ()),
                                                 *changes.get(i.incident_id, ()))}) for i in out]
    return sorted(out, key=lambda i: (i.started_at, i.kind, i.metric))


def load(store: Store, *, suite: str = MAIN, evidence: bool = True, history: pd.DataFrame | None = None,
         ablations: pd.DataFrame | None = None) -> tuple[list[Incident], list[Series]]:
    """Every incident of a store (with their states), and its finished re-judged series.

    `evidence` False: the same incidents (kinds, runs, titles, states, jumps) without what the evidence reads from
    people's labels, re-judged series and ablations (their `evidence`, `agreement` and `corrected` left empty),
    and no series: the labels' agreement and corrections are most of a load (about 1 of 1.3 CPU s on the demo),
    which the Ablation page's starting run and next steps do not read.
    `history` and `ablations`: the suite's `store.metric_history(suite=suite)` and `store.ablations()`, when the
    caller read them already (a watch's look reads both for itself too), else read here.
    """
    from lib.diagnosis.agreement import corrected_at_steps, trend_agreement
    from lib.diagnosis.trends import canary_status, lint_status, steps_beyond

    history = store.metric_history(suite=suite) if history is None else history
    if evidence and ablations is None:
        ablations = store.ablations()
    series = finished_series(store) if evidence else []
    jumps, lapsed = steps_beyond(store, history=history)
    _, changes = trend_agreement(store, history, suite=suite) if evidence else ([], [])
    found = build(jumps, canary=canary_status(store), lint=lint_status(store),
                  history=history, ablations=ablations if evidence else None,
                  series={s.series_id: (s.frame, s.threshold) for s in series},
                  series_labels={s.series_id: f"{s.name}, {s.covers}" for s in series},
                  states=hs.incident_states(store),
                  lapsed=lapsed, agreement={(c.metric, c.run_id): c.sentence for c in changes},
                  corrected=corrected_at_steps(store, suite, [(j.metric, j.run_id, j.prev_run_id) for j in jumps])
                  if evidence else None,
                  drift=drifts(store, suite))
    if not evidence:   # the jumps' own lines (suspects, tests) are evidence too: the same fields empty throughout
        found = [replace(i, evidence=()) for i in found]
    return found, series


def open_first(incidents: Sequence[Incident]) -> list[Incident]:
    """Open incidents, oldest unresolved first."""
    return [i for i in incidents if i.is_open]


def set_state(store: Store, incident: str, state: str, *, note: str = "", user: str) -> None:
    """Record a state change of an incident, with a note and who set it.

    Raises:
        InputError: an unknown state, an empty user or an over-long note; nothing is written.
    """
    if state not in STATES:
        raise InputError(f"unknown state {state!r}; one of: {', '.join(STATES)}", field="state")
    if not user.strip():
        raise InputError("say who sets the state", field="user")
    if len(note) > MAX_NOTE:
        raise InputError(f"note longer than {MAX_NOTE} characters", field="note")
    hs.add_incident_state(store, incident, state, note.strip(), user.strip())


JUMP_KINDS = ("jump", "episode")


def first_open_jump(incidents: Sequence[Incident]) -> Incident | None:
    """The open jump (or episode) the Overview lists first (oldest first): the run a page opened without a link
    should start at, rather than the latest run."""
    return next((i for i in incidents if i.is_open and i.kind in JUMP_KINDS), None)
