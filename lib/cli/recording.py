"""The commands that put runs into the store: demo, ingest, record, score, import, templates."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from lib.cli.archiving import say_replaced
from lib.cli.common import EXIT_OK, UsageError, _db_path, _fmt, _inbox_for, _progress, judge_for
from lib.core.metrics import METRIC_NAMES
from lib.core.prompts import placeholders
from lib.core.records import RunRecord

if TYPE_CHECKING:
    import pandas as pd

    from lib.intake import inbox


def cmd_demo(args: argparse.Namespace) -> int:
    from lib.jobs import build_demo

    path = _db_path(args, must_exist=False)
    timings = build_demo(path, progress=_progress("building demo runs"))
    print(f"built the demo database at {path}: {timings['runs']:.0f} runs, {timings['judged']:.0f} judged samples "
          f"in {timings['seconds']:.1f} s ({timings['per_second']:.0f} samples/s)")
    return EXIT_OK


def _templates(pairs: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        metric, sep, file = pair.partition("=")
        if not sep or not metric or not file:
            raise UsageError(f"--template wants METRIC=FILE, got {pair!r}")
        try:
            out[metric] = Path(file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--template {metric}: cannot read {file}: {getattr(exc, 'strerror', None) or exc}"
                             ) from None
        if metric in METRIC_NAMES:   # an unknown name is refused as such further on (by score, ingest)
            placeholders(out[metric], source=f"--template {metric}={file}")   # field names only, before any call
    return out


def _started_at(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--started-at wants an ISO date-time such as 2026-10-03T02:00, got {text!r}") from None
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value  # stored naive, in UTC


def _pipeline(text: str | None) -> dict | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--pipeline is not JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(value, dict):
        raise UsageError("--pipeline must be a JSON object, e.g. '{\"retriever\": {\"top_k\": 3}}'")
    return value


def _describe_run(run: RunRecord) -> str:
    return f"run {run.run_id}: {_run_details(run)}"


def _run_details(run: RunRecord) -> str:
    """'40 samples; faithfulness 0.812 (n=40)'."""
    from lib.core.results import aggregate

    n = sum(len(ss) for ss in run.samples.values())
    parts = []
    for m in run.metrics:
        agg = aggregate(m.results)
        failed = f", {agg.n_failed} failed" if agg.n_failed else ""
        parts.append(f"{m.metric} {_fmt(agg.score)} (n={agg.n}{failed})")
    return f"{n} samples; " + ("; ".join(parts) if parts else "no metric columns")


def _say_recorded(db: Path | str, run: RunRecord, where: inbox.Handover, since: datetime) -> None:
    from lib.intake import inbox

    if where.where == "database":
        print(f"recorded {_describe_run(run)} in {db}")
        say_replaced(db, run.run_id, since)
    else:
        folder = where.path.parent
        owner = ("The owner records it on its next page load, or the next command that opens the database"
                 if folder == inbox.beside(db) else
                 f"The owner records it only if it drains EVALDRIFT_INBOX's folder, that is if its own "
                 f"EVALDRIFT_INBOX names {folder} too: this recorder cannot know the owner's settings (every owner "
                 f"drains {inbox.beside(db)})")
        print(f"{db} is held by another process, so run {run.run_id} was handed over through the inbox "
              f"({_run_details(run)}): {where.path}. {owner}; an earlier copy of run {run.run_id}, if any, is kept "
              "(`python -m lib archive list`).")


def cmd_ingest(args: argparse.Namespace) -> int:
    from lib.intake import inbox
    from lib.intake.chunked import FileRun

    db = _db_path(args, must_exist=False)
    run = FileRun(args.run_id, _started_at(args.started_at), _pipeline(args.pipeline), args.judge_model,
                  _templates(args.template) or None, args.binding)
    since = datetime.now()
    went = inbox.record_file_at(db, args.file, run, inbox=_inbox_for(db))
    if went.run is not None:
        _say_recorded(db, went.run, went.handover, since)
    else:
        print(f"recorded {_describe_stored(went.metrics, args.run_id, went.recorded.n_samples)} in {db}")
        say_replaced(db, args.run_id, since)
    return EXIT_OK


def _describe_stored(run_metrics: pd.DataFrame, run_id: str, n: int) -> str:
    """As _describe_run, from the stored run's metric rows (a chunked run is never whole in memory)."""
    metrics = run_metrics.set_index("metric")
    parts = [f"{m} {_fmt(r.score)} (n={r.n}" + (f", {r.n_failed} failed" if r.n_failed else "") + ")"
             for m in METRIC_NAMES if m in metrics.index for r in [metrics.loc[m]]]
    return f"run {run_id}: {n} samples; " + ("; ".join(parts) if parts else "no metric columns")


def cmd_record(args: argparse.Namespace) -> int:
    from lib.intake import inbox
    from lib.intake.importers.shapes import read_bytes
    from lib.intake.runjson import run_from_json

    db = _db_path(args, must_exist=False)
    data = read_bytes(args.file)   # a regular file within EVALDRIFT_MAX_INPUT_BYTES, as the inbox reads one
    run = run_from_json(data, source=args.file)
    since = datetime.now()
    _say_recorded(db, run, inbox.record(db, run, inbox=_inbox_for(db)), since)
    return EXIT_OK


def cmd_score(args: argparse.Namespace) -> int:
    from lib.jobs import job_log
    from lib.judging.scoring import score_file

    db = _db_path(args, must_exist=False)
    judge, _, _ = judge_for(args.judge, args.model)
    metrics = list(dict.fromkeys(m for part in args.metrics for m in part.split(",") if m)) or None
    since = datetime.now()
    done = score_file(db, args.file, run_id=args.run_id, judge=judge, metrics=metrics,
                      templates=_templates(args.template), binding=args.binding,
                      started_at=_started_at(args.started_at), pipeline=_pipeline(args.pipeline),
                      inbox=_inbox_for(db), progress=_progress(f"scoring {args.run_id}"))
    _say_recorded(db, done.run, done.handover, since)
    print(f"judge {judge.model}: {done.calls} calls, {done.cached} answers from the cache of earlier attempts")
    judged = job_log.judge_info(judge).sentence
    if judged:
        print(f"judge: {judged}")
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from lib.intake import inbox
    from lib.intake.importers import prepare_import

    db = _db_path(args, must_exist=False)
    mapping = {}
    for pair in args.metric_map:
        name, sep, metric = pair.partition("=")
        if not sep or not name or metric not in METRIC_NAMES:
            raise UsageError(f"--metric-map wants SCORER=METRIC with METRIC one of {', '.join(METRIC_NAMES)}, "
                             f"got {pair!r}")
        mapping[name] = metric
    plan = prepare_import(args.file, run_id=args.run_id, fmt=args.format, started_at=_started_at(args.started_at),
                          pipeline=_pipeline(args.pipeline), version=args.tool_version, metric_map=mapping or None,
                          grader=args.grader, provider=args.provider)
    for warning in plan.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    run = plan.run
    since = datetime.now()
    _say_recorded(db, run, inbox.record(db, run, inbox=_inbox_for(db)), since)
    scorers = sorted({m.scorer for m in run.metrics if m.scorer})
    if len({g for g in plan.graders.values() if g}) > 1:   # each metric's own grader
        said = "; ".join(f"{m} by {g} (from {plan.grader_sources.get(m)})" for m, g in plan.graders.items() if g)
        print(f"scored by {', '.join(scorers) or 'an unnamed tool'}; graders: {said}")
        return EXIT_OK
    where = f" (from {plan.grader_source})" if plan.grader and plan.grader_source else ""
    print(f"scored by {', '.join(scorers) or 'an unnamed tool'}; grader {plan.grader or 'not recorded'}{where}")
    return EXIT_OK


def cmd_templates(args: argparse.Namespace) -> int:
    from lib.core.template_files import default_templates, write_templates

    infos = default_templates(args.metric)
    if getattr(args, "tool", None):
        from lib.core.profiles import profile_lines

        for line in profile_lines(args.tool):
            print(f"# wiring profile: {line}")
    if args.out:
        for info, path in zip(infos, write_templates(args.out, args.metric), strict=True):
            print(f"wrote {path}: {info.header}")
        return EXIT_OK
    for info in infos:
        print(f"# {info.header}\n{info.text}\n")
    return EXIT_OK
