"""The commands about people's labels: labels import|add|agreement|history, and calibrate (a gate for a judge)."""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from lib.cli.common import (
    EXIT_FINDING,
    EXIT_OK,
    OFFLINE,
    OPENAI,
    UsageError,
    _db_path,
    _fmt,
    _inbox_for,
    _print_json,
    _table,
    judge_for,
    open_for_reading,
)
from lib.core.metrics import METRIC_NAMES
from lib.core.prompts import BINDINGS, PROJECTED, placeholders
from lib.core.records import MAIN

if TYPE_CHECKING:
    from lib.diagnosis.agreement import Agreement, Estimate


def _est(e: Estimate) -> str:
    if not e.known:
        return "-"
    if math.isnan(e.low):
        return _fmt(e.value, ".2f")
    return f"{e.value:.2f} [{e.low:.2f}, {e.high:.2f}]"


def _bias(e: Estimate) -> str:
    if not e.known:
        return "-"
    return f"{e.value:+.2f} [{e.low:+.2f}, {e.high:+.2f}]" if not math.isnan(e.low) else f"{e.value:+.2f}"


def agreement_rows(found: list[Agreement]) -> list[list[str]]:
    return [[a.instrument, str(a.n_samples), str(a.n_runs), _est(a.accuracy), _est(a.kappa), _est(a.auc),
             _bias(a.bias), _est(a.mean_error)] for a in found]


def cmd_labels_import(args: argparse.Namespace) -> int:
    from lib.intake import inbox
    from lib.intake.labels import import_labels

    db = _db_path(args, must_exist=True)
    with inbox.open_drained(db, _inbox_for(db)) as store:
        stored = import_labels(store, Path(args.file), labeller=args.labeller)
        version = store.calibration_version(stored[0].suite)
    print(f"stored {len(stored)} labels from {Path(args.file).name} (seq {stored[0].seq}-{stored[-1].seq}); "
          f"calibration set of suite {stored[0].suite!r} is now v{version}")
    return EXIT_OK


def cmd_labels_add(args: argparse.Namespace) -> int:
    if (args.label is None) == (args.score is None):
        raise UsageError("labels add: give exactly one of --label yes|no and --score X")
    from lib.intake import inbox
    from lib.intake.labels import labels_from_rows

    row = {"sample_id": args.sample, "metric": args.metric, "item": args.item or "", "suite": args.suite,
           "label": args.label or "", "score": "" if args.score is None else args.score, "labeller": args.labeller,
           "run_id": args.run or "", "note": args.note or ""}
    db = _db_path(args, must_exist=True)
    with inbox.open_drained(db, _inbox_for(db)) as store:
        labels = labels_from_rows(store, [row], source="cli")
        seq = store.add_labels(labels)[0]
        superseded = store.label_history(args.suite, sample_id=args.sample)
        earlier = superseded[superseded["superseded_by"] == seq]
    tail = f"; it supersedes label {int(earlier['seq'].iloc[0])} by {args.labeller}" if len(earlier) else ""
    print(f"stored label {seq}: {args.sample} {args.metric}{f' item {args.item}' if args.item else ''} = "
          f"{labels[0].value:g} ({labels[0].kind}) by {args.labeller}{tail}")
    return EXIT_OK


def cmd_labels_agreement(args: argparse.Namespace) -> int:
    from lib.diagnosis.agreement import agreement_by_instrument

    db = _db_path(args, must_exist=True)
    metrics = [args.metric] if args.metric else list(METRIC_NAMES)
    out = []
    with open_for_reading(db) as store:   # while the dashboard holds the file: its snapshot, as `runs` reads
        version = store.calibration_version(args.suite)
        for metric in metrics:
            found = agreement_by_instrument(store, args.suite, metric)
            out.append((metric, found))
    if args.json:
        _print_json({"suite": args.suite, "version": version,
                     "agreement": [dataclasses.asdict(a) for _, found in out for a in found]})
        return EXIT_OK
    print(f"agreement with people's labels: suite {args.suite!r}, calibration set v{version}")
    for metric, found in out:
        if not found:
            continue
        print(f"\n{metric}")
        print(_table(["instrument", "samples", "runs", "accuracy", "kappa", "AUC", "bias (judge - people)",
                      "mean error"], agreement_rows(found)))
    if not any(found for _, found in out):
        print("no labelled samples with judgings (label some: python -m lib labels import FILE)")
    return EXIT_OK


def cmd_labels_history(args: argparse.Namespace) -> int:
    import pandas as pd

    db = _db_path(args, must_exist=True)
    with open_for_reading(db) as store:
        history = store.label_history(args.suite, sample_id=args.sample)
    rows = [[str(r.seq), r.sample_id, r.metric, "" if pd.isna(r.item) else str(int(r.item)), f"{r.value:g}",
             r.labeller, str(r.labelled_at), r.source,
             "" if pd.isna(r.superseded_by) else f"by {int(r.superseded_by)}"]
            for r in history.itertuples(index=False)]
    print(_table(["seq", "sample", "metric", "item", "value", "labeller", "when", "source", "superseded"], rows))
    return EXIT_OK


def _template(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--template: cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    placeholders(text, source=f"--template {path}")   # field names only, named by its file before any judging
    return text


def cmd_calibrate(args: argparse.Namespace) -> int:
    from lib.diagnosis.agreement import (
        Contender,
        calibrate,
        calibration_samples,
        current_contender,
        current_instrument,
    )
    from lib.intake import inbox

    db = _db_path(args, must_exist=True)
    template = _template(args.template)   # a template that is not field names only is refused before anything
    with inbox.open_drained(db, _inbox_for(db)) as store:
        version = store.calibration_version(args.suite)
        samples, _ = calibration_samples(store, args.suite, args.metric, version)
        recorded = current_instrument(store, args.metric, args.suite).judge_model   # past another tool's runs
        kind = OFFLINE if str(recorded).startswith("offline-") else OPENAI
        current_judge, _, _ = judge_for(kind, recorded)
        current = current_contender(store, args.metric, current_judge, args.suite)
        judge, model, _ = judge_for(args.judge, args.model)
        candidate = Contender(judge, model, template or current.template,
                              args.binding or (PROJECTED if args.template else current.binding))
        paid = [c.model for c in (current, candidate) if not str(c.model).startswith("offline-")]
        if paid and not args.yes:
            raise UsageError(f"calibrate asks {len(samples)} judgings of each of {', '.join(dict.fromkeys(paid))} "
                             "(replies already in the call cache are not paid for again): add --yes")
        result = calibrate(store, args.metric, candidate, current, suite=args.suite, margin=args.margin)
    if args.json:
        c = result.comparison
        _print_json({"sentence": result.sentence, "worse": result.worse, "version": result.version,
                     "samples": result.n_samples, "left_out": result.n_left_out,
                     "difference": dataclasses.asdict(c.difference), "current": dataclasses.asdict(c.current),
                     "candidate": dataclasses.asdict(c.candidate), "margin": c.margin})
    else:
        print(result.sentence)
    return EXIT_FINDING if result.worse else EXIT_OK


def add_parser(sub: argparse._SubParsersAction, db_arg: Callable, effect: Callable) -> None:
    """The labels and calibrate commands (lib.cli.parser calls this)."""
    p = sub.add_parser("labels", help="people's labels of samples: import, add, agreement per instrument, history")
    inner = p.add_subparsers(dest="labels_command", metavar="ACTION")
    inner.required = True

    q = inner.add_parser("import", help="store a CSV/JSONL file of labels (checked whole: nothing stored on error)")
    db_arg(q)
    q.add_argument("file", help="columns: sample_id (or question + ground_truth), metric, item, label or score, "
                                "labeller, labelled_at, suite, run_id, note")
    q.add_argument("--labeller", metavar="NAME", help="who labelled, for rows without a labeller column")
    q.set_defaults(func=cmd_labels_import, command="labels import")

    q = inner.add_parser("add", help="store one label (a newer label by the same person supersedes, visibly)")
    db_arg(q)
    q.add_argument("--sample", required=True, metavar="ID")
    q.add_argument("--metric", required=True, choices=METRIC_NAMES, metavar="M")
    q.add_argument("--item", type=int, metavar="K", help="1-based claim, passage or statement (default: the sample)")
    q.add_argument("--label", metavar="yes|no", help="a binary label (yes/no, true/false, or the verdict words)")
    q.add_argument("--score", type=float, metavar="X", help="a score label in [0, 1]")
    q.add_argument("--labeller", required=True, metavar="NAME")
    q.add_argument("--suite", default=MAIN, metavar="S")
    q.add_argument("--run", metavar="RUN", help="the run whose copy of the sample you labelled (default: latest)")
    q.add_argument("--note", metavar="TEXT")
    q.set_defaults(func=cmd_labels_add, command="labels add")

    q = inner.add_parser("agreement", help="each instrument's agreement with the labels, with 95%% intervals")
    db_arg(q)
    q.add_argument("--metric", choices=METRIC_NAMES, metavar="M", help="one metric (default: all labelled)")
    q.add_argument("--suite", default=MAIN, metavar="S")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_labels_agreement, command="labels agreement")

    q = inner.add_parser("history", help="every label ever stored, with what superseded it")
    db_arg(q)
    q.add_argument("--suite", default=MAIN, metavar="S")
    q.add_argument("--sample", metavar="ID")
    q.set_defaults(func=cmd_labels_history, command="labels history")

    p = sub.add_parser("calibrate", help="judge the calibration set with a candidate judge, paired against the "
                                         "current one; exit 1 when it agrees with people worse beyond --margin")
    db_arg(p)
    p.add_argument("--judge", choices=(OFFLINE, OPENAI), default=OFFLINE,
                   help="offline (default) or a model on an OpenAI-compatible server (OPENAI_BASE_URL)")
    p.add_argument("--model", metavar="NAME", help="the candidate model (default: offline-lexical-v2, or "
                                                   "EVALDRIFT_JUDGE_MODEL with --judge openai)")
    p.add_argument("--template", metavar="FILE", help="the candidate's template (default: the current one)")
    p.add_argument("--binding", choices=BINDINGS, help="the candidate's binding (default: the current one; "
                                                       "projected with --template)")
    p.add_argument("--metric", default="faithfulness", choices=METRIC_NAMES, metavar="M",
                   help="the metric (default faithfulness)")
    p.add_argument("--suite", default=MAIN, metavar="S")
    p.add_argument("--margin", type=effect, default=0.02, metavar="X",
                   help="how much lower the candidate's agreement may be before it fails (default 0.02)")
    p.add_argument("--yes", action="store_true", help="make a model judge's calls without asking")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_calibrate)
