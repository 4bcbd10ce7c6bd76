"""An open episode's whole story: every jump inside it by size, and the re-judge that reads it with one instrument.

An episode that crosses an instrument change (a leak in, a leak out) can hide
a change of the system inside it: the demo's retriever regression moved
faithfulness at 2026-10-31 within the leaking instrument, by less than the
leak's own steps. So the Overview lists every jump of the metric inside an
open episode, largest first, each read from its evidence (incidents._reading:
"likely noise" only at about 1x the jump threshold with nothing else known),
and offers the re-judge that measures the whole episode with one trusted
instrument, whose steps are the system's own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lib.diagnosis.incidents._incidents import JUMP_KINDS, Incident, load
from lib.diagnosis.incidents._reading import JumpEvidence, reading
from lib.diagnosis.rejudge import RejudgeSpec, run_rejudge, runs_between, trusted_instrument
from lib.diagnosis.trends import Jump
from lib.judging.base import Judge
from lib.store import Store


def episode_jumps(incident: Incident, jumps: Sequence[Jump]) -> list[Jump]:
    """Every jump of the incident's metric from its first jump to its last, within one instrument or across,
    largest first (a single jump: itself)."""
    if not incident.jumps:
        return []
    first, last = incident.jumps[0].started_at, incident.jumps[-1].started_at
    inside = [j for j in jumps if j.metric == incident.metric and first <= j.started_at <= last]
    return sorted(inside, key=lambda j: (-abs(j.delta), j.started_at))


def jump_line(jump: Jump, evidence: JumpEvidence | None = None) -> str:
    """One jump of an episode in words: size, date, ratio to the threshold, nature, and what its evidence says
    (incidents.reading: 'likely noise' only at ~1x with nothing pointing elsewhere)."""
    nature = "across instruments" if jump.across_instruments else "within one instrument"
    line = (f"{jump.delta:+.3f} at {jump.started_at:%Y-%m-%d} ({jump.run_id}), {jump.ratio:.1f}x the jump threshold "
            f"±{jump.threshold:.3f}, {nature}")
    said = reading(jump, evidence)
    return line + (f": {said}" if said else "")


def needs_rejudge(incident: Incident) -> bool:
    """An open jump or episode that crosses an instrument change: only one instrument over it says what the
    system did."""
    return incident.is_open and incident.kind in JUMP_KINDS and incident.across_instruments


def rejudge_spec(store: Store, incident: Incident, *, judge: str, endpoint: str) -> RejudgeSpec:
    """The re-judge of an incident: its metric over the runs from the one before its first jump to its last
    jump, with the metric's trusted instrument (lib.diagnosis.rejudge.trusted_instrument) and this judge."""
    first, last = incident.jumps[0], incident.jumps[-1]
    trusted = trusted_instrument(store, incident.metric)
    return RejudgeSpec(incident.metric, runs_between(store, first.prev_run_id, last.run_id), trusted.template,
                       trusted.binding, judge=judge, endpoint=endpoint, label=f"{trusted.source}, {judge}")


def rejudge_open_episodes(store: Store, judge: Judge, *, endpoint: str,
                          progress: Callable[[int, int], None] | None = None) -> list[str]:
    """Re-judge every open incident that crosses an instrument change (for a free judge: at build time).

    Args:
        store: the store.
        judge: the judge (its model names the series).
        endpoint: where the judge lives ("offline" for the embedded judges).
        progress: called with (runs re-judged, runs to re-judge) over all of them.

    Returns:
        The series ids, done.
    """
    # the incidents, their states and jumps are all a re-judge reads: their evidence would cost each demo build
    # 0.5-0.7 CPU s more (the labels' agreement and corrections)
    found, _ = load(store, evidence=False)
    specs = [rejudge_spec(store, i, judge=judge.model, endpoint=endpoint) for i in found if needs_rejudge(i)]
    total = sum(len(s.run_ids) for s in specs)
    done = 0
    for spec in specs:
        run_rejudge(store, spec, judge, progress=_scaled(progress, done, len(spec.run_ids), total))
        done += len(spec.run_ids)
    return [s.series_id for s in specs]


def _scaled(progress: Callable[[int, int], None] | None, base: int, runs: int,
            total: int) -> Callable[[int, int], None] | None:
    """A re-judge's (judgings done, judgings) as runs done of all the runs to re-judge."""
    if progress is None:
        return None
    return lambda done, judgings: progress(base + (runs * done // judgings if judgings else 0), total)
