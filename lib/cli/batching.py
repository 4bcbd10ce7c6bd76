"""`python -m lib batch ...`: send an ablation or a re-judge through the OpenAI Batch API, poll it, finish it.

The endpoint and key come from the settings (OPENAI_BASE_URL, OPENAI_API_KEY);
the batch id is kept in the database, so `batch poll` from any later process
picks up the same batch.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from lib.cli.common import EXIT_OK, UsageError, _db_path, _inbox_for, _settings
from lib.core.errors import InputError

if TYPE_CHECKING:
    from lib.diagnosis.batch import BatchJob
    from lib.store import Store


def _client():  # the SDK's client (its import is paid only by this command)
    from lib.diagnosis import batch as bt

    s = _settings()
    if not s.base_url:
        raise UsageError("set OPENAI_BASE_URL (and OPENAI_API_KEY) to the server that runs the batch")
    return bt.client_for(s.base_url, s.api_key)


def _spec(args: argparse.Namespace, store: Store) -> tuple[str, object]:
    from lib.diagnosis import batch as bt
    from lib.diagnosis.ablation import AblationSpec
    from lib.diagnosis.rejudge import RejudgeSpec, runs_between, trusted_instrument

    endpoint = _settings().endpoint
    model = args.model or _settings().judge_model
    if args.job == "ablation":
        run_id = store.resolve_run(args.run)
        return bt.ABLATION, AblationSpec(run_id, tuple(args.metric), tuple(args.blank), repeats=args.repeats,
                                         judge=model, endpoint=endpoint, limit=args.limit)
    (metric,) = args.metric
    first = args.first or store.run_ids()[0]
    last = args.last or store.run_ids()[-1]
    trusted = trusted_instrument(store, metric)
    return bt.REJUDGE, RejudgeSpec(metric, runs_between(store, first, last), trusted.template, trusted.binding,
                                   judge=model, endpoint=endpoint, label=f"batch, {trusted.source}")


def _finish(store: Store, job: BatchJob) -> BatchJob:
    from lib.diagnosis import batch as bt
    from lib.judging.build import build_judge

    judge = build_judge(job.model, job.endpoint, _settings())
    bt.finish(store, job.batch_id, judge)
    return bt.load(store, job.batch_id)


def cmd_batch(args: argparse.Namespace) -> int:
    from lib.diagnosis import batch as bt
    from lib.intake import inbox
    from lib.store import batches as bs

    db = _db_path(args, must_exist=True)
    with inbox.open_drained(db, _inbox_for(db)) as store:
        if args.action == "submit":
            if args.job == "ablation" and not (args.run and args.blank):
                raise UsageError("an ablation batch needs --run and --blank")
            if args.job == "rejudge" and len(args.metric) != 1:
                raise UsageError("a re-judge batch takes one --metric")
            kind, spec = _spec(args, store)
            job = bt.submit(store, _client(), kind=kind, spec=spec)
            print(job.sentence if job else "nothing to send: the call cache answers every request of this job")
            return EXIT_OK
        ids = [args.batch] if args.batch else bs.job_ids(store, unfinished=args.action != "status")
        if args.batch and bs.job(store, args.batch) is None:
            raise InputError(f"no batch {args.batch!r} in this database", field="batch")
        for batch_id in ids:
            job = _act(store, args, batch_id)
            print(job.sentence, flush=True)
        if not ids:
            print("no batch jobs" + ("" if args.action == "status" else " left to poll"))
    return EXIT_OK


def _act(store: Store, args: argparse.Namespace, batch_id: str) -> BatchJob:
    from lib.diagnosis import batch as bt

    if args.action == "status":
        job = bt.load(store, batch_id)
        return job if job.collected else bt.poll(store, _client(), batch_id)
    if args.action == "cancel":
        return bt.cancel(store, _client(), batch_id)
    job = bt.poll(store, _client(), batch_id)
    while args.wait and not job.collected:
        print(job.sentence, flush=True)
        time.sleep(args.interval)
        job = bt.poll(store, _client(), batch_id)
    if args.finish and job.collected and not job.finished:
        job = _finish(store, job)
    return job


def add_parser(sub: argparse._SubParsersAction, db_arg, positive_int) -> None:
    """The `batch` command and its actions."""
    p = sub.add_parser("batch", help="send an ablation or a re-judge through the OpenAI Batch API; poll; finish")
    acts = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    s = acts.add_parser("submit", help="upload the job's uncached requests as one batch (cost: printed)")
    db_arg(s)
    s.add_argument("job", choices=("ablation", "rejudge"))
    s.add_argument("--run", metavar="RUN", help="ablation: a run id, or 'latest'")
    s.add_argument("--metric", action="append", required=True, metavar="M")
    s.add_argument("--blank", action="append", metavar="FIELD", help="ablation: field(s) to blank (repeatable)")
    s.add_argument("--repeats", type=positive_int, default=1, metavar="K")
    s.add_argument("--limit", type=positive_int, metavar="N")
    s.add_argument("--first", metavar="RUN", help="re-judge: the first run (default: the oldest)")
    s.add_argument("--last", metavar="RUN", help="re-judge: the last run (default: the newest)")
    s.add_argument("--model", metavar="NAME", help="the judge model (default: EVALDRIFT_JUDGE_MODEL)")
    for name, text in (("status", "show every batch job and its progress"),
                       ("poll", "poll unfinished batches; collect the ended ones"),
                       ("cancel", "cancel a batch (what it answered is still collected)")):
        a = acts.add_parser(name, help=text)
        db_arg(a)
        a.add_argument("batch", nargs="?" if name != "cancel" else None, help="a batch id (default: all)")
        if name == "poll":
            a.add_argument("--wait", action="store_true", help="poll until each batch has ended")
            a.add_argument("--interval", type=float, default=10.0, metavar="S", help="seconds between polls")
            a.add_argument("--finish", action="store_true",
                           help="run each collected job with the live judge (faults are asked live)")
    p.set_defaults(func=cmd_batch)
