"""A team store: DuckLake, with its catalog in Postgres and its data as Parquet files in a folder.

A store URL `ducklake:postgres:<libpq connection string>` (for example
`ducklake:postgres:dbname=evals host=db.internal port=5432 user=evaldrift`) names the lake; the folder or
`s3://` bucket its Parquet files go to is EVALDRIFT_DATA_PATH (needed when the lake is made; DuckLake records it
in the catalog). Many processes on many machines can write runs at once, each run one transaction.

The extensions come from the wheels on the package index (`duckdb-extension-ducklake`,
`duckdb-extension-postgres-scanner`, lib/store/requirements-lake.txt): each holds DuckDB's own signed binary, loaded by
file path with signature checks on. Nothing is ever downloaded (`INSTALL`) while evaldrift runs. Those wheels
exist for duckdb 1.5.5 only, so the lake runs in its own environment (lib/store/README.md, "A team store").

Credentials never sit in the store URL: a `password=` in it is refused, and the password comes from the
operator's environment or secrets file as libpq reads them (PGPASSWORD, or PGPASSFILE / ~/.pgpass). The
store URL itself comes only from the operator (EVALDRIFT_DB, or --db), never from a URL parameter or a page.
Object storage's keys likewise: the AWS variables of the operator's environment (`s3_credentials`), made into a
temporary DuckDB secret of this process only, never written to the store URL, the catalog or a file.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import duckdb

from lib.core.errors import StoreError

PREFIX = "ducklake:"
CATALOGS = ("postgres:",)   # the catalog databases this store opens (DuckLake's guidance: Postgres for many users)
ALIAS = "lake"
# (extension, the wheel's package): the wheel keeps the binary at <package>/extensions/v<duckdb version>/<name>.
EXTENSIONS = (("postgres_scanner", "duckdb_extension_postgres_scanner"), ("ducklake", "duckdb_extension_ducklake"))
# DuckDB's httpfs, for a data path or an export in object storage: loaded only when the operator gave S3 settings
HTTPFS = ("httpfs", "duckdb_extension_httpfs")
DATA_PATH_VARIABLE = "EVALDRIFT_DATA_PATH"
# DuckDB's threads for this process's lake work (`LakeTarget.threads`): a writer's statements are small and wait on the
# catalog's round trips, where a second thread's hand-offs cost more than they share (measured on Postgres 15 at load
# 20-28: a run recorded 75-92 -> 55-70 ms of CPU), while a dashboard's reads of a long history scan Parquet in
# parallel (bench_lake.py at 20,000 runs: the Overview's reads 23 s with DuckDB's default 2 threads, 37 s with 1)
THREADS_VARIABLE = "EVALDRIFT_LAKE_THREADS"
# the AWS SDKs' and CLI's own names, so one operator setting serves them and evaldrift alike; the S3-specific
# endpoint variable wins over the general one, as in the SDKs
S3_KEY, S3_SECRET, S3_TOKEN = "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"
S3_REGIONS = ("AWS_REGION", "AWS_DEFAULT_REGION")
S3_ENDPOINTS = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
DEFAULT_REGION = "us-east-1"
SECRET_NAME = "evaldrift_s3"
RETRIES = 8   # commit conflicts retried before giving up (each after a short, growing pause)
# a password keyword anywhere in a libpq string, or one in a URI's user part (postgresql://user:secret@host)
_PASSWORD = re.compile(r"(^|[\s:])password\s*=|://[^/@\s]*:[^/@\s]*@", re.IGNORECASE)

T = TypeVar("T")


class LakeUnavailableError(StoreError):
    """The lake's extensions are not installed in this environment (lib/store/requirements-lake.txt)."""


class LakeConflictError(StoreError):
    """A write kept conflicting with other writers' commits and was given up after the bounded retries."""

    def __init__(self, what: str, attempts: int, last: str) -> None:
        super().__init__(f"{what} gave up after {attempts} attempts: other writers' commits kept conflicting "
                         f"with it (last: {last}); nothing of it was written, record it again")
        self.attempts = attempts


@dataclass(frozen=True)
class S3Credentials:
    """Object storage's keys and endpoint, from the operator's environment (`s3_credentials`).

    Attributes:
        key_id: AWS_ACCESS_KEY_ID.
        secret: AWS_SECRET_ACCESS_KEY (never shown: left out of the repr).
        session_token: AWS_SESSION_TOKEN, for temporary keys.
        region: AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1.
        endpoint: `host:port` of an S3-compatible server (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL), addressed by
            path (`host/bucket/key`, as MinIO, moto and Ceph take it); None for AWS itself.
        use_ssl: False only for an `http://` endpoint.
    """

    key_id: str
    secret: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)
    region: str = DEFAULT_REGION
    endpoint: str | None = None
    use_ssl: bool = True


@dataclass(frozen=True)
class LakeTarget:
    """A parsed store URL.

    Attributes:
        catalog: the catalog part after `ducklake:` (e.g. `postgres:dbname=evals host=...`), with no password.
        data_path: the folder or `s3://` location the Parquet files go to (None: the one the catalog recorded when
            it was made).
        s3: the operator's object-storage keys, when given (a lake whose data path is `s3://` needs them).
        threads: DuckDB's threads for the process's lake work (EVALDRIFT_LAKE_THREADS; None: DuckDB's default, one
            a core). 1 suits a process that records (a nightly's `record`, a scorer); the dashboard keeps the default.
    """

    catalog: str
    data_path: str | None = None
    s3: S3Credentials | None = None
    threads: int | None = None

    @property
    def name(self) -> str:
        """The URL as messages show it (it holds no password)."""
        return PREFIX + self.catalog


def is_lake(target: object) -> bool:
    """True when `target` is a store URL (`ducklake:...`) rather than a DuckDB file."""
    return isinstance(target, str) and target.startswith(PREFIX)


def parse(url: str, environ: Mapping[str, str] | None = None) -> LakeTarget:
    """Read a store URL and the data path from the operator's environment.

    Args:
        url: `ducklake:postgres:<libpq connection string>`.
        environ: where EVALDRIFT_DATA_PATH is read (default: os.environ).

    Raises:
        StoreError: another catalog than Postgres, a password in the URL, or EVALDRIFT_LAKE_THREADS not a positive
            whole number.
    """
    catalog = url[len(PREFIX):].strip()
    if not catalog.startswith(CATALOGS):
        raise StoreError(f"store URL {url.split(' ')[0]!r}: the catalog must be one of "
                         f"{', '.join(PREFIX + c for c in CATALOGS)}")
    if _PASSWORD.search(catalog):
        raise StoreError("the store URL holds a password: remove it, and give it as the operator's PGPASSWORD or in "
                         "a PGPASSFILE (~/.pgpass), where libpq reads it")
    env = os.environ if environ is None else environ
    data_path = env.get(DATA_PATH_VARIABLE) or None
    s3 = s3_credentials(env)
    if data_path is not None and "://" in data_path:
        if not data_path.startswith("s3://"):
            raise StoreError(f"{DATA_PATH_VARIABLE} {data_path!r}: a lake's data goes to a folder or an s3:// "
                             "location (any S3-compatible server, through AWS_ENDPOINT_URL)")
        if s3 is None:
            raise StoreError(f"{DATA_PATH_VARIABLE} is in object storage ({data_path}): set {S3_KEY} and "
                             f"{S3_SECRET} in the operator's environment (never in the store URL)")
    raw = (env.get(THREADS_VARIABLE) or "").strip()
    if raw and not (raw.isdigit() and int(raw) > 0):
        raise StoreError(f"{THREADS_VARIABLE} {raw!r}: give DuckDB's threads for the team store as a whole number "
                         "from 1 (1 suits a process that records; unset: one a core)")
    return LakeTarget(catalog=catalog, data_path=data_path, s3=s3, threads=int(raw) if raw else None)


def s3_credentials(environ: Mapping[str, str] | None = None) -> S3Credentials | None:
    """The operator's object-storage settings, read from the AWS SDKs' own variables.

    Args:
        environ: where they are read (default: os.environ).

    Returns:
        None when no key is set (a lake in a folder needs none).

    Raises:
        StoreError: a key without its secret (or the reverse), or an endpoint that is not `http(s)://host[:port]`
            (a user or password in it is refused: keys only come from their own variables).
    """
    env = os.environ if environ is None else environ
    key, secret = env.get(S3_KEY) or None, env.get(S3_SECRET) or None
    if key is None and secret is None:
        return None
    if key is None or secret is None:
        raise StoreError(f"object storage needs both {S3_KEY} and {S3_SECRET}; only "
                         f"{S3_KEY if key else S3_SECRET} is set")
    region = next((env[v] for v in S3_REGIONS if env.get(v)), DEFAULT_REGION)
    raw = next(((v, env[v]) for v in S3_ENDPOINTS if env.get(v)), None)
    if raw is None:
        return S3Credentials(key, secret, env.get(S3_TOKEN) or None, region)
    name, url = raw
    parts = urlsplit(url)
    if (parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password
            or parts.path.strip("/") or parts.query):
        raise StoreError(f"{name} {url.split('@')[-1]!r}: give the S3 server as http(s)://host[:port], with no user, "
                         "path or query")
    try:
        port = parts.port
    except ValueError:
        raise StoreError(f"{name} {url!r}: the port is not a number") from None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return S3Credentials(key, secret, env.get(S3_TOKEN) or None, region,
                         endpoint=host + (f":{port}" if port else ""), use_ssl=parts.scheme == "https")


def secret_sql(s3: S3Credentials) -> str:
    """The statement that gives one DuckDB connection the keys: a TEMPORARY secret, held in this process's memory
    and never written to a file or the catalog."""
    options = [("TYPE", "s3"), ("KEY_ID", _literal(s3.key_id)), ("SECRET", _literal(s3.secret)),
               ("REGION", _literal(s3.region))]
    if s3.session_token:
        options.append(("SESSION_TOKEN", _literal(s3.session_token)))
    if s3.endpoint:
        options += [("ENDPOINT", _literal(s3.endpoint)), ("URL_STYLE", "'path'"),
                    ("USE_SSL", "true" if s3.use_ssl else "false")]
    return (f"CREATE OR REPLACE TEMPORARY SECRET {SECRET_NAME} ("
            + ", ".join(f"{k} {v}" for k, v in options) + ")")


def object_storage(con: duckdb.DuckDBPyConnection, environ: Mapping[str, str] | None = None) -> None:
    """Ready a connection for `s3://` locations: httpfs loaded from its wheel (signature checked), the operator's
    keys as a temporary secret. The `setup` for the Parquet export and ParquetStore in object storage, e.g.
    `export_parquet(store, "s3://bucket/evaldrift", setup=lake.object_storage)`.

    Raises:
        LakeUnavailableError: the httpfs wheel is absent (it exists for duckdb 1.5.5 only: the lake environment).
        StoreError: no keys in the operator's environment.
    """
    s3 = s3_credentials(environ)
    if s3 is None:
        raise StoreError(f"object storage needs {S3_KEY} and {S3_SECRET} in the operator's environment")
    _ready_s3(con, s3)


def _ready_s3(con: duckdb.DuckDBPyConnection, s3: S3Credentials) -> None:
    if not _loaded(con, HTTPFS[0]):
        con.execute(f"LOAD {_literal(str(extension_file(*HTTPFS)))}")
    con.execute(secret_sql(s3))


def _loaded(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    return bool(con.execute("SELECT count(*) FROM duckdb_extensions() WHERE extension_name = ? AND loaded",
                            [name]).fetchall()[0][0])


def extension_file(name: str, package: str) -> Path:
    """The extension binary a wheel installed, for this duckdb's version.

    Raises:
        LakeUnavailableError: the wheel is absent, or built for another duckdb.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise LakeUnavailableError(f"a team store needs the {name} extension: pip install -r "
                                   f"lib/store/requirements-lake.txt (package {package.replace('_', '-')})")
    path = Path(next(iter(spec.submodule_search_locations))) / "extensions" / f"v{duckdb.__version__}" / \
        f"{name}.duckdb_extension"
    if not path.is_file():
        raise LakeUnavailableError(f"{package.replace('_', '-')} holds no {name} extension for duckdb "
                                   f"{duckdb.__version__} (lib/store/requirements-lake.txt pins the matching versions)")
    return path


def available() -> str | None:
    """None when this environment can open a lake, else why not (for a test's skip reason, or a message)."""
    try:
        for name, package in EXTENSIONS:
            extension_file(name, package)
    except LakeUnavailableError as exc:
        return str(exc)
    return None


def as_of_time(text: str) -> datetime:
    """When `--as-of` reads the history: a date means as the store stood at that day's end (its last
    microsecond, this machine's local time, as the store's own times are); an ISO time means that instant.

    Args:
        text: `2026-10-31`, `2026-10-31T18:00`, `2026-10-31 18:00:00+02:00`.

    Raises:
        StoreError: neither a date nor an ISO time.
    """
    raw = text.strip()
    try:
        if len(raw) == 10:   # a date alone (YYYY-MM-DD)
            day = datetime.strptime(raw, "%Y-%m-%d")
            return day.replace(hour=23, minute=59, second=59, microsecond=999_999)
        return datetime.fromisoformat(raw)
    except ValueError:
        raise StoreError(f"--as-of {text!r}: give a date (2026-10-31: as the store stood at that day's end) or an "
                         "ISO time (2026-10-31T18:00, with an offset such as +02:00 if it is not this machine's "
                         "time)") from None


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# One in-memory DuckDB a process holds the lake's extensions, loaded once (0.3 CPU s of an open's 0.6, measured at
# load 30): each store is a connection to it with its lake attached under a name of its own. A CLI session, the
# dashboard's stores as of a few dates, `store copy` between lakes open several; each paid the loading before.
_SHARED: tuple[int, duckdb.DuckDBPyConnection] | None = None   # (the process that made it, its connection)
_SHARED_LOCK = threading.Lock()
_NAMES = itertools.count(1)


def _shared(files: list[Path]) -> tuple[duckdb.DuckDBPyConnection, str]:
    """A new connection to this process's DuckDB with the extensions loaded, and a name for its lake."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None or _SHARED[0] != os.getpid():   # a forked child makes its own
            con = duckdb.connect(":memory:")
            try:
                # never a download at run time: a location whose extension is not loaded fails at once, saying which
                con.execute("SET GLOBAL autoinstall_known_extensions = false")
                # signature checks stay on (allow_unsigned_extensions is false): the wheels hold DuckDB's signed builds
                for path in files:
                    con.execute(f"LOAD {_literal(str(path))}")
            except BaseException:
                con.close()
                raise
            _SHARED = (os.getpid(), con)
        return _SHARED[1].cursor(), f"{ALIAS}_{next(_NAMES)}"


def connect(target: LakeTarget, *, as_of: datetime | None = None) -> tuple[duckdb.DuckDBPyConnection, str]:
    """A connection to this process's in-memory DuckDB with the lake attached and in use (its tables are the
    store's tables), under a name of its own.

    Args:
        target: the parsed store URL.
        as_of: attach the lake as it stood at this time (DuckLake's time travel; read-only). A naive time is
            this machine's local time.

    Returns:
        The connection and the lake's name in it (each cursor of it must `USE` that name; `detach` it to close).

    Raises:
        LakeUnavailableError: the extensions are not installed.
        StoreError: the catalog cannot be reached, or a new lake has no data path.
    """
    files = [extension_file(name, package) for name, package in EXTENSIONS]
    if target.s3 is not None:
        extension_file(*HTTPFS)   # absent: said before anything is opened
    con, name = _shared(files)
    try:
        if target.threads is not None:   # the process's DuckDB: every store this process opens
            con.execute(f"SET GLOBAL threads = {int(target.threads)}")
        if target.s3 is not None:   # a data path in object storage (this one, or the one the catalog recorded)
            _ready_s3(con, target.s3)
        options = [f"DATA_PATH {_literal(_folder(target.data_path))}"] if target.data_path and as_of is None else []
        if as_of is not None:
            when = as_of.astimezone()   # a naive time is this machine's local time, as the store's own times are
            options += [f"SNAPSHOT_TIME {_literal(when.isoformat(sep=' '))}", "READ_ONLY"]
        option = f" ({', '.join(options)})" if options else ""
        attach = f"ATTACH {_literal(PREFIX + target.catalog)} AS {name}{option}"

        def attached() -> None:
            con.execute(f"DETACH DATABASE IF EXISTS {name}")   # a failed attempt's
            con.execute(attach)

        retrying(f"opening {target.name}", attached)   # several first opens of a new lake
        con.execute(f"USE {name}")
    except duckdb.Error as exc:
        detach(con, name)
        first = str(exc).splitlines()[0]
        if "DATA_PATH" in first.upper() or "data path" in first.lower():
            raise StoreError(f"{target.name}: a new lake needs a folder for its data: set {DATA_PATH_VARIABLE} "
                             f"({first})") from None
        if "httpfs" in first and target.s3 is None:   # the catalog's recorded data path is in object storage
            raise StoreError(f"{target.name} keeps its data in object storage: set {S3_KEY} and {S3_SECRET} (and "
                             "AWS_ENDPOINT_URL for a server other than AWS) in the operator's environment") from None
        raise StoreError(f"cannot open the team store {target.name}: {first}") from None
    except BaseException:   # gave up retrying, or interrupted: the connection goes with it
        detach(con, name)
        raise
    return con, name


def detach(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Close a `connect`ion: its lake detached from the process's DuckDB (which stays, with the extensions)."""
    try:
        con.execute("USE memory")
        con.execute(f"DETACH DATABASE IF EXISTS {name}")
    except duckdb.Error:   # a connection already closed, or a failed transaction's: closing is all that is left
        pass
    finally:
        con.close()


def _folder(path: str) -> str:
    """A local folder made absolute, with the trailing slash DuckLake joins file names to."""
    if "://" in path:
        return path.rstrip("/") + "/"
    folder = Path(path).expanduser().resolve()
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder) + "/"


def is_conflict(exc: BaseException) -> bool:
    """True for an error another writer's commit caused (retrying the whole transaction may succeed): a commit
    conflict, or two processes making a new lake's catalog at once (the second's CREATE TABLE collides in
    Postgres: "Failed to initialize DuckLake ... already exists")."""
    text = str(exc).lower()
    if refusal(exc) is not None:   # a role that may not write: no retry changes that
        return False
    return isinstance(exc, duckdb.TransactionException) or (isinstance(exc, duckdb.Error) and (
        "conflict" in text or ("initialize ducklake" in text and "already exists" in text)))


# Postgres's refusal of a role's write, at the end of the failed catalog query DuckLake quotes (a query that holds
# the rows' values, sample text among them: only this line of it is ever shown)
_REFUSAL = re.compile(r"ERROR:\s+(permission denied for [\w ]+? [\w.\"]+)")


def refusal(exc: BaseException) -> str | None:
    """Postgres's "permission denied for table ..." when the catalog refused a write to the store URL's role (a
    read-only role, as the dashboard may run with), else None."""
    found = _REFUSAL.search(str(exc)) if isinstance(exc, duckdb.Error) else None
    return found.group(1) if found else None


def retrying(what: str, write: Callable[[], T], *, retries: int = RETRIES,
             pause: Callable[[float], None] = time.sleep, on_retry: Callable[[str], None] | None = None) -> T:
    """Run `write` (one whole transaction) again while it fails on a commit conflict, at most `retries` times.

    Args:
        what: the write, for the message when it gives up.
        write: the whole transaction (it must roll back whole when it raises).
        retries: conflicts retried before giving up.
        pause: sleeps between attempts (0.05 s, doubling).
        on_retry: told each conflict that is retried (its first line).

    Raises:
        LakeConflictError: every attempt conflicted (nothing was written: each attempt was rolled back whole).
    """
    for attempt in range(retries + 1):
        try:
            return write()
        except duckdb.Error as exc:
            if not is_conflict(exc):
                raise
            if attempt == retries:
                raise LakeConflictError(what, attempt + 1, str(exc).splitlines()[0]) from None
            if on_retry is not None:
                on_retry(str(exc).splitlines()[0])
            pause(0.05 * 2 ** attempt)
    raise AssertionError("unreachable")  # pragma: no cover


# DuckLake keeps no PRIMARY KEY or UNIQUE constraint ("not supported in DuckLake"): the lake's tables are made
# without them (NOT NULL stays). Keys are kept by the store's own writes instead (a run is archived before it
# is recorded again; a prompt is inserted only when its hash is absent).
_TABLE_KEY = re.compile(r",\s*PRIMARY KEY\s*\([^)]*\)", re.IGNORECASE)
_COLUMN_KEY = re.compile(r"\s+PRIMARY KEY\b", re.IGNORECASE)


def without_keys(statement: str) -> str:
    """A CREATE TABLE statement as the lake takes it: no PRIMARY KEY (a key column stays NOT NULL)."""
    return _COLUMN_KEY.sub(" NOT NULL", _TABLE_KEY.sub("", statement))
