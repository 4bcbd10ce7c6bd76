"""What every command shares: settings, the database path, progress on a terminal, tables and JSON, the judge."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

from lib.core import settings
from lib.core.errors import StoreBusyError

if TYPE_CHECKING:
    from lib.judging.base import Judge
    from lib.store import Store

# The store, the judges and the engines are imported by the functions that use them, not here: every command
# imports this module, and `--help`, a usage error or a command that needs none of them should not pay for
# pandas, DuckDB and the engines (tests/test_cli_startup.py).

PROG = "python -m lib"
OFFLINE = "offline"
OPENAI = "openai"
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


def _db_path(args: argparse.Namespace, *, must_exist: bool) -> Path | str:
    """--db, else EVALDRIFT_DB; a reading command refuses a path with no database.

    A team store's URL (`ducklake:postgres:...`, lib.store.lake) is returned as the text it is (a Path would fold
    a URI's `//`): it names no file to check, and opening it says what is wrong with it.
    """
    from lib.store import lake

    raw = args.db or os.environ.get("EVALDRIFT_DB") or None
    if raw is None:
        raise UsageError(f"{PROG} {args.command}: no database: give --db PATH or set EVALDRIFT_DB")
    if lake.is_lake(raw):
        return str(raw)
    path = Path(raw)
    if must_exist and not path.is_file():
        raise UsageError(f"no database at {path} (build one with `{PROG} demo --db {path}` or "
                         f"`{PROG} ingest --db {path} FILE --run-id ID`)")
    return path


def _inbox_for(db: Path | str) -> Path:
    """The inbox the dashboard owning `db` drains (as lib.app.ui does)."""
    from lib.intake import inbox

    return inbox.folder_for(db)


def open_for_reading(db: Path | str) -> Store:
    """The database for a reading command (runs, lint, report, labels agreement and history): opened, its inbox
    drained first, when it is free; while the dashboard holds it, the dashboard's snapshot of it
    (lib.store.snapshot), read-only, and a note on stderr saying how old it is. A team store is opened as it is:
    many processes read and write it at once.

    Raises:
        StoreBusyError: the file is held and no snapshot of it exists (a dashboard older than snapshots).
    """
    from lib.intake import inbox
    from lib.store import Store, lake
    from lib.store.snapshot import snapshot_path, snapshot_time

    if lake.is_lake(db):
        return Store(db)
    db = Path(db)
    try:
        return inbox.open_drained(db, _inbox_for(db))
    except StoreBusyError:
        when = snapshot_time(db)
        if when is None:
            raise
    waiting = inbox.waiting(_inbox_for(db))
    print(f"note: the dashboard holds {db}; reading its snapshot of {when:%Y-%m-%d %H:%M:%S}"
          + (f" ({waiting} run(s) handed over wait in the inbox)" if waiting else ""), file=sys.stderr)
    return Store(snapshot_path(db), read_only=True)


def open_as_of(args: argparse.Namespace) -> Store:
    """The team store that --db (else EVALDRIFT_DB) names, as it stood at --as-of: read-only (DuckLake's time
    travel). A DuckDB file keeps no history by date and is refused."""
    from lib.store import Store, lake

    raw = args.db or os.environ.get("EVALDRIFT_DB") or None
    if raw is None:
        raise UsageError(f"{PROG} {args.command}: no database: give --db URL or set EVALDRIFT_DB")
    if not lake.is_lake(str(raw)):
        raise UsageError(f"--as-of reads a team store (ducklake:...) as it stood then; {raw} is a DuckDB file, "
                         "which keeps only its present")
    return Store(str(raw), as_of=lake.as_of_time(args.as_of))


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


PROGRESS_SECONDS = 5.0   # off a terminal (a CI log, a redirected file): a progress line at most this often


def _progress(label: str, *, every: float = PROGRESS_SECONDS) -> Callable[[int, int], None]:
    """Progress on stderr: a line redrawn in place on a terminal; off one (a CI job's log), a line at most every
    `every` seconds and at the end, so a long job is seen working."""
    if not _is_tty(sys.stderr):
        shown: list[float] = []

        def line(done: int, total: int) -> None:
            now = time.monotonic()
            if done < total and shown and now - shown[-1] < every:
                return
            if done >= total and shown and shown[-1] == math.inf:   # the final flush reports 100% twice
                return
            shown[:] = [math.inf if done >= total else now]
            share = done / total if total else 1.0
            print(f"{label}: {done}/{total} ({share:.0%})", file=sys.stderr, flush=True)

        return line

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
    from lib.judging.build import build_judge
    from lib.judging.offline import DEFAULT_MODEL as OFFLINE_MODEL
    from lib.judging.offline import VARIANTS

    s = _settings()
    if kind == OFFLINE:
        name = model or OFFLINE_MODEL
        if name not in VARIANTS:
            raise UsageError(f"unknown offline judge {name!r}; known: {', '.join(VARIANTS)} "
                             f"(use --judge openai for a model on a server)")
        return build_judge(name, OFFLINE, s), name, OFFLINE
    name = model or s.judge_model
    if name in VARIANTS:
        raise UsageError("--judge openai needs a model: give --model NAME or set EVALDRIFT_JUDGE_MODEL")
    return build_judge(name, s.endpoint, s), name, s.endpoint   # the endpoint as identity: no credentials


def run_judge_for(store: Store, run_id: str, metrics: Sequence[str], kind: str | None,
                  model: str | None) -> tuple[Judge, str, str]:
    """The judge for an ablation: the one that recorded the run, unless --judge/--model name another.

    A run recorded by a model is replayed with that model on OPENAI_BASE_URL;
    with no server configured that is an error naming the way out, never a
    silent switch to the offline judge.
    """
    from lib.diagnosis.ablation import recorded_judge
    from lib.judging.offline import VARIANTS

    if kind is None and model is None:
        model = recorded_judge(store, run_id, metrics)
        if model not in VARIANTS and not (_settings().base_url or _settings().api_key):
            raise UsageError(f"run {run_id!r} was judged by {model!r}: set OPENAI_BASE_URL (and OPENAI_API_KEY) to "
                             f"replay it, or name another judge with --judge offline (the headline will say so)")
    if kind is None:  # --model alone: an offline-* name is the offline judge (an unknown one is an error)
        kind = OFFLINE if str(model).startswith("offline-") else OPENAI
    return judge_for(kind, model)
