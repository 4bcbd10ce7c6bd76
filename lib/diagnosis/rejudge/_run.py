"""Re-judged history: score a range of runs again with one chosen instrument.

A recorded history mixes instruments: a judge model changes, a prompt is
edited, a harness starts rendering a field it should not. Scores are
comparable only within one instrument. Re-judging every run of a range with
one instrument (a metric's template, binding and judge: by default the one
the team trusts) gives a series in which every step is the system's own. The
series is stored beside the recorded scores (lib.store.history), never over
them; a killed re-judge resumes at the first run it had not finished, and
model calls go through the same call cache as ablations.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass

import pandas as pd

from lib.core.calls import STOPPED_PREFIX, JudgeRequest
from lib.core.errors import InputError, NotFoundError
from lib.core.metrics import get_metric
from lib.core.prompts import BINDINGS, DEFAULT_TEMPLATES, PROJECTED, build_prompt, lint, prompt_hash
from lib.core.records import MAIN
from lib.core.results import CALL_FAILED
from lib.diagnosis import cost
from lib.judging.base import Judge
from lib.judging.harness import Instrument, score_samples
from lib.store import Store
from lib.store import history as hs


@dataclass(frozen=True)
class RejudgeSpec:
    """What to re-judge, and with which instrument.

    Attributes:
        metric: the metric.
        run_ids: the runs, oldest first.
        template: the instrument's judge prompt template.
        binding: how it is bound ("projected": the metric's typed view; "replay": the whole sample).
        judge: the judge model.
        endpoint: where that judge lives ("offline" or the server URL).
        suite: the sample suite.
        seed: the judge seed, one for every run: one instrument, so identical requests are identical calls.
        label: where the instrument came from, in words (shown beside the line).
    """

    metric: str
    run_ids: tuple[str, ...]
    template: str
    binding: str = PROJECTED
    judge: str = "offline-lexical-v2"
    endpoint: str = "offline"
    suite: str = MAIN
    seed: int = 0
    label: str = ""

    def __post_init__(self) -> None:
        try:
            get_metric(self.metric)
        except KeyError as exc:
            raise InputError(str(exc.args[0]), field="metric") from None
        if not self.run_ids:
            raise InputError("choose at least one run to re-judge", field="runs")
        if self.binding not in BINDINGS:
            raise InputError(f"unknown binding {self.binding!r}", field="binding")
        if not self.template.strip():
            raise InputError("the instrument needs a template", field="template")
        object.__setattr__(self, "run_ids", tuple(self.run_ids))

    @property
    def prompt_hash(self) -> str:
        return prompt_hash(self.template)

    @property
    def instrument(self) -> Instrument:
        return Instrument(self.metric, self.template, self.binding)

    @property
    def series_id(self) -> str:
        """Same instrument, same runs: same series (so launching it twice resumes or answers from the store)."""
        key = {k: v for k, v in asdict(self).items() if k != "label"}
        return "rj-" + hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> RejudgeSpec:
        d = dict(d)
        d["run_ids"] = tuple(d["run_ids"])  # type: ignore[arg-type]
        return cls(**d)  # type: ignore[arg-type]


@dataclass(frozen=True)
class TrustedInstrument:
    """The instrument a re-judge uses by default, and why."""

    template: str
    binding: str
    judge_model: str | None
    source: str      # in words: which run's instrument, or the built-in template


def trusted_instrument(store: Store, metric: str, *, suite: str = MAIN) -> TrustedInstrument:
    """The newest recorded instrument of `metric` that is projected and lint-clean, else the built-in one.

    Projected binding plus a clean lint means the judge can only see what the
    metric is defined over: the instrument a team can trust to re-measure history.
    """
    history = store.metric_history(suite=suite, metrics=[metric])
    for row in history.iloc[::-1].drop_duplicates("prompt_hash").itertuples(index=False):
        if row.binding != PROJECTED or not isinstance(row.prompt_hash, str):
            continue
        template = store.prompt(row.prompt_hash)
        if template and not lint(template, metric):
            return TrustedInstrument(template, PROJECTED, row.judge_model,
                                     f"prompt {row.prompt_hash} of {row.run_id}, projected")
    return TrustedInstrument(DEFAULT_TEMPLATES[metric], PROJECTED, None, "built-in template, projected")


def runs_between(store: Store, first: str, last: str) -> tuple[str, ...]:
    """The run ids from `first` to `last` inclusive, oldest first."""
    ids = store.run_ids()
    for rid in (first, last):
        if rid not in ids:
            raise NotFoundError(f"no run {rid!r}")
    i, j = ids.index(first), ids.index(last)
    if i > j:
        i, j = j, i
    return tuple(ids[i:j + 1])


# -- cost before launch ---------------------------------------------------------------------
@dataclass(frozen=True)
class RejudgeCost:
    """What launching a re-judge will cost."""

    runs: int
    judgings: int          # samples to judge over all runs
    stored: int            # already in the store (a resumed or finished series)
    from_cache: int        # judgings the call cache answers (held replies, or an identical request called first)
    calls: int             # judge calls left (at most: an excluded sample makes none)
    prompt_tokens: int     # estimated, for the calls left (lib.diagnosis.cost: from the judge's recorded usage)
    offline: bool

    @property
    def sentence(self) -> str:
        if self.calls == 0:
            return (f"{self.judgings} judgings over {self.runs} runs; nothing to call: "
                    f"{self.stored} already stored, {self.from_cache} answered from the call cache.")
        where = "offline judge, no API cost" if self.offline else f"about {self.prompt_tokens:,} prompt tokens"
        return (f"{self.judgings} judgings over {self.runs} runs: {self.calls} judge calls ({where}); "
                f"{self.stored} already stored, {self.from_cache} answered from the call cache.")


def estimate(store: Store, spec: RejudgeSpec, *, cacheable: bool) -> RejudgeCost:
    """Count the judgings, what the store and call cache already hold, and the calls and tokens left."""
    done = hs.series_done_runs(store, spec.series_id)
    counts = hs.sample_counts(store, spec.run_ids, spec.suite)
    judgings = sum(counts.values())
    stored = sum(counts.get(r, 0) for r in done)
    if not cacheable:  # every judging is a call (an excluded sample, e.g. an empty answer, makes none)
        return RejudgeCost(len(spec.run_ids), judgings, stored, 0, judgings - stored, 0, spec.endpoint == "offline")
    requests: list[JudgeRequest] = []
    for rid in spec.run_ids:
        if rid in done:
            continue
        for s in store.samples(rid, spec.suite):
            prompt, items = build_prompt(spec.template, spec.metric, s, spec.binding)
            if items:
                requests.append(cost.judge_request(spec.judge, spec.endpoint, prompt, spec.seed))
    left = cost.calls_left(store, requests, model=spec.judge, endpoint=spec.endpoint)
    return RejudgeCost(len(spec.run_ids), judgings, stored, left.from_cache, left.calls, left.prompt_tokens,
                       spec.endpoint == "offline")


# -- running ----------------------------------------------------------------------------------
STOPPED = CALL_FAILED + STOPPED_PREFIX   # a sample's reason when its call was never made


def run_rejudge(store: Store, spec: RejudgeSpec, judge: Judge, *,
                progress: Callable[[int, int], None] | None = None,
                should_stop: Callable[[], bool] | None = None) -> pd.DataFrame | None:
    """Re-judge every run of the spec (or resume, or answer from the store) and return the series.

    Each run is stored whole in one transaction as it finishes, so a kill
    loses at most the run in progress. Failed samples are stored as failed,
    with their reason, and counted; never scored. A run whose calls the judge
    refused because its job was stopped (lib.judging.breaker) is not stored:
    resuming asks it again.

    Returns:
        The series (lib.store.history.series_history), or None if stopped early.
    """
    sid = spec.series_id
    row = hs.series(store, sid)
    if row is None or row["status"] != "done":
        counts = hs.sample_counts(store, spec.run_ids, spec.suite)
        missing = [r for r in spec.run_ids if r not in counts]
        if missing:
            raise NotFoundError(f"run {missing[0]!r} has no samples in suite {spec.suite!r}")
        hs.start_series(store, sid, metric=spec.metric, suite=spec.suite, spec=spec.to_dict(), judge_model=spec.judge,
                        prompt_hash=spec.prompt_hash, binding=spec.binding, label=spec.label,
                        total=sum(counts.values()))
        # the series names its template by hash, like a recorded run
        hs.add_series_prompt(store, spec.prompt_hash, spec.metric, spec.template)
        done_runs = hs.series_done_runs(store, sid)
        done = sum(counts[r] for r in done_runs)
        total = sum(counts.values())
        cache = store if judge.cacheable else None
        for rid in spec.run_ids:
            if rid in done_runs:
                continue
            if should_stop and should_stop():
                return None
            results = score_samples(store.samples(rid, spec.suite), spec.instrument, judge, seed=spec.seed,
                                    cache=cache)
            if any(r.reason.startswith(STOPPED) for r in results):
                return None   # the judge was stopped (a breaker, a deadline) mid-run: the run is asked again on resume
            hs.add_series_run(store, sid, rid, results)
            done += counts[rid]
            if progress:
                progress(done, total)
        hs.finish_series(store, sid, "done")
    return hs.series_history(store, sid)


# -- reading a series -----------------------------------------------------------------------
@dataclass(frozen=True)
class SeriesJump:
    """A step of a re-judged series beyond its own jump threshold."""

    run_id: str
    started_at: object
    before: float
    after: float
    delta: float
    threshold: float


@dataclass(frozen=True)
class Series:
    """A finished re-judged series with its noise and jumps."""

    series_id: str
    metric: str
    label: str
    frame: pd.DataFrame        # history_store.series_history
    spread: float              # its run-to-run spread (lib.diagnosis.trends._noise)
    threshold: float           # its jump threshold
    jumps: tuple[SeriesJump, ...]

    @property
    def name(self) -> str:
        return f"re-judged ({self.label})" if self.label else f"re-judged {self.series_id}"

    @property
    def run_ids(self) -> tuple[str, ...]:
        """The runs it re-judged, oldest first: nothing it says reaches beyond them."""
        return tuple(str(r) for r in self.frame["run_id"])

    @property
    def covers(self) -> str:
        """'over r5 to r6 (2 runs)': the runs it re-judged, in the words every sentence about it carries (a
        series of the last two runs says nothing of a drop on an earlier night)."""
        ids = self.run_ids
        if not ids:
            return "over no run"
        if len(ids) == 1:
            return f"over {ids[0]} only (1 run)"
        return f"over {ids[0]} to {ids[-1]} ({len(ids)} runs)"


def load_series(store: Store, series_id: str) -> Series | None:
    """A series with its spread, threshold and jumps (None when absent).

    A step is a jump by the rule the stored series use (lib.diagnosis.trends: its paired per-sample
    change, and the run-to-run spread once measured, the step left out); `threshold` is the widest a decided
    step had, and each jump carries its own.
    """
    from itertools import pairwise

    from lib.diagnosis.trends import PairedStep, run_spread, series_calls, series_threshold, step_thresholds

    row = hs.series(store, series_id)
    if row is None:
        return None
    frame = hs.series_history(store, series_id)
    s = frame.dropna(subset=["score"]).reset_index(drop=True)
    scores = s["score"].astype(float).tolist()
    ids = [str(x) for x in s["run_id"]]
    spread = run_spread(scores)
    pairs = hs.series_paired_steps(store, series_id, list(pairwise(ids)))
    paired = {(str(r.prev_run_id), str(r.run_id)): PairedStep(int(r.n), float(r.mean), float(r.sd))
              for r in pairs.itertuples(index=False)}
    calls = series_calls(scores, ids, paired)
    threshold = series_threshold(calls)
    # each step's own threshold beside its run (nan: the first run, or a step not decided), for what the
    # incidents say of the series at a run (incidents.series_step)
    frame = frame.merge(pd.DataFrame({"run_id": ids, "step_threshold": step_thresholds(calls)}), on="run_id",
                        how="left")
    jumps = tuple(SeriesJump(ids[i], s.loc[i, "started_at"], scores[i - 1], scores[i], scores[i] - scores[i - 1],
                             c.threshold) for i, c in enumerate(calls) if c is not None and c.beyond)
    return Series(series_id, str(row["metric"]), str(row["label"] or ""), frame, spread, threshold, jumps)


def finished_series(store: Store, metric: str | None = None) -> list[Series]:
    """Every finished series (of one metric), newest first."""
    rows = hs.series_list(store, metric)
    out = []
    for r in rows[rows["status"] == "done"].itertuples(index=False):
        s = load_series(store, r.series_id)
        if s is not None:
            out.append(s)
    return out
