"""A child process that works on a team store (DuckLake on Postgres), run by the lake environment's python.

    python -m tests.support.lake_child record URL PREFIX N [SAMPLES]  records runs PREFIX-0 .. PREFIX-(N-1)
    python -m tests.support.lake_child read URL [ISO_TIME]     the runs as read back (JSON), now or as of a time
    python -m tests.support.lake_child export URL FOLDER       the Parquet export of the lake (FOLDER may be s3://)
    python -m tests.support.lake_child hang URL RUN_ID         records RUN_ID but stops inside its transaction
    python -m tests.support.lake_child roundtrip URL FILE1 FILE2  FILE1 -> the lake at URL -> FILE2 (store copy)
    python -m tests.support.lake_child report URL then|later FOLDER  reports on the lake, now and --as-of a date
    python -m tests.support.lake_child watch URL PREFIX N SEC   reads while others write, until N runs PREFIX... are in

The lake's extensions are built for duckdb 1.5.5 (lib/store/README.md, "A team store"), so the tests, which run
on the project's duckdb, drive it through this child in the lake's own environment. It prints one JSON object a
line, each flushed at once (the kill test reacts to "inside").
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from datetime import UTC, datetime, timedelta

import pandas as pd

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.records import MAIN, MetricRecord, RunRecord
from lib.core.results import OK, SampleResult, Verdict
from lib.core.samples import EvalSample
from lib.store import Store

SAMPLES_PER_RUN = 6


def say(**fields: object) -> None:
    print(json.dumps(fields, default=str), flush=True)


def make_run(run_id: str, n: int = SAMPLES_PER_RUN, started: datetime | None = None) -> RunRecord:
    """A run of `n` samples, each scored 1.0 or 0.5 (the run's score: the mean, checked by the tests)."""
    samples = [EvalSample(f"s-{i}", f"How long are backups of unit {i} kept?", f"Unit {i} keeps backups {i} days.",
                          (f"Unit {i} keeps backups {i} days.", "Exports run nightly."),
                          f"Unit {i} keeps backups {i} days.") for i in range(n)]
    results = [SampleResult(s.sample_id, OK, 1.0 if i % 2 == 0 else 0.5,
                            (Verdict(s.answer, True, "supported", s.answer),)) for i, s in enumerate(samples)]
    return RunRecord(run_id=run_id, started_at=started or datetime(2026, 9, 1, 2, 0) + timedelta(hours=len(run_id)),
                     pipeline={"writer": run_id.rsplit("-", 1)[0]}, samples={MAIN: samples},
                     metrics=[MetricRecord("faithfulness", results, "offline-lexical-v2",
                                           DEFAULT_TEMPLATES["faithfulness"], PROJECTED, MAIN, "fp-1")])


def seen(store: Store) -> dict[str, object]:
    """What a reader sees: each run's samples, scores and metric rows, and the row counts of the tables."""
    runs = {}
    for run_id in store.run_ids():
        m = store.run_metrics(run_id)
        runs[run_id] = {"samples": len(store.samples(run_id)), "scores": len(store.sample_scores(run_id)),
                        "metrics": m[["metric", "score", "n"]].to_dict("records")}
    tables = {t: store.cursor().execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
              for t in ("runs", "samples", "sample_scores", "run_metrics", "prompts", "migrations")}
    unsigned = store.cursor().execute("SELECT current_setting('allow_unsigned_extensions')").fetchall()[0][0]
    secrets = store.cursor().execute("SELECT name, persistent, storage FROM duckdb_secrets()").fetchall()
    return {"runs": runs, "tables": tables, "prompts": len(store.prompts()), "unsigned_allowed": unsigned,
            "secrets": secrets}


def record(url: str, prefix: str, n: int, samples: int = SAMPLES_PER_RUN) -> None:
    """Record n runs of `samples` samples; says what it saw when it opened the store (before), and its conflicts
    and times."""
    t0 = time.perf_counter()
    with Store(url) as store:
        opened = time.perf_counter() - t0
        before = seen(store)
        committed = []   # when each run's transaction had committed (for reads as of a date)
        for i in range(n):
            store.record_run(make_run(f"{prefix}-{i}", samples))
            committed.append(datetime.now(UTC).isoformat())
        say(recorded=n, conflicts=store.conflicts, opened=round(opened, 2),
            seconds=round(time.perf_counter() - t0, 2), before=before, committed=committed)


def read(url: str, as_of: str | None = None) -> None:
    """What a reader sees, now or as of an ISO time (then it also tries to write, and says what refused it)."""
    when = datetime.fromisoformat(as_of) if as_of else None
    with Store(url, as_of=when) as store:
        refused = None
        if when is not None:
            try:
                store.record_run(make_run("written-into-the-past"))
            except Exception as exc:
                refused = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
        say(**seen(store), refused=refused)


def watch(url: str, prefix: str, until_runs: int, limit: float) -> None:
    """A reader kept open while writers record (the dashboard): polls the runs until it sees `until_runs` whose
    id starts with `prefix` (or `limit` seconds pass), and lists every run it saw with other than 6 samples and
    6 scores."""
    t0 = time.perf_counter()
    polls, partial, n = 0, [], 0
    with Store(url) as store:
        say(ready=True)
        while time.perf_counter() - t0 < limit:
            cur = store.cursor()   # one read transaction a poll: a run is wholly in it or wholly out
            rows = cur.execute("""SELECT r.run_id, (SELECT count(*) FROM samples s WHERE s.run_id = r.run_id),
                                         (SELECT count(*) FROM sample_scores c WHERE c.run_id = r.run_id)
                                  FROM runs r""").fetchall()
            polls += 1
            partial += [r for r in rows if (r[1], r[2]) != (6, 6)]
            n = sum(r[0].startswith(prefix) for r in rows)
            if n >= until_runs:
                break
            time.sleep(0.2)
    say(polls=polls, runs=n, partial=partial)


def export(url: str, folder: str) -> None:
    """Export the lake to the Parquet layout; says the rows written and what it read from the lake. An export to
    object storage (s3://) is also read back here, with the operator's keys, as a reader elsewhere would."""
    from lib.store import lake
    from lib.store.parquet import ParquetStore, export_parquet, is_remote

    setup = lake.object_storage if is_remote(folder) else None
    with Store(url) as store:
        summary = export_parquet(store, folder, overwrite=True, setup=setup)
        back = None
        if setup is not None:
            with ParquetStore(folder, setup=setup) as history:
                back = {r: history.run_metrics(r)["score"].tolist() for r in history.run_ids()}
        say(rows=summary.rows, exported=back, **seen(store))


def hang(url: str, run_id: str) -> None:
    """Record a run, but stop for good inside its transaction once its samples are written (the test kills it)."""
    insert = Store._insert_frame

    def slow_insert(self: Store, cur: object, table: str, frame: pd.DataFrame) -> None:
        insert(self, cur, table, frame)  # type: ignore[arg-type]
        if table == "samples":
            say(inside=table, rows=len(frame))
            time.sleep(600)

    Store._insert_frame = slow_insert  # type: ignore[method-assign]
    with Store(url) as store:
        say(ready=True)
        store.record_run(make_run(run_id))


def roundtrip(url: str, first: str, back: str) -> None:
    """A file -> the (empty) lake -> another file, through `python -m lib store copy`; says each hop's checks."""
    from lib.cli.parser import main as cli
    from lib.store.copy import checks

    with Store(first) as store:   # 3 runs, one of them recorded twice (its first copy archived)
        for run_id in ("c-0", "c-1", "c-2", "c-1"):
            store.record_run(make_run(run_id))
    for src, dst in ((first, url), (url, back)):
        if cli(["store", "copy", src, dst]) != 0:
            raise SystemExit(f"store copy {src} {dst} failed")
    hops = {}
    for name, where in (("file", first), ("lake", url), ("back", back)):
        with Store(where) as store:
            hops[name] = checks(store.cursor())
    say(**hops)


def report(url: str, phase: str, folder: str) -> None:
    """Reports on the lake around a run recorded later (the test moves the catalog's clock back between the
    phases). Phase `then`: records asof-a (a nightly of 30 October) and writes the latest run's report as it reads
    now (lib.presentation.report.run_report, what `report` writes) to FOLDER/then.md. Phase `later`: records asof-b
    (5 November, with another judge), then writes `python -m lib report --as-of 2026-10-31` (asof.md) and the
    report as it reads now (now.md)."""
    from lib.cli.parser import main as cli
    from lib.presentation.report import run_report

    with Store(url) as store:
        if phase == "then":
            store.record_run(make_run("asof-a", started=datetime(2026, 10, 30, 2, 0)))
        else:
            run = make_run("asof-b", started=datetime(2026, 11, 5, 2, 0))
            store.record_run(dataclasses.replace(run, metrics=[
                dataclasses.replace(run.metrics[0], judge_model="offline-lexical-v3")]))
        with open(f"{folder}/{'then' if phase == 'then' else 'now'}.md", "w", encoding="utf-8") as out:
            out.write(run_report(store, store.resolve_run("latest")))
    if phase != "then" and cli(["report", "--db", url, "--run", "latest", "--out", f"{folder}/asof.md",
                                "--as-of", "2026-10-31"]) != 0:
        raise SystemExit("report --as-of failed")
    say(phase=phase)


def main(argv: list[str]) -> int:
    command, url, *rest = argv
    if command == "record":
        record(url, rest[0], int(rest[1]), *(int(x) for x in rest[2:3]))
    elif command == "read":
        read(url, rest[0] if rest else None)
    elif command == "export":
        export(url, rest[0])
    elif command == "watch":
        watch(url, rest[0], int(rest[1]), float(rest[2]))
    elif command == "roundtrip":
        roundtrip(url, rest[0], rest[1])
    elif command == "report":
        report(url, rest[0], rest[1])
    elif command == "hang":
        hang(url, rest[0])
    else:
        raise SystemExit(f"unknown command {command!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
