"""Score your own samples with evaldrift's harness and record them as a run.

Two faces of one job:

- `evaluate_run(run_id, samples, judge, ...)`: samples in, a `RunRecord` out,
  nothing written. A nightly job calls it, then `lib.intake.inbox.record(db, run)`
  (the database, or the inbox when the dashboard holds it).
- `score_file(db, path, run_id=..., judge=...)`: what `python -m lib score`
  does: validate the file whole (nothing is judged when a row is bad), score it,
  record it (or hand it over through the inbox).

New runs use the projected binding: each metric's judge sees only the fields
the wiring table lets it receive, so our own scoring cannot leak. The replay
binding (a template rendered against the whole sample) binds only the metrics
given a template explicitly, to record a run as another harness wired it; the
others keep the projected default, so one changed template is one metric's
new instrument.

Resuming: a model judge's valid replies go to a call cache kept beside the
database (`.<db name>.score-cache.duckdb`); scoring the same file again, after
a kill or a crash, asks the judge only what it has not answered yet. The
database itself is opened only to record the finished run, so a long scoring
never keeps the dashboard out.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd

from lib.core.errors import InputError, JudgeError, StoreBusyError
from lib.core.metrics import METRIC_NAMES, get_metric
from lib.core.prompts import BINDINGS, DEFAULT_TEMPLATES, PROJECTED, REPLAY, fields_read
from lib.core.records import MAIN, MetricRecord, RunRecord
from lib.core.results import SampleResult
from lib.core.samples import FIELDS, EvalSample
from lib.intake.inbox import Handover
from lib.judging.base import CallCache, ChoosesJsonMode, Judge, MemoryCache, ReportsOutputMode, judge_stop
from lib.judging.breaker import Breaker, GuardedJudge, Limits
from lib.judging.harness import Instrument, score_samples
from lib.store import Store
from lib.store.lake import is_lake

SCORER = "evaldrift"   # what runs scored by our harness record as their scoring library
Progress = Callable[[int, int], None]


def output_mode(judge: Judge) -> str | None:
    """How the judge asked for its JSON verdicts, as the judge reports it (None: not a model judge, or no call
    was made: every reply came from the cache)."""
    if isinstance(judge, ReportsOutputMode):
        return str(judge.output_mode) if judge.output_mode else None
    if isinstance(judge, ChoosesJsonMode):
        return "json_object" if judge.json_mode else "text"
    return None


def check_templates(metrics: Sequence[str], templates: Mapping[str, str], binding: str,
                    fields: Sequence[str] = FIELDS) -> dict[str, str]:
    """The template each metric is scored with, checked before any judge call.

    Raises:
        InputError: an unknown metric or binding, replay with no template given, or a template that reads a
            field the metric's projected view lacks (projected) or the file does
            not have (replay, for a metric given its own template).
    """
    if binding not in BINDINGS:
        raise InputError(f"unknown binding {binding!r}; use {' or '.join(BINDINGS)}", field="binding")
    for name in templates:
        if name not in METRIC_NAMES:
            raise InputError(f"template for unknown metric {name!r}; known: {', '.join(METRIC_NAMES)}",
                             field="templates")
    if binding == REPLAY and metrics and not any(m in templates for m in metrics):
        # replay binds the metrics given a template of their own: with none, it would bind nothing in silence
        m = metrics[0]
        raise InputError(f"the replay binding renders a metric's own template against the whole sample: give "
                         f"one explicitly (--template {m}=FILE)", field="binding")
    chosen: dict[str, str] = {}
    bound = metric_bindings(metrics, templates, binding)
    for m in metrics:
        get_metric(m)
        template = templates.get(m, DEFAULT_TEMPLATES[m])
        read = fields_read(template, m)
        allowed = get_metric(m).receives if bound[m] == PROJECTED else frozenset(fields)
        extra = sorted(read - allowed, key=FIELDS.index)
        if extra:
            why = (f"{m} does not receive it (projected binding)" if bound[m] == PROJECTED
                   else "the file does not have it")
            raise InputError(f"{m}'s template reads {extra[0]}, but {why}", field="templates")
        chosen[m] = template
    return chosen


def metric_bindings(metrics: Sequence[str], templates: Mapping[str, str], binding: str) -> dict[str, str]:
    """Each metric's binding: REPLAY binds the metrics given a template of their own; the others keep our
    projected default, so one metric's changed template is one metric's new instrument (one marker on Trends),
    not five. PROJECTED binds every metric."""
    return {m: REPLAY if binding == REPLAY and m in templates else PROJECTED for m in metrics}


def evaluate_run(run_id: str, samples: Sequence[EvalSample], judge: Judge, *, started_at: datetime | None = None,
                 pipeline: Mapping[str, object] | None = None, metrics: Sequence[str] | None = None,
                 templates: Mapping[str, str] | None = None, binding: str = PROJECTED, seed: int = 0,
                 cache: CallCache | None = None, progress: Progress | None = None,
                 fields: Sequence[str] = FIELDS, label: str = "", limits: Limits | None = None) -> RunRecord:
    """Score samples with our harness into a RunRecord (nothing is written).

    Args:
        run_id: the run's id (recording it again replaces it).
        samples: the eval samples (fields the source lacked as "" or no passages).
        judge: a lib.judging Judge (`lib.judging.build.settings_judge(lib.core.settings.load())`).
        started_at: when the run started (default: now).
        pipeline: the pipeline config to record beside the scores.
        metrics: which metrics (default: all five).
        templates: per-metric templates (default: lib.core.prompts.DEFAULT_TEMPLATES).
        binding: PROJECTED (default) or REPLAY: the metrics given a template in `templates` are rendered
            against the whole sample, the others keep the projected default (metric_bindings).
        seed: the judge seed.
        cache: a call cache (a Store, or MemoryCache); a model judge's valid
            replies are kept there and not asked for again.
        progress: called with (samples done, total) across all metrics.
        fields: the fields the samples' source had (recorded with the run).
        label: a short label shown on the pages.
        limits: the circuit breaker's (lib.judging.breaker; default: EVALDRIFT_BREAKER_FAILURES and the
            failed share, no deadline).

    Returns:
        The run, each metric with judge model, prompt hash, binding, the judge's
        output mode and the scoring library ("evaldrift").

    Raises:
        InputError: see `check_templates`.
        JudgeError: the judge kept failing and the breaker stopped the scoring (the sentence says why);
            its valid replies are in `cache`, so scoring again resumes.
    """
    chosen = check_templates(list(metrics or METRIC_NAMES), dict(templates or {}), binding, fields)
    bound = metric_bindings(list(chosen), dict(templates or {}), binding)
    total = len(chosen) * len(samples)
    done = 0

    def tick(_: SampleResult) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    if limits is None:
        from lib.core import settings

        limits = dataclasses.replace(Limits.from_settings(settings.load()), deadline=None)
    breaker = Breaker(limits, lambda: total, on_trip=judge_stop(judge))
    guarded = GuardedJudge(judge, breaker)
    records = []
    for m, template in chosen.items():
        results = score_samples(samples, Instrument(m, template, bound[m]), guarded, seed=seed,
                                cache=cache, progress=tick)
        if breaker.reason:
            raise JudgeError(f"scoring {breaker.reason}; nothing was recorded (the judge's answers so far are "
                             "kept in the call cache: score again to resume)")
        prints = Counter(r.fingerprint for r in results if r.fingerprint)
        served = Counter(r.served_model for r in results if r.served_model)
        records.append(MetricRecord(m, results, judge.model, template, bound[m],
                                    fingerprint=prints.most_common(1)[0][0] if prints else None,
                                    scorer=SCORER, output_mode=output_mode(judge),
                                    served_model=served.most_common(1)[0][0] if served else None))
    # The mode is the endpoint's, detected on the first call: a metric answered wholly from the cache of an
    # earlier attempt (a resumed run) carries the mode the run's calls used.
    mode = output_mode(judge)
    records = [dataclasses.replace(r, output_mode=r.output_mode or mode) for r in records]
    return RunRecord(run_id, started_at or datetime.now().replace(microsecond=0), dict(pipeline or {}),
                     {MAIN: list(samples)}, records, label=label, fields=tuple(fields))


@dataclass(frozen=True)
class Scored:
    """What `score_file` did: the run, where it went, and the judge calls it took."""

    run: RunRecord
    handover: Handover
    calls: int
    cached: int


def cache_path(db: str | Path) -> Path:
    """The call cache `score_file` keeps beside a database (what makes a re-run resume)."""
    db = Path(db)
    return db.parent / f".{db.name}.score-cache.duckdb"


@contextlib.contextmanager
def _call_cache(db: Path | str, judge: Judge) -> Iterator[CallCache]:
    if not judge.cacheable:
        yield MemoryCache()
        return
    from lib.store import Store

    if is_lake(db):   # a team store keeps the calls itself: a re-run resumes from any machine
        with Store(db) as lake_cache:
            yield lake_cache
        return
    try:
        cache = Store(cache_path(db))
    except StoreBusyError:  # another scoring holds it: score without resuming
        yield MemoryCache()
        return
    with cache:
        yield cache


def score_file(db: str | Path, path: str | Path, *, run_id: str, judge: Judge,
               metrics: Sequence[str] | None = None, templates: Mapping[str, str] | None = None,
               binding: str = PROJECTED, started_at: datetime | None = None,
               pipeline: Mapping[str, object] | None = None, inbox: str | Path | None = None,
               progress: Progress | None = None) -> Scored:
    """Validate a JSONL/CSV/Parquet file of samples, score it, and record it as one run.

    The file's own score columns, if any, are validated and then ignored: this
    records evaldrift's scores. Arguments are as in `evaluate_run`; `inbox` is
    where the run goes when another process holds the database (default:
    `<db folder>/inbox`).

    Raises:
        InputError: a bad file (row and field named) or argument; nothing is
            judged or written.
    """
    from lib.intake import inbox as inbox_mod
    from lib.intake.ingest import present_fields, records_from_frame
    from lib.intake.reading import read_table

    chosen = list(metrics or METRIC_NAMES)
    frame = read_table(path)
    samples, _ = records_from_frame(frame, source=str(path), metrics=chosen)
    fields = present_fields(frame)
    check_templates(chosen, dict(templates or {}), binding, fields)
    db = db if is_lake(db) else Path(db)   # a team store's URL stays text (a Path is a file)
    with _call_cache(db, judge) as cache:
        run = evaluate_run(run_id, samples, judge, started_at=started_at, pipeline=pipeline, metrics=chosen,
                           templates=templates, binding=binding, cache=cache, progress=progress, fields=fields)
    handover = inbox_mod.record(db, run, inbox=inbox)
    results = [r for m in run.metrics for r in m.results]
    return Scored(run, handover, calls=sum(r.calls for r in results), cached=sum(r.cached for r in results))


def record_frame(store: Store, frame: pd.DataFrame, *, source: str, run_id: str, metrics: Sequence[str] = (),
                 judge: Judge | None = None, progress: Callable[[int, int], None] | None = None,
                 started_at: datetime | None = None, pipeline: Mapping[str, object] | None = None) -> RunRecord:
    """Record an uploaded table as one run: with its own scores, or, given a judge, scored here for `metrics`.

    Scoring goes through the harness with the projected templates, and every
    reply is kept in the store's call cache. The run is validated whole before
    anything is written (InputError names the row and field). `started_at`
    (default: now) and `pipeline` (default: none recorded) are the run's.
    """
    from lib.core.validate import check_run
    from lib.intake.ingest import present_fields, records_from_frame, run_from_frame

    if judge is None:
        run = run_from_frame(frame, source=source, run_id=run_id, started_at=started_at, pipeline=pipeline)
    else:
        samples, _ = records_from_frame(frame, source=source, metrics=metrics)
        run = evaluate_run(run_id, samples, judge, metrics=list(metrics), cache=store, fields=present_fields(frame),
                           progress=progress)
        run = dataclasses.replace(run, started_at=started_at or run.started_at, pipeline=pipeline or run.pipeline)
        check_run(run, source=source)
    store.record_run(run)
    return run


__all__ = ["SCORER", "Scored", "cache_path", "check_templates", "evaluate_run", "output_mode", "record_frame",
           "score_file"]
