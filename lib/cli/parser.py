"""The parser: every command, its options and its help; `main` runs one and maps errors to exit codes."""


from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from lib.cli.archiving import add_parser as add_archive_parser
from lib.cli.batching import add_parser as add_batch_parser
from lib.cli.common import EXIT_USAGE, OFFLINE, OPENAI, PROG, UsageError, _Parser
from lib.cli.labelling import add_parser as add_labels_parser
from lib.cli.sentinel import add_parser as add_sentinel_parser
from lib.cli.storing import add_parser as add_store_parser
from lib.cli.watching import add_parser as add_watch_parser
from lib.core import settings
from lib.core.endpoints import redact
from lib.core.errors import MESSAGE_CHARS, EvaldriftError, bounded
from lib.core.metrics import METRIC_NAMES
from lib.core.prompts import BINDINGS
from lib.core.samples import BLANKABLE

# lib.diagnosis.ablation's defaults, as `ablate`'s options show them: building the parser imports no engine, so
# `--help`, a usage error and a command that needs no ablation do not pay for pandas and the engines (about 0.8
# CPU s a start). tests/test_cli_startup.py checks that each equals the engine's own.
MIN_EFFECT = 0.02
SWAPPABLE = ("ground_truth", "question")


def _command(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """The function `name` of lib.cli.`module`, imported when its command runs (not when the parser is built)."""
    def run(args: argparse.Namespace) -> int:
        return int(getattr(importlib.import_module(f"lib.cli.{module}"), name)(args))

    run.__name__ = run.__qualname__ = name
    return run


cmd_demo, cmd_import, cmd_ingest, cmd_record, cmd_score, cmd_templates = (
    _command("recording", name) for name in ("cmd_demo", "cmd_import", "cmd_ingest", "cmd_record", "cmd_score",
                                             "cmd_templates"))
cmd_ablate, cmd_lint, cmd_report, cmd_split = (
    _command("diagnosing", name) for name in ("cmd_ablate", "cmd_lint", "cmd_report", "cmd_split"))
cmd_runs = _command("listing", "cmd_runs")


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
    # Over 60 lines on purpose: one declarative block per command, read top to bottom as the --help is.
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
    p.add_argument("--binding", choices=BINDINGS, help="how the given templates were bound")
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
                        "(each metric given a --template: its template against the whole sample; the others "
                        "stay projected)")
    p.add_argument("--started-at", metavar="ISO", help="when the run happened (default: now)")
    p.add_argument("--pipeline", metavar="JSON", help="the pipeline config as a JSON object")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("import", help="record a run scored by Ragas, Inspect AI, promptfoo, DeepEval or MLflow")
    _db_arg(p)
    p.add_argument("file", help="a Ragas result (CSV, Parquet, experiment JSONL), an Inspect log (.eval, .json), "
                                "promptfoo's results.json, a DeepEval test_run_*.json or an MLflow mlflow.db")
    p.add_argument("--run-id", required=True, metavar="ID", help="the run's id (recording it again replaces it)")
    p.add_argument("--format", choices=("ragas", "inspect", "promptfoo", "deepeval", "mlflow"),
                   help="the tool (default: detected)")
    p.add_argument("--tool-version", metavar="V", help="the tool's version when the file does not record it (Ragas, "
                                                       "DeepEval, MLflow)")
    p.add_argument("--metric-map", action="append", default=[], metavar="SCORER=METRIC",
                   help="an Inspect scorer's, DeepEval metric's or MLflow scorer's metric (repeatable; "
                        "model_graded_fact is answer_correctness)")
    p.add_argument("--grader", metavar="MODEL",
                   help="the grader model, for files that do not name it (a Ragas CSV never does); a file's own "
                        "grader wins")
    p.add_argument("--provider", metavar="ID", help="promptfoo: the provider whose results to import, when the "
                                                    "file has several (each is its own run)")
    p.add_argument("--mlflow-run", dest="provider", metavar="ID", help="MLflow: the evaluation to import (run id or "
                                                                        "name), when the store holds several")
    p.add_argument("--started-at", metavar="ISO", help="when the run happened (default: what the file says, or now)")
    p.add_argument("--pipeline", metavar="JSON", help="the pipeline config as a JSON object (default: none "
                                                      "recorded, and no pipeline change is drawn from this run)")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("templates", help="print or write the default judge templates and the fields each reads")
    p.add_argument("--metric", choices=METRIC_NAMES, metavar="M", help="only this metric's template")
    p.add_argument("--tool", choices=("ragas", "inspect_ai", "promptfoo", "deepeval", "mlflow"),
                   help="also print the wiring profile a run scored by this tool is judged under: the fields its "
                        "metrics receive by design")
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
    p.add_argument("--blank", action="append", default=[], metavar="FIELD",
                   help=f"field(s) to blank (repeatable; join with + for one arm): {', '.join(BLANKABLE)}")
    p.add_argument("--swap", action="append", default=[], metavar="FIELD",
                   help=f"field(s) to swap with another sample's (repeatable; a seeded pairing recorded in the "
                        f"spec): {', '.join(SWAPPABLE)}; at least one --blank or --swap")
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
    p.add_argument("--all-samples", action="store_true",
                   help="judge every sample of every arm (default: samples in an order fixed by the seed, each arm "
                        "stopped once a 95%% confidence sequence decides its verdict)")
    p.add_argument("--yes", action="store_true",
                   help="launch a paid judge's calls without asking (the cost is printed first; "
                        "EVALDRIFT_CALL_BUDGET: calls allowed without --yes)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_ablate)

    add_batch_parser(sub, _db_arg, _positive_int)
    add_archive_parser(sub, _db_arg)
    add_store_parser(sub)

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
    p.add_argument("--as-of", metavar="WHEN", help="a team store only: write it as the history stood then (a date "
                   "such as 2026-10-31: at that day's end; or an ISO time)")
    p.set_defaults(func=cmd_report)

    add_labels_parser(sub, _db_arg, _effect)
    add_watch_parser(sub, _db_arg)
    add_sentinel_parser(sub, _db_arg)
    return parser


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc).split())
    # a URL with credentials in an error is shown without them; a message that echoes a huge input is cut
    return bounded(redact(text), 2 * MESSAGE_CHARS) or type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (see the module docstring)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        settings.load()   # every setting checked before any work: a bad one is this one line, whatever the command
        return int(args.func(args))
    except UsageError as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except EvaldriftError as exc:  # an unknown metric or field too (UnknownNameError); any other KeyError is a bug
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        raise  # the reader went away (`| head`): lib/__main__.py ends quietly
    except OSError as exc:  # a file we were told to read or write
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
