"""`python -m lib sentinel pin|night|status`: see the judge behind an unchanged name change (lib.diagnosis.sentinel).

Exit codes: 0 no drift, 1 judge drift called, 2 bad usage or input, 3 the night was recorded but not counted (too
many of its probes failed: run it again; the call cache answers the ones that were judged).
"""

from __future__ import annotations

import argparse
import dataclasses
from datetime import datetime
from typing import TYPE_CHECKING

from lib.cli.common import (
    EXIT_FINDING,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    UsageError,
    _db_path,
    _inbox_for,
    _print_json,
    _settings,
    open_for_reading,
)
from lib.core.metrics import METRIC_NAMES
from lib.core.records import MAIN

if TYPE_CHECKING:
    from lib.diagnosis import sentinel

# lib.diagnosis.sentinel's defaults, as the parser shows them: building the parser imports no engine (`--help`
# and the other commands would pay for pandas and the sentinel's engine). tests/test_cli_startup.py checks that
# each equals the engine's own.
PROBES, REPEATS = 100, 3
FROM_RUN, FROM_LABELS = "run", "labels"
SOURCES = (FROM_RUN, FROM_LABELS)


def _guard(model: str, calls: int, what: str, yes: bool) -> None:
    """A paid judge's calls need --yes, unless they fit EVALDRIFT_CALL_BUDGET."""
    from lib.jobs import sentinel as sj

    s = _settings()
    if calls and sj.is_paid(model, s) and not yes and (s.call_budget is None or calls > s.call_budget):
        raise UsageError(f"{what} makes {calls} calls to {model} (EVALDRIFT_CALL_BUDGET "
                         f"{'not set' if s.call_budget is None else s.call_budget}): add --yes")


def _status_json(st: sentinel.Status) -> dict[str, object]:
    d = st.drift
    return {"sentence": st.sentence, "name": st.pin.name, "pin_id": st.pin.pin_id, "metric": st.pin.metric,
            "judge_model": st.pin.judge_model, "probes": st.n_probes, "repeat_share": st.pin.repeat_share,
            "null_share": st.pin.null_share, "drift": d is not None, "drift_night": d.night if d else None,
            "nights": [{**dataclasses.asdict(n), "judged_at": str(n.judged_at), "detail": None} for n in st.nights],
            "looks": [dataclasses.asdict(look) for look in st.looks]}


def _code(st: sentinel.Status, night: str | None = None) -> int:
    if st.drift is not None:
        return EXIT_FINDING
    row = st.night(night) if night else None
    return EXIT_INCONCLUSIVE if row is not None and row.disagreement is None else EXIT_OK


def cmd_pin(args: argparse.Namespace) -> int:
    from lib.diagnosis import sentinel
    from lib.diagnosis.agreement import current_instrument
    from lib.intake import inbox
    from lib.jobs import sentinel as sj

    db = _db_path(args, must_exist=True)
    with inbox.open_drained(db, _inbox_for(db)) as store:
        model = current_instrument(store, args.metric, args.suite).judge_model
        samples, said = sentinel.probe_samples(store, args.metric, suite=args.suite, source=args.source,
                                               size=args.probes, name=args.name)
        _guard(model, (1 + args.repeats) * len(samples), f"pinning {len(samples)} probes with {args.repeats} "
               "repeats", args.yes)
        p = sentinel.pin(store, sj.pinned_judge(model, _settings()), args.metric, name=args.name, suite=args.suite,
                         source=args.source, size=args.probes, repeats=args.repeats)
        print(f"pinned {args.name!r} ({p.row.pin_id}): {len(p.probes)} probes ({said}), judge {model}; "
              f"{p.row.calls} calls; its own repeat disagreement {p.row.repeat_share:.1%}, at most "
              f"{p.row.null_share:.1%}. Each night costs {len(p.probes)} calls (--budget caps it).")
    return EXIT_OK


def cmd_night(args: argparse.Namespace) -> int:
    from lib.diagnosis import sentinel
    from lib.intake import inbox
    from lib.jobs import sentinel as sj

    db = _db_path(args, must_exist=True)
    with inbox.open_drained(db, _inbox_for(db)) as store:
        p = sentinel.current_pin(store, args.name)
        key = args.night or f"{datetime.now():%Y-%m-%d}"
        judge = sj.pinned_judge(p.row.judge_model, _settings())
        calls, held = sentinel.night_calls(store, judge, p, key, args.budget)
        _guard(p.row.judge_model, calls, f"night {key}", args.yes)
        cost = (f"{calls} calls ({held} answered by the call cache)" if judge.cacheable
                else f"{calls} offline judgings, no API cost")
        print(f"night {key}: {calls + held} probes, {cost}", flush=True)
        st = sentinel.run_night(store, judge, name=p.row.name, night=key, budget=args.budget)
    if args.json:
        _print_json({**_status_json(st), "exit_code": _code(st, key)})
    else:
        print(st.sentence)
    return _code(st, key)


def cmd_status(args: argparse.Namespace) -> int:
    from lib.diagnosis import sentinel

    db = _db_path(args, must_exist=True)
    with open_for_reading(db) as store:
        found = [sentinel.status(store, args.name)] if args.name else sentinel.statuses(store)
    if not found:
        raise UsageError(f"{db} has no sentinel pinned: pin one (python -m lib sentinel pin --metric M)")
    if args.json:
        _print_json([_status_json(s) for s in found])
    else:
        for s in found:
            print(s.sentence)
    return EXIT_FINDING if any(s.drift is not None for s in found) else EXIT_OK


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"at least 1, got {value}")
    return value


def add_parser(sub: argparse._SubParsersAction, db_arg) -> None:
    """The `sentinel` command: pin, night, status."""
    p = sub.add_parser("sentinel", help="a pinned probe set judged again each night: see the judge behind an "
                                        "unchanged name change")
    inner = p.add_subparsers(dest="sentinel_command", required=True, metavar="pin|night|status")
    q = inner.add_parser("pin", help="pin probes and their verdicts with the current instrument")
    db_arg(q)
    q.add_argument("--metric", required=True, choices=METRIC_NAMES, metavar="M")
    q.add_argument("--name", default="sentinel", metavar="NAME", help="the sentinel (pinned again: a new pin)")
    q.add_argument("--suite", default=MAIN, metavar="S")
    q.add_argument("--from", dest="source", choices=SOURCES, default=FROM_RUN,
                   help="run: a seeded sample of the current instrument's run (default); labels: the calibration set")
    q.add_argument("--probes", type=_positive, default=PROBES, metavar="N",
                   help=f"probes sampled from the run (default {PROBES})")
    q.add_argument("--repeats", type=_positive, default=REPEATS, metavar="K",
                   help=f"pin-time repeats that bound the judge's own repeat disagreement (default "
                        f"{REPEATS})")
    q.add_argument("--yes", action="store_true", help="make a model judge's calls without asking")
    q.set_defaults(func=cmd_pin)
    q = inner.add_parser("night", help="judge the pinned probes again for tonight and test for drift")
    db_arg(q)
    q.add_argument("--name", metavar="NAME", help="the sentinel (default: the latest pinned)")
    q.add_argument("--night", metavar="KEY", help="the night's key (default: today, YYYY-MM-DD)")
    q.add_argument("--budget", type=_positive, metavar="N", help="the most calls the night may make (a seeded "
                                                                 "subset of N probes; default: every probe)")
    q.add_argument("--yes", action="store_true", help="make a model judge's calls without asking")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_night)
    q = inner.add_parser("status", help="each sentinel's nights and whether it called drift")
    db_arg(q)
    q.add_argument("--name", metavar="NAME")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_status)
