"""Replaced runs are kept: recording over a run id moves the earlier copy aside, restorable until purged.

Every way a run is recorded (one run, in parts, in bulk) archives the copy it
replaces in the same transaction, under a short archive id. An archived copy
is listed, restored (the copy it displaces is archived in turn, so a restore
loses nothing either), and removed only by purge, an operator's command.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

import duckdb

from lib.core.errors import InputError
from lib.store.base import StoreBase, _now, retried

# the live tables a run's rows live in, each with its archive twin (children first: the order rows are deleted)
_TABLES = (("sample_scores", "archived_sample_scores"), ("run_metrics", "archived_run_metrics"),
           ("samples", "archived_samples"), ("runs", "archived_runs"))


@dataclass(frozen=True)
class RunFootprint:
    """What a stored copy of a run holds: what recording over it would replace.

    Attributes:
        run_id: the run.
        n_samples: samples over all suites.
        suites: (suite, number of samples), by suite name.
        metrics: (suite, metric) pairs scored, by suite then metric.
    """

    run_id: str
    n_samples: int
    suites: tuple[tuple[str, int], ...]
    metrics: tuple[tuple[str, str], ...]

    def sentence(self) -> str:
        """'400 samples in 2 suites (canary 100, main 300); 6 metric scores: main: faithfulness, ...'."""
        suites = ", ".join(f"{name} {n}" for name, n in self.suites)
        by_suite: dict[str, list[str]] = {}
        for suite, metric in self.metrics:
            by_suite.setdefault(suite, []).append(metric)
        scored = "; ".join(f"{suite}: {', '.join(ms)}" for suite, ms in by_suite.items())
        return (f"{self.n_samples} sample{'s' * (self.n_samples != 1)} in {len(self.suites)} "
                f"suite{'s' * (len(self.suites) != 1)} ({suites}); "
                + (f"{len(self.metrics)} metric score{'s' * (len(self.metrics) != 1)} ({scored})"
                   if self.metrics else "no metric scores"))


@dataclass(frozen=True)
class ArchivedRun:
    """One kept copy of a replaced run.

    Attributes:
        archive_id: what restore and purge take.
        run_id: the run it is a copy of.
        archived_at: when it was replaced.
        reason: what replaced it.
        footprint: what it holds.
    """

    archive_id: str
    run_id: str
    archived_at: datetime
    reason: str
    footprint: RunFootprint


class ArchiveMixin(StoreBase):
    """Keeping, listing, restoring and purging replaced copies of runs."""

    def _footprint(self, cur: duckdb.DuckDBPyConnection, prefix: str, key: str, value: str) -> RunFootprint | None:
        # prefix and key are this module's constants ('' or 'archived_'; run_id or archive_id), never user text
        runs = cur.execute(f"SELECT run_id FROM {prefix}runs WHERE {key} = ?", [value]).fetchall()
        if not runs:
            return None
        suites = cur.execute(f"SELECT suite, count(*) FROM {prefix}samples WHERE {key} = ? GROUP BY suite "
                             "ORDER BY suite", [value]).fetchall()
        metrics = cur.execute(f"SELECT suite, metric FROM {prefix}run_metrics WHERE {key} = ? ORDER BY suite, metric",
                              [value]).fetchall()
        return RunFootprint(run_id=runs[0][0], n_samples=sum(n for _, n in suites),
                            suites=tuple((s, int(n)) for s, n in suites), metrics=tuple(metrics))

    def run_footprint(self, run_id: str) -> RunFootprint | None:
        """What the stored run `run_id` holds (None: no such run): what recording over it would replace."""
        return self._footprint(self.cursor(), "", "run_id", run_id)

    def _archive_run(self, cur: duckdb.DuckDBPyConnection, run_id: str, reason: str) -> str | None:
        """Move the stored copy of `run_id` into the archive tables, in the caller's transaction.

        Returns:
            The new archive id, or None when there was no such run.
        """
        if not cur.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchall():
            return None
        archive_id = "a-" + uuid.uuid4().hex[:10]
        for live, kept in _TABLES:
            extra = ", ? AS archived_at, ? AS reason" if live == "runs" else ""
            params = [archive_id, *([_now(), reason] if extra else []), run_id]
            cur.execute(f"INSERT INTO {kept} BY NAME SELECT ? AS archive_id{extra}, * FROM {live} WHERE run_id = ?",
                        params)
            cur.execute(f"DELETE FROM {live} WHERE run_id = ?", [run_id])
        return archive_id

    def archived_runs(self, run_id: str | None = None) -> list[ArchivedRun]:
        """The kept copies of replaced runs (of `run_id` only, when given), newest first."""
        cur = self.cursor()
        rows = cur.execute("SELECT archive_id, run_id, archived_at, reason FROM archived_runs "
                           "WHERE ? IS NULL OR run_id = ? ORDER BY archived_at DESC, archive_id",
                           [run_id, run_id]).fetchall()
        out = []
        for a, r, at, why in rows:
            footprint = self._footprint(cur, "archived_", "archive_id", a)
            if footprint is not None:   # read in the same cursor as its archived_runs row
                out.append(ArchivedRun(archive_id=a, run_id=r, archived_at=at, reason=why, footprint=footprint))
        return out

    @retried("restoring a run")
    def restore_run(self, archive_id: str) -> ArchivedRun | None:
        """Put an archived copy back as the live run, in one transaction.

        The live copy it displaces (if any) is archived in turn, so a restore loses nothing.

        Returns:
            The displaced live copy's archive entry, or None when there was none.

        Raises:
            InputError: no archived copy has this id.
        """
        with self.transaction() as cur:
            row = cur.execute("SELECT run_id FROM archived_runs WHERE archive_id = ?", [archive_id]).fetchall()
            if not row:
                raise InputError(f"no replaced run is kept as {archive_id!r} (see the list of replaced runs)",
                                 field="archive_id")
            run_id = row[0][0]
            displaced = self._archive_run(cur, run_id, f"replaced by restoring {archive_id}")
            for live, kept in reversed(_TABLES):   # parents first
                cur.execute(f"INSERT INTO {live} BY NAME SELECT * EXCLUDE (archive_id"
                            + (", archived_at, reason" if live == "runs" else "")
                            + f") FROM {kept} WHERE archive_id = ?", [archive_id])
            for _, kept in _TABLES:
                cur.execute(f"DELETE FROM {kept} WHERE archive_id = ?", [archive_id])
        if displaced is None:
            return None
        return next(a for a in self.archived_runs(run_id) if a.archive_id == displaced)

    @retried("purging archived runs")
    def purge_archived(self, archive_ids: list[str]) -> int:
        """Delete kept copies for good (an operator's command; no page calls it).

        Returns:
            How many copies were deleted.

        Raises:
            InputError: an id names no kept copy; nothing is deleted.
        """
        with self.transaction() as cur:
            for archive_id in archive_ids:
                if not cur.execute("SELECT 1 FROM archived_runs WHERE archive_id = ?", [archive_id]).fetchall():
                    raise InputError(f"no replaced run is kept as {archive_id!r}", field="archive_id")
            for archive_id in archive_ids:
                for _, kept in _TABLES:
                    cur.execute(f"DELETE FROM {kept} WHERE archive_id = ?", [archive_id])
        return len(set(archive_ids))
