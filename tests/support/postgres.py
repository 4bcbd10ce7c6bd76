"""The machine's Postgres, started on loopback for a test's team store (a DuckLake catalog), and stopped after.

`initdb` refuses to run as root, so as root the server is made and run as the `postgres` user (runuser), in a
folder under /tmp that user can enter (pytest's own temporary folders sit under root's private /tmp/pytest-of-root).
Trust authentication on 127.0.0.1 only, a free port, fsync off: a test's server, gone when the tests end.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SERVER_USER = "postgres"


def _bin(name: str) -> str | None:
    """The newest installed Postgres' program `name`, else the one on PATH."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def missing() -> str | None:
    """None when Postgres can be started here, else why not (a skip reason)."""
    for name in ("initdb", "pg_ctl", "createdb"):
        if _bin(name) is None:
            return f"no Postgres here ({name} is not installed)"
    if os.geteuid() == 0:
        try:
            import pwd
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            return f"running as root, and there is no {SERVER_USER!r} user to run Postgres as"
        if shutil.which("runuser") is None:
            return "running as root, and runuser is missing (initdb refuses root)"
    return None


def _as_server_user(argv: list[str]) -> list[str]:
    return ["runuser", "-u", SERVER_USER, "--", *argv] if os.geteuid() == 0 else argv


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Postgres:
    """A running server: its folder and port; `catalog(db)` makes a database and gives the store URL's part."""

    folder: Path
    port: int

    def catalog(self, dbname: str, *, template: str | None = None) -> str:
        """Make the database `dbname` and return `postgres:<libpq string>` for a store URL (no password).

        With `template`, the database is a copy of that one (CREATE DATABASE ... TEMPLATE): a lake made and migrated
        once, copied for each test in a few ms of Postgres's time instead of a child process opening a new lake
        (about 1.7 CPU s). The template's last client may still be leaving: the copy is tried again for a while.
        """
        argv = [_bin("createdb") or "createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", SERVER_USER,
                *(("-T", template) if template else ()), dbname]
        for attempt in range(50):
            done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
            if done.returncode == 0:
                break
            if "being accessed by other users" not in done.stderr or attempt == 49:
                raise subprocess.CalledProcessError(done.returncode, argv, done.stdout, done.stderr)
            time.sleep(0.1)
        return f"postgres:dbname={dbname} host=127.0.0.1 port={self.port} user={SERVER_USER}"

    def sql(self, dbname: str, *statements: str) -> None:
        """Run statements in `dbname` as the server's superuser (psql, one transaction): a test's roles and grants."""
        subprocess.run([_bin("psql") or "psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", SERVER_USER, "-d",
                        dbname, "-v", "ON_ERROR_STOP=1", "-q", "-1", "-c", ";\n".join(statements)],
                       check=True, capture_output=True, timeout=60)

    def url(self, dbname: str, user: str) -> str:
        """The store URL of the lake in `dbname` as the role `user` (no password: trust on loopback here)."""
        return f"ducklake:postgres:dbname={dbname} host=127.0.0.1 port={self.port} user={user}"

    def cpu_seconds(self) -> float:
        """The server's CPU so far: the postmaster's own and its reaped backends' (/proc, utime+stime+cutime+
        cstime), plus its live children's. Postgres is not a child the tests wait for, so their CPU figures miss
        it; EVALDRIFT_PG_CPU names a file `stop` appends this figure to."""
        try:
            pid = int((self.folder / "data" / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return 0.0
        tick = os.sysconf("SC_CLK_TCK")

        def fields(p: int) -> list[str]:
            with open(f"/proc/{p}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()

        try:
            total = sum(int(x) for x in fields(pid)[11:15])
        except OSError:
            return 0.0
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    f = fields(int(entry))
                except OSError:
                    continue
                if int(f[1]) == pid:
                    total += int(f[11]) + int(f[12])
        return total / tick

    def stop(self) -> None:
        log = os.environ.get("EVALDRIFT_PG_CPU")
        if log:
            with open(log, "a", encoding="utf-8") as out:
                out.write(f"{self.cpu_seconds():.2f}\n")
        subprocess.run(_as_server_user([_bin("pg_ctl") or "pg_ctl", "-D", str(self.folder / "data"), "-m",
                                        "immediate", "stop"]), capture_output=True, timeout=60)
        shutil.rmtree(self.folder, ignore_errors=True)


def start() -> Postgres:
    """initdb and start a server on 127.0.0.1 and a free port (about 3 s); the caller stops it."""
    folder = Path(tempfile.mkdtemp(prefix="evaldrift-pg-", dir="/tmp"))
    if os.geteuid() == 0:
        shutil.chown(folder, user=SERVER_USER)
    folder.chmod(0o700)
    data = folder / "data"
    try:
        subprocess.run(_as_server_user([_bin("initdb") or "initdb", "-D", str(data), "-A", "trust", "-U",
                                        SERVER_USER, "-E", "UTF8", "--no-sync"]),
                       check=True, capture_output=True, timeout=120)
        port = _free_port()
        subprocess.run(_as_server_user([_bin("pg_ctl") or "pg_ctl", "-D", str(data), "-l", str(folder / "log"),
                                        "-w", "-t", "60", "-o",
                                        f"-h 127.0.0.1 -p {port} -k {folder} -c fsync=off -c max_connections=60",
                                        "start"]), check=True, capture_output=True, timeout=120)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return Postgres(folder, port)


def binary(name: str) -> str:
    """A Postgres program's path (pg_dump, psql...), for a test that looks at what the lake wrote."""
    return _bin(name) or name


def as_server_user(argv: list[str]) -> list[str]:
    """`argv` run as the server's user when this process is root (as the server's own commands are)."""
    return _as_server_user(argv)
