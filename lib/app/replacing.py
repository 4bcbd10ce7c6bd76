"""Recording over an existing run id from a page: say what would be replaced, ask, allow only launchers.

The rules the Import page applies, as functions a test calls without
Streamlit. A replaced copy is never lost: the store moves it to its archive
(lib.store.archive), the page lists it and can restore it, and only an
operator's `python -m lib archive purge` deletes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from lib.app import access
from lib.core.errors import InputError
from lib.core.settings import Settings
from lib.store import Store
from lib.store.archive import ArchivedRun, RunFootprint

NOT_ALLOWED = ("Only the people this server's operator lists (EVALDRIFT_ABLATION_USERS) may replace a run; "
               "pick a new run id.")


@dataclass(frozen=True)
class RecordChoice:
    """What recording under a run id would do, and whether this user may do it.

    Attributes:
        run_id: the run id typed.
        existing: what the stored run of that id holds (None: the id is new).
        allowed: may this user replace a run (those allowed to launch on a paid judge).
    """

    run_id: str
    existing: RunFootprint | None
    allowed: bool

    @property
    def needs_confirmation(self) -> bool:
        """True when recording would replace a run: the user must choose to, explicitly."""
        return self.existing is not None and self.allowed

    def may_record(self, *, confirmed: bool) -> bool:
        """Whether the Record button may act: a new id, or a replacement allowed and confirmed."""
        return self.existing is None or (self.allowed and confirmed)

    def warning(self) -> str | None:
        """The sentence saying what recording would replace (None for a new run id)."""
        if self.existing is None:
            return None
        return (f"A run with this id is already stored: {self.existing.sentence()}. Recording replaces all of it; "
                "the current copy is kept among the replaced runs below and can be restored.")


def record_choice(store: Store, run_id: str, *, user: str | None, settings: Settings, login: bool) -> RecordChoice:
    """What recording `run_id` would replace, and whether `user` may replace it."""
    return RecordChoice(run_id=run_id, existing=store.run_footprint(run_id) if run_id else None,
                        allowed=access.may_replace(user, settings, login=login))


def check_record(store: Store, run_id: str, *, confirmed: bool, user: str | None, settings: Settings,
                 login: bool) -> None:
    """Refuse a recording the user did not choose or may not make, just before it is written.

    Raises:
        InputError: the run id is taken and the replacement was not confirmed, or the user may not replace.
    """
    choice = record_choice(store, run_id, user=user, settings=settings, login=login)
    if choice.existing is not None and not choice.allowed:
        raise InputError(NOT_ALLOWED, field="run_id")
    if not choice.may_record(confirmed=confirmed):
        raise InputError(f"run {run_id!r} is already stored: tick the box to replace it, or pick a new run id",
                         field="run_id")


def restore(store: Store, archive_id: str, *, user: str | None, settings: Settings, login: bool) -> str:
    """Restore a replaced run from the page (launchers only); returns the sentence to show.

    Raises:
        InputError: the user may not restore, or no copy is kept under `archive_id`.
    """
    if not access.may_replace(user, settings, login=login):
        raise InputError(NOT_ALLOWED.replace("replace a run; pick a new run id", "restore a replaced run"),
                         field="archive_id")
    kept = {a.archive_id: a for a in store.archived_runs()}
    if archive_id not in kept:
        raise InputError(f"no replaced run is kept as {archive_id!r}", field="archive_id")
    displaced = store.restore_run(archive_id)
    said = f"Restored run {kept[archive_id].run_id} ({kept[archive_id].footprint.sentence()})."
    if displaced is not None:
        said += f" The copy it replaced is kept as {displaced.archive_id}."
    return said


def archive_label(entry: ArchivedRun) -> str:
    """One kept copy in a list, as plain text (the caller escapes it where it renders Markdown)."""
    return (f"{entry.run_id}, replaced {entry.archived_at:%Y-%m-%d %H:%M} ({entry.reason}): "
            f"{entry.footprint.sentence()} [{entry.archive_id}]")
