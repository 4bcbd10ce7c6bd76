"""A team store: DuckLake with its catalog in the machine's Postgres 15 (started on loopback here) and its data
as Parquet files in a folder. Writers in separate processes record at once and lose nothing; a writer killed
inside its transaction leaves nothing of its run; the lake exports to the Parquet layout the project's duckdb
reads. The store URL's rules, the keys the lake cannot hold and the bounded conflict retries are pure and
tested without the lake.

The lake's extensions exist for duckdb 1.5.5 only (lib/store/README.md, "A team store"), so the lake itself is
driven through tests/support/lake_child.py in the lake environment (EVALDRIFT_LAKE_PYTHON, default
/tmp/lake-venv/bin/python, built from lib/store/requirements-lake.txt); without it, or without Postgres, those
tests skip and say why.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest

from lib.core.errors import StoreError
from lib.core.labels import SCORE, Label
from lib.core.records import MAIN, RunRecord
from lib.store import Store, copy, lake
from lib.store.parquet import ParquetStore
from lib.store.schema import MIGRATIONS
from tests.conftest import small_demo
from tests.support import postgres, s3, tool_runs
from tests.support.cli import run_cli
from tests.support.lake_child import PAGES
from tests.support.tool_runs import tool_path
from tests.support.warm_python import WarmPython
from tests.test_store import make_run

ROOT = Path(__file__).resolve().parent.parent
Lake = tuple[str, dict[str, str], postgres.Postgres]
LAKE_PYTHON = tool_path(*tool_runs.LAKE_PYTHON)
CATALOG = "postgres:dbname=evals host=127.0.0.1 port=5432 user=evaldrift"


@pytest.mark.parametrize(("url", "environ", "catalog", "data_path", "error"), [
    ("ducklake:" + CATALOG, {}, CATALOG, None, None),
    ("ducklake:" + CATALOG, {"EVALDRIFT_DATA_PATH": "/srv/lake"}, CATALOG, "/srv/lake", None),
    ("ducklake:" + CATALOG, {"EVALDRIFT_DATA_PATH": ""}, CATALOG, None, None),
    ("ducklake:" + CATALOG + " password=hunter2", {}, None, None, "holds a password"),
    ("ducklake:postgres:password=hunter2 dbname=evals", {}, None, None, "holds a password"),
    ("ducklake:postgres:postgresql://evaldrift:hunter2@db.internal/evals", {}, None, None, "holds a password"),
    ("ducklake:postgres:postgresql://evaldrift@db.internal/evals", {}, "postgres:postgresql://evaldrift@db.internal/evals",
     None, None),
    ("ducklake:sqlite:/srv/catalog.sqlite", {}, None, None, "catalog must be one of ducklake:postgres:"),
    ("ducklake:/srv/catalog.ducklake", {}, None, None, "catalog must be one of"),
])
def test_a_store_url_names_a_postgres_catalog_and_never_a_password(
        url: str, environ: dict[str, str], catalog: str | None, data_path: str | None, error: str | None) -> None:
    if error is not None:
        with pytest.raises(StoreError, match=error) as caught:
            lake.parse(url, environ)
        assert "hunter2" not in str(caught.value)
        return
    target = lake.parse(url, environ)
    assert (target.catalog, target.data_path, target.name) == (catalog, data_path, url)


@pytest.mark.parametrize(("value", "threads", "error"), [
    (None, None, None),    # unset: DuckDB's default (one a core)
    ("", None, None),
    ("1", 1, None),        # a process that records
    (" 4 ", 4, None),
    ("0", None, "EVALDRIFT_LAKE_THREADS '0': give DuckDB's threads"),
    ("-1", None, "a whole number from 1"),
    ("two", None, "a whole number from 1"),
    ("1.5", None, "a whole number from 1"),
])
def test_the_lakes_threads_come_from_the_operators_environment(value: str | None, threads: int | None,
                                                               error: str | None) -> None:
    environ = {} if value is None else {"EVALDRIFT_LAKE_THREADS": value}
    if error is not None:
        with pytest.raises(StoreError, match=error):
            lake.parse("ducklake:" + CATALOG, environ)
        return
    assert lake.parse("ducklake:" + CATALOG, environ).threads == threads


@pytest.mark.parametrize(("target", "expected"), [
    ("ducklake:postgres:dbname=evals", True),
    ("data/evals.duckdb", False),
    (Path("ducklake:postgres:dbname=evals"), False),   # a Path is a file, whatever its name
    ("evals-ducklake:postgres", False),
])
def test_only_a_ducklake_url_opens_a_team_store(target: object, expected: bool) -> None:
    assert lake.is_lake(target) is expected


@pytest.mark.parametrize(("statement", "expected"), [
    ("CREATE TABLE t (a VARCHAR PRIMARY KEY, b INT)", "CREATE TABLE t (a VARCHAR NOT NULL, b INT)"),
    ("CREATE TABLE t (a VARCHAR NOT NULL, b INT NOT NULL, PRIMARY KEY (a, b))",
     "CREATE TABLE t (a VARCHAR NOT NULL, b INT NOT NULL)"),
    ("CREATE TABLE t (a VARCHAR NOT NULL,\n        PRIMARY KEY (a))", "CREATE TABLE t (a VARCHAR NOT NULL)"),
    ("ALTER TABLE runs ADD COLUMN notes VARCHAR", "ALTER TABLE runs ADD COLUMN notes VARCHAR"),
])
def test_the_lake_takes_each_table_without_its_key(statement: str, expected: str) -> None:
    assert lake.without_keys(statement) == expected


def test_every_migration_statement_has_no_key_left_for_the_lake() -> None:
    from lib.store.schema import statements

    for stmt in statements():
        assert "PRIMARY KEY" not in lake.without_keys(stmt).upper(), stmt


def _conflict() -> duckdb.Error:
    return duckdb.TransactionException("TransactionContext Error: Failed to commit: conflict on snapshot 7")


@pytest.mark.parametrize(("failures", "retries", "calls", "outcome"), [
    (0, 3, 1, "written"),
    (2, 3, 3, "written"),          # two conflicts retried, the third attempt commits
    (4, 3, 4, "gave up"),          # 1 + 3 attempts, all conflicted: said, with the count
    (-1, 3, 1, "raised"),          # not a conflict (a bad statement): raised at once, never retried
])
def test_conflicts_are_retried_bounded_and_said_when_given_up(failures: int, retries: int, calls: int,
                                                             outcome: str) -> None:
    attempts: list[int] = []
    told: list[str] = []
    pauses: list[float] = []

    def write() -> str:
        attempts.append(1)
        if failures < 0:
            raise duckdb.BinderException("Binder Error: no such column")
        if len(attempts) <= failures:
            raise _conflict()
        return "written"

    if outcome == "written":
        assert lake.retrying("recording run 'r'", write, retries=retries, pause=pauses.append,
                             on_retry=told.append) == "written"
    elif outcome == "gave up":
        with pytest.raises(lake.LakeConflictError, match=r"recording run 'r' gave up after 4 attempts") as caught:
            lake.retrying("recording run 'r'", write, retries=retries, pause=pauses.append, on_retry=told.append)
        assert caught.value.attempts == 4
    else:
        with pytest.raises(duckdb.BinderException):
            lake.retrying("recording run 'r'", write, retries=retries, pause=pauses.append, on_retry=told.append)
    assert len(attempts) == calls
    assert len(told) == len(pauses) == min(max(failures, 0), retries)
    assert pauses == sorted(pauses)   # a growing pause between attempts


@pytest.mark.parametrize(("error", "retried"), [
    (duckdb.TransactionException("TransactionContext Error: Failed to commit"), True),
    (duckdb.Error("Transaction conflict on snapshot 9"), True),
    (duckdb.Error('Failed to initialize DuckLake: Failed to execute query "CREATE TABLE ...": ERROR:  duplicate key '
                  'value violates unique constraint "pg_type_typname_nsp_index" Key already exists.'), True),
    (duckdb.Error("Failed to initialize DuckLake: permission denied for schema public"), False),
    # a role that may only read: Postgres refuses the commit's catalog write; retrying cannot change that
    (duckdb.TransactionException('TransactionContext Error: Failed to commit: Failed to commit DuckLake transaction.\n'
                                 'Failed to execute query "INSERT INTO ducklake_snapshot ...": ERROR:  permission '
                                 'denied for table ducklake_snapshot\n'), False),
    (duckdb.BinderException("Binder Error: column already exists"), False),
    (ValueError("conflict"), False),
])
def test_what_counts_as_another_writers_conflict(error: BaseException, retried: bool) -> None:
    assert lake.is_conflict(error) is retried


KEYS = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "hunter2-s3"}


@pytest.mark.parametrize(("environ", "expected", "error"), [
    ({}, None, None),                                                    # a lake in a folder needs no keys
    (KEYS, lake.S3Credentials("AKIDEXAMPLE", "hunter2-s3"), None),      # AWS itself: its endpoint, TLS
    ({**KEYS, "AWS_SESSION_TOKEN": "tok", "AWS_DEFAULT_REGION": "eu-west-1"},
     lake.S3Credentials("AKIDEXAMPLE", "hunter2-s3", "tok", "eu-west-1"), None),
    ({**KEYS, "AWS_REGION": "eu-central-1", "AWS_DEFAULT_REGION": "eu-west-1"},
     lake.S3Credentials("AKIDEXAMPLE", "hunter2-s3", None, "eu-central-1"), None),   # AWS_REGION first
    ({**KEYS, "AWS_ENDPOINT_URL": "http://127.0.0.1:9000"},
     lake.S3Credentials("AKIDEXAMPLE", "hunter2-s3", endpoint="127.0.0.1:9000", use_ssl=False), None),
    ({**KEYS, "AWS_ENDPOINT_URL": "http://x:1", "AWS_ENDPOINT_URL_S3": "https://minio.internal/"},
     lake.S3Credentials("AKIDEXAMPLE", "hunter2-s3", endpoint="minio.internal", use_ssl=True), None),
    ({**KEYS, "AWS_ENDPOINT_URL": "http://[::1]:9000"},
     lake.S3Credentials("AKIDEXAMPLE", "hunter2-s3", endpoint="[::1]:9000", use_ssl=False), None),
    ({"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE"}, None, "needs both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
    ({"AWS_SECRET_ACCESS_KEY": "hunter2-s3"}, None, "only AWS_SECRET_ACCESS_KEY is set"),
    ({**KEYS, "AWS_ENDPOINT_URL": "http://admin:hunter2@127.0.0.1:9000"}, None, "no user, path or query"),
    ({**KEYS, "AWS_ENDPOINT_URL": "http://127.0.0.1:9000/bucket"}, None, "no user, path or query"),
    ({**KEYS, "AWS_ENDPOINT_URL": "ftp://127.0.0.1"}, None, r"http\(s\)://host"),
    ({**KEYS, "AWS_ENDPOINT_URL": "http://127.0.0.1:port"}, None, "the port is not a number"),
])
def test_object_storage_keys_come_from_the_operators_aws_variables(
        environ: dict[str, str], expected: lake.S3Credentials | None, error: str | None) -> None:
    if error is not None:
        with pytest.raises(StoreError, match=error) as caught:
            lake.s3_credentials(environ)
        assert "hunter2" not in str(caught.value)
        return
    got = lake.s3_credentials(environ)
    assert got == expected
    assert "hunter2" not in repr(got)   # the secret is never shown


@pytest.mark.parametrize(("s3_keys", "sql"), [
    (lake.S3Credentials("AKID", "se'cret"),
     "CREATE OR REPLACE TEMPORARY SECRET evaldrift_s3 (TYPE s3, KEY_ID 'AKID', SECRET 'se''cret', REGION 'us-east-1')"),
    (lake.S3Credentials("AKID", "s", "tok", "eu-west-1", "127.0.0.1:9000", False),
     "CREATE OR REPLACE TEMPORARY SECRET evaldrift_s3 (TYPE s3, KEY_ID 'AKID', SECRET 's', REGION 'eu-west-1', "
     "SESSION_TOKEN 'tok', ENDPOINT '127.0.0.1:9000', URL_STYLE 'path', USE_SSL false)"),
])
def test_the_keys_become_a_temporary_secret_of_one_connection(s3_keys: lake.S3Credentials, sql: str) -> None:
    """The text only: the project's duckdb 2.0.1 would try to download httpfs for a TYPE s3 secret (the lake
    environment runs it, in the object-storage test below)."""
    assert lake.secret_sql(s3_keys) == sql


@pytest.mark.parametrize(("environ", "data_path", "error"), [
    ({"EVALDRIFT_DATA_PATH": "s3://team/lake", **KEYS}, "s3://team/lake", None),
    ({"EVALDRIFT_DATA_PATH": "s3://team/lake"}, None, "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
    ({"EVALDRIFT_DATA_PATH": "gs://team/lake", **KEYS}, None, "a folder or an s3:// location"),
    ({"EVALDRIFT_DATA_PATH": "/srv/lake", **KEYS}, "/srv/lake", None),   # keys set, data in a folder: fine
])
def test_a_data_path_in_object_storage_needs_the_operators_keys(
        environ: dict[str, str], data_path: str | None, error: str | None) -> None:
    if error is not None:
        with pytest.raises(StoreError, match=error):
            lake.parse("ducklake:" + CATALOG, environ)
        return
    target = lake.parse("ducklake:" + CATALOG, environ)
    assert target.data_path == data_path and target.s3 == lake.s3_credentials(environ)


def test_the_projects_duckdb_says_where_object_storage_works(tmp_path: Path) -> None:
    """duckdb 2.0.1 has no httpfs here and cannot download it: reading or exporting to s3:// says to use the team
    store's environment at once (measured 0.02 s), instead of `INSTALL httpfs`, which fails after 2-3 s."""
    from lib.store.parquet import export_parquet

    with pytest.raises(StoreError, match=r"duckdb 1\.5\.5 only.*lib/store/requirements-lake\.txt"):
        ParquetStore("s3://team/evaldrift")
    with Store(tmp_path / "db.duckdb") as store, pytest.raises(StoreError, match="httpfs"):
        export_parquet(store, "s3://team/evaldrift")


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-10-31", datetime(2026, 10, 31, 23, 59, 59, 999_999)),   # a date: as the store stood at its end
    (" 2026-10-31 ", datetime(2026, 10, 31, 23, 59, 59, 999_999)),
    ("2026-10-31T18:00", datetime(2026, 10, 31, 18, 0)),            # an ISO time: that instant
    ("2026-10-31 18:00:05", datetime(2026, 10, 31, 18, 0, 5)),
    ("2026-10-31T18:00+02:00", datetime(2026, 10, 31, 18, 0, tzinfo=timezone(timedelta(hours=2)))),
    ("31/10/2026", None),
    ("2026-13-01", None),
    ("last week", None),
])
def test_as_of_a_date_means_that_days_end_and_a_time_that_instant(text: str, expected: datetime | None) -> None:
    if expected is None:
        with pytest.raises(StoreError, match="give a date"):
            lake.as_of_time(text)
    else:
        assert lake.as_of_time(text) == expected


@pytest.mark.parametrize(("argv", "error"), [
    (["--db", "{file}", "--as-of", "2026-10-31"], "is a DuckDB file, which keeps only its present"),
    (["--db", "ducklake:" + CATALOG, "--as-of", "2026-10-31", "--ablate"], "writes nothing: drop --ablate"),
    (["--db", "ducklake:" + CATALOG, "--as-of", "yesterday"], "give a date"),
    (["--db", "ducklake:" + CATALOG + " password=x", "--as-of", "2026-10-31"], "holds a password"),
])
def test_report_as_of_reads_only_a_team_store_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], error: str) -> None:
    from lib.cli.parser import main as cli

    db = tmp_path / "evals.duckdb"
    Store(db).close()
    code = cli(["report", "--run", "latest", "--out", str(tmp_path / "r.md"),
                *(a.replace("{file}", str(db)) for a in argv)])
    assert code == 2 and error in capsys.readouterr().err
    assert not (tmp_path / "r.md").exists()


def test_paired_steps_pair_each_step_by_sample_over_scores_ok_in_both(tmp_path: Path) -> None:
    """paired_steps takes the earlier runs' scores first, then pairs the later ones (its join order on a lake): the
    pairs are still per step, per sample, over scores ok in both runs. Hand-computed: a -> b pairs s-1 (1.0 -> 0.5)
    and s-2 (0.5 -> 0.0), s-3 failed in b: n 2, mean -0.5, sd 0; b -> c pairs s-1 (0.5 -> 1.0) alone (s-2 failed in
    c, s-3 in b): n 1, mean 0.5, sd 0 (one pair); a step of another metric pairs nothing."""
    from lib.core.results import FAILED, OK, SampleResult
    from tests.test_store import SAMPLES

    def run(run_id: str, day: int, scores: list[float | None]) -> RunRecord:
        results = [SampleResult(s.sample_id, OK, v) if v is not None else
                   SampleResult(s.sample_id, FAILED, reason="judge reply is not JSON")
                   for s, v in zip(SAMPLES, scores, strict=True)]
        return make_run(run_id, day=day, results=results)

    with Store(tmp_path / "db.duckdb") as store:
        store.record_run(run("a", 1, [1.0, 0.5, 0.25]))
        store.record_run(run("b", 2, [0.5, 0.0, None]))
        store.record_run(run("c", 3, [1.0, None, 0.75]))
        got = store.paired_steps([("faithfulness", "a", "b"), ("faithfulness", "b", "c"),
                                  ("answer_relevance", "a", "b")])
    rows = {(r.prev_run_id, r.run_id): (r.n, r.mean, r.sd) for r in got.itertuples()}
    assert rows == {("a", "b"): (2, pytest.approx(-0.5), pytest.approx(0.0)),
                    ("b", "c"): (1, pytest.approx(0.5), 0.0)}
@pytest.mark.parametrize(("error", "said"), [
    (duckdb.TransactionException('Failed to commit DuckLake transaction.\nFailed to execute query "INSERT INTO '
                                 '"public".ducklake_inlined_data_25_1 VALUES (\'Unit 0 keeps backups\')": ERROR:  '
                                 'permission denied for table ducklake_snapshot\n'),
     "permission denied for table ducklake_snapshot"),
    (duckdb.Error("ERROR:  permission denied for schema public"), "permission denied for schema public"),
    (duckdb.TransactionException("TransactionContext Error: Failed to commit: conflict on snapshot 7"), None),
    (ValueError("ERROR:  permission denied for table x"), None),   # not the store's error
])
def test_a_refused_write_is_told_by_postgres_line_alone(error: BaseException, said: str | None) -> None:
    assert lake.refusal(error) == said


# --- the lake itself, on the machine's Postgres -------------------------------------------------------------------

def _lake_or_skip(why: str | None = None) -> str:
    """The lake environment's python, or the test skipped (failed on CI) with why the lake cannot run here: no
    environment, no Postgres, or `why` (what the first lake child said: the extensions missing)."""
    python = Path(LAKE_PYTHON)
    if not python.exists():
        why = f"no lake environment at {python} (python -m venv; pip install -r lib/store/requirements-lake.txt)"
    why = why or postgres.missing()
    if why and os.environ.get("CI") == "true":   # .ci/run builds the lake environment: a green run ran these
        pytest.fail(why)
    if why:
        pytest.skip(why)
    return str(python)


TEMPLATE = "lake_template"   # a lake made and migrated once; each test's lake is a copy (_lake)


@pytest.fixture(scope="module")
def team_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str], postgres.Postgres]]:
    """A lake on a fresh Postgres: its store URL, the environment its processes get (EVALDRIFT_DATA_PATH), and
    the server (for another lake: `_lake` copies an empty, migrated one)."""
    python = _lake_or_skip()
    server = postgres.start()
    try:
        # one DuckDB thread a process, as a recording process is advised to run (lib/store/README.md): a writer's
        # run 75-92 -> 55-70 ms of CPU; the test's lakes hold a few runs, no long history to scan in parallel
        env = {**os.environ, "EVALDRIFT_DATA_PATH": str(tmp_path_factory.mktemp("lake-data")),
               "PYTHONPATH": str(ROOT), "EVALDRIFT_LAKE_PYTHON": python, "EVALDRIFT_LAKE_THREADS": "1"}
        # each child forked from one lake python that has done the child's imports (pandas, duckdb, lib.store:
        # ~0.45 CPU s a child, 15 children): the file 79.9 -> 71.1 and 86.7 -> 77.9 CPU s (2 rounds, load 12-43)
        with WarmPython(python, ("tests.support.lake_child",), env=env) as warm:
            _WARM[python] = str(warm.path)
            try:
                # the first open makes the lake and its schema; the same child first says whether the lake's
                # extensions are there (one process, not a probe before it)
                _lake_or_skip(_child(env, "first", "ducklake:" + server.catalog(TEMPLATE)).get("unavailable"))
                yield _lake(server, "evals"), env, server
            finally:
                _WARM.pop(python, None)
    finally:
        server.stop()


def _lake(server: postgres.Postgres, dbname: str) -> str:
    """A test's own lake: a copy of the module's empty, migrated one (the lake a first open makes, as the tests of
    a new lake made by racing processes, and of one in object storage, make their own)."""
    return "ducklake:" + server.catalog(dbname, template=TEMPLATE)


# the lake python's warm twin (tests/support/warm_python.py) while `team_store` is up: a child is forked from a
# process that has imported tests.support.lake_child's modules, instead of a new interpreter importing them
_WARM: dict[str, str] = {}
CHILD = ROOT / "tests" / "support" / "lake_child.py"


def _command(env: dict[str, str], argv: tuple[str, ...], *, warm: bool = True) -> list[str]:
    """`python tests/support/lake_child.py ARGV...` in the lake environment: forked from its warm twin, or (`warm`
    False: a process the test kills by its pid) a process of its own."""
    python = env["EVALDRIFT_LAKE_PYTHON"]
    return [_WARM.get(python, python) if warm else python, str(CHILD), *argv]


def _child(env: dict[str, str], *argv: str, timeout: float = 300) -> dict:
    done = subprocess.run(_command(env, argv), cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _start(env: dict[str, str], *argv: str, warm: bool = True) -> subprocess.Popen[str]:
    return subprocess.Popen(_command(env, argv, warm=warm), cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


READER, WRITER = "evaldrift_reader", "evaldrift_writer"


@pytest.fixture(scope="module")
def one_process(team_store: Lake, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The lake work where no second process is the point, done by one lake child in turn (`lake_child.each`), each
    step on a lake of its own: every write (`writes`), a store copy file -> lake -> file (`roundtrip`), the CLI's
    session and every page (`cli`), the read-only role's reads and refused write (`roles`), and the reports and
    pages as of a date (`asof`). One process's start, imports, extensions and Streamlit instead of five (measured:
    about 1 CPU s each, 2-3 with Streamlit). Per step, what it said (or its traceback, under "error")."""
    _, env, server = team_store
    folder = tmp_path_factory.mktemp("one-process")
    (folder / "asof").mkdir()   # the reports' folder
    _lake(server, "guarded")   # the operator's role (the server's superuser) made the lake and its schema
    # the grants lib/store/README.md gives: writers write the catalog's rows (and make DuckLake's small-insert
    # tables), the dashboard's role only reads, those tables too
    server.sql("guarded", f"CREATE ROLE {WRITER} LOGIN", f"CREATE ROLE {READER} LOGIN",
               f"GRANT USAGE, CREATE ON SCHEMA public TO {WRITER}",
               f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {WRITER}",
               f"GRANT USAGE ON SCHEMA public TO {READER}", f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {READER}",
               f"ALTER DEFAULT PRIVILEGES FOR ROLE {WRITER} IN SCHEMA public GRANT SELECT ON TABLES TO {READER}")
    steps = {
        "writes": {"argv": ["writes", _lake(server, "written")]},
        "roundtrip": {"argv": ["roundtrip", _lake(server, "copied"), str(folder / "a.duckdb"),
                               str(folder / "b.duckdb")]},
        # watch needs a channel; nothing is sent
        "cli": {"argv": ["cli", _lake(server, "commands"), str(folder / "lake")],
                "env": {"EVALDRIFT_NOTIFY": "json://127.0.0.1:9/unused"}},
        "roles": {"argv": ["roles", server.url("guarded", WRITER), server.url("guarded", READER),
                           str(folder / "roles")]},
        "asof": {"argv": ["asof", _lake(server, "asof"), str(folder / "asof")]},
    }
    return {**_child(env, "each", json.dumps(steps), timeout=900), "folder": str(folder)}


def _step(done: dict, name: str) -> dict:
    """One step of a `lake_child.each` (`one_process`, `written_then_read`, `two_processes`): what it said, or its
    traceback as the failure."""
    said = done[name]
    assert "error" not in said, said.get("error")
    return json.loads(json.dumps(said))   # the module's copy stays whole


@pytest.fixture(scope="module")
def s3_server() -> Iterator[s3.S3Server]:
    """moto's S3-compatible server on loopback (tests/support/s3.py)."""
    server = s3.start()
    try:
        yield server
    finally:
        server.stop()


def _pg_dump(server: postgres.Postgres, dbname: str) -> str:
    """The whole catalog database as SQL text: what the lake wrote to Postgres."""
    done = subprocess.run(postgres.as_server_user([postgres.binary("pg_dump"), "-h", "127.0.0.1", "-p",
                                                   str(server.port), "-U", postgres.SERVER_USER, dbname]),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def written_then_read(team_store: Lake, s3_server: s3.S3Server, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Runs recorded by one process and read back by another, on two lakes: `solo` (the module's data path) and
    `ons3` (EVALDRIFT_DATA_PATH=s3://, moto's server on loopback). The writer records 2 runs in each; the reader,
    another process, first reads the lake on S3 without the keys, then exports the solo lake and reads it as of
    solo-0's commit, then exports the S3 lake to the bucket with the keys (a reader elsewhere: no data path, the
    catalog recorded the bucket). Each child does its steps in turn (`lake_child.each`: two processes, not five;
    keyless first, so nothing of the keys' is loaded in that process yet). Per step what it said."""
    url, env, server = team_store
    on_s3 = "ducklake:" + server.catalog("ons3")
    bucket = s3_server.bucket("team-lake")
    keys = s3_server.environ()
    # 12 samples a run on S3: DuckLake keeps a write of up to 10 rows a table in the catalog itself (data inlining)
    written = _child(env, "each", json.dumps({
        "solo": {"argv": ["record", url, "solo", "2"]},
        "ons3": {"argv": ["record", on_s3, "s3run", "2", "12"],
                 "env": {**keys, "EVALDRIFT_DATA_PATH": f"{bucket}/data"}}}))
    solo = _step(written, "solo")
    export = tmp_path_factory.mktemp("export")
    read = _child(env, "each", json.dumps({
        "keyless": {"argv": ["read", on_s3], "env": {"EVALDRIFT_DATA_PATH": None}},
        "solo": {"argv": ["export", url, str(export), solo["committed"][0]]},
        "ons3": {"argv": ["export", on_s3, f"{bucket}/export"], "env": {**keys, "EVALDRIFT_DATA_PATH": None}}}))
    return {"export": export, "bucket": bucket, "written": written, "read": read}


def test_a_team_store_records_runs_that_another_process_reads_exports_and_reads_as_of_a_date(
        written_then_read: dict) -> None:
    recorded = _step(written_then_read["written"], "solo")
    assert recorded["recorded"] == 2
    # another process reads the lake, exports it, and reads it as it stood once solo-0 had committed and solo-1 had
    # not (read-only there)
    seen = _step(written_then_read["read"], "solo")
    for run_id in ("solo-0", "solo-1"):   # 6 samples scored 1.0, 0.5, ...: the mean is 0.75
        assert seen["runs"][run_id] == {"samples": 6, "scores": 6,
                                        "metrics": [{"metric": "faithfulness", "score": 0.75, "n": 6}]}
    assert seen["tables"]["migrations"] == len(MIGRATIONS)   # the same named steps as a file's
    assert seen["unsigned_allowed"] is False   # the extensions were loaded with signature checks on
    assert seen["threads"] == 1   # EVALDRIFT_LAKE_THREADS=1 (the module's environment) was taken
    # the export is the project's Parquet layout: read here, by the project's own duckdb
    assert seen["rows"]["runs"] == len(seen["runs"])
    with ParquetStore(written_then_read["export"]) as history:
        assert set(history.run_ids()) == set(seen["runs"])
        assert history.run_metrics("solo-1")["score"].tolist() == [0.75]
    then = seen["then"]
    assert "solo-0" in then["runs"] and "solo-1" not in then["runs"]
    assert then["runs"]["solo-0"]["samples"] == 6
    assert then["refused"] is not None and "written-into-the-past" not in then["runs"]
    print("a write as of a date:", then["refused"])


def test_a_lake_keeps_its_data_in_object_storage_with_the_operators_keys_only(
        team_store: Lake, s3_server: s3.S3Server, written_then_read: dict) -> None:
    """EVALDRIFT_DATA_PATH=s3://...: the runs' Parquet files go to the bucket (moto's server on loopback), another
    process reads them back with the keys and the catalog's recorded path alone, and neither the catalog nor the
    store URL holds a key. The Parquet export goes to the bucket too, and reads back from there (`written_then_read`:
    its `ons3` steps)."""
    _, _, server = team_store
    bucket = written_then_read["bucket"]
    assert _step(written_then_read["written"], "ons3")["recorded"] == 2
    written = s3_server.keys("team-lake", "data/")
    assert written and all(k.endswith(".parquet") for k in written), written   # the runs' rows, in the bucket
    # a reader elsewhere: the keys, no data path (the catalog recorded the bucket); then the export, to the bucket
    seen = _step(written_then_read["read"], "ons3")
    assert {r: v for r, v in seen["runs"].items()} == {
        r: {"samples": 12, "scores": 12, "metrics": [{"metric": "faithfulness", "score": 0.75, "n": 12}]}
        for r in ("s3run-0", "s3run-1")}
    assert seen["secrets"] == [["evaldrift_s3", False, "memory"]]   # held in the process, never written
    assert seen["exported"] == {"s3run-0": [0.75], "s3run-1": [0.75]}   # read back from the bucket
    assert any(k.startswith("export/runs/") for k in s3_server.keys("team-lake", "export/"))
    catalog = _pg_dump(server, "ons3")
    assert f"{bucket}/data/" in catalog   # the place the data went, recorded where every reader finds it
    assert s3.SECRET not in catalog and s3.KEY_ID not in catalog
    # without the keys the lake's data cannot be read, and nothing is downloaded to try: said, in one line (the
    # reader's first step, before its keys were ever set)
    refused = written_then_read["read"]["keyless"]
    assert "keeps its data in object storage: set AWS_ACCESS_KEY_ID" in refused.get("error", ""), refused
    print("without keys:", refused["error"].strip().splitlines()[-1][:300])


@pytest.fixture(scope="module")
def as_of_lake(team_store: Lake, one_process: dict) -> tuple[str, Path, dict]:
    """One lake read as of a date, for the report and for the pages (`one_process`'s `asof` step): asof-a recorded
    (a nightly of 30 October) and the latest run's report written (then.md); the catalog's clock moved back 40 days
    (DuckLake keeps each snapshot's commit time in Postgres), so it stands as committed in October; then asof-b
    recorded (5 November, another judge), `report --as-of 2026-10-31` (asof.md) and the report now (now.md) written,
    and the pages drawn now and as of a date (`lake_child.pages_as_of`). Its URL, the reports' folder, and what the
    pages showed."""
    _, _, server = team_store
    return server.url("asof", postgres.SERVER_USER), Path(one_process["folder"]) / "asof", _step(one_process, "asof")


def test_report_as_of_a_date_says_what_it_said_then_after_later_runs(as_of_lake: tuple[str, Path, dict]) -> None:
    """`report --as-of 2026-10-31` on a lake writes, byte for byte, the report written then, although a later run
    (with another judge) was recorded since (`as_of_lake`)."""
    _, folder, _ = as_of_lake
    then, as_of, now = ((folder / f"{n}.md").read_text() for n in ("then", "asof", "now"))
    assert "asof-a" in then and "asof-b" not in then
    assert as_of == then   # what it said then
    assert "asof-b" in now and "offline-lexical-v3" in now and now != then


def test_the_overview_as_of_a_date_shows_that_day_and_offers_nothing_to_launch(
        as_of_lake: tuple[str, Path, dict]) -> None:
    """The sidebar's As of 2026-10-31 on a lake: the Overview reads the history as it stood then (a run recorded
    in November is not on it, the one of October is), says so in a banner, and the Ablation page's Launch is off
    with that reason. Drawn now first, so a loader cached for the present would be served again if its key lacked
    the date; emptying the input reads now again."""
    url, _, seen = as_of_lake
    seen = json.loads(json.dumps(seen))   # the module's copy stays whole
    banner = ("As of 2026-10-31 (end of day): the history as it stood then; nothing can be launched or written")
    [before] = seen["errors"].pop("before")   # a day before the first run: said, with what to do, no traceback
    assert before.startswith("As of 2026-10-01: ") and "Choose a later day" in before and url not in before
    assert seen["errors"] == {"now": [], "then": [], "ablation": []}
    now, then = " ".join(seen["now"]), " ".join(seen["then"])
    assert "asof-b" in now and banner not in now   # now: the later run is the latest
    assert "asof-a" in then and "asof-b" not in then and banner in seen["then"]
    assert seen["url"] == "2026-10-31"   # the link carries the date, and only the date
    assert banner in seen["ablation"] and seen["launch"] == [True, banner]
    assert banner not in seen["emptied"][0] and seen["emptied"][1] is None   # the input emptied: now again
    print("Overview as of a date drawn in", seen["as_of_seconds"], "s")


WRITERS, RUNS = 8, 25   # issue 44's done-means: 8 writer processes x 25 runs into one lake at once


def test_eight_writers_record_200_runs_while_the_dashboard_reads_and_a_killed_writer_leaves_nothing(
        team_store: Lake) -> None:
    _, env, server = team_store
    url = "ducklake:" + server.catalog("raced")   # a new lake, which every writer and the reader open at once
    total = WRITERS * RUNS
    # the dashboard, open meanwhile: it polls the runs and draws the Overview page as they land (at a third and two
    # thirds of them, and at the end), then reads the lake afresh
    reader = _start(env, "watch", url, "writer", str(total), "900", "2")
    procs = [_start(env, "record", url, f"writer{w}", str(RUNS)) for w in range(WRITERS)]
    # a ninth writer, SIGKILLed inside its run's transaction (a process of its own: its pid is the writer's)
    killed = _start(env, "hang", url, "killed-1", warm=False)
    try:
        assert killed.stdout is not None
        lines = [json.loads(killed.stdout.readline() or "{}") for _ in range(2)]
        assert lines[1] == {"inside": "samples", "rows": 6}, (killed.stderr.read()[-2000:] if killed.stderr else "")
    finally:
        os.kill(killed.pid, signal.SIGKILL)
        killed.communicate(timeout=60)
    assert reader.stdout is not None and json.loads(reader.stdout.readline() or "{}") == {"ready": True}, (
        reader.stderr.read()[-2000:] if reader.stderr else "")
    reports = []
    for p in procs:
        out, err = p.communicate(timeout=900)
        assert p.returncode == 0, err[-2000:]
        reports.append(json.loads(out.strip().splitlines()[-1]))
    assert [r["recorded"] for r in reports] == [RUNS] * WRITERS
    out, err = reader.communicate(timeout=900)
    assert reader.returncode == 0, err[-2000:]
    watched = json.loads(out.strip().splitlines()[-1])
    assert (watched["runs"], watched["partial"]) == (total, [])   # it never saw half a run
    assert watched["shown"] == []       # the page showed no error, drawn as runs landed (and once all were in)
    assert any(0 < n < total for n in watched["drawn_at"]) and watched["drawn_at"][-1] == total, watched["drawn_at"]
    seen = watched["after"]   # what the dashboard's process read afresh once every run was in
    mine = {k: v for k, v in seen["runs"].items() if k.startswith("writer")}
    assert sorted(mine) == sorted(f"writer{w}-{i}" for w in range(WRITERS) for i in range(RUNS))   # 200, none lost
    assert all(v["samples"] == 6 and v["scores"] == 6 and v["metrics"][0]["score"] == 0.75 for v in mine.values())
    # nothing of the killed writer's run anywhere: no run row, and no sample or score beyond the 200 runs' own
    assert "killed-1" not in seen["runs"]
    assert (seen["tables"]["samples"], seen["tables"]["sample_scores"]) == (6 * total, 6 * total)
    print(f"{total} runs by {WRITERS} writers; conflicts retried:", [r["conflicts"] for r in reports],
          "seconds:", [r["seconds"] for r in reports], "page draws:", watched["draws"], "polls:", watched["polls"])


LABELS, BATCHES = 5, 6   # `two_processes`: labels a person, batches of results a job


@pytest.fixture(scope="module")
def two_processes(team_store: Lake, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """The races where a second process is the point, run by the same two lake children (`lake_child.each`), each
    race on a lake of its own and both children's steps started together (`meet`): two watchers claiming one
    message (`claim`), two ablation jobs writing progress (`ablate`), two people labelling (`label`). Two processes'
    start, imports and extensions instead of six (measured: about 1.1 CPU s each). Per child, per race, what it
    said (or its traceback, under "error")."""
    _, env, server = team_store
    folder = tmp_path_factory.mktemp("two-processes")
    claims, jobs, labelled = _lake(server, "claims"), _lake(server, "jobs"), _lake(server, "labelled")
    procs = []
    for me, other, who in (("a", "b", "ana"), ("b", "a", "bo")):
        def meet(race: str, me: str = me, other: str = other) -> list[str]:
            return [str(folder / f"{race}-{me}"), str(folder / f"{race}-{other}")]

        steps = {"claim": {"argv": ["claim", claims, str(folder), me]},   # `claim` holds both at its insert itself
                 "ablate": {"argv": ["ablate", jobs, f"job-{me}", str(BATCHES)], "meet": meet("ablate")},
                 "label": {"argv": ["label", labelled, who, str(LABELS)], "meet": meet("label")}}
        procs.append(_start(env, "each", json.dumps(steps)))
    said = []
    for p in procs:
        out, err = p.communicate(timeout=900)
        assert p.returncode == 0, err[-2000:]
        said.append(json.loads(out.strip().splitlines()[-1]))
    return said


def _race(done: list[dict], name: str) -> list[dict]:
    """What each of `two_processes`' children said in one race, or its traceback as the failure."""
    return [_step(child, name) for child in done]


def test_two_watchers_claiming_one_message_on_a_team_store_send_it_once(two_processes: list[dict]) -> None:
    """Issue 43's exactly once, on the team store `watch --every` serves: two watchers have both read a fact as
    unclaimed (the child holds each at its first insert until the other is there too); one claims the message,
    the other finds it taken. On a file the watchers' lock serves; DuckLake commits two inserts at once, so a
    claim also takes the store's numbering row and the second conflicts and runs again."""
    said = _race(two_processes, "claim")
    assert sorted(s["claimed"] for s in said) == [False, True], said
    assert max(s["outbox"] for s in said) == 1, said   # one message owed, not two


def test_the_lake_environment_pins_what_the_project_pins_but_duckdb() -> None:
    def pins(name: str) -> dict[str, str]:
        lines = (ROOT / name).read_text().splitlines()
        return dict(line.split("#")[0].strip().split("==") for line in lines if line.split("#")[0].strip())

    project, lake_env = pins("requirements.txt"), pins("lib/store/requirements-lake.txt")
    assert lake_env.pop("duckdb") == "1.5.5"
    # the extension wheels are built for exactly that duckdb
    assert {lake_env.pop(n) for n in ("duckdb-extension-ducklake", "duckdb-extension-postgres-scanner",
                                      "duckdb-extension-httpfs")} == {"1.5.5"}
    project.pop("duckdb")
    assert lake_env == project


# --- store copy ---------------------------------------------------------------------------------------------------

def test_store_copy_moves_every_table_of_a_file_checked(tmp_path: Path) -> None:
    src = small_demo(2, tmp_path / "src.duckdb")
    with Store(src) as store:   # a replaced copy and a label too, so the archive and labels tables travel
        store.record_run(make_run("copied"))
        store.record_run(make_run("copied"))
        store.add_labels([_label()])
    done = run_cli("store", "copy", src, tmp_path / "dst.duckdb")
    assert done.returncode == 0, done.stderr
    with Store(src) as a, Store(tmp_path / "dst.duckdb") as b:
        before, after = copy.checks(a.cursor()), copy.checks(b.cursor())
        assert before == after
        assert all(before[t][0] for t in ("runs", "samples", "sample_scores", "archived_runs", "labels"))
        assert a.metric_history().equals(b.metric_history())
    assert f"runs: {before['runs'][0]} rows, checksum {before['runs'][1]}" in done.stdout
    assert "each table's rows and checksum match" in done.stdout


def test_store_copy_refuses_a_destination_that_holds_rows(tmp_path: Path) -> None:
    src = small_demo(2, tmp_path / "src.duckdb")
    dst = small_demo(2, tmp_path / "dst.duckdb")
    with Store(dst) as store:
        held = copy.checks(store.cursor())
    done = run_cli("store", "copy", src, dst)
    assert done.returncode == 2 and "is not empty (" in done.stderr and "runs: 2 rows" in done.stderr
    with Store(dst) as store:
        assert copy.checks(store.cursor()) == held   # nothing written


@pytest.mark.parametrize("change", [
    "UPDATE samples SET answer = answer || '.' WHERE sample_id = (SELECT min(sample_id) FROM samples)",
    "UPDATE samples SET contexts = list_reverse(contexts) WHERE len(contexts) > 1",
    "UPDATE sample_scores SET score = 1 - score WHERE score IS NOT NULL AND score <> 0.5",
    "UPDATE runs SET label = 'other' WHERE run_id = (SELECT min(run_id) FROM runs)",
    "DELETE FROM sample_scores WHERE sample_id = (SELECT min(sample_id) FROM sample_scores)",
    "INSERT INTO prompts SELECT prompt_hash || 'x', metric, template FROM prompts LIMIT 1",
])
def test_the_checksum_sees_a_changed_missing_or_added_row(tmp_path: Path, change: str) -> None:
    with Store(small_demo(2, tmp_path / "db.duckdb")) as store:
        before = copy.checks(store.cursor())
        with store.transaction() as cur:
            cur.execute(change)
        after = copy.checks(store.cursor())
    assert [t for t in before if before[t] != after[t]] == [change.split()[1 if change.startswith("UPDATE") else 2]]


def _label() -> Label:
    return Label(suite=MAIN, sample_id="s-1", metric="faithfulness", item=None, kind=SCORE, value=1.0, content="c",
                 labeller="ana", labelled_at=datetime(2026, 9, 2, 9, 0), source="cli", note=None)


def test_a_history_goes_file_to_lake_to_file_unchanged(one_process: dict) -> None:
    done = _step(one_process, "roundtrip")
    assert done["file"] == done["lake"] == done["back"]   # rows and checksum of every table at every hop
    assert done["file"]["runs"][0] == 3 and done["file"]["archived_runs"][0] == 1


# --- every write, the same on a file and on a lake ----------------------------------------------------------------

# What tests.support.lake_child.writes reads back (each write done twice): one row a key, the later value where a
# write replaces and the first where it keeps; hand-counted from the writes it makes.
WRITTEN_COUNTS = {"runs": 1, "samples": 6, "ablations": 1, "ablation_results": 12, "job_log": 1, "judge_cache": 1,
                  "batch_jobs": 1, "batch_requests": 2, "batch_faults": 1, "batch_replies": 1, "rejudges": 1,
                  "rejudge_runs": 1, "rejudge_scores": 6, "prompts": 2, "incident_states": 1, "labels": 1,
                  "watch_seen": 2, "watch_outbox": 1, "watch_meta": 1, "archived_runs": 1}


def _check_writes(seen: dict) -> None:
    assert seen["counts"] == WRITTEN_COUNTS
    assert seen["ablation"] == ["done", 12, 12, {"summary": "ok"}]
    assert seen["job_note"] == ["done", "second", "json", None]   # a job note is replaced
    assert seen["cached"] == "first reply"                         # a cached reply is kept
    assert seen["faults"] == {"k2": "unreadable"} and seen["replies"] == [["k1", "two", 5, 6, None]]
    assert seen["series"] == ["done", 6]
    assert seen["series_history"] == [{"run_id": "w-0", "score": 0.75, "n": 6}]
    assert seen["claimed"] == [True, False]
    assert seen["outbox"] == [["delivered", 1]] and seen["meta"] == "2026-09-02"
    assert seen["seen"] == ["fact-1", "fact-2"] and seen["restored"] == ["w-0"]


def test_every_write_on_a_file_keeps_one_row_a_key(tmp_path: Path) -> None:
    from tests.support.lake_child import writes

    with Store(tmp_path / "w.duckdb") as store:
        _check_writes(json.loads(json.dumps(writes(store), default=str)))


def test_every_write_on_a_lake_is_what_it_is_on_a_file(one_process: dict) -> None:
    _check_writes(_step(one_process, "writes"))


# --- the CLI on a store URL ---------------------------------------------------------------------------------------

def _check_session(seen: dict) -> None:
    codes = {k: v for k, v in seen.items() if isinstance(v, list) and len(v) == 2 and isinstance(v[0], int)}
    assert codes and all(v == [0, []] for v in codes.values()), codes   # every command did its work, said no error
    assert seen["runs"] == ["ing-1", "rag-1", "rec-1", "sc-1"] and seen["archived"] == ["sc-1"]
    assert seen["replaced said"] and seen["report names the run"] and seen["labels history"]
    assert seen["ablate verdicts"] == [["ground_truth", "CLEAN", 0.75], ["question+ground_truth", "CLEAN", 0.75]]


def test_every_command_and_page_on_a_team_store_does_what_it_does_on_a_file(
        one_process: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.lake_child import cli_session

    monkeypatch.setenv("EVALDRIFT_NOTIFY", "json://127.0.0.1:9/unused")   # watch needs a channel; nothing is sent
    on_file = json.loads(json.dumps(cli_session(str(tmp_path / "f.duckdb"), str(tmp_path / "f"))))
    _check_session(on_file)
    # the session on a lake, then every page of the dashboard drawn on that history (runs, a replaced copy, an
    # ablation, a label), in one process (`one_process`'s `cli` step)
    drawn = _step(one_process, "cli")
    assert drawn["session"] == on_file
    assert drawn["shown"] == {page: [] for page in PAGES}, drawn["shown"]   # no page showed an error


def test_two_ablation_jobs_writing_progress_at_once_both_finish(two_processes: list[dict]) -> None:
    """Each batch of results advances the job's row (an UPDATE of `ablations`): on a lake two such commits at once
    conflict (measured: the second fails, even for another row), so every write is retried as a run is."""
    done = _race(two_processes, "ablate")
    assert [(d["status"], d["done"], d["results"]) for d in done] == [("done", 6 * BATCHES, 6 * BATCHES)] * 2
    print("conflicts retried:", [d["conflicts"] for d in done])


def test_two_people_labelling_at_once_get_a_number_each(two_processes: list[dict]) -> None:
    """A label's seq (the calibration set's version) and an incident state's seq are the next number after the
    store's highest: on a lake, where two inserts both commit, two writers at once would take the same number
    unless their writes conflict (each takes the store's numbering row) and one is retried."""
    outs = _race(two_processes, "label")
    last = max(outs, key=lambda o: len(o["seqs"]))
    assert last["seqs"] == list(range(1, 2 * LABELS + 1))     # every label its own number
    assert last["states"] == list(range(1, 2 * LABELS + 1))   # every state of the incident its own place
    print("conflicts retried:", [o["conflicts"] for o in outs])


# --- security: roles, and where a store URL may come from ---------------------------------------------------------

def test_the_dashboard_reads_with_a_read_only_role_whose_write_is_refused_in_one_line(
        one_process: dict) -> None:
    """The writer's and the reader's roles, granted as lib/store/README.md says (`one_process`), on one lake."""
    done = _step(one_process, "roles")
    assert done["read"] == ["by-writer"] and done["shown"] == []   # the reader's dashboard reads the writer's run
    assert done["code"] == 2 and len(done["said"]) == 1           # the refused write: exit 2, one line
    line = done["said"][0]
    assert f"user={READER} refused the write (permission denied for table ducklake_" in line, line
    assert "may only read; nothing was written" in line
    assert "Unit 0 keeps" not in line and "INSERT" not in line    # never the catalog query with the rows' text
    assert done["after"] == ["by-writer"] and done["samples"] == 6   # nothing of the refused run


def test_a_store_url_in_the_page_address_is_never_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The dashboard opens only what the operator's settings name: a store URL put in the page's address (under
    any name) is neither offered nor dialled (a listener on its port counts the connections)."""
    import socket
    import threading

    from streamlit.testing.v1 import AppTest

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    dialled: list[object] = []

    def accept() -> None:
        try:
            while True:
                dialled.append(listener.accept()[0])
        except OSError:
            return

    threading.Thread(target=accept, daemon=True).start()
    url = f"ducklake:postgres:dbname=evals host=127.0.0.1 port={listener.getsockname()[1]} user=mallory"
    db = small_demo(2, tmp_path / "operator.duckdb")
    monkeypatch.setenv("EVALDRIFT_DB", str(db))
    monkeypatch.setenv("EVALDRIFT_DATA_PATH", str(tmp_path / "lake"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params.update({name: url for name in ("db", "db_path", "database", "store", "url", "EVALDRIFT_DB")})
    try:
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        picker = at.selectbox(key="db_choice")
        assert picker.options == ["operator.duckdb"] and picker.value == "operator.duckdb"
        assert not any("ducklake" in e.value for e in (*at.error, *at.warning))
        assert dialled == []   # nothing reached for the address's store
    finally:
        listener.close()
        from lib.app import ui
        ui.open_store(str(db)).close()
        ui.st.cache_resource.clear()


@pytest.mark.parametrize(("environ", "offered"), [
    ({"EVALDRIFT_DB": "ducklake:postgres:dbname=evals host=db user=dash"},
     {"team store": "ducklake:postgres:dbname=evals host=db user=dash"}),
    # a URI keeps its // (a Path would fold it to one slash, and open a file of that name)
    ({"EVALDRIFT_DB": "ducklake:postgres:postgresql://dash@db/evals"},
     {"team store": "ducklake:postgres:postgresql://dash@db/evals"}),
    ({"EVALDRIFT_DB": "data/x.duckdb"}, {"x.duckdb": Path("data/x.duckdb")}),
])
def test_the_operators_store_url_is_offered_by_name_as_it_was_set(environ: dict[str, str],
                                                                  offered: dict[str, object]) -> None:
    from lib.core.settings import load
    from lib.store import databases

    assert databases.offered(load(environ=environ)) == offered
