"""Which database files the dashboard may open: the operator's list, and only evaldrift's own files.

The browser never names a path or a store URL. The operator configures EVALDRIFT_DB (one
file, or a team store's URL) and/or EVALDRIFT_DB_DIR (a folder whose *.duckdb files are offered by
name); the sidebar offers those names. An existing file that is not an
evaldrift database is refused before anything is written to it
(`refuse_foreign`, on the store's own connection: DuckDB writes nothing to a
file a connection only reads; a file with a pending write-ahead log, which a
read-write open would replay into it, is looked at read-only first,
lib.store.files.attach's `look`), so another application's file is never written.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from lib.core.errors import StoreError
from lib.core.settings import Settings

SCHEMA_MARK = "SELECT value FROM meta WHERE key = 'schema_version'"
# The connection's current database only: a store's file is attached beside its instance's in-memory database
# (lib.store.files)
_ANY_TABLE = ("SELECT (SELECT count(*) FROM duckdb_tables() WHERE NOT internal "   # a table or view: another's data
              "AND database_name = current_database()) "
              "+ (SELECT count(*) FROM duckdb_views() WHERE NOT internal AND database_name = current_database())")
_HAS_META = ("SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta' "
             "AND table_schema = 'main' AND table_catalog = current_database()")


class ForeignDatabaseError(StoreError):
    """The file exists but is not an evaldrift database; it was only read, and left untouched."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path.name} is not an evaldrift database ({why}); evaldrift only read it and wrote "
                         "nothing to it")
        self.path = path


TEAM_STORE = "team store"   # the name a team store's URL is offered by (its host and user are the operator's to know)


def offered(settings: Settings) -> dict[str, Path | str]:
    """The databases the operator offers, by name: EVALDRIFT_DB first (a team store's URL by the name "team
    store"), then EVALDRIFT_DB_DIR's *.duckdb files."""
    first = settings.db_path
    out: dict[str, Path | str] = {TEAM_STORE if isinstance(first, str) else first.name: first}
    if settings.db_dir is not None and settings.db_dir.is_dir():
        for path in sorted(settings.db_dir.glob("*.duckdb")):
            if path.is_file() and (isinstance(first, str) or path.resolve() != first.resolve()):
                name = path.name if path.name not in out else str(path.relative_to(settings.db_dir.parent))
                out[name] = path
    return out


def is_evaldrift(con: duckdb.DuckDBPyConnection) -> bool:
    """True when the connected database carries evaldrift's schema mark."""
    if not con.execute(_HAS_META).fetchone()[0]:  # type: ignore[index]
        return False
    try:
        return con.execute(SCHEMA_MARK).fetchone() is not None
    except duckdb.Error:  # a 'meta' table of another shape
        return False


def refuse_foreign(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Raise ForeignDatabaseError when `con`'s database holds tables or views but not evaldrift's schema mark (an
    empty database is evaldrift's to fill). Only reads."""
    if not is_evaldrift(con) and con.execute(_ANY_TABLE).fetchone()[0]:  # type: ignore[index]
        raise ForeignDatabaseError(path, "no evaldrift schema in it")
