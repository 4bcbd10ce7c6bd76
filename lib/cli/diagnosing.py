"""The commands that diagnose: ablate, lint, split, report."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from lib.cli.common import (
    EXIT_FINDING,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    UsageError,
    _db_path,
    _inbox_for,
    _print_json,
    _progress,
    _settings,
    open_as_of,
    open_for_reading,
    run_judge_for,
)
from lib.core import settings
from lib.core.endpoints import normalise
from lib.core.errors import InputError
from lib.core.samples import FIELDS
from lib.diagnosis.ablation import AblationResult, AblationSpec, load_scorer
from lib.intake import inbox
from lib.jobs import run_guarded
from lib.judging.base import Judge
from lib.judging.breaker import Limits
from lib.store import Store, lake


def _ablation_spec(args: argparse.Namespace, store: Store, run_id: str) -> tuple[AblationSpec, Judge | None]:
    if not args.blank and not args.swap:
        raise UsageError("ablate needs at least one --blank FIELD or --swap FIELD")
    if args.scorer:
        spec = AblationSpec(run_id, tuple(args.metric), tuple(args.blank), repeats=args.repeats, limit=args.limit,
                            scorer=args.scorer, min_effect=args.min_effect, sequential=not args.all_samples,
                            swaps=tuple(args.swap))
        return spec, None
    if args.judge is None and args.model is None:   # a tool's scores have no template of ours to replay
        _refuse_tool_run(store, run_id, args.metric)
    judge, model, endpoint = run_judge_for(store, run_id, args.metric, args.judge, args.model)
    spec = AblationSpec(run_id, tuple(args.metric), tuple(args.blank), repeats=args.repeats, judge=model,
                        endpoint=endpoint, limit=args.limit, min_effect=args.min_effect,
                        sequential=not args.all_samples, swaps=tuple(args.swap))
    return spec, judge


def _refuse_tool_run(store: Store, run_id: str, metrics: list[str]) -> None:
    from lib.core.profiles import STRICT, own_scorer, tool_of

    frame = store.run_metrics(run_id)
    for row in frame[frame["metric"].isin(metrics)].itertuples(index=False):
        scorer = getattr(row, "scorer", None)
        scorer = scorer if isinstance(scorer, str) else None
        hint = own_scorer(scorer, row.metric)
        tool = tool_of(scorer)
        if hint is None and tool != STRICT:   # said before any judge's endpoint: no endpoint builds that scorer
            raise UsageError(f"run {run_id!r} was scored by {scorer} ({row.metric}): evaldrift does not build "
                             f"{tool}'s own scorer, so no ablation re-scores it as {tool} did; name a judge of "
                             f"ours with --judge (it judges with our template, not {tool}'s)")
        if hint is not None:
            raise UsageError(f"run {run_id!r} was scored by {scorer} ({row.metric}), not by a template of ours: "
                             f"ablate it through the tool itself, --scorer '{hint}' (the file it was imported "
                             f"from), or name a judge of ours with --judge")


def format_ablation(result: AblationResult) -> str:
    """The plain-text rendering of an ablation result: summary, verdicts, replay checks, four readings."""
    spec = result.spec
    who = f"scorer {spec.scorer}" if spec.scorer else f"judge {spec.judge} ({normalise(spec.endpoint)})"
    limit = f", first {spec.limit} samples" if spec.limit else ""
    swaps = f", swap pairing seed {spec.swap_seed}" if spec.swaps else ""
    lines = [result.summary, "",
             f"ablation {result.ablation_id} of run {spec.run_id}: {who}, {spec.repeats} repeats{limit}{swaps}; "
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
    from lib.diagnosis import cost

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
    if result is None:  # stopped by the breaker or the deadline (lib.judging.breaker): nothing decided, resumable
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
    from lib.core.degenerate import chance_summary
    from lib.core.prompts import fields_read, lint, prompt_hash
    from lib.diagnosis.trends import lint_status

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
        with open_for_reading(db) as store:
            table = lint_status(store)
            chance = chance_summary(store.chance_scores())
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
        print(f"{len(chance)} finding(s) of scores a metric should never have given (on samples with no passages, "
              f"or faithfulness on content-free answers)")
    return EXIT_FINDING if flagged or chance else EXIT_OK




def cmd_split(args: argparse.Namespace) -> int:
    from lib.diagnosis.trends import plan_split, run_split

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
    from lib.diagnosis.trends import ablations_called_for
    from lib.presentation.mdtext import plain_text
    from lib.presentation.report import run_report

    out = Path(args.out)
    if args.as_of is not None:   # a team store as it stood then: read-only, so nothing can be ablated into it
        if args.ablate:
            raise UsageError("--as-of reads the history as it stood then and writes nothing: drop --ablate")
        if not out.parent.is_dir():
            raise UsageError(f"--out: no folder {out.parent}")
        opened = open_as_of(args)
    else:
        db = _db_path(args, must_exist=True)
        if not out.parent.is_dir():
            raise UsageError(f"--out: no folder {out.parent}")
        # --ablate writes its ablations: only to the file itself; reading alone also works from a held file's
        # snapshot
        opened = inbox.open_drained(db, _inbox_for(db)) if args.ablate else open_for_reading(db)
    with opened as store:
        run_id = store.resolve_run(args.run)
        results: list[AblationResult] = []
        if args.ablate:
            for metric, field in ablations_called_for(store, run_id):
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
    then = f" (the history as it stood at {lake.as_of_time(args.as_of):%Y-%m-%d %H:%M:%S})" if args.as_of else ""
    print(f"wrote the finding for run {run_id} to {out}{then}")
    return EXIT_OK
