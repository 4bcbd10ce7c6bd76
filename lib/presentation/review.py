"""The weekly review: what moved beyond noise in a date range, what changed, what the checks said.

`review(store, start, end)` gathers, for the runs started in [start, end]:
the jumps beyond the judge's noise (diagnose.find_jumps over the whole
history, so the noise estimate does not shrink with the range), each with its
suspects and any ablation that tested it; the recorded changes to the
instrument (judge model, prompt, binding) and to the pipeline; the canary
alarms; and the ablations of those runs or launched in the range.
`review_markdown` writes it down for the meeting. No Streamlit here: the
Review page, the tests and a CLI report present the same values.

Run ids, labels, config values and ablation text are untrusted in Markdown:
every value passes through mdtext.md_text (the pages render with report.md_escape).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

import pandas as pd

from lib.core.records import MAIN
from lib.diagnosis import incidents, trends
from lib.diagnosis.agreement import corrected_at_steps, trend_agreement
from lib.diagnosis.rejudge import Series
from lib.presentation.ablation_views import AblationBrief, ablation_briefs
from lib.presentation.mdtext import markdown_text as markdown_text  # the plain-text export
from lib.presentation.mdtext import md_text
from lib.presentation.report import md_escape as md_escape  # the pages render with it
from lib.store import Store

WEEK = 7
INSTRUMENT_KINDS = ("judge model", "served model", "prompt", "binding")


# -- the review ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Change:
    """A recorded change between a run and the one before it."""

    run_id: str
    started_at: datetime
    kind: str            # 'judge model' | 'prompt' | 'binding' | 'pipeline'
    metric: str | None
    text: str


@dataclass(frozen=True)
class JumpFinding:
    """A jump beyond noise, which side its first suspect is on, and the ablations that tested it."""

    jump: trends.Jump
    side: str                                 # 'instrument' | 'pipeline' | 'unexplained'
    ablations: tuple[AblationBrief, ...]

    @property
    def sentence(self) -> str:
        j = self.jump
        first = j.suspects[0] if j.suspects else None
        text = (f"{j.metric} {j.before:.3f} -> {j.after:.3f} ({j.delta:+.3f}) at {j.run_id}, "
                f"{j.ratio:.1f}x the jump threshold. ")
        if self.side == "instrument" and first:
            text += f"The instrument changed at this run: {first.description}. Test: {first.test}."
        elif self.side == "pipeline" and first:
            text += f"The pipeline changed at this run: {first.description}. Test: {first.test}."
        else:
            text += "No recorded change explains it: re-judge both runs."
        done = [a for a in self.ablations if a.summary]
        if done:
            text += f" Ablation {done[0].ablation_id}: {done[0].lead}"
        return text


@dataclass(frozen=True)
class CanaryAlarm:
    run_id: str
    started_at: datetime
    score: float
    threshold: float


@dataclass(frozen=True)
class AlarmSpell:
    """Consecutive canary runs in alarm."""

    first_run: str
    last_run: str
    first_at: datetime
    last_at: datetime
    runs: int
    peak: float

    @property
    def sentence(self) -> str:
        if self.runs == 1:
            return f"alarmed at {self.first_run} ({self.peak:.2f})"
        return f"alarmed on {self.runs} consecutive runs, {self.first_run} to {self.last_run} (peak {self.peak:.2f})"


def alarm_spells(frame: pd.DataFrame) -> list[AlarmSpell]:
    """Stretches of consecutive alarm runs in a canary frame (run_id, started_at, score, alarm), oldest first."""
    spells: list[AlarmSpell] = []
    current: list[tuple[str, datetime, float]] = []
    for r in [*frame.itertuples(index=False), None]:
        if r is not None and bool(r.alarm):
            current.append((str(r.run_id), pd.Timestamp(r.started_at).to_pydatetime(), float(r.score)))
            continue
        if current:
            spells.append(AlarmSpell(current[0][0], current[-1][0], current[0][1], current[-1][1], len(current),
                                     max(c[2] for c in current)))
            current = []
    return spells


@dataclass(frozen=True)
class IncidentNote:
    """An incident as the review records it: its state, the note and who set it (the latest change)."""

    started_at: datetime
    kind: str
    title: str
    state: str
    note: str = ""
    user: str = ""
    at: datetime | None = None

    @property
    def line(self) -> str:
        head = f"{self.started_at:%Y-%m-%d} {self.kind}: {self.title}: {self.state}"
        if self.at is None:
            return f"{head} (nobody has set its state)"
        return f"{head}, set by {self.user} on {self.at:%Y-%m-%d %H:%M}" + (f": {self.note}" if self.note else "")


def incident_notes(found: Sequence[incidents.Incident], before: datetime) -> tuple[IncidentNote, ...]:
    """Every incident started before `before`, open first, with its latest state, note and who set it."""
    ordered = [*incidents.open_first(found), *(i for i in found if not i.is_open)]
    out = []
    for i in ordered:
        if i.started_at >= before:
            continue
        last = i.changes[-1] if i.changes else None
        out.append(IncidentNote(i.started_at, i.kind, i.title, i.state, last.note if last else "",
                                last.user if last else "", last.at if last else None))
    return tuple(out)


@dataclass(frozen=True)
class Review:
    """Everything the weekly review presents for runs started in [start, end] (whole days)."""

    start: date
    end: date
    runs: tuple[str, ...]
    jumps: tuple[JumpFinding, ...]
    instrument_changes: tuple[Change, ...]
    pipeline_changes: tuple[Change, ...]
    canary_runs: int
    canary_alarms: tuple[CanaryAlarm, ...]
    canary_baseline: float | None
    canary_threshold: float | None
    ablations: tuple[AblationBrief, ...]
    still_open: tuple[str, ...] = ()          # incidents started by the range's end and not closed: carried forward
    conclusions: tuple[str, ...] = ()         # what re-judged series say, per metric (lib.diagnosis.incidents)
    incidents: tuple[IncidentNote, ...] = ()  # every incident started by the range's end: state, note, who
    agreement: tuple[str, ...] = ()           # at each instrument change in range: agreement with people, both sides
    corrected: tuple[str, ...] = ()           # at each move in range with labels: the metric corrected by people's

    @property
    def title(self) -> str:
        return f"evaldrift review: {self.start:%Y-%m-%d} to {self.end:%Y-%m-%d}"

    @property
    def canary_sentence(self) -> str:
        if not self.canary_runs:
            return "No canary run in this range."
        if not self.canary_alarms:
            return (f"The canary stayed within its threshold ({self.canary_threshold:.2f}) on all "
                    f"{self.canary_runs} run(s): no sign of a leak into faithfulness.")
        first, last = self.canary_alarms[0], self.canary_alarms[-1]
        return (f"The canary alarmed on {len(self.canary_alarms)} of {self.canary_runs} run(s) (from {first.run_id}, "
                f"{first.score:.2f}, to {last.run_id}, {last.score:.2f}; threshold {self.canary_threshold:.2f}): "
                f"answers only the reference supports were marked supported.")

    @property
    def headline(self) -> tuple[str, ...]:
        """The findings in sentences, most important first: what to say in the meeting."""
        carried = ((f"{len(self.still_open)} incident(s) still open (carried forward until someone closes them); "
                    f"the oldest: {self.still_open[0]}",) if self.still_open else ())
        if not self.runs:
            return (f"No runs started between {self.start:%Y-%m-%d} and {self.end:%Y-%m-%d}.", *carried)
        out = list(carried)
        if self.jumps:
            sides = [f.side for f in self.jumps]
            out.append(f"{len(self.jumps)} move(s) beyond noise in {len(self.runs)} run(s): "
                       f"{sides.count('instrument')} at an instrument change, {sides.count('pipeline')} at a "
                       f"pipeline change, {sides.count('unexplained')} with no recorded change.")
            out += [f.sentence for f in self.jumps]
        else:
            out.append(f"Nothing moved beyond noise in {len(self.runs)} run(s).")
        if self.canary_runs:
            out.append(self.canary_sentence)
        out += [f"Is the judge right? {a}." for a in self.agreement]
        out += [f"Through people's labels: {c}." for c in self.corrected]
        if self.ablations:
            out.append(ablations_sentence(self.ablations))
        return tuple(out)


def canary_rows(alarms: Sequence[CanaryAlarm]) -> pd.DataFrame:
    """The canary alarms as the Review shows them: run, start to the minute, score and threshold to 3 places."""
    return pd.DataFrame({"run": [a.run_id for a in alarms],
                         "started": [f"{a.started_at:%Y-%m-%d %H:%M}" for a in alarms],
                         "canary faithfulness": [f"{a.score:.3f}" for a in alarms],
                         "threshold": [f"{a.threshold:.3f}" for a in alarms]})


def ablations_sentence(ablations: Sequence[AblationBrief]) -> str:
    """'3 ablation(s) in range; between them, 1 leak or miswired metric: faithfulness on r9.' Two ablations that
    find the same metric of the same run leaking count once."""
    found = sorted(set().union(*(a.findings for a in ablations)))
    head = f"{len(ablations)} ablation(s) in range"
    if not found:
        return f"{head}; none found a leak or a miswired metric."
    which = ", ".join(f"{m} on {r}" for r, m in found)
    return f"{head}; between them, {len(found)} leak(s) or miswired metric(s): {which}."


def data_range(store: Store) -> tuple[date, date] | None:
    """The first and last day with a run, or None for an empty store."""
    runs = store.runs()
    if runs.empty:
        return None
    return pd.Timestamp(runs["started_at"].min()).date(), pd.Timestamp(runs["started_at"].max()).date()


def default_range(store: Store) -> tuple[date, date] | None:
    """The last week of data: the seven days ending on the day of the latest run."""
    bounds = data_range(store)
    if bounds is None:
        return None
    return max(bounds[0], bounds[1] - timedelta(days=WEEK - 1)), bounds[1]


def _within(ts: object, lo: datetime, hi: datetime | None) -> bool:
    t = pd.Timestamp(ts).to_pydatetime()
    return lo <= t and (hi is None or t < hi)


def launch_window_end(store: Store, hi: datetime) -> datetime | None:
    """Until when an ablation launched counts in a range ending before `hi`: the start of the next run, if any.

    A range's meeting discusses what was launched after its last run too; the next run's week takes over
    from then. None (open-ended) for a range that reaches the latest run, as the default week does.
    """
    later = [t for t in pd.to_datetime(store.runs()["started_at"]) if t.to_pydatetime() >= hi]
    return min(later).to_pydatetime() if later else None


def _side(jump: trends.Jump) -> str:
    kind = jump.suspects[0].kind if jump.suspects else "none"
    if kind in INSTRUMENT_KINDS:
        return "instrument"
    return "pipeline" if kind == "pipeline" else "unexplained"


def review(store: Store, start: date, end: date, *, suite: str = MAIN, history: pd.DataFrame | None = None,
           loaded: tuple[list[incidents.Incident], list[Series]] | None = None,
           canary: trends.CanaryStatus | None = None, lint: pd.DataFrame | None = None,
           events: pd.DataFrame | None = None) -> Review:
    """Assemble the review of runs started on days start..end (inclusive).

    The last five are what a caller has already read of the store as it is now (the dashboard's cached loaders:
    the Overview's incidents cost about a CPU second on the demo, the Trends' recorded changes a fifth); each left
    None is read here.

    Args:
        store: the run store.
        start: first day of the range.
        end: last day of the range (inclusive).
        suite: the sample suite whose metrics are reviewed.
        history: store.metric_history(suite=suite).
        loaded: incidents.load(store, suite=suite).
        canary: trends.canary_status(store).
        lint: trends.lint_status(store).
        events: trends.change_events(history).
    """
    if end < start:
        start, end = end, start
    lo, hi = datetime.combine(start, time.min), datetime.combine(end + timedelta(days=1), time.min)
    history = store.metric_history(suite=suite) if history is None else history
    runs = tuple(r for r, t in history.drop_duplicates("run_id")[["run_id", "started_at"]].itertuples(index=False)
                 if _within(t, lo, hi))
    in_range = set(runs)

    briefs = ablation_briefs(store)
    launched_by = launch_window_end(store, hi)
    ablations = tuple(b for b in briefs if b.run_id in in_range or _within(b.created_at, lo, launched_by))

    jumps = []
    for j in trends.find_jumps(store, suite=suite, history=history):
        if j.run_id in in_range:
            tested = tuple(b for b in briefs if b.run_id == j.run_id and b.tests(j.metric))
            jumps.append(JumpFinding(j, _side(j), tested))

    events = trends.change_events(history) if events is None else events
    changes = [Change(r.run_id, pd.Timestamp(r.started_at).to_pydatetime(), r.kind,
                      r.metric if isinstance(r.metric, str) else None, r.text)
               for r in events.itertuples(index=False) if r.run_id in in_range]

    canary = trends.canary_status(store) if canary is None else canary
    frame = canary.frame[canary.frame["run_id"].isin(in_range)]
    alarms = tuple(CanaryAlarm(r.run_id, pd.Timestamp(r.started_at).to_pydatetime(), float(r.score),
                               float(canary.threshold or 0.0))
                   for r in frame.itertuples(index=False) if r.alarm)

    _, agreed = trend_agreement(store, history, suite=suite)
    said = corrected_at_steps(store, suite, [(f.jump.metric, f.jump.run_id, f.jump.prev_run_id) for f in jumps])
    corrected = tuple(f"at {f.jump.run_id} ({f.jump.started_at:%Y-%m-%d}), {said[(f.jump.metric, f.jump.run_id)]}"
                      for f in jumps if (f.jump.metric, f.jump.run_id) in said)
    agreement = tuple(f"{c.metric} at {c.run_id} ({c.started_at:%Y-%m-%d}), {c.sentence}" for c in agreed
                      if c.run_id in in_range)
    found, series = incidents.load(store, suite=suite) if loaded is None else loaded
    still = tuple(f"{i.started_at:%Y-%m-%d} {i.kind}: {i.title}" for i in incidents.open_first(found)
                  if i.started_at < hi)
    rejudged = sorted({s.metric for s in series})
    lint = trends.lint_status(store) if lint is None else lint
    conclusions = tuple(s.sentence for s in incidents.standing(history, found, series, metrics=rejudged,
                                                               lint=lint) if s.rejudged)
    return Review(start, end, runs, tuple(jumps),
                  tuple(c for c in changes if c.kind in INSTRUMENT_KINDS),
                  tuple(c for c in changes if c.kind == "pipeline"),
                  len(frame), alarms, canary.baseline, canary.threshold, ablations, still, conclusions,
                  incident_notes(found, hi), agreement, corrected)


# -- Markdown -------------------------------------------------------------------------------
def _bullets(lines: Sequence[str], empty: str) -> list[str]:
    return [f"- {md_text(x)}" for x in lines] if lines else [f"_{empty}_"]


def _change_lines(changes: Sequence[Change]) -> list[str]:
    return [f"{c.run_id} ({c.started_at:%Y-%m-%d}), {c.kind}: {c.text}" for c in changes]


def review_markdown(rev: Review) -> str:
    """The review as Markdown for the meeting notes; every stored value is escaped."""
    out = [f"# {md_text(rev.title)}", "",
           f"{len(rev.runs)} run(s) in range" + (f": {md_text(rev.runs[0])} to {md_text(rev.runs[-1])}."
                                                 if rev.runs else "."), "",
           "## Summary", "", *_bullets(rev.headline, "Nothing to report."), ""]

    out += ["## Re-judged conclusions", "", *_bullets(rev.conclusions, "No history of these metrics has been "
                                                                         "re-judged with one instrument."), ""]
    out += ["## Incidents: state, note and who set it", "",
            *_bullets([n.line for n in rev.incidents], "No incident by the end of this range."), ""]
    out += ["## Still open", "", *_bullets(rev.still_open, "Nothing is open: every incident is explained or "
                                                             "accepted."), ""]
    out += ["## What moved beyond noise", ""]
    if rev.jumps:
        out += ["| metric | run | before | after | change | x threshold | first suspect | test | ablation |",
                "|---|---|---|---|---|---|---|---|---|"]
        for f in rev.jumps:
            j = f.jump
            s = j.suspects[0] if j.suspects else None
            abl = next((a for a in f.ablations if a.summary), None)
            cells = [md_text(j.metric), md_text(j.run_id), f"{j.before:.3f}", f"{j.after:.3f}", f"{j.delta:+.3f}",
                     f"{j.ratio:.1f}", md_text(f"{s.kind}: {s.description}") if s else "none",
                     md_text(s.test) if s else "", md_text(f"{abl.ablation_id}: {abl.lead}") if abl else ""]
            out.append("| " + " | ".join(cells) + " |")
    else:
        out.append("_Nothing moved beyond the judge's noise._")
    out += ["", "## What changed in the instrument", "",
            *_bullets(_change_lines(rev.instrument_changes), "No judge, prompt or binding change."), "",
            "## Is the judge right? Agreement with people at those changes", "",
            *_bullets(rev.agreement, "No labelled samples judged on both sides of an instrument change in range."),
            "", "## The moves through people's labels (prediction-powered, 95% intervals)", "",
            *_bullets(rev.corrected, "No move in range on a metric people labelled."),
            "", "## What changed in the pipeline", "",
            *_bullets(_change_lines(rev.pipeline_changes), "No pipeline config change."), "",
            "## Canary", "", md_text(rev.canary_sentence), ""]
    if rev.canary_alarms:
        out += ["| run | started | canary faithfulness | threshold |", "|---|---|---|---|"]
        out += [f"| {md_text(a.run_id)} | {a.started_at:%Y-%m-%d %H:%M} | {a.score:.3f} | {a.threshold:.3f} |"
                for a in rev.canary_alarms]
        out.append("")
    out += ["## Ablations", ""]
    if not rev.ablations:
        out.append("_No ablation of these runs, and none launched in this range or since, before the next run._")
    for a in rev.ablations:
        out += [f"### {md_text(a.ablation_id)} on {md_text(a.run_id)}", "",
                f"{md_text(a.what)}. Status: {md_text(a.status)}. {md_text(a.progress)}", ""]
        if a.summary:   # the verdict in one sentence, then its caveats once, in small print
            out += [f"**{md_text(a.lead)}**", ""]
            out += [f"_{md_text(' '.join(a.caveats))}_", ""] if a.caveats else []
        out += [f"- {md_text(sentence)}" for _, sentence in a.verdicts]
        out += [f"- {md_text(s)}" for s in a.mismatches]
        if a.four:
            out.append(f"- Four readings: {md_text(a.four)}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"
