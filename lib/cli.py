"""The command line: `python -m lib <command> ...`.

The CLI opens the database, calls the library, formats what it returns, and
turns the library's errors into one line on stderr. Exit codes:

| code | meaning |
|---|---|
| 0 | done; for `ablate`, every verdict is what the wiring table expects; for `lint`, no finding |
| 1 | `ablate`: a LEAK or an INSENSITIVE metric; `lint`: a template reads a field its metric must never receive |
| 2 | bad usage or input: unknown command, run, metric or field, a bad file, the database held by another process |
| 3 | `ablate`: nothing decided: INCONCLUSIVE, or REPLAY MISMATCH (the run's score was not reproduced) |

Commands that only read (`ablate`, `lint`, `runs`, `report`) refuse a
database path that does not exist instead of creating an empty database.
`--db` defaults to EVALDRIFT_DB.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn, TextIO

from lib import inbox, job_log, settings
from lib.ablation import AblationResult, AblationSpec, load_scorer, recorded_judge
from lib.breaker import Limits
from lib.endpoints import normalise, redact
from lib.errors import EvaldriftError, InputError, StoreBusyError
from lib.jobs import run_guarded
from lib.judges.base import Judge
from lib.judges.offline import DEFAULT_MODEL as OFFLINE_MODEL
from lib.judges.offline import VARIANTS
from lib.metrics import METRIC_NAMES
from lib.prompts import BINDINGS
from lib.records import CANARY, MAIN, RunRecord
from lib.samples import BLANKABLE, FIELDS
from lib.store import Store
from lib.verdicts import MIN_EFFECT

PROG = "python -m lib"
OFFLINE = "offline"
OPENAI = "openai"
ABLATION_NOISE = 0.03   # the offline judge's stand-in for a model's run-to-run variation (as the dashboard uses)
DEFAULT_OPENAI_URL = "https://api.openai.com/v1"

EXIT_OK, EXIT_FINDING, EXIT_USAGE, EXIT_INCONCLUSIVE = 0, 1, 2, 3


class UsageError(Exception):
    """Bad command-line usage (argparse's complaints, and our own checks of arguments)."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are exceptions, so main() prints them as one line."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see --help)")


# -- helpers ------------------------------------------------------------------------
def _settings() -> settings.Settings:
    return settings.load()


def _db_path(args: argparse.Namespace, *, must_exist: bool) -> Path:
    """--db, else EVALDRIFT_DB; a reading command refuses a path with no database."""
    raw = args.db or os.environ.get("EVALDRIFT_DB") or None
    if raw is None:
        raise UsageError(f"{PROG} {args.command}: no database: give --db PATH or set EVALDRIFT_DB")
    path = Path(raw)
    if must_exist and not path.is_file():
        raise UsageError(f"no database at {path} (build one with `{PROG} demo --db {path}` or "
                         f"`{PROG} ingest --db {path} FILE --run-id ID`)")
    return path


def _inbox_for(db: Path) -> Path:
    """The inbox the dashboard owning `db` drains (as lib.ui does)."""
    return inbox.folder_for(db)


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _progress(label: str) -> Callable[[int, int], None] | None:
    """A one-line progress display on stderr, only when stderr is a terminal."""
    if not _is_tty(sys.stderr):
        return None

    last: list[tuple[int, int]] = []

    def show(done: int, total: int) -> None:
        if last and last[-1] == (done, total):  # the final flush reports 100% twice
            return
        last[:] = [(done, total)]
        share = done / total if total else 1.0
        sys.stderr.write(f"\r{label}: {done}/{total} ({share:.0%})" + ("\n" if done >= total else ""))
        sys.stderr.flush()

    return show


def _finite(value: object) -> object:
    """JSON-safe: NaN and infinities become null (they are not JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _print_json(value: object) -> None:
    print(json.dumps(_finite(value), indent=2, ensure_ascii=False, allow_nan=False, default=str))


def _fmt(x: object, spec: str = ".3f") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return format(float(x), spec)  # type: ignore[arg-type]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows]]
    return "\n".join(lines)


# -- judges -------------------------------------------------------------------------
def judge_for(kind: str, model: str | None) -> tuple[Judge, str, str]:
    """The judge an ablation asks for: (judge, model name, endpoint).

    offline: the embedded judge (default offline-lexical-v2) with its stand-in
    noise. openai: the model from --model or EVALDRIFT_JUDGE_MODEL on the
    OpenAI-compatible server at OPENAI_BASE_URL (the SDK default otherwise).
    """
    s = _settings()
    if kind == OFFLINE:
        name = model or OFFLINE_MODEL
        if name not in VARIANTS:
            raise UsageError(f"unknown offline judge {name!r}; known: {', '.join(VARIANTS)} "
                             f"(use --judge openai for a model on a server)")
        return settings.make_judge(s, model=name, noise=ABLATION_NOISE), name, OFFLINE
    name = model or s.judge_model
    if name in VARIANTS:
        raise UsageError("--judge openai needs a model: give --model NAME or set EVALDRIFT_JUDGE_MODEL")
    return settings.make_judge(s, model=name), name, s.endpoint   # the endpoint as identity: no credentials


def run_judge_for(store: Store, run_id: str, metrics: Sequence[str], kind: str | None,
                  model: str | None) -> tuple[Judge, str, str]:
    """The judge for an ablation: the one that recorded the run, unless --judge/--model name another.

    A run recorded by a model is replayed with that model on OPENAI_BASE_URL;
    with no server configured that is an error naming the way out, never a
    silent switch to the offline judge.
    """
    if kind is None and model is None:
        model = recorded_judge(store, run_id, metrics)
        if model not in VARIANTS and not (_settings().base_url or _settings().api_key):
            raise UsageError(f"run {run_id!r} was judged by {model!r}: set OPENAI_BASE_URL (and OPENAI_API_KEY) to "
                             f"replay it, or name another judge with --judge offline (the headline will say so)")
    if kind is None:  # --model alone: an offline-* name is the offline judge (an unknown one is an error)
        kind = OFFLINE if str(model).startswith("offline-") else OPENAI
    return judge_for(kind, model)


def cmd_demo(args: argparse.Namespace) -> int:
    from lib.demo import build_demo

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
    from lib.harness import aggregate

    n = sum(len(ss) for ss in run.samples.values())
    parts = []
    for m in run.metrics:
        agg = aggregate(m.results)
        failed = f", {agg.n_failed} failed" if agg.n_failed else ""
        parts.append(f"{m.metric} {_fmt(agg.score)} (n={agg.n}{failed})")
    return f"run {run.run_id}: {n} samples; " + ("; ".join(parts) if parts else "no metric columns")


def _say_recorded(db: Path, run: RunRecord, where: inbox.Handover) -> None:
    if where.where == "database":
        print(f"recorded {_describe_run(run)} in {db}")
    else:
        print(f"{db} is held by another process; handed {_describe_run(run)} over through the inbox: "
              f"{where.path} (the owner records it on its next page load)")


def cmd_ingest(args: argparse.Namespace) -> int:
    from lib.chunked import FileRun, check_file, record_file

    db = _db_path(args, must_exist=False)
    run = FileRun(args.run_id, _started_at(args.started_at), _pipeline(args.pipeline), args.judge_model,
                  _templates(args.template) or None, args.binding)
    if not db.exists():
        check_file(args.file, run)  # a bad file leaves no new database behind
    # A chunk at a time, in one transaction (memory bounded by the chunk); the inbox
    # hand-over when another process holds the database takes the whole run.
    try:
        with inbox.open_drained(db, _inbox_for(db)) as store:
            done = record_file(store, args.file, run)
            print(f"recorded {_describe_stored(store, args.run_id, done.n_samples)} in {db}")
    except StoreBusyError:
        from lib.ingest import read_table, run_from_frame

        whole = run_from_frame(read_table(args.file), source=str(args.file), run_id=run.run_id,
                               started_at=run.started_at, pipeline=run.pipeline, judge_model=run.judge_model,
                               templates=run.templates, binding=run.binding)
        _say_recorded(db, whole, inbox.Handover("inbox", inbox.drop(_inbox_for(db), whole)))
    return EXIT_OK


def _describe_stored(store: Store, run_id: str, n: int) -> str:
    """As _describe_run, read back from the store (a chunked run is never whole in memory)."""
    metrics = store.run_metrics(run_id).set_index("metric")
    parts = [f"{m} {_fmt(r.score)} (n={r.n}" + (f", {r.n_failed} failed" if r.n_failed else "") + ")"
             for m in METRIC_NAMES if m in metrics.index for r in [metrics.loc[m]]]
    return f"run {run_id}: {n} samples; " + ("; ".join(parts) if parts else "no metric columns")


def cmd_record(args: argparse.Namespace) -> int:
    from lib.records import run_from_json

    db = _db_path(args, must_exist=False)
    try:
        data = Path(args.file).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", source=args.file) from None
    run = run_from_json(data, source=args.file)
    _say_recorded(db, run, inbox.record(db, run, inbox=_inbox_for(db)))
    return EXIT_OK


def cmd_score(args: argparse.Namespace) -> int:
    from lib.scoring import score_file

    db = _db_path(args, must_exist=False)
    judge, _, _ = judge_for(args.judge, args.model)
    metrics = list(dict.fromkeys(m for part in args.metrics for m in part.split(",") if m)) or None
    done = score_file(db, args.file, run_id=args.run_id, judge=judge, metrics=metrics,
                      templates=_templates(args.template), binding=args.binding,
                      started_at=_started_at(args.started_at), pipeline=_pipeline(args.pipeline),
                      inbox=_inbox_for(db), progress=_progress(f"scoring {args.run_id}"))
    _say_recorded(db, done.run, done.handover)
    print(f"judge {judge.model}: {done.calls} calls, {done.cached} answers from the cache of earlier attempts")
    judged = job_log.judge_info(judge).sentence
    if judged:
        print(f"judge: {judged}")
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from lib.importers import import_run

    db = _db_path(args, must_exist=False)
    mapping = {}
    for pair in args.metric_map:
        name, sep, metric = pair.partition("=")
        if not sep or not name or metric not in METRIC_NAMES:
            raise UsageError(f"--metric-map wants SCORER=METRIC with METRIC one of {', '.join(METRIC_NAMES)}, "
                             f"got {pair!r}")
        mapping[name] = metric
    run = import_run(args.file, run_id=args.run_id, fmt=args.format, started_at=_started_at(args.started_at),
                     pipeline=_pipeline(args.pipeline), version=args.tool_version, metric_map=mapping or None)
    _say_recorded(db, run, inbox.record(db, run, inbox=_inbox_for(db)))
    scorers = sorted({m.scorer for m in run.metrics if m.scorer})
    judges = sorted({m.judge_model for m in run.metrics if m.judge_model})
    print(f"scored by {', '.join(scorers) or 'an unnamed tool'}; grader {', '.join(judges) or 'not recorded'}")
    return EXIT_OK


def cmd_templates(args: argparse.Namespace) -> int:
    from lib.template_files import default_templates, write_templates

    infos = default_templates(args.metric)
    if args.out:
        for info, path in zip(infos, write_templates(args.out, args.metric), strict=True):
            print(f"wrote {path}: {info.header}")
        return EXIT_OK
    for info in infos:
        print(f"# {info.header}\n{info.text}\n")
    return EXIT_OK


def _ablation_spec(args: argparse.Namespace, store: Store, run_id: str) -> tuple[AblationSpec, Judge | None]:
    if args.scorer:
        spec = AblationSpec(run_id, tuple(args.metric), tuple(args.blank), repeats=args.repeats, limit=args.limit,
                            scorer=args.scorer, min_effect=args.min_effect)
        return spec, None
    judge, model, endpoint = run_judge_for(store, run_id, args.metric, args.judge, args.model)
    spec = AblationSpec(run_id, tuple(args.metric), tuple(args.blank), repeats=args.repeats, judge=model,
                        endpoint=endpoint, limit=args.limit, min_effect=args.min_effect)
    return spec, judge


def format_ablation(result: AblationResult) -> str:
    """The plain-text rendering of an ablation result: summary, verdicts, replay checks, four readings."""
    spec = result.spec
    who = (f"scorer {spec['scorer']}" if spec.get("scorer")
           else f"judge {spec['judge']} ({normalise(str(spec['endpoint']))})")
    limit = f", first {spec['limit']} samples" if spec.get("limit") else ""
    lines = [result.summary, "",
             f"ablation {result.ablation_id} of run {spec['run_id']}: {who}, {spec['repeats']} repeats{limit}; "
             f"{result.accounting}", ""]
    lines += [v.sentence for v in result.verdicts]
    if result.replay:
        lines += ["", *(c.sentence for c in result.replay)]
    if result.four is not None:
        lines += ["", result.four.sentence]
    if result.failures:
        top = ", ".join(f"{reason} ({n})" for reason, n in sorted(result.failures.items(), key=lambda x: -x[1])[:3])
        lines += ["", f"failures: {top}"]
    return "\n".join(lines)


def _confirm_cost(store: Store, spec: AblationSpec, judge: Judge | None, *, yes: bool) -> None:
    """Print what the ablation will cost; a paid one over the budget goes ahead only when confirmed."""
    from lib import cost

    stored = store.ablation(spec.ablation_id)
    if stored and stored["status"] == "done":
        return  # answered from the store: nothing to pay for
    if spec.scorer is not None:
        load_scorer(spec.scorer)   # a scorer that cannot load is refused before any cost is named
    estimate = cost.estimate_ablation(store, spec, cacheable=bool(judge is not None and judge.cacheable))
    print(f"cost: {estimate.sentence}", file=sys.stderr)
    budget = _settings().call_budget
    if yes or not cost.needs_confirmation(estimate, budget):
        return
    if sys.stdin.isatty():
        answer = input(f"launch {estimate.calls} paid judge calls? [y/N] ")
        if answer.strip().lower() in ("y", "yes"):
            return
        raise UsageError("not launched")
    over = f" (EVALDRIFT_CALL_BUDGET is {budget})" if budget is not None else ""
    raise UsageError(f"this ablation makes up to {estimate.calls} calls to a paid judge{over}: pass --yes to "
                     f"launch it, or set EVALDRIFT_CALL_BUDGET to at least {estimate.calls}")


def cmd_ablate(args: argparse.Namespace) -> int:
    db = _db_path(args, must_exist=True)
    with inbox.open_drained(db, _inbox_for(db)) as store:
        run_id = store.resolve_run(args.run)
        spec, judge = _ablation_spec(args, store, run_id)
        _confirm_cost(store, spec, judge, yes=args.yes)
        try:
            outcome = run_guarded(store, spec, judge, limits=Limits.from_settings(settings.load()),
                                  progress=_progress(f"ablating {run_id}"))
        except KeyboardInterrupt:
            print(f"\ninterrupted: the judgings stored so far are kept; run the same command to resume "
                  f"({spec.ablation_id})", file=sys.stderr)
            return 130
    result, judged = outcome.result, outcome.judge.sentence
    if result is None:  # stopped by the breaker or the deadline (lib.breaker): nothing decided, resumable
        why = f"{outcome.stopped}. " if outcome.stopped else ""
        print(f"{why}Nothing decided; the judgings stored so far are kept: run the same command to resume "
              f"({spec.ablation_id})" + (f"\njudge: {judged}" if judged else ""), file=sys.stderr)
        if args.json:   # a CI job reading the JSON learns why, too
            _print_json({"ablation_id": spec.ablation_id, "stopped": outcome.stopped or "stopped",
                         "exit_code": EXIT_INCONCLUSIVE, "judge_info": judged or None})
        return EXIT_INCONCLUSIVE
    if args.json:
        _print_json({**result.to_dict(), "exit_code": result.exit_code, "judge_info": judged or None})
    else:
        print(format_ablation(result) + (f"\njudge: {judged}" if judged else ""))
    return result.exit_code


def cmd_lint(args: argparse.Namespace) -> int:
    from lib.degenerate import chance_scores, chance_summary
    from lib.diagnose import lint_status
    from lib.prompts import fields_read, lint, prompt_hash

    if args.template is None and args.metric is not None:
        raise UsageError("--metric goes with --template FILE (stored templates carry their metric)")
    if args.template is not None and args.metric is None:
        raise UsageError("--template FILE needs --metric M: the metric decides which fields are forbidden")
    flagged = 0
    checked = 0
    chance: list[str] = []
    if args.template is not None:
        try:
            text = Path(args.template).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read template: {getattr(exc, 'strerror', None) or exc}",
                             source=args.template) from None
        try:
            read = fields_read(text, args.metric)
            found = lint(text, args.metric)
        except ValueError as exc:  # an unknown placeholder
            raise InputError(str(exc), source=args.template) from None
        checked += 1
        flagged += bool(found)
        status = "; ".join(f.message for f in found) or "ok"
        reads = ", ".join(f for f in FIELDS if f in read) or "no field"
        print(f"{args.template} ({args.metric}, {prompt_hash(text)}) reads {reads}: {status}")
    if args.db is not None or args.template is None:
        db = _db_path(args, must_exist=True)
        with inbox.open_drained(db, _inbox_for(db)) as store:
            table = lint_status(store)
            chance = chance_summary(chance_scores(store))
        for r in table.itertuples(index=False):
            checked += 1
            plural = "" if r.runs == 1 else "s"
            used = f"used by {r.runs} run{plural}, last {r.last_run} ({r.bindings})" if r.runs else "unused"
            if r.findings:
                flagged += 1
                print(f"FINDING {r.metric} {r.prompt_hash} reads {r.reads}; {used}: {r.findings}")
            else:
                print(f"ok      {r.metric} {r.prompt_hash} reads {r.reads}; {used}")
        for line in chance:
            print(f"FINDING {line}")
    print(f"{flagged} of {checked} template(s) read a field their metric must never receive" if flagged
          else f"{checked} template(s) checked: no finding")
    if chance:
        print(f"{len(chance)} run metric(s) hold scores on samples with no passages")
    return EXIT_FINDING if flagged or chance else EXIT_OK


def _text_or_none(value: object) -> str | None:
    """A text cell, or None where the frame holds a missing value (pandas 3 string columns give NaN)."""
    return value if isinstance(value, str) else None


def runs_data(store: Store) -> list[dict[str, object]]:
    """Every run with its metrics (both suites), oldest first, as plain values."""
    by_run: dict[str, list[dict[str, object]]] = {}
    for suite in (MAIN, CANARY):
        for r in store.metric_history(suite=suite).itertuples(index=False):
            by_run.setdefault(r.run_id, []).append({
                "suite": suite, "metric": r.metric, "score": None if r.score is None or math.isnan(r.score)
                else float(r.score), "n": int(r.n), "n_failed": int(r.n_failed), "n_excluded": int(r.n_excluded),
                "judge_model": _text_or_none(r.judge_model), "prompt_hash": _text_or_none(r.prompt_hash),
                "binding": _text_or_none(r.binding)})
    out = []
    for r in store.runs().itertuples(index=False):
        out.append({"run_id": r.run_id, "started_at": r.started_at.isoformat(), "label": r.label or "",
                    "pipeline": json.loads(r.pipeline), "metrics": by_run.get(r.run_id, [])})
    return out


def format_runs(runs: list[dict[str, object]]) -> str:
    """One line per run: each main-suite metric as score, prompt hash (8) and failures."""
    header = ["run", "started", "judge", *METRIC_NAMES, "label"]
    rows = []
    for run in runs:
        metrics = {m["metric"]: m for m in run["metrics"] if m["suite"] == MAIN}  # type: ignore[union-attr,index]
        judges = sorted({str(m["judge_model"] or "unattributed") for m in metrics.values()})
        cells = []
        for name in METRIC_NAMES:
            m = metrics.get(name)
            if m is None:
                cells.append("-")
                continue
            cell = f"{_fmt(m['score'])} n={m['n']} {(m['prompt_hash'] or 'unattributed')[:8]}"
            cells.append(cell + (f" !{m['n_failed']}" if m["n_failed"] else ""))
        rows.append([str(run["run_id"]), str(run["started_at"])[:16].replace("T", " "), ",".join(judges) or "-",
                     *cells, str(run["label"])])
    legend = ("each metric: score, samples scored, prompt hash (first 8); !k = k samples failed "
              "(counted, never scored); --json for everything")
    return _table(header, rows) + "\n\n" + legend if rows else "no runs recorded"


def cmd_runs(args: argparse.Namespace) -> int:
    db = _db_path(args, must_exist=True)
    with inbox.open_drained(db, _inbox_for(db)) as store:
        data = runs_data(store)
    if args.json:
        _print_json(data)
    else:
        print(format_runs(data))
    return EXIT_OK


def cmd_split(args: argparse.Namespace) -> int:
    from lib.splits import plan_split, run_split

    db = _db_path(args, must_exist=True)
    with inbox.open_drained(db, _inbox_for(db)) as store:
        run_b = store.resolve_run(args.run)
        run_a = store.resolve_run(args.baseline) if args.baseline else store.previous_run(run_b)
        if run_a is None:
            raise UsageError(f"run {run_b!r} is the first run: give --baseline")
        plan = plan_split(store, args.metric, run_a, run_b, _settings())
        if plan.paid and not args.yes:
            raise UsageError(f"{plan.describe()}: add --yes to make those calls")
        split = run_split(store, plan)
    if args.json:
        print(json.dumps(dataclasses.asdict(split) | {"sentence": split.sentence, "total": split.total}))
    else:
        print(split.sentence)
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from lib.diagnose import find_jumps
    from lib.presentation.mdtext import plain_text
    from lib.report import run_report

    db = _db_path(args, must_exist=True)
    out = Path(args.out)
    if not out.parent.is_dir():
        raise UsageError(f"--out: no folder {out.parent}")
    with inbox.open_drained(db, _inbox_for(db)) as store:
        run_id = store.resolve_run(args.run)
        results: list[AblationResult] = []
        if args.ablate:
            wanted = dict.fromkeys((j.metric, s.blank) for j in find_jumps(store) if j.run_id == run_id
                                   for s in j.suspects if s.blank)
            for metric, field in wanted:
                judge, model, endpoint = run_judge_for(store, run_id, [metric], None, None)
                spec = AblationSpec(run_id, (metric,), (field,), repeats=args.repeats, judge=model, endpoint=endpoint,
                                    limit=args.limit)
                _confirm_cost(store, spec, judge, yes=args.yes)
                result = run_guarded(store, spec, judge, limits=Limits.from_settings(settings.load()),
                                     progress=_progress(f"ablating {metric} x {field}")).result
                if result is not None:
                    results.append(result)
                    print(f"{metric} x {field} blanked: {result.summary}", file=sys.stderr)
        text = run_report(store, run_id, ablation_results=results)
    out.write_text(plain_text(text) if args.plain else text, encoding="utf-8")
    print(f"wrote the finding for run {run_id} to {out}")
    return EXIT_OK


# -- parser and entry point -------------------------------------------------------------
def _effect(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1): {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _db_arg(p: argparse.ArgumentParser, help_text: str = "the DuckDB file (default: $EVALDRIFT_DB)") -> None:
    p.add_argument("--db", metavar="PATH", help=help_text)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="evaldrift: tell a wiring leak in an LLM-judged RAG metric from a "
                                            "genuine regression.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("demo", help="build the demo database (90 nightly runs, really judged)")
    _db_arg(p, "where to build it (default: $EVALDRIFT_DB)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("ingest", help="record a JSONL/CSV/Parquet file of samples and scores as one run")
    _db_arg(p)
    p.add_argument("file", help="the file: one row per sample (question, answer, contexts, ground_truth, scores)")
    p.add_argument("--run-id", required=True, metavar="ID", help="the run's id (recording it again replaces it)")
    p.add_argument("--started-at", metavar="ISO", help="when the run happened (default: now)")
    p.add_argument("--pipeline", metavar="JSON", help="the pipeline config as a JSON object")
    p.add_argument("--judge-model", metavar="M", help="the judge model that produced the scores")
    p.add_argument("--template", action="append", default=[], metavar="METRIC=FILE",
                   help="the judge template a metric's scores came from (repeatable)")
    p.add_argument("--binding", choices=BINDINGS, help="how the templates were bound")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("score", help="score a JSONL/CSV/Parquet file of samples with our harness; record the run")
    _db_arg(p)
    p.add_argument("file", help="the file: one row per sample (answer, and the fields the metrics receive)")
    p.add_argument("--run-id", required=True, metavar="ID", help="the run's id (recording it again replaces it)")
    p.add_argument("--metrics", action="append", default=[], metavar="M[,M]",
                   help=f"metrics to score (repeatable or comma-separated; default all): {', '.join(METRIC_NAMES)}")
    p.add_argument("--judge", choices=(OFFLINE, OPENAI), default=OFFLINE,
                   help="offline (default) or a model on an OpenAI-compatible server (OPENAI_BASE_URL)")
    p.add_argument("--model", metavar="NAME", help="the judge model (default: offline-lexical-v2, or "
                                                   "EVALDRIFT_JUDGE_MODEL with --judge openai)")
    p.add_argument("--template", action="append", default=[], metavar="METRIC=FILE",
                   help="score a metric with this template instead of the default (repeatable)")
    p.add_argument("--binding", choices=BINDINGS, default="projected",
                   help="projected (default: each judge sees only what its metric receives) or replay "
                        "(the template against the whole sample; needs --template)")
    p.add_argument("--started-at", metavar="ISO", help="when the run happened (default: now)")
    p.add_argument("--pipeline", metavar="JSON", help="the pipeline config as a JSON object")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("import", help="record a run scored by Ragas, Inspect AI or promptfoo")
    _db_arg(p)
    p.add_argument("file", help="a Ragas result (CSV, Parquet, experiment JSONL), an Inspect log (.eval, .json) "
                                "or promptfoo's results.json")
    p.add_argument("--run-id", required=True, metavar="ID", help="the run's id (recording it again replaces it)")
    p.add_argument("--format", choices=("ragas", "inspect", "promptfoo"), help="the tool (default: detected)")
    p.add_argument("--tool-version", metavar="V", help="the tool's version when the file does not record it (Ragas)")
    p.add_argument("--metric-map", action="append", default=[], metavar="SCORER=METRIC",
                   help="an Inspect scorer's metric (repeatable; model_graded_fact is answer_correctness)")
    p.add_argument("--started-at", metavar="ISO", help="when the run happened (default: what the file says, or now)")
    p.add_argument("--pipeline", metavar="JSON", help="the pipeline config as a JSON object")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("templates", help="print or write the default judge templates and the fields each reads")
    p.add_argument("--metric", choices=METRIC_NAMES, metavar="M", help="only this metric's template")
    p.add_argument("--out", metavar="DIR", help="write <metric>.txt files into DIR instead of printing")
    p.set_defaults(func=cmd_templates)

    p = sub.add_parser("record", help="record a run JSON file (the nightly job's hand-over format)")
    _db_arg(p)
    p.add_argument("file", metavar="FILE.run.json")
    p.set_defaults(func=cmd_record)

    p = sub.add_parser("ablate", help="blank fields, re-judge paired, and gate on the verdicts (CI)")
    _db_arg(p)
    p.add_argument("--run", required=True, metavar="RUN", help="a run id, or 'latest'")
    p.add_argument("--metric", action="append", required=True, choices=METRIC_NAMES, metavar="M",
                   help=f"metric to test (repeatable): {', '.join(METRIC_NAMES)}")
    p.add_argument("--blank", action="append", required=True, metavar="FIELD",
                   help=f"field(s) to blank (repeatable; join with + for one arm): {', '.join(BLANKABLE)}")
    p.add_argument("--repeats", type=_positive_int, default=3, metavar="K", help="re-judgings per arm (default 3)")
    p.add_argument("--judge", choices=(OFFLINE, OPENAI), default=None,
                   help="default: the judge that recorded the run; offline or a model on an OpenAI-compatible "
                        "server (OPENAI_BASE_URL) to ask for another one (the headline names it)")
    p.add_argument("--model", metavar="NAME", help="the judge model (default: the run's own; offline-lexical-v2 "
                                                   "with --judge offline, EVALDRIFT_JUDGE_MODEL with --judge openai)")
    p.add_argument("--min-effect", type=_effect, default=MIN_EFFECT, metavar="X",
                   help=f"the smallest effect worth naming (default {MIN_EFFECT}): a move counts only when its "
                        f"95%% interval lies wholly beyond it")
    p.add_argument("--limit", type=_positive_int, metavar="N", help="only the first N samples (by id)")
    p.add_argument("--scorer", metavar="MODULE:FUNCTION", help="your own harness instead of the judge")
    p.add_argument("--yes", action="store_true",
                   help="launch a paid judge's calls without asking (the cost is printed first; "
                        "EVALDRIFT_CALL_BUDGET: calls allowed without --yes)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_ablate)

    p = sub.add_parser("lint", help="find templates that read a field their metric must never receive")
    _db_arg(p, "lint every template stored here (default: $EVALDRIFT_DB)")
    p.add_argument("--template", metavar="FILE", help="lint this template file instead")
    p.add_argument("--metric", metavar="M", help="the metric the template file is for")
    p.set_defaults(func=cmd_lint)

    p = sub.add_parser("runs", help="list runs with their metrics, judges and prompt hashes")
    _db_arg(p)
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=cmd_runs)

    p = sub.add_parser("split", help="split a jump between two runs into what the instrument and the outputs "
                                     "changed (re-judges both with both runs' judges)")
    _db_arg(p)
    p.add_argument("--run", required=True, metavar="RUN", help="the run after the jump, or 'latest'")
    p.add_argument("--baseline", metavar="RUN", help="the run before it (default: the run before --run)")
    p.add_argument("--metric", required=True, choices=METRIC_NAMES, metavar="M", help=", ".join(METRIC_NAMES))
    p.add_argument("--yes", action="store_true", help="make the calls when a run was judged by a model on a server")
    p.add_argument("--json", action="store_true", help="print the split as JSON")
    p.set_defaults(func=cmd_split)

    p = sub.add_parser("report", help="write a Markdown finding for a run")
    _db_arg(p)
    p.add_argument("--run", required=True, metavar="RUN", help="a run id, or 'latest'")
    p.add_argument("--out", required=True, metavar="FILE.md")
    p.add_argument("--plain", action="store_true",
                   help="write plain text for a chat or a ticket (the Markdown without its escapes)")
    p.add_argument("--ablate", action="store_true",
                   help="first run, with the run's own judge, the wiring ablations the suspects of this run's "
                        "jumps call for")
    p.add_argument("--repeats", type=_positive_int, default=3, metavar="K", help="with --ablate (default 3)")
    p.add_argument("--limit", type=_positive_int, metavar="N", help="with --ablate: only the first N samples")
    p.add_argument("--yes", action="store_true", help="with --ablate: launch a paid judge's calls without asking")
    p.set_defaults(func=cmd_report)
    return parser


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc).split())
    return redact(text) or type(exc).__name__   # a URL with credentials in an error is shown without them


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (see the module docstring)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return int(args.func(args))
    except UsageError as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except (EvaldriftError, KeyError) as exc:  # KeyError: an unknown metric or field from the registry
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        raise  # the reader went away (`| head`): lib/__main__.py ends quietly
    except OSError as exc:  # a file we were told to read or write
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
