"""A child process for the kill tests: it does one piece of work and says how far it got.

    python -m tests.support.kill_child ingest DB FILE RUN_ID
    python -m tests.support.kill_child ablate DB SPEC_JSON

or, as tests/test_reliability_kill.py starts it, `serve(argv, conn)` in a process forked from a fork server that
imported lib once (PRELOAD): each child is still its own process, holding the database and killed by SIGKILL,
without paying about 1 CPU s of imports each (nine children a run).

DuckDB lets one process hold a database file, so the parent cannot look into
the database while this child works; it follows the child's progress lines
(on stdout, each flushed at once; or sent on `conn`) and SIGKILLs it at a moment of its choosing.

Lines: "ready" (imports done, database open), then for ingest "writing"
(the file is validated, the write transaction starts) and "committed"; for
ablate "progress DONE TOTAL" after each stored batch and "finished KIND".
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from multiprocessing.connection import Connection

# what the children import: a fork server imports these once (multiprocessing's set_forkserver_preload)
PRELOAD = ["lib.intake.ingest", "lib.intake.reading", "lib.store", "lib.diagnosis.ablation", "lib.judging"]

_conn: Connection | None = None   # serve(): lines go to the parent through this pipe, not stdout


def say(*words: object) -> None:
    line = " ".join(map(str, (*words, f"{time.monotonic():.4f}")))
    if _conn is not None:
        _conn.send(line)
    else:
        print(line, flush=True)


def ingest(db: str, file: str, run_id: str) -> int:
    from lib.intake.ingest import run_from_frame
    from lib.intake.reading import read_table
    from lib.store import Store

    with Store(db) as store:
        say("ready")
        run = run_from_frame(read_table(file), source=file, run_id=run_id)
        say("writing", sum(len(s) for s in run.samples.values()))
        store.record_run(run)
        say("committed")
    return 0


def ablate(db: str, spec_json: str) -> int:
    from lib.diagnosis.ablation import AblationSpec, run_ablation
    from lib.judging import OfflineJudge
    from lib.store import Store

    spec = AblationSpec.from_dict(json.loads(spec_json))
    with Store(db) as store:
        say("ready")
        result = run_ablation(store, spec, OfflineJudge(spec.judge, noise=0.03),
                              progress=lambda done, total: say("progress", done, total))
        say("finished", result.verdicts[0].kind if result else "stopped")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["ingest"] and len(argv) == 4:
        return ingest(*argv[1:])
    if argv[:1] == ["ablate"] and len(argv) == 3:
        return ablate(*argv[1:])
    print(__doc__, file=sys.stderr)
    return 2


def serve(argv: list[str], conn: Connection) -> None:
    """main(argv) in a forked child, its lines sent on `conn`; a failure is sent as "error" and the traceback,
    and exits 1 (the process's exit code, as main's)."""
    global _conn
    _conn = conn
    try:
        code = main(argv)
    except BaseException:
        conn.send("error " + traceback.format_exc())
        code = 1
    conn.close()
    sys.exit(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
