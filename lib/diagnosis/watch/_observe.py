"""What the watcher looks at, read from a store into plain values: the incidents with their evidence, the finished
re-judges, the instrument changes with the step at each, the ablation verdicts, the judge's failures per run,
and the latest runs' times. `events` (lib.diagnosis.watch._events) decides from these alone."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import pandas as pd

from lib.core.records import MAIN
from lib.diagnosis.ablation import CLEAN, INCONCLUSIVE, INSENSITIVE, LEAK, REPLAY_MISMATCH
from lib.diagnosis.agreement import Estimate
from lib.diagnosis.incidents import Incident
from lib.diagnosis.rejudge import Series
from lib.diagnosis.trends import JUMP_K, change_events, trend_noise
from lib.store import Store
from lib.store import watch as ws

INSTRUMENT_KINDS = ("judge model", "prompt", "binding", "scoring library")
FAILURE_WINDOW = 10   # earlier runs whose median failed share is the baseline a run's share is compared with
AGREEMENT_RUNS = 3    # runs each side of an instrument change whose judgings are paired with people's labels
_COLUMN_WORDS = {"judge_model": "judge model", "prompt_hash": "prompt", "binding": "binding",
                 "scorer": "scoring library"}


@dataclass(frozen=True)
class InstrumentChange:
    """An instrument change of one metric at a run, and how far the metric moved there."""

    run_id: str
    started_at: datetime
    metric: str
    kind: str                 # 'judge model' | 'prompt' | 'binding' | 'scoring library'
    text: str                 # 'faithfulness prompt: 5c5ba5fdbdb7 -> 7961cb6dd21c'
    delta: float | None       # the step from the metric's previous run (None: no score on one side)
    threshold: float | None   # its jump threshold (k·√2 run-to-run spreads; None: not measured yet)


@dataclass(frozen=True)
class FailureShare:
    """The share of judgings that failed (unreadable or failed replies) in a metric's latest run."""

    metric: str
    run_id: str
    started_at: datetime
    judged: int
    failed: int
    baseline: float | None    # the median share over up to FAILURE_WINDOW runs before it (None: no earlier run)

    @property
    def share(self) -> float:
        return self.failed / self.judged if self.judged else 0.0


@dataclass(frozen=True)
class AblationVerdict:
    """A finished ablation of a run: its summary, and the one word a message carries (verdict_word)."""

    ablation_id: str
    run_id: str
    summary: str
    word: str = ""


def verdict_word(kinds: Iterable[str], *, mismatch: bool = False) -> str:
    """An ablation's verdict in one word, as an alert carries it: LEAK when any cell leaks (a finding against the
    wiring stands even when the run's score was not reproduced), INSENSITIVE when a received field moved nothing,
    REPLAY MISMATCH when the run's score was not reproduced (nothing is cleared then), INCONCLUSIVE when a cell
    decided nothing, else CLEAN (every cell as the wiring table expects)."""
    found = set(kinds)
    for word in (LEAK, INSENSITIVE, REPLAY_MISMATCH, INCONCLUSIVE):
        if word in found or (word == REPLAY_MISMATCH and mismatch):
            return word
    return CLEAN if found else INCONCLUSIVE


@dataclass(frozen=True)
class AgreementChange:
    """People's agreement with a metric's current instrument against the one before it, paired over the labelled
    samples both judged (lib.diagnosis.agreement: accuracy of verdicts, else 1 - mean error of scores).

    Attributes:
        run_id, started_at: the first run of the current instrument.
        change: what changed ('prompt a -> b; binding projected -> replay').
        measure: 'accuracy' or '1 - mean error'.
        before, after: each instrument's agreement on the shared samples, with its 95% bootstrap interval.
        difference: after minus before, with its paired 95% bootstrap interval over the shared samples.
        shared: labelled samples both instruments judged.
    """

    metric: str
    run_id: str
    started_at: datetime
    change: str
    measure: str
    before: Estimate
    after: Estimate
    difference: Estimate
    shared: int


@dataclass(frozen=True)
class Observation:
    """Everything one look at a store found. A part left empty says nothing: no event comes of an absence."""

    now: datetime
    incidents: tuple[Incident, ...] = ()
    series: tuple[Series, ...] = ()
    instrument_changes: tuple[InstrumentChange, ...] = ()
    verdicts: tuple[AblationVerdict, ...] = ()
    failures: tuple[FailureShare, ...] = ()
    run_times: tuple[tuple[str, datetime], ...] = ()   # the latest runs, oldest first
    agreement: tuple[AgreementChange, ...] = ()        # per labelled metric, its current instrument's agreement


def instrument_changes(history: pd.DataFrame) -> tuple[InstrumentChange, ...]:
    """The instrument changes of a history (lib.diagnosis.trends.change_events), each with the metric's step there
    and the jump threshold from its run-to-run spread."""
    events = change_events(history)
    events = events[events["kind"].isin(INSTRUMENT_KINDS)]
    if events.empty:
        return ()
    spreads = trend_noise(history)
    h = history.dropna(subset=["score"]).sort_values(["metric", "started_at", "run_id"])
    h = h.assign(step=h.groupby("metric")["score"].diff())
    steps = {(str(r.metric), str(r.run_id)): r.step for r in h.itertuples(index=False)}
    out = []
    for e in events.itertuples(index=False):
        step = steps.get((str(e.metric), str(e.run_id)))
        spread = spreads.get(str(e.metric), math.nan)
        out.append(InstrumentChange(str(e.run_id), pd.Timestamp(e.started_at).to_pydatetime(), str(e.metric),
                                    str(e.kind), str(e.text),
                                    None if step is None or pd.isna(step) else float(step),
                                    None if math.isnan(spread) else JUMP_K * math.sqrt(2) * spread))
    return tuple(out)


def failure_shares(history: pd.DataFrame, *, window: int = FAILURE_WINDOW) -> tuple[FailureShare, ...]:
    """Per metric, its latest run's failed share against the median of the runs before it."""
    out = []
    for metric, g in history.sort_values(["started_at", "run_id"]).groupby("metric", sort=True):
        judged = (g["n"] + g["n_failed"]).to_numpy(dtype=float)
        failed = g["n_failed"].to_numpy(dtype=float)
        shares = [f / j if j else 0.0 for f, j in zip(failed, judged, strict=True)]
        last = g.iloc[-1]
        before = shares[-1 - window:-1]
        out.append(FailureShare(str(metric), str(last["run_id"]), pd.Timestamp(last["started_at"]).to_pydatetime(),
                                int(judged[-1]), int(failed[-1]),
                                float(pd.Series(before).median()) if before else None))
    return tuple(out)


def verdicts(ablations: pd.DataFrame) -> tuple[AblationVerdict, ...]:
    """The finished ablations with their summary and verdict word (store.ablations())."""
    out = []
    for r in ablations.itertuples(index=False) if not ablations.empty else ():
        if r.status == "done" and isinstance(r.result, str):
            result = json.loads(r.result)
            summary = str(result.get("summary", "")).strip()
            word = verdict_word((str(v.get("kind", "")) for v in result.get("verdicts", [])),
                                mismatch=any(bool(c.get("mismatch")) for c in result.get("replay", [])))
            out.append(AblationVerdict(str(r.ablation_id), str(r.run_id), summary, word))
    return tuple(out)


def agreement_changes(store: Store, history: pd.DataFrame, *, suite: str = MAIN,
                      runs: int = AGREEMENT_RUNS) -> tuple[AgreementChange, ...]:
    """Per metric people labelled, its current instrument (the latest comparable segment) against the one before:
    the judgings of the `runs` runs nearest the change on each side (the one before's last, the current one's
    first) paired with the calibration set's labels, compared over the samples both judged
    (lib.diagnosis.agreement.compare). The nearest runs, because their outputs are as alike as the history has
    them, so the difference is the instruments'; the current instrument's newest runs can sit after a system
    change (on the demo, the retriever regression made the 2026-10-18 prompt read people 0.03 worse on its newest
    runs, when on its first it read them 0.02 better)."""
    from lib.diagnosis.agreement import compare, labelled_pairs
    from lib.diagnosis.trends import INSTRUMENT_COLUMNS, segment_index

    labels = store.labels(suite)
    if labels.empty or history.empty:
        return ()
    out = []
    for metric in sorted(set(labels["metric"]) & set(history["metric"])):
        h = history[history["metric"] == metric].dropna(subset=["score"]).sort_values(["started_at", "run_id"])
        seg = segment_index(h).loc[h.index]
        last = int(seg.max())
        if last < 1:
            continue
        now, before = h[seg == last], h[seg == last - 1]
        first, prev = now.iloc[0], before.iloc[-1]
        change = "; ".join(f"{_COLUMN_WORDS[c]} {prev[c]} -> {first[c]}" for c in INSTRUMENT_COLUMNS
                           if c in h and str(prev[c]) != str(first[c])) or "instrument change"
        pairs_before, version = labelled_pairs(store, suite, metric, run_ids=before["run_id"].tolist()[-runs:])
        pairs_now, _ = labelled_pairs(store, suite, metric, run_ids=now["run_id"].tolist()[:runs])
        found = compare(pairs_before, pairs_now, metric=metric, version=version, margin=0.0)
        use_accuracy = found.current.accuracy.known and found.candidate.accuracy.known
        out.append(AgreementChange(
            metric=str(metric), run_id=str(first["run_id"]),
            started_at=pd.Timestamp(first["started_at"]).to_pydatetime(),
            change=change, measure="accuracy" if use_accuracy else "1 - mean error",
            before=found.current.headline, after=found.candidate.headline, difference=found.difference,
            shared=len(pairs_before.sample_ids & pairs_now.sample_ids)))
    return tuple(out)


def times(recent: Sequence[tuple[str, datetime]]) -> tuple[tuple[str, datetime], ...]:
    return tuple((str(r), pd.Timestamp(t).to_pydatetime()) for r, t in recent)


def observe(store: Store, now: datetime, *, recent: Sequence[tuple[str, datetime]] | None = None,
            suite: str = MAIN) -> Observation:
    """Look at everything in the store (lib.diagnosis.incidents.load and the rest); `recent`: the latest runs'
    times (lib.store.watch.run_times), read here when not given."""
    from lib.diagnosis.incidents import load

    history = store.metric_history(suite=suite)
    ablations = store.ablations()
    found, series = load(store, suite=suite, history=history, ablations=ablations)   # one read of each, not two
    return Observation(now=now, incidents=tuple(found), series=tuple(series),
                       instrument_changes=instrument_changes(history), verdicts=verdicts(ablations),
                       failures=failure_shares(history) if not history.empty else (),
                       run_times=times(recent if recent is not None else ws.run_times(store)),
                       agreement=agreement_changes(store, history, suite=suite))


def times_only(now: datetime, recent: Sequence[tuple[str, datetime]]) -> Observation:
    """An observation of the run times alone: the look when nothing was recorded since the last one (a missing
    run is the only thing that can be new then)."""
    return Observation(now=now, run_times=times(recent))

