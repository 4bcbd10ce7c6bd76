"""The watcher's core: from one look at the history (an Observation) and the facts already seen, the messages to
send, each saying the cause first.

A fact is something the watcher can announce once, by its key:

| fact key | what | announced as |
|---|---|---|
| `incident:<id>` | an incident: a jump or episode, lint finding, canary alarm | NEW, one per run it starts at |
| `close:<id>` | an announced incident reversed, set explained or accepted, or lapsed | CLOSE |
| `verdict:<ablation>` | a finished ablation of a run inside an incident | UPDATE |
| `rejudge:<series>` | a finished re-judged series over an incident's runs | UPDATE |
| `instrument:<run>:<metric>:<kind>` | a judge model, prompt, binding, scoring library change | INSTRUMENT, one a run |
| `missing:<last run>` | no run for longer than MISSING_FACTOR times the learned cadence | MISSING |
| `failures:<metric>:<run>` | a run's share of failed judgings rising over its recent median | FAILURES, one a run |
| `agreement:<metric>:<run>` | the instrument new at `run` agrees with people's labels less than the last | AGREEMENT |

A jump with no recorded change that is not yet news (decided before the run-to-run spread is measured, or about 1x
its threshold: likely noise) waits while it stays so (`premature`): in null histories those were the false alerts.
A fact about the same run as a new jump (its instrument change, the lint finding of its new template, the canary
alarm that started with it, a verdict or re-judge already in) is told inside that jump's message, not apart. On the
first look at a store (nothing seen yet) only what is still open is announced; the rest is recorded as seen.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from urllib.parse import urlencode

from lib.core.cadence import missing_run
from lib.core.metrics import METRIC_NAMES, get_metric
from lib.diagnosis.agreement import Estimate
from lib.diagnosis.incidents import Incident, jump_line, likely_noise
from lib.diagnosis.rejudge import Series
from lib.diagnosis.trends import Jump
from lib.diagnosis.watch._observe import (
    AblationVerdict,
    AgreementChange,
    FailureShare,
    InstrumentChange,
    Observation,
)

NEW, UPDATE, CLOSE = "new episode", "update", "close"
INSTRUMENT, MISSING, FAILURES = "instrument change", "missing run", "failures rising"
AGREEMENT = "agreement falling"
KINDS = (NEW, UPDATE, CLOSE, INSTRUMENT, MISSING, FAILURES, AGREEMENT)
JUMP_KINDS = ("jump", "episode")

FAILURE_RISE = 0.05    # a failed share counts as rising at least 5 points above its recent median ...
FAILURE_RATIO = 2.0    # ... and at least twice it ...
MIN_FAILED = 3         # ... with at least 3 failed judgings (one unreadable reply is not a trend)
MIN_SHARED = 20        # agreement falls only as measured on at least 20 labelled samples both instruments judged,
AGREEMENT_DROP = 0.02  # by more than 2 points, its paired interval wholly below 0 (the new-judge gate's MARGIN)


@dataclass(frozen=True)
class Event:
    """One message to send: its key (the idempotency key every channel gets), the cause in one line, the
    evidence, and the facts it announces."""

    key: str
    kind: str
    headline: str
    evidence: tuple[str, ...] = ()
    facts: tuple[tuple[str, str], ...] = ()    # (fact key, kind)
    incident_id: str | None = None
    run_id: str | None = None
    metric: str | None = None
    at: datetime | None = None                 # when what it tells happened (the run's start)

    def text(self, public_url: str | None = None) -> str:
        """The message: the cause first, the evidence, a link to the run (EVALDRIFT_PUBLIC_URL) and the key."""
        lines = [self.headline, *(f"- {e}" for e in self.evidence)]
        if public_url and self.run_id:
            query = {"run": self.run_id, **({"metric": self.metric} if self.metric else {})}
            lines.append(f"Open: {public_url.rstrip('/')}/run?{urlencode(query)}")
        lines.append(f"evaldrift-key: {self.key}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Decision:
    """What one look decided: the messages, and the facts to record as seen without one."""

    events: tuple[Event, ...] = ()
    silent: tuple[tuple[str, str], ...] = field(default_factory=tuple)


# -- the cause in words --------------------------------------------------------------------------
_READS = re.compile(r"\(reads (.*?) -> (.*?)\)")


def _reads(description: str) -> tuple[set[str], set[str]] | None:
    found = _READS.search(description)
    if not found:
        return None
    return ({f.strip() for f in found.group(1).split(",")}, {f.strip() for f in found.group(2).split(",")})


def _after_arrow(description: str) -> str:
    """'judge model a -> b' -> 'a -> b' (the part after the kind's words)."""
    _, sep, tail = description.partition(": ")
    text = tail if sep else description
    for prefix in ("judge model ", "pipeline "):
        text = text.removeprefix(prefix)
    return text


def cause(jump: Jump) -> str:
    """What changed at a jump's run, as the message's first line says it: whether the measurement or the system
    changed, then the recorded change that most likely did it (the first suspect of each kind)."""
    m = jump.metric
    kinds = {s.kind: s for s in reversed(jump.suspects)}
    parts = []
    if "prompt" in kinds:
        s = kinds["prompt"]
        read = _reads(s.description)
        never = get_metric(m).never if m in METRIC_NAMES else frozenset()
        if s.blank:
            parts.append(f"the {m} judge's prompt changed that night and now reads {s.blank}")
        elif read and (dropped := sorted((read[0] - read[1]) & never)):
            parts.append(f"the {m} judge's prompt changed that night and no longer reads {', '.join(dropped)}")
        else:
            parts.append(f"the {m} judge's prompt changed that night")
    elif "binding" in kinds:
        parts.append(f"the {m} judge's binding changed that night ({_after_arrow(kinds['binding'].description)})")
    if "judge model" in kinds:
        parts.append(f"the judge model changed that night ({_after_arrow(kinds['judge model'].description)})")
    pipeline = [s for s in jump.suspects if s.kind == "pipeline"]
    if pipeline:
        parts.append("the pipeline changed that night (" + "; ".join(s.description.removeprefix("pipeline ")
                                                                     for s in pipeline[:3]) + ")")
    if not parts:
        return "nothing recorded changed that night: the system's outputs moved, or something unrecorded did"
    said = "; ".join(parts)
    if jump.across_instruments:
        return f"the measurement changed: {said}"
    return f"the system changed: {said}" if pipeline else said


def premature(inc: Incident) -> bool:
    """A jump with no recorded change that is not yet news: decided before the run-to-run spread is measured (the
    paired interval alone, early in a history), or about 1x its threshold (likely noise, as the Overview says).
    Held back, not announced, while it stays so; a jump with a recorded change is announced at once: the change
    is the news."""
    return inc.kind in JUMP_KINDS and all(
        all(s.kind == "none" for s in j.suspects) and ("not yet measured" in j.basis or likely_noise(j))
        for j in inc.jumps)


def _jump_head(j: Jump) -> str:
    return f"{j.metric} {j.delta:+.3f} on {j.run_id}"


def _evidence(inc: Incident) -> list[str]:
    """An incident's evidence for a message: its jumps against their thresholds, suspects with their tests, the
    verdicts, the re-judged series and people's agreement that its evidence holds."""
    lines = [jump_line(j) for j in inc.jumps]
    first = inc.jumps[0] if inc.jumps else None
    if first is not None:
        lines += [f"suspect {s.kind}: {s.description}; test: {s.test}" for s in first.suspects[:3]]
    lines += [e for e in inc.evidence if e.startswith("ablation ")]
    lines += list(inc.agreement)
    if not inc.jumps:
        lines += [inc.title, *inc.evidence]
    return lines


def _verdict_text(v: AblationVerdict) -> str:
    """'LEAK: wiring leak: faithfulness moves ...' (the word first, unless the summary starts with it)."""
    if not v.word or v.summary.startswith(v.word):
        return v.summary or v.word or "done"
    return f"{v.word}: {v.summary}" if v.summary else v.word


# -- the rules ------------------------------------------------------------------------------------
def _runs_of(inc: Incident) -> set[str]:
    return {j.run_id for j in inc.jumps}


def _series_runs(s: Series) -> set[str]:
    return set(s.frame["run_id"].astype(str)) if "run_id" in s.frame else set()


def series_words(s: Series) -> str:
    """What a finished re-judge says, in one clause."""
    if s.jumps:
        said = []
        for j in s.jumps:
            verb = "lost" if j.delta < 0 else "gained"
            said.append(f"the system {verb} {abs(j.delta):.3f} on {j.run_id}")
        return "; ".join(said)
    return f"no step beyond ±{s.threshold:.3f}: the recorded moves are the instrument's, not the system's"


def failures_rising(f: FailureShare) -> bool:
    """Is a run's failed share rising: at least MIN_FAILED failures, FAILURE_RISE over its recent median, and
    FAILURE_RATIO times it?"""
    return (f.baseline is not None and f.failed >= MIN_FAILED and f.share >= f.baseline + FAILURE_RISE
            and f.share >= FAILURE_RATIO * f.baseline)


def agreement_falling(c: AgreementChange) -> bool:
    """Does the current instrument agree with people less than the one before, beyond noise: on at least MIN_SHARED
    labelled samples both judged, a paired difference whose 95% interval lies wholly below 0 and whose point is a
    drop of more than AGREEMENT_DROP (an interval, never two points compared)."""
    d = c.difference
    return (c.shared >= MIN_SHARED and d.known and math.isfinite(d.high) and d.high < 0
            and d.value < -AGREEMENT_DROP)


def _estimate(e: Estimate, signed: bool = False) -> str:
    f = "{:+.2f}" if signed else "{:.2f}"
    if not math.isfinite(e.low):
        return f.format(e.value)
    return f"{f.format(e.value)} [{f.format(e.low)}, {f.format(e.high)}]"


def agreement_words(c: AgreementChange) -> str:
    """'people's agreement with the faithfulness judge fell at r (prompt a -> b): accuracy 0.97 [..] -> 0.84 [..],
    a paired difference of -0.13 [-0.16, -0.10] on 150 labelled samples both judged'."""
    return (f"people's agreement with the {c.metric} judge fell at {c.run_id} ({c.change}): {c.measure} "
            f"{_estimate(c.before)} -> {_estimate(c.after)}, a paired difference of {_estimate(c.difference, True)} "
            f"on {c.shared} labelled samples both judged")


def _agreement_events(out: list[Event], obs: Observation, known: set[str]) -> list[Event]:
    """Each falling agreement told inside the message about its run and metric (a jump, a lint finding, an
    instrument change), else in one of its own."""
    for c in obs.agreement:
        key = f"agreement:{c.metric}:{c.run_id}"
        if key in known or not agreement_falling(c):
            continue
        fact, said = (key, AGREEMENT), agreement_words(c)
        k = next((k for k, e in enumerate(out) if e.kind in (NEW, INSTRUMENT) and e.run_id == c.run_id
                  and (e.metric in (c.metric, None))), None)
        if k is not None:
            e = out[k]
            head = e.headline + (f"; people's agreement fell {_estimate(c.before)} -> {_estimate(c.after)}"
                                 if e.kind == INSTRUMENT else "")
            out[k] = replace(e, headline=head, evidence=(*e.evidence, said), facts=(*e.facts, fact))
            continue
        out.append(Event(key, AGREEMENT, f"{c.metric}: {said}",
                         ("the new instrument reads people's labels worse than the one it replaced: its scores may "
                          "have moved for the wrong reason (see the Labels page)",),
                         (fact,), None, c.run_id, c.metric, c.started_at))
    return out


def _hours(d: timedelta) -> str:
    h = d.total_seconds() / 3600
    return f"{h / 24:.1f} days" if h >= 48 else f"{h:.0f} h"


def _instrument_words(changes: Sequence[InstrumentChange]) -> tuple[str, list[str]]:
    """One run's instrument changes without a jump: the headline's moves and the evidence lines."""
    moves, lines = {}, []
    for c in changes:
        lines.append(c.text)
        if c.metric not in moves:
            if c.delta is None:
                moves[c.metric] = f"{c.metric} not scored on both sides"
            elif c.threshold is None:
                moves[c.metric] = f"{c.metric} {c.delta:+.3f} (noise not measured yet)"
            else:
                within = "within noise" if abs(c.delta) <= c.threshold else "beyond the spread, not a jump"
                moves[c.metric] = f"{c.metric} {c.delta:+.3f}, {within} (jump threshold ±{c.threshold:.3f})"
    return "; ".join(moves.values()), lines


def events(obs: Observation, seen: Iterable[str], *, first_look: bool = False) -> Decision:
    """The messages one look calls for, given the facts already seen.

    Args:
        obs: what the look found (lib.diagnosis.watch.observe).
        seen: the fact keys recorded by earlier looks.
        first_look: the watcher's first look at this store: only what is still open (new incidents, a missing
            run) is announced; the rest of the past is recorded as seen.

    Returns:
        The events, oldest first, and the facts to record as seen without a message.
    """
    known = set(seen)
    out: list[Event] = []
    silent: list[tuple[str, str]] = []
    incidents = list(obs.incidents)
    announced = {i.incident_id for i in incidents if f"incident:{i.incident_id}" in known}

    # new incidents, grouped by the run they start at
    new = [i for i in incidents if f"incident:{i.incident_id}" not in known]
    for i in new:
        if not i.is_open:   # handled (explained, accepted, lapsed) before the watcher saw it: nothing to say
            silent += [(f"incident:{i.incident_id}", NEW), (f"close:{i.incident_id}", CLOSE)]
    new = [i for i in new if i.is_open and not premature(i)]
    by_run: dict[str, list[Incident]] = {}
    for i in new:
        by_run.setdefault(i.run_id, []).append(i)

    verdicts = [v for v in obs.verdicts if f"verdict:{v.ablation_id}" not in known]
    series = [s for s in obs.series if f"rejudge:{s.series_id}" not in known]
    new_ids = {i.incident_id for i in new}
    folded: set[str] = set()

    for run, group in sorted(by_run.items(), key=lambda kv: min(i.started_at for i in kv[1])):
        jumps = sorted((i for i in group if i.kind in JUMP_KINDS), key=lambda i: -abs(i.jumps[0].delta))
        others = [i for i in group if i.kind not in JUMP_KINDS]
        facts = [(f"incident:{i.incident_id}", NEW) for i in [*jumps, *others]]
        evidence: list[str] = []
        if jumps:
            lead = jumps[0]
            j = lead.jumps[0]
            more = [f"{i.metric} {i.jumps[0].delta:+.3f}" for i in jumps[1:]]
            head = _jump_head(j) + (f" (and {', '.join(more)})" if more else "") + f": {cause(j)}"
            for i in jumps:
                if i.end_run:   # reversed already: one message says both
                    last = i.jumps[-1]
                    head += f"; reversed by {last.delta:+.3f} on {last.run_id}"
                    facts.append((f"close:{i.incident_id}", CLOSE))
            for i in jumps:
                evidence += _evidence(i)
            runs = set().union(*(_runs_of(i) for i in jumps))
            for v in verdicts:
                if v.run_id in runs:
                    if f"verdict:{v.ablation_id}" not in folded:   # a fact is told by one message only
                        facts.append((f"verdict:{v.ablation_id}", UPDATE))
                        folded.add(f"verdict:{v.ablation_id}")
                    word = v.word or v.summary.split(":")[0].strip()
                    head += f" [{word}]" if word else ""
                    if not any(e.startswith(f"ablation {v.ablation_id}") for i in jumps for e in i.evidence):
                        evidence.append(f"ablation {v.ablation_id} of {v.run_id}: {_verdict_text(v)}")
            for s in series:
                if any(i.metric == s.metric and _runs_of(i) & _series_runs(s) for i in jumps):
                    if f"rejudge:{s.series_id}" not in folded:
                        facts.append((f"rejudge:{s.series_id}", UPDATE))
                        folded.add(f"rejudge:{s.series_id}")
                    evidence.append(f"{s.name}: {series_words(s)}")
            for c in obs.instrument_changes:
                if c.run_id == run and any(i.metric == c.metric for i in jumps):
                    facts.append((f"instrument:{c.run_id}:{c.metric}:{c.kind}", INSTRUMENT))
            for o in others:
                evidence.append(f"{o.kind}: {o.title}")
            out.append(Event(facts[0][0], NEW, head, tuple(dict.fromkeys(evidence)), tuple(dict.fromkeys(facts)),
                             lead.incident_id, run, lead.metric, j.started_at))
            continue
        for o in others:   # a lint finding or canary alarm with no jump at its run: with the change that made it
            changed = [c for c in obs.instrument_changes if c.run_id == run and c.metric == o.metric
                       and f"instrument:{c.run_id}:{c.metric}:{c.kind}" not in folded]
            folded.update(f"instrument:{c.run_id}:{c.metric}:{c.kind}" for c in changed)
            head = f"{o.metric} {o.kind} at {o.run_id}: {o.title}"
            fields = re.findall(r"reads '(\w+)'", o.title)
            if o.kind == "lint finding" and fields and any(c.kind == "prompt" for c in changed):
                moved, _ = _instrument_words([c for c in changed if c.kind == "prompt"])
                head = (f"{o.metric} lint finding at {o.run_id}: the {o.metric} judge's prompt changed that night and "
                        f"reads {', '.join(fields)}, which {o.metric} must never receive; scores moved {moved}")
            out.append(Event(f"incident:{o.incident_id}", NEW, head,
                             (*o.evidence, *(c.text for c in changed)),
                             ((f"incident:{o.incident_id}", NEW),
                              *((f"instrument:{c.run_id}:{c.metric}:{c.kind}", INSTRUMENT) for c in changed)),
                             o.incident_id, o.run_id, o.metric, o.started_at))

    told = {f for e in out for f, _ in e.facts}
    # closes of announced incidents
    for i in incidents:
        key = f"close:{i.incident_id}"
        if i.incident_id not in announced or key in known or key in told:
            continue
        if i.end_run and i.jumps:
            last, first = i.jumps[-1], i.jumps[0]
            head = (f"{_jump_head(last)}: the {i.metric} episode opened on {first.started_at:%Y-%m-%d} "
                    f"({first.delta:+.3f}) is reversed: {cause(last)}")
            out.append(Event(key, CLOSE, head, tuple(_evidence(i)), ((key, CLOSE),), i.incident_id, last.run_id,
                             i.metric, last.started_at))
        elif not i.is_open:
            sc = i.changes[-1]
            head = f"{i.metric} {i.kind} of {i.started_at:%Y-%m-%d} closed: {sc.state} ({sc.user})" + (
                f": {sc.note}" if sc.note else "")
            out.append(Event(key, CLOSE, head, (i.title,), ((key, CLOSE),), i.incident_id, i.run_id, i.metric, sc.at))

    told = {f for e in out for f, _ in e.facts}
    # verdicts and re-judges that answer for an incident already announced
    for v in verdicts:
        key = f"verdict:{v.ablation_id}"
        if key in told:
            continue
        inc = next((i for i in incidents if v.run_id in _runs_of(i) and i.incident_id not in new_ids), None)
        if inc is None or inc.incident_id not in announced:
            silent.append((key, UPDATE))
            continue
        head = f"{inc.metric} {inc.kind} of {inc.started_at:%Y-%m-%d} ({inc.run_id}): ablation of {v.run_id}: " \
               f"{_verdict_text(v)}"
        out.append(Event(key, UPDATE, head, (inc.title,), ((key, UPDATE),), inc.incident_id, v.run_id, inc.metric,
                         obs.now))
    for s in series:
        key = f"rejudge:{s.series_id}"
        if key in told:
            continue
        related = [i for i in incidents if i.metric == s.metric and i.kind in JUMP_KINDS and i.incident_id in announced
                   and _runs_of(i) & _series_runs(s)]
        if not related:
            silent.append((key, UPDATE))
            continue
        lead = min(related, key=lambda i: i.started_at)
        head = f"{s.metric}: the re-judge answered ({s.name}): {series_words(s)}"
        evidence = [f"{i.title}" for i in related]
        evidence += [e for i in related for e in i.evidence if e.startswith(f"{s.name}:")]
        anchor = s.jumps[0].run_id if s.jumps else lead.run_id
        out.append(Event(key, UPDATE, head, tuple(dict.fromkeys(evidence)), ((key, UPDATE),), lead.incident_id,
                         anchor, s.metric, obs.now))

    told = {f for e in out for f, _ in e.facts}
    # instrument changes with no jump of their metric at their run: one message per run
    jump_at = {(j.run_id, j.metric) for i in incidents for j in i.jumps}
    pending: dict[str, list[InstrumentChange]] = {}
    for c in obs.instrument_changes:
        key = f"instrument:{c.run_id}:{c.metric}:{c.kind}"
        if key in known or key in told:
            continue
        if (c.run_id, c.metric) in jump_at:   # told (or to be told) with the jump
            silent.append((key, INSTRUMENT))
            continue
        pending.setdefault(c.run_id, []).append(c)
    for run, changes in pending.items():
        moved, lines = _instrument_words(changes)
        head = f"the measurement changed on {run}, the system not necessarily: scores moved {moved}"
        told_here = tuple((f"instrument:{c.run_id}:{c.metric}:{c.kind}", INSTRUMENT) for c in changes)
        out.append(Event(told_here[0][0], INSTRUMENT, head, tuple(lines), told_here, None, run,
                         changes[0].metric if len({c.metric for c in changes}) == 1 else None, changes[0].started_at))

    # a missing run
    gone = missing_run(obs.run_times, obs.now)
    if gone is not None and f"missing:{gone[0]}" not in known:
        last_run, every, gap = gone
        out.append(Event(f"missing:{last_run}", MISSING,
                         f"no run since {last_run} ({_hours(gap)} ago): runs came every {_hours(every)}",
                         (f"expected by {obs.run_times[-1][1] + every:%Y-%m-%d %H:%M}; a nightly job that failed, or "
                          "a run that could not be recorded (see the inbox's rejected folder)",),
                         ((f"missing:{last_run}", MISSING),), None, last_run, None, obs.now))

    # failed judgings rising, one message per run
    rising: dict[str, list[FailureShare]] = {}
    for f in obs.failures:
        if failures_rising(f) and f"failures:{f.metric}:{f.run_id}" not in known:
            rising.setdefault(f.run_id, []).append(f)
    for run, shares in rising.items():
        parts = [f"{f.metric} {f.failed}/{f.judged} ({f.share:.0%}, was {f.baseline:.0%})" for f in shares]
        told_here = tuple((f"failures:{f.metric}:{f.run_id}", FAILURES) for f in shares)
        out.append(Event(told_here[0][0], FAILURES,
                         f"the judge's failed or unreadable replies are rising on {run}: " + "; ".join(parts),
                         ("failed judgings are never scored: the scores rest on fewer samples, and a judge that "
                          "fails more often may be rate-limited, overloaded or changed",),
                         told_here, None, run, shares[0].metric if len(shares) == 1 else None, shares[0].started_at))

    out = _agreement_events(out, obs, known)

    if first_look:   # only what is still open is news; the rest of the past is recorded as seen
        keep = [e for e in out if e.kind in (NEW, MISSING, AGREEMENT)]
        silent += [f for e in out if e not in keep for f in e.facts]
        out = keep
    out.sort(key=lambda e: (e.at or obs.now, KINDS.index(e.kind)))
    return Decision(tuple(out), tuple(dict.fromkeys(silent)))


# -- ablations before sending (watch --ablate) ---------------------------------------------------
@dataclass(frozen=True)
class Wanted:
    """A wiring ablation a jump's suspect calls for: blank `blank` of `metric` at `run_id` (Suspect.blank)."""

    run_id: str
    metric: str
    blank: str
    incident_id: str


def ablations_wanted(obs: Observation, decision: Decision, seen: Iterable[str]) -> tuple[Wanted, ...]:
    """The ablations to run before sending: those the suspects of the jump that opens each incident this decision
    announces call for, and those of open incidents announced earlier that no finished ablation of that run
    answers yet (a budget stopped them, or the watcher ran without --ablate): their verdict is then a material
    update, one message. The jump that reverses an episode is its close, not a new wiring to test; a reversed
    episode is not ablated later either. A run a finished ablation already answers is left out: its verdict is in
    the observation.
    """
    known = set(seen)
    announcing = {key.removeprefix("incident:") for e in decision.events if e.kind == NEW
                  for key, _ in e.facts if key.startswith("incident:")}
    answered = {v.run_id for v in obs.verdicts}
    out: dict[tuple[str, str, str], Wanted] = {}
    for inc in obs.incidents:
        if inc.kind not in JUMP_KINDS or not inc.is_open:
            continue
        if inc.incident_id not in announcing and (f"incident:{inc.incident_id}" not in known or inc.end_run):
            continue
        j = inc.jumps[0]
        if j.run_id in answered:
            continue
        for s in j.suspects:
            if s.blank:
                out.setdefault((j.run_id, j.metric, s.blank), Wanted(j.run_id, j.metric, s.blank, inc.incident_id))
    return tuple(out.values())


def with_notes(decision: Decision, notes: Mapping[str, Sequence[str]]) -> Decision:
    """The decision with each run's notes (an ablation the budget or the setup kept from running: no verdict is
    said for it) added to the evidence of the new-episode message at that run."""
    if not notes:
        return decision
    out = [replace(e, evidence=(*e.evidence, *notes[e.run_id])) if e.kind == NEW and e.run_id is not None
           and e.run_id in notes else e for e in decision.events]
    return Decision(tuple(out), decision.silent)
