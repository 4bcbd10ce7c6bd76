"""A child process that works on a team store (DuckLake on Postgres), run by the lake environment's python.

    python -m tests.support.lake_child record URL PREFIX N [SAMPLES]  records runs PREFIX-0 .. PREFIX-(N-1)
    python -m tests.support.lake_child read URL [ISO_TIME]     the runs as read back (JSON), now or as of a time
    python -m tests.support.lake_child export URL FOLDER [ISO_TIME]  the Parquet export of the lake (FOLDER may be
                                                               s3://), then a read as of ISO_TIME
    python -m tests.support.lake_child hang URL RUN_ID         records RUN_ID but stops inside its transaction
    python -m tests.support.lake_child claim URL FOLDER NAME   a watcher's claim of one message, made to overlap
                                                               another's (`claim`)
    python -m tests.support.lake_child roundtrip URL FILE1 FILE2  FILE1 -> the lake at URL -> FILE2 (store copy)
    python -m tests.support.lake_child watch URL PREFIX N SEC [DRAWS]  reads while others write, until N runs
                                                               PREFIX... are in (drawing the Overview DRAWS times
                                                               as they land), then what a reader sees
    python -m tests.support.lake_child writes URL              every kind of write the store makes, twice (`writes`)
    python -m tests.support.lake_child cli URL FOLDER          the CLI's commands on the store (`cli_session`), then
                                                               each dashboard page drawn on it
    python -m tests.support.lake_child pages URL [PAGE...]      each dashboard page drawn on the store (`draw`)
    python -m tests.support.lake_child asof URL FOLDER         `report` then, the catalog's clock moved back 40 days
                                                               (`move_clock_back`), `report` later, then the pages now
                                                               and as of a date (`pages_as_of`)
    python -m tests.support.lake_child ablate URL ID N         an ablation's progress written N times (`progress`)
    python -m tests.support.lake_child label URL NAME N        N labels by NAME, one a write, and N incident states
    python -m tests.support.lake_child roles WRITER_URL READER_URL FOLDER   a writer's role records, a reader's
                                                               reads, draws the Overview, and is refused a write
    python -m tests.support.lake_child each STEPS              several commands in this one process, in turn (STEPS:
                                                               JSON, `each`)
    python -m tests.support.lake_child first URL               why the lake cannot be used here (`unavailable`), or
                                                               `read` (the first open makes the lake)

The lake's extensions are built for duckdb 1.5.5 (lib/store/README.md, "A team store"), so the tests, which run
on the project's duckdb, drive it through this child in the lake's own environment. It prints one JSON object a
line, each flushed at once (the kill test reacts to "inside").
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

if __name__ == "__main__":   # run as a script (the tests' warm python runs it so): the project's folder, not this
    sys.path[0] = str(Path(__file__).resolve().parents[2])   # one, is where imports look first

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
    # set-based: three queries, not three a run (on a lake each query is catalog round trips: 200 runs read one by
    # one cost 7 CPU s)
    cur = store.cursor()
    counts = dict.fromkeys(store.run_ids(), (0, 0))
    for run_id, n_samples, n_scores in cur.execute(
            """SELECT r.run_id, (SELECT count(*) FROM samples s WHERE s.run_id = r.run_id AND s.suite = $suite),
                      (SELECT count(*) FROM sample_scores c WHERE c.run_id = r.run_id AND c.suite = $suite)
               FROM runs r""", {"suite": MAIN}).fetchall():
        counts[run_id] = (n_samples, n_scores)
    metrics: dict[str, list[dict[str, object]]] = {r: [] for r in counts}
    for run_id, metric, score, n in cur.execute("SELECT run_id, metric, score, n FROM run_metrics WHERE suite = ? "
                                                "ORDER BY run_id, metric", [MAIN]).fetchall():
        metrics.setdefault(run_id, []).append({"metric": metric, "score": score, "n": n})
    runs = {run_id: {"samples": n_samples, "scores": n_scores, "metrics": metrics[run_id]}
            for run_id, (n_samples, n_scores) in counts.items()}
    tables = {t: store.cursor().execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
              for t in ("runs", "samples", "sample_scores", "run_metrics", "prompts", "migrations")}
    unsigned, threads = store.cursor().execute("SELECT current_setting('allow_unsigned_extensions'), "
                                               "current_setting('threads')").fetchall()[0]
    secrets = store.cursor().execute("SELECT name, persistent, storage FROM duckdb_secrets()").fetchall()
    return {"runs": runs, "tables": tables, "prompts": len(store.prompts()), "unsigned_allowed": unsigned,
            "threads": threads, "secrets": secrets}


def record(url: str, prefix: str, n: int, samples: int = SAMPLES_PER_RUN) -> None:
    """Record n runs of `samples` samples; says its conflicts and times, and when each run had committed."""
    t0 = time.perf_counter()
    with Store(url) as store:
        opened = time.perf_counter() - t0
        committed = []   # when each run's transaction had committed (for reads as of a date)
        for i in range(n):
            store.record_run(make_run(f"{prefix}-{i}", samples))
            committed.append(datetime.now(UTC).isoformat())
        say(recorded=n, conflicts=store.conflicts, opened=round(opened, 2),
            seconds=round(time.perf_counter() - t0, 2), committed=committed)


def read(url: str, as_of: str | None = None) -> dict[str, object]:
    """What a reader sees, now or as of an ISO time (then it also tries to write, and says what refused it)."""
    when = datetime.fromisoformat(as_of) if as_of else None
    with Store(url, as_of=when) as store:
        refused = None
        if when is not None:
            try:
                store.record_run(make_run("written-into-the-past"))
            except Exception as exc:
                refused = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
        return {**seen(store), "refused": refused}


def watch(url: str, prefix: str, until_runs: int, limit: float, draws: int = 0) -> None:
    """A reader kept open while writers record (the dashboard): polls the runs once a second until it sees
    `until_runs` whose id starts with `prefix` (or `limit` seconds pass), and lists every run it saw with other than
    6 samples and 6 scores. With `draws` > 0 it also draws the Overview page that many times as the runs land (when
    a 1/(draws+1), 2/(draws+1) ... share of them is in: paced by the writers' progress, not by the clock, so a slow
    machine costs no more draws) and once more at the end, and lists what the page showed going wrong (an exception
    or an error box). Then it reads the lake afresh (a new connection) and says what a reader sees (`seen`)."""
    t0 = time.perf_counter()
    polls, partial, n, shown, app, drawn_at = 0, [], 0, [], None, []
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
            if len(drawn_at) < draws and n * (draws + 1) >= until_runs * (len(drawn_at) + 1):
                errors, app = draw(url, ("pages/overview.py",), at=app)
                shown += errors["pages/overview.py"]
                drawn_at.append(n)
            time.sleep(1.0)
    if draws:   # the page once every run is in
        errors, app = draw(url, ("pages/overview.py",), at=app)
        shown += errors["pages/overview.py"]
        drawn_at.append(n)
    with Store(url) as fresh:
        after = seen(fresh)
    say(polls=polls, runs=n, partial=partial, draws=len(drawn_at), drawn_at=drawn_at, shown=shown, after=after)


def export(url: str, folder: str, as_of: str | None = None) -> None:
    """Export the lake to the Parquet layout; says the rows written and what it read from the lake. An export to
    object storage (s3://) is also read back here, with the operator's keys, as a reader elsewhere would. With
    `as_of`, this reader then also reads the lake as of that ISO time (`read`: under `then`)."""
    from lib.store import lake
    from lib.store.parquet import ParquetStore, export_parquet, is_remote

    setup = lake.object_storage if is_remote(folder) else None
    with Store(url) as store:
        summary = export_parquet(store, folder, overwrite=True, setup=setup)
        back = None
        if setup is not None:
            with ParquetStore(folder, setup=setup) as history:
                back = {r: history.run_metrics(r)["score"].tolist() for r in history.run_ids()}
        now = seen(store)
    say(rows=summary.rows, exported=back, **now, **({"then": read(url, as_of)} if as_of else {}))


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


def roundtrip(url: str, first: str, back: str) -> dict[str, object]:
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
    return hops


def report(url: str, phase: str, folder: str) -> None:
    """Reports on the lake around a run recorded later (`move_clock_back` moves the catalog's clock back between the
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


def move_clock_back(url: str) -> None:
    """Every snapshot of the lake at `url` committed 40 days earlier than it did (DuckLake keeps each snapshot's
    commit time in Postgres, here the test's server on loopback, changed with its psql as the server's user): what
    was recorded so far stands as recorded in October."""
    import subprocess

    from tests.support import postgres

    libpq = dict(part.split("=", 1) for part in url.split(":", 2)[2].split())
    back = "UPDATE ducklake_snapshot SET snapshot_time = snapshot_time - interval '40 days'"
    moved = subprocess.run(postgres.as_server_user([
        postgres.binary("psql"), "-h", libpq["host"], "-p", libpq["port"], "-U", postgres.SERVER_USER, "-d",
        libpq["dbname"], "-v", "ON_ERROR_STOP=1", "-c", back]), capture_output=True, text=True, timeout=60)
    if moved.returncode != 0 or not moved.stdout.startswith("UPDATE "):
        raise SystemExit(f"moving the clock back failed: {moved.stderr}")


def writes(store: Store) -> dict[str, object]:
    """Every write the store makes besides recording, each done twice where a process may do it again (a resumed
    ablation, a cached reply put again, a batch's faults collected twice, a re-judge resumed, a watcher's second
    look): what is read back. The same function runs on a file and on a lake; the tests compare the two."""
    from lib.core.calls import JudgeReply, JudgeRequest, Message, Usage
    from lib.core.labels import SCORE, Label
    from lib.store import batches, history
    from lib.store import watch as watch_store

    run = make_run("w-0")
    store.record_run(run)
    results = run.metrics[0].results
    spec = {"arms": ["blank:ground_truth"]}
    for _ in range(2):   # started, and resumed: one row, its results once
        store.start_ablation("abl-1", "w-0", MAIN, spec, "offline-lexical-v2", total=2 * len(results))
        store.add_ablation_batches("abl-1", {("faithfulness", "baseline", 0): results,
                                             ("faithfulness", "blank:ground_truth", 0): results[:3]})
    store.add_ablation_results("abl-1", "faithfulness", "blank:ground_truth", 0, results[3:])
    store.record_job_note("abl-1", state="stopped", reason="first", output_mode=None, pacing=None)
    store.record_job_note("abl-1", state="done", reason="second", output_mode="json", pacing=None)
    store.finish_ablation("abl-1", "done", {"summary": "ok"})
    ablation = store.ablation("abl-1")
    assert ablation is not None
    request = JudgeRequest("judge-x", (Message("user", "Is it supported?"),))
    for text in ("first reply", "second reply"):   # a key is kept once, with its first reply
        store.put(request, JudgeReply(text=text, usage=Usage(3, 4)))
        store.flush_cache()
    cached = store.get(request.key)
    job = {"batch_id": "b-1", "kind": "ablation", "job_id": "abl-1", "spec": spec, "model": "judge-x",
           "endpoint": "http://127.0.0.1:1/v1", "status": "submitted", "total": 2, "input_file_id": "file-1"}
    batches.add_job(store, job, pd.DataFrame({"key": ["k1", "k2"], "request": ["{}", "{}"], "items": [1, 1],
                                              "labels": ["[]", "[]"]}))
    for reason in ("timeout", "unreadable"):   # collected twice: the later reason stands
        batches.add_faults(store, "b-1", {"k2": reason})
    for text in ("one", "two"):
        batches.add_replies(store, "b-1", [("k1", text, 5, 6, None)])
    for _ in range(2):
        history.start_series(store, "ser-1", metric="faithfulness", suite=MAIN, spec=spec, judge_model="judge-x",
                             prompt_hash="ph-1", binding="projected", label="again", total=len(results))
        history.add_series_prompt(store, "ph-1", "faithfulness", "Claims: {answer}")
        history.add_series_run(store, "ser-1", "w-0", results)
    history.finish_series(store, "ser-1", "done")
    history.add_incident_state(store, "inc-1", "acknowledged", "looking", "ana")
    store.add_labels([Label(suite=MAIN, sample_id="s-0", metric="faithfulness", item=None, kind=SCORE, value=1.0,
                            content="c", labeller="ana", labelled_at=datetime(2026, 9, 2, 9, 0), source="cli",
                            note=None)])
    row = watch_store.OutboxRow("m-1", "json://127.0.0.1:1", "jump", None, "w-0", "a jump", "body")
    claimed = watch_store.claim(store, [row], [("fact-1", "jump")])
    again = watch_store.claim(store, [row], [("fact-1", "jump")])   # a second watcher finds the fact taken
    for _ in range(2):
        watch_store.mark_seen(store, [("fact-2", "close")])
        watch_store.put(store, [dataclasses.replace(watch_store.outbox(store)[0], status=watch_store.DELIVERED,
                                                   attempts=1)])
        watch_store.set_meta(store, "last_look", "2026-09-02")
    store.record_run(make_run("w-0"))   # recorded again: the first copy archived, then restored
    archived = store.archived_runs("w-0")
    store.restore_run(archived[0].archive_id)
    tables = ("runs", "samples", "ablations", "ablation_results", "job_log", "judge_cache", "batch_jobs",
              "batch_requests", "batch_faults", "batch_replies", "rejudges", "rejudge_runs", "rejudge_scores",
              "prompts", "incident_states", "labels", "watch_seen", "watch_outbox", "watch_meta", "archived_runs")
    counts = {t: store.cursor().execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in tables}
    series = history.series(store, "ser-1") or {}
    return {"counts": counts,
            "ablation": [ablation["status"], ablation["done"], ablation["total"], ablation["result"]],
            "job_note": list(store.job_note("abl-1") or ()), "cached": cached.text if cached else None,
            "faults": batches.faults(store, "b-1"), "replies": [list(r) for r in batches.replies(store, "b-1")],
            "series": [series.get("status"), series.get("done")],
            "series_history": history.series_history(store, "ser-1")[["run_id", "score", "n"]].to_dict("records"),
            "claimed": [claimed, again], "outbox": [[r.status, r.attempts] for r in watch_store.outbox(store)],
            "meta": watch_store.meta(store, "last_look"), "seen": sorted(watch_store.seen_keys(store)),
            "restored": [a.run_id for a in store.archived_runs("w-0")]}


SCORED = [{"sample_id": f"q-{i}", "question": f"How long are logs of unit {i} kept?",
           "answer": f"Logs of unit {i} are kept {i + 1} days.",
           "contexts": [f"Logs of unit {i} are kept {i + 1} days."],
           "ground_truth": f"Logs of unit {i} are kept {i + 1} days.", "faithfulness": 1.0} for i in range(4)]


def cli_session(db: str, folder: str) -> dict[str, object]:
    """The CLI's commands on one store, in one process (`python -m lib ...` as lib.cli.parser.main runs them): each
    command's exit code and what it printed that a user reads. The same session runs on a file and on a lake."""
    from pathlib import Path

    from lib.cli.parser import main as cli
    from lib.intake.runjson import run_to_json

    here = Path(folder)
    here.mkdir(parents=True, exist_ok=True)
    scored = here / "scored.jsonl"
    scored.write_text("".join(json.dumps(r) + "\n" for r in SCORED), encoding="utf-8")
    handed = here / "run.json"
    handed.write_text(run_to_json(make_run("rec-1")), encoding="utf-8")
    ragas = Path(__file__).resolve().parents[1] / "fixtures" / "imports" / "ragas_result.csv"
    out: dict[str, object] = {}

    def run(name: str, *argv: str) -> str:
        printed, said = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(said):
            code = cli([*argv[:1], *(("--db", db) if argv[0] not in ("archive", "labels") else ()), *argv[1:]]
                       if argv[0] not in ("archive", "labels") else [*argv[:2], "--db", db, *argv[2:]])
        out[name] = [code, said.getvalue().strip().splitlines()[-1:] if code else []]
        return printed.getvalue()

    run("ingest", "ingest", str(scored), "--run-id", "ing-1", "--started-at", "2026-10-01T02:00:00")
    run("record", "record", str(handed))
    run("import", "import", str(ragas), "--run-id", "rag-1", "--started-at", "2026-10-02T02:00:00")
    run("score", "score", str(scored), "--run-id", "sc-1", "--judge", "offline", "--metric", "faithfulness",
        "--started-at", "2026-10-03T02:00:00")
    again = run("score again", "score", str(scored), "--run-id", "sc-1", "--judge", "offline", "--metric",
                "faithfulness", "--started-at", "2026-10-03T02:00:00")
    out["replaced said"] = "replaced the earlier copy of run sc-1" in again
    listed = json.loads(run("runs", "runs", "--json"))
    out["runs"] = sorted(r["run_id"] for r in listed)
    kept = json.loads(run("archive list", "archive", "list", "--json"))
    out["archived"] = [a["run_id"] for a in kept]
    run("archive restore", "archive", "restore", kept[0]["archive_id"])
    ablated = run("ablate", "ablate", "--run", "sc-1", "--metric", "faithfulness", "--blank", "ground_truth",
                  "--repeats", "1", "--judge", "offline", "--json")
    out["ablate verdicts"] = [[v["arm"], v["kind"], v["baseline"]] for v in json.loads(ablated)["verdicts"]] \
        if ablated else None
    run("report", "report", "--run", "sc-1", "--out", str(here / "finding.md"))
    out["report names the run"] = (here / "finding.md").is_file() and "sc-1" in (here / "finding.md").read_text()
    run("labels add", "labels", "add", "--sample", "q-0", "--metric", "faithfulness", "--score", "1",
        "--labeller", "ana", "--run", "sc-1")
    history = run("labels history", "labels", "history")
    out["labels history"] = "ana" in history
    run("lint", "lint")
    looked = run("watch", "watch")
    out["watch printed"] = bool(looked.strip())
    return out


PAGES = ("pages/overview.py", "pages/trends.py", "pages/run.py", "pages/compare.py", "pages/ablation.py",
         "pages/canary.py", "pages/review.py", "pages/labels.py", "pages/import.py")


def draw(url: str, pages: Sequence[str] = PAGES, *, at: object = None) -> tuple[dict[str, list[str]], object]:
    """Draw dashboard pages (Streamlit's AppTest, app.py with EVALDRIFT_DB=url): per page, what a user would
    see go wrong (an exception, or an error box), and the app to draw again with."""
    import os
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    os.environ["EVALDRIFT_DB"] = url
    app = at
    if app is None:   # a new app runs once (AppTest switches pages only after a first run), then each page once:
        # a run before each switch drew the page before it again (9 pages: 18 draws for 9)
        app = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=120)
        app.run()  # type: ignore[attr-defined]
    shown: dict[str, list[str]] = {}
    for page in pages:
        app.switch_page(page).run()  # type: ignore[attr-defined]
        shown[page] = [str(e.value) for e in (*app.exception, *app.error)]  # type: ignore[attr-defined]
    return shown, app


def shown_text(app: object) -> list[str]:
    """Every line of text a page shows a user (titles, Markdown, captions, boxes, plain text, metrics' labels)."""
    kinds = ("title", "markdown", "caption", "info", "warning", "success", "error", "text", "metric")
    return [str(getattr(e, "label", None) or e.value) for kind in kinds for e in getattr(app, kind)]


def pages_as_of(url: str) -> dict[str, object]:
    """The pages around a run recorded later (after `report URL later`): draws the Overview now, as of 2026-10-01
    (before the lake's first snapshot), and as of 2026-10-31 (the sidebar's As of input), then the Ablation page,
    then empties the input: what each showed, what went wrong, and the Launch button's state and reason."""
    from datetime import date

    shown, app = draw(url, ("pages/overview.py",))
    now = shown_text(app)
    app.date_input(key="as_of_choice").set_value(date(2026, 10, 1)).run()  # type: ignore[attr-defined]
    before = [str(e.value) for e in (*app.exception, *app.error)]  # type: ignore[attr-defined]  # before the lake
    t0 = time.perf_counter()
    app.date_input(key="as_of_choice").set_value(date(2026, 10, 31)).run()  # type: ignore[attr-defined]
    seconds = time.perf_counter() - t0
    then = shown_text(app)
    errors = {"now": shown["pages/overview.py"], "before": before,
              "then": [str(e.value) for e in (*app.exception, *app.error)]}  # type: ignore[attr-defined]
    url_day = app.query_params.get("asof")  # type: ignore[attr-defined]
    app.switch_page("pages/ablation.py").run()  # type: ignore[attr-defined]
    errors["ablation"] = [str(e.value) for e in (*app.exception, *app.error)]  # type: ignore[attr-defined]
    launch = app.button(key="abl_launch")  # type: ignore[attr-defined]
    ablation = shown_text(app)
    app.date_input(key="as_of_choice").set_value(None).run()  # type: ignore[attr-defined]  # emptied: now
    return {"now": now, "then": then, "errors": errors, "url": url_day, "as_of_seconds": round(seconds, 2),
            "ablation": ablation, "launch": [launch.disabled, launch.help],
            "emptied": [shown_text(app), app.query_params.get("asof")]}  # type: ignore[attr-defined]


def roles(writer: str, reader: str, folder: str) -> dict[str, object]:
    """A writer's role records a run; the dashboard's read-only role reads it and draws the Overview, and its
    write (`python -m lib record`, as a user would try one) is refused: the exit code and the lines on stderr,
    and what the store holds after."""
    from pathlib import Path

    from lib.cli.parser import main as cli
    from lib.intake.runjson import run_to_json

    with Store(writer) as store:
        store.record_run(make_run("by-writer"))
    with Store(reader) as store:
        read = store.run_ids()
    shown, _ = draw(reader, ("pages/overview.py",))
    handed = Path(folder) / "run.json"
    handed.parent.mkdir(parents=True, exist_ok=True)
    handed.write_text(run_to_json(make_run("by-reader")), encoding="utf-8")
    said = io.StringIO()
    with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
        code = cli(["record", "--db", reader, str(handed)])
    with Store(writer) as store:
        after = seen(store)
    return {"read": read, "shown": shown["pages/overview.py"], "code": code, "said": said.getvalue().splitlines(),
            "after": sorted(after["runs"]), "samples": after["tables"]["samples"]}


def progress(url: str, ablation_id: str, batches: int) -> None:
    """An ablation job's writes, as one runs beside others: its row, then `batches` batches of results, each
    advancing its progress (an UPDATE of the ablations table, which conflicts with another job's on a lake), then
    its end. Says what it stored and the conflicts it retried."""
    results = make_run("x").metrics[0].results
    with Store(url) as store:
        store.start_ablation(ablation_id, "no-run", MAIN, {"job": ablation_id}, "offline-lexical-v2",
                             total=batches * len(results))
        for rep in range(batches):
            store.add_ablation_results(ablation_id, "faithfulness", "baseline", rep, results)
            store.record_job_note(ablation_id, state="running", reason=f"batch {rep}", output_mode=None, pacing=None)
        store.finish_ablation(ablation_id, "done", {"batches": batches})
        row = store.ablation(ablation_id, any_copy=True) or {}
        say(done=row.get("done"), status=row.get("status"), results=len(store.ablation_results(ablation_id)),
            conflicts=store.conflicts)


def label(url: str, name: str, n: int) -> None:
    """`n` labels by `name`, one a write (as people label one sample at a time), and as many incident states; says
    every label's seq and every state's (incident, seq) in the store once done."""
    from lib.core.labels import SCORE, Label
    from lib.store import history

    with Store(url) as store:
        for i in range(n):
            store.add_labels([Label(suite=MAIN, sample_id=f"s-{i}", metric="faithfulness", item=None, kind=SCORE,
                                    value=1.0, content="c", labeller=name, labelled_at=datetime(2026, 9, 2, 9, i),
                                    source="cli", note=None)])
            history.add_incident_state(store, "inc-1", "acknowledged", f"{name} {i}", name)
        seqs = [int(r[0]) for r in store.cursor().execute("SELECT seq FROM labels ORDER BY seq").fetchall()]
        states = [int(r[0]) for r in store.cursor().execute("SELECT seq FROM incident_states ORDER BY seq").fetchall()]
        say(seqs=seqs, states=states, conflicts=store.conflicts)


def claim(url: str, folder: str, name: str) -> None:
    """Claim the one message `watch-claim` as a watcher would (lib.store.watch.claim), held at its first insert
    until the other claimant (of two, named a and b) has reached its own: both have then read the facts as
    unclaimed, the race two watchers of one team store run. Says whether it claimed, and its conflicts."""
    from contextlib import contextmanager
    from pathlib import Path

    from lib.store import watch as ws

    here, other = Path(folder) / f"ready-{name}", Path(folder) / f"ready-{'b' if name == 'a' else 'a'}"

    class Held:
        def __init__(self, cur: object) -> None:
            self.cur = cur

        def execute(self, sql: str, params: object = None) -> object:
            if sql.startswith("INSERT INTO watch_seen"):
                here.touch()
                deadline = time.monotonic() + 60
                while not other.exists() and time.monotonic() < deadline:
                    time.sleep(0.05)
            return self.cur.execute(sql, params) if params is not None else self.cur.execute(sql)  # type: ignore[attr-defined]

    with Store(url) as store:
        plain = store.transaction

        @contextmanager
        def held():  # type: ignore[no-untyped-def]
            with plain() as cur:
                yield Held(cur)

        store.transaction = held  # type: ignore[method-assign]
        row = ws.OutboxRow("watch-claim", "json://127.0.0.1/x", "new", None, None, "faithfulness +0.16", "body")
        claimed = ws.claim(store, [row], [("fact-1", "jump")])
        store.transaction = plain  # type: ignore[method-assign]
        outbox = len(ws.outbox(store))
        say(claimed=claimed, conflicts=store.conflicts, outbox=outbox)


ONE = ("writes", "roundtrip", "cli", "roles", "asof")   # the commands `one` does


def one(command: str, url: str, rest: Sequence[str]) -> dict[str, object]:
    """What one of the commands a single process does (no other process is the point) says: `writes`, `roundtrip`,
    `cli`, `roles`, `asof`."""
    if command == "writes":
        with Store(url) as store:
            return writes(store)
    if command == "roundtrip":
        return roundtrip(url, rest[0], rest[1])
    if command == "cli":   # the session, then every page drawn on what it left
        session = cli_session(url, rest[0])
        shown, _ = draw(url, PAGES)
        return {"session": session, "shown": shown}
    if command == "roles":
        return roles(url, rest[0], rest[1])
    if command == "asof":   # the reports around a run recorded later, then the pages as of a date
        report(url, "then", rest[0])
        move_clock_back(url)
        report(url, "later", rest[0])
        return pages_as_of(url)
    raise SystemExit(f"unknown command {command!r}")


def each(steps: dict[str, dict[str, object]]) -> dict[str, object]:
    """Several commands in this one process, in turn, each with its own settings (`env`, set for it alone; a value
    of None unsets the variable): per step what it says, or the traceback it raised (a step's failure is its test's
    alone). The process's start, imports, the lake's extensions and Streamlit are then paid once, not once a test.
    A step's `meet` ([here, other]: two paths) holds it until another process's step has reached the same point
    (it touches `here`, waits up to 60 s for `other`): two processes' steps then start together, as two racing
    processes started together would."""
    import os
    import traceback
    from pathlib import Path

    out: dict[str, object] = {}
    for name, step in steps.items():
        env = dict(step.get("env") or {})  # type: ignore[call-overload]
        kept = {k: os.environ.get(k) for k in env}
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        try:
            if step.get("meet"):
                here, other = (Path(p) for p in step["meet"])  # type: ignore[attr-defined]
                here.touch()
                deadline = time.monotonic() + 60
                while not other.exists() and time.monotonic() < deadline:
                    time.sleep(0.05)
            argv = [str(a) for a in step["argv"]]  # type: ignore[attr-defined]
            if argv[0] in ONE:
                out[name] = json.loads(json.dumps(one(argv[0], argv[1], argv[2:]), default=str))
            else:   # a command that says its result: the last line it said
                said = io.StringIO()
                with contextlib.redirect_stdout(said):
                    main(argv)
                out[name] = json.loads(said.getvalue().strip().splitlines()[-1])
        except BaseException:
            out[name] = {"error": traceback.format_exc()[-3000:]}
        finally:
            for k, v in kept.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return out


def main(argv: list[str]) -> int:
    command, url, *rest = argv
    if command in ONE:
        say(**one(command, url, rest))
    elif command == "each":   # URL: the steps, as JSON
        say(**each(json.loads(url)))
    elif command == "record":
        record(url, rest[0], int(rest[1]), *(int(x) for x in rest[2:3]))
    elif command == "read":
        say(**read(url, rest[0] if rest else None))
    elif command == "first":   # the extensions missing: said, not raised (the tests skip, or fail on CI, with it)
        from lib.store import lake

        why = lake.available()
        say(**({"unavailable": why} if why else read(url)))
    elif command == "export":
        export(url, rest[0], rest[1] if len(rest) > 1 else None)
    elif command == "watch":
        watch(url, rest[0], int(rest[1]), float(rest[2]), int(rest[3]) if len(rest) > 3 else 0)
    elif command == "pages":
        t0 = time.perf_counter()
        shown, _ = draw(url, rest or PAGES)
        say(shown=shown, seconds=round(time.perf_counter() - t0, 1))
    elif command == "ablate":
        progress(url, rest[0], int(rest[1]))
    elif command == "label":
        label(url, rest[0], int(rest[1]))
    elif command == "claim":
        claim(url, rest[0], rest[1])
    elif command == "hang":
        hang(url, rest[0])
    else:
        raise SystemExit(f"unknown command {command!r}")
    return 0


def _end(code: int) -> None:
    """Exit with `code` without tearing DuckDB down: the lake environment's DuckDB (1.5.5) aborts ("terminate called
    without an active exception", SIGABRT) tearing an instance down at the exit of a forked process, which a child of
    the tests' warm python is (6 of 6 tries; the project's 2.0.1 in none). Every store a command opens is closed by
    then, so nothing is left to write."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    try:
        status = main(sys.argv[1:])
    except SystemExit as exc:
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        status = 1
    _end(status)
