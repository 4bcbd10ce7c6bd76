"""Streamlit glue shared by the pages: the owned store, the job runner, the sidebar, deep links.

Pages stay thin: they call these helpers and lib functions, and render.
Resources (the store, the runner) are process-wide through st.cache_resource;
frames are cached with st.cache_data keyed by the store's data version, so a
run recorded by the nightly job appears on the next refresh.
"""

from __future__ import annotations

import runpy
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from lib.app import demo_start, gate, trust
from lib.app.calibration import GateRunner
from lib.app.snapshots import SnapshotKeeper
from lib.core import settings
from lib.core.endpoints import OFFLINE
from lib.core.errors import InputError, StoreBusyError, StoreError
from lib.diagnosis.ablation import AblationSpec
from lib.diagnosis.trends import RunChanges
from lib.intake import inbox
from lib.jobs import N_RUNS, ImportRunner, JobRunner, ensure_demo
from lib.judging.base import Judge
from lib.judging.breaker import Limits
from lib.judging.offline import VARIANTS
from lib.presentation import linkparams, static_tables, views
from lib.presentation.report import md_escape as md_literal
from lib.store import Store, databases, lake

BUSY_RETRY_SECONDS = 2.0  # while another process holds the database, a page tries again this often


def load_settings() -> settings.Settings:
    try:
        secrets = dict(st.secrets)
    except Exception:  # no secrets.toml: the environment alone decides
        secrets = {}
    try:
        return settings.load(secrets=secrets)
    except InputError as exc:   # a wrong setting: one sentence for everyone, never a traceback
        st.error(md_literal(f"This server is misconfigured: {exc}. Its operator fixes the setting and restarts it."))
        st.stop()


AS_OF = "#as-of="   # joins a team store's URL and a time into the key its reading as of that time is cached by


def reading_key(path: str, as_of: datetime | None) -> str:
    """The key the pages' loaders open and cache a store by: its path or URL, and the time it is read as of (none:
    now). Every st.cache key holds it, so a frame read as of a date is never served as the present, nor the reverse."""
    return path if as_of is None else f"{path}{AS_OF}{as_of.isoformat()}"


def split_key(key: str) -> tuple[str, datetime | None]:
    """A reading_key's store path or URL, and the time it reads as of (None: now)."""
    path, sep, when = key.rpartition(AS_OF)
    return (path, datetime.fromisoformat(when)) if sep else (key, None)


def open_store(path: str) -> Store:
    """The store of a reading_key: the process's one connection to a database file (DuckDB: one owning process)
    or to a team store, or a team store as it stood at a time (read-only)."""
    where, as_of = split_key(path)
    return _open_as_of(where, as_of.isoformat()) if as_of is not None else _open_present(where)


@st.cache_resource(show_spinner="Reading the team store as it stood then...", max_entries=8)
def _open_as_of(path: str, when: str) -> Store:
    """A team store attached at a snapshot time (DuckLake's time travel, read-only): a few dates kept open."""
    return Store(path, as_of=datetime.fromisoformat(when))


@st.cache_resource(show_spinner="Opening the database...")
def _open_present(path: str) -> Store:
    if lake.is_lake(path):   # many processes read and write it at once: no snapshot is kept for the CLI
        return Store(path)
    if settings.is_demo_path(path):
        ensure_demo(path)
    store = Store(path)
    SnapshotKeeper(store)   # the CLI's reading commands read its snapshot while this process holds the file
    return store


def endpoint_for(judge: str, s: settings.Settings | None = None) -> str:
    """Where a judge model lives: 'offline' for the embedded judge, else the configured server."""
    s = s or load_settings()
    return OFFLINE if judge in VARIANTS else s.endpoint


def judge_for_spec(spec: AblationSpec) -> Judge | None:
    """The judge for a spec, from this server's settings alone (lib.app.trust refuses what they do not allow)."""
    return trust.server_judge(spec, load_settings())


@st.cache_resource
def job_runner(path: str) -> JobRunner:
    return JobRunner(open_store(path), judge_for_spec, limits=lambda: Limits.from_settings(load_settings()))


@st.cache_resource
def gate_runner(path: str) -> GateRunner:
    """Runs the Ablation page's judge gates off the page thread (lib.app.calibration)."""
    return GateRunner(open_store(path))


@st.cache_resource
def import_runner(path: str) -> ImportRunner:
    return ImportRunner(open_store(path))


@dataclass(frozen=True)
class Context:
    """What every page needs: the store, its path, and the chosen judge."""

    store: Store
    db_path: str
    judge: str
    endpoint: str
    user: str | None = None   # the signed-in user's e-mail (None when login is off)
    db_name: str = ""         # the name the sidebar offers it by: what a viewer who is not the operator sees
    as_of: date | None = None  # a team store read as it stood at this day's end (db_path is then its reading_key)

    @property
    def path(self) -> str:
        """The store's own path or URL (db_path without the time it is read as of)."""
        return split_key(self.db_path)[0]

    @property
    def frozen(self) -> str | None:
        """Why nothing can be launched or written from the pages (the store is read as of a date), or None."""
        return None if self.as_of is None else as_of_banner(self.as_of)

    @property
    def runner(self) -> JobRunner:
        return job_runner(self.path)

    @property
    def imports(self) -> ImportRunner:
        """Scores the Import page's uploads off the page thread (lib.app.imports)."""
        return import_runner(self.path)

    @cached_property
    def version(self) -> str:
        """The store's data version, read once per script run: every cached loader of this run is keyed by it
        (a page reading it for each loader paid one query each, 7 to 9 a run). A write starts a new run."""
        return self.store.data_version()


_NAV = threading.local()


@contextmanager
def navigating() -> Iterator[None]:
    """Mark the script run as going through app.py's st.navigation (app.py wraps its .run())."""
    _NAV.on = True
    try:
        yield
    finally:
        _NAV.on = False


def ensure_navigation() -> None:
    """Run the page through app.py when Streamlit ran the page file by itself.

    On a server's very first request for a deep link (e.g. /canary), Streamlit
    still uses its folder-based routing for pages/ and runs the page file
    without app.py, so the navigation and layout would be wrong until someone
    opened /. Running app.py here hands the request to st.navigation, which
    picks the same page from the URL; then this outer run stops.
    """
    if getattr(_NAV, "on", False):
        return
    runpy.run_path(str(settings.ROOT / "app.py"), run_name="__main__")
    st.stop()


def sidebar(*, create: bool = False) -> Context:
    """Database and judge pickers (choices from the operator's settings); returns the page context.

    `create`: open a database that does not exist yet by creating it (the Import page), instead of saying so.
    """
    ensure_navigation()
    new_script_run()
    s = load_settings()
    user = gate.current_email(s)
    gate.show_user(user)
    offered = databases.offered(s)
    with st.sidebar:
        name = _database_picker(list(offered))
        as_of = _as_of_picker(lake.is_lake(offered[name]))
        models = list(VARIANTS)
        if s.judge_model not in models:
            models.insert(0, s.judge_model)
        judge = st.selectbox("Judge for ablations", models, index=models.index(s.judge_model), key="judge_model",
                             help="offline-lexical-* is the embedded offline judge; any other model is called on "
                                  "the OpenAI-compatible server at OPENAI_BASE_URL.")
    endpoint = OFFLINE if judge in VARIANTS else s.endpoint
    path = offered[name]
    when = None if as_of is None else lake.as_of_time(as_of.isoformat())   # that day's end
    store = _open_or_stop(reading_key(path, when) if isinstance(path, str) else path, name, create=create)
    if as_of is not None:
        st.info(as_of_banner(as_of), icon=":material/history:")
    for folder in () if lake.is_lake(path) else inbox.folders_drained(path, s):   # EVALDRIFT_INBOX, and beside the
        inbox.drain(store, folder)   # database (lib.intake.inbox); nothing is ever handed over to a team store
    with st.sidebar:
        st.caption(f"Judge: `{judge}` ({'offline' if endpoint == OFFLINE else endpoint})")
    return Context(store, reading_key(str(path), when), judge, endpoint, user, db_name=name, as_of=as_of)


def as_of_banner(day: date) -> str:
    """What every page says, and every write or launch control gives as its reason, while read as of `day`."""
    return f"As of {day.isoformat()} (end of day): the history as it stood then; nothing can be launched or written"


def _as_of_picker(team_store: bool) -> date | None:
    """The day a team store is read as of (None: now), from the sidebar's date input or a link's `asof`.

    Like the database's, the choice is kept under a key of its own so it survives page changes, and the URL
    carries it so a link shares the view. A DuckDB file keeps only its present: no input is offered for one.
    """
    today = date.today()
    day, problem = linkparams.as_of_day(query_param("asof"), team_store=team_store, today=today)
    seed_value("as_of", "asof", day, None, problem)
    if not team_store:
        st.session_state["as_of"] = None
        if query_param("asof") is not None:
            set_query(asof=None)
        return None
    st.session_state["as_of_choice"] = st.session_state["as_of"]

    def keep() -> None:
        st.session_state["as_of"] = st.session_state["as_of_choice"]

    # value=None: the input starts empty and can be emptied again (now); its state is the session's "as_of"
    st.date_input("As of", value=None, key="as_of_choice", on_change=keep, min_value=linkparams.FIRST_DAY,
                  max_value=today,
                  format="YYYY-MM-DD",
                  help="Read this team store as it stood at the end of a day (DuckLake's time travel), e.g. what the "
                       "Overview said at a weekly review; empty: now. Nothing can be launched or written meanwhile. "
                       "Offered on a team store only: a DuckDB file keeps only its present.")
    chosen = st.session_state["as_of"] if isinstance(st.session_state["as_of"], date) else None
    set_query(asof=None if chosen is None else chosen.isoformat())   # on every page: its link reads as of it too
    return chosen


def _database_picker(names: list[str]) -> str:
    """The operator's databases by name. The choice lives in session state under a key of its own, so it
    survives page changes (Streamlit forgets a widget's value on a page that does not draw it yet)."""
    if st.session_state.get("db_name") not in names:
        st.session_state["db_name"] = names[0]
    st.session_state["db_choice"] = st.session_state["db_name"]

    def keep() -> None:
        st.session_state["db_name"] = st.session_state["db_choice"]

    st.selectbox("Database", names, key="db_choice", on_change=keep, disabled=len(names) == 1,
                 help="The databases this server's operator offers (EVALDRIFT_DB, and the *.duckdb files in "
                      "EVALDRIFT_DB_DIR).")
    return str(st.session_state["db_name"])


def _demo_progress(path: Path) -> None:
    """While the demo is built (first start), the page says how far it is and reruns when it is there."""
    build = demo_start.demo_build(path)

    @st.fragment(run_every=1.0)
    def show() -> None:
        if build.finished:
            st.rerun()
        if build.error and not build.running:
            st.error(f"Building the demo database failed: {md_literal(build.error)}. Reload the page to try again, "
                     "or build it with `python -m lib demo`.")
            return
        done, total = build.rejudged
        if total:
            st.progress(done / total, text=f"First start: all {build.total} nightly runs judged; re-judging the "
                                           f"episode that crosses instrument changes with one instrument, {done} of "
                                           f"{total} runs. The dashboard opens on the demo when it is done.")
            return
        st.progress(build.done / build.total if build.total else 0.0,
                    text=f"First start: building the demo database, {build.done} of {build.total or N_RUNS} "
                         "nightly runs judged. The dashboard opens on it when the last one is recorded.")

    st.title("evaldrift")
    show()
    st.stop()


NO_RUNS_HINT = ("Record a first run on the Import page, or with `python -m lib score FILE --db PATH` (your file, "
                "scored by the judge) or `python -m lib import FILE --db PATH` (another tool's results).")


def _open_or_stop(path: Path | str, name: str, *, create: bool = False) -> Store:
    """The store for `path`, or a sentence (never a traceback or a server path) and a stopped page.

    `create`: a missing file is created (the Import page records a first run into a new database). A team
    store's URL (lib.store.lake) is opened as it is; what is wrong with it is said with its name in place of the URL.
    """
    if isinstance(path, str):
        return _open_shown(path, name)
    if not path.exists() and settings.is_demo_path(path):
        _demo_progress(path)
    if not path.exists() and not settings.is_demo_path(path) and not create:
        st.error(f"No database {md_literal(name)} yet. {NO_RUNS_HINT}")
        st.page_link("pages/import.py", label="Record a first run on the Import page", icon=":material/upload:")
        st.stop()
    return _open_shown(str(path), name)


def _open_shown(key: str, name: str) -> Store:
    path, as_of = split_key(key)
    try:
        return open_store(key)
    except StoreBusyError:  # a nightly job or the CLI holds the file (DuckDB: one process at a time)
        st.info("Another process (a nightly job or the command line) is writing to this database right now; "
                "the page opens it as soon as it is free.")
        time.sleep(BUSY_RETRY_SECONDS)
        st.rerun()
    except StoreError as exc:   # as of a date: a day before the store's first run has no snapshot to read
        said = str(exc).replace(path, name)
        st.error(md_literal(said if as_of is None else f"As of {as_of:%Y-%m-%d}: {said}. Choose a later day in "
                                                       "As of, or empty it to read the store as it is now."))
        st.stop()
    raise AssertionError("unreachable")


def query_param(name: str, default: str | None = None) -> str | None:
    """A deep-link parameter from the URL (`name` must be in lib.presentation.linkparams.PARAMS)."""
    linkparams.registered(name)
    value = st.query_params.get(name)
    return value if value not in (None, "") else default


def follow_alias(param: str, alias: str, value: str) -> None:
    """A link's `param=alias` (e.g. run=latest) becomes `value` in the URL before any widget is seeded from it,
    so the widget follows the link to that value as to any other."""
    linkparams.registered(param)
    if st.query_params.get(param) == alias:
        st.query_params[param] = value


def set_query(**params: str | None) -> None:
    """Put the current view into the URL so a pasted link opens the same view.

    The widgets seeded from these parameters in this script run take the written value as the URL they have
    already followed: the page's own write is not a link to follow on the next run (it would undo the user's
    first pick, which the page has not written yet).
    """
    seeded = st.session_state.get(_SEEDED, {})
    for k, v in params.items():
        linkparams.registered(k)
        if v is None:
            st.query_params.pop(k, None)
        else:
            st.query_params[k] = v
        for key in seeded.get(k, ()):
            st.session_state[_marker(key, k)] = v


_SEEDED = "_url_seeded"   # {param: [widget keys seeded from it in this script run]}


def _marker(key: str, param: str) -> str:
    """Where the URL value of `param` that widget `key` last followed (or was written from it) is kept."""
    return f"_url_{key}.{param}"


def _seeded_from(key: str, *params: str) -> bool:
    """Record that widget `key` follows `params` in this script run; True when the URL's value of any of them
    differs from the value the widget last followed or wrote (a link was opened), so the widget should follow it."""
    changed = False
    for param in params:
        raw = query_param(param)
        keys = st.session_state.setdefault(_SEEDED, {}).setdefault(param, [])
        if key not in keys:
            keys.append(key)
        changed |= raw != st.session_state.get(_marker(key, param))
        st.session_state[_marker(key, param)] = raw
    return changed


def link_followed(key: str, param: str) -> bool:
    """True when the URL's `param` is a link to follow in this script run (opened, or changed by a link), not the
    value the page itself last wrote; `key` names what follows it (as a widget key does for seed_from_query)."""
    linkparams.registered(param)
    return _seeded_from(key, param) and query_param(param) is not None


def new_script_run() -> None:
    """Forget which widgets followed which URL parameters in the previous script run (sidebar() calls it)."""
    st.session_state[_SEEDED] = {}


def seed_from_query(key: str, param: str, options: Sequence[str], default: str | None, *, warn: bool = True) -> bool:
    """Start the keyed widget `key` at the URL's `param`, and follow the URL when a link changes it.

    Call before creating the widget (and give the widget no index/value of its
    own). A value not among `options` falls back to `default`, with a warning
    on the page unless `warn` is False (the page says it itself). Returns True
    when the widget took the URL's value in this run (a link, or a first visit).
    """
    wanted = query_param(param)
    problem = linkparams.unknown_choice(param, wanted, options, default)
    follow = seed_value(key, param, wanted if wanted in options else None, default, problem if warn else None)
    if st.session_state[key] not in options:
        st.session_state[key] = default
    return follow


def seed_value(key: str, param: str | tuple[str, ...], value: object, default: object,
               problem: str | None = None) -> bool:
    """seed_from_query for a value the page parsed from the URL's `param` itself (a search, a range; a tuple of
    names for a value two parameters give, as from and to).

    `value` is the parsed value, or None when the URL has none or a bad one (then `problem`, if given, is shown
    as a warning when a link brought it). The widget `key` takes `value` on a first visit or when a link changed
    `param`, `default` on a first visit without one, and otherwise keeps what the user set. Returns True when it
    took `value`.
    """
    link = _seeded_from(key, *((param,) if isinstance(param, str) else param))
    if problem and (link or key not in st.session_state):   # not the page's own earlier write, made stale
        st.warning(md_literal(problem))                     # by another choice (a verdict word of another metric)
    follow = value is not None and (link or key not in st.session_state)
    if follow or key not in st.session_state:
        st.session_state[key] = value if follow else default
    return follow


def show_run_changes(changes: RunChanges) -> None:
    """Render what changed between two runs: instrument and pipeline rows (a static table: a few rows, nothing
    to sort), then each template diff with the fields each side reads (a newly read must-never-receive field in
    red, with its ablation)."""
    rows = views.change_rows(changes)
    if not rows.empty:
        st.table(static_tables.styled(rows))
    for t in changes.templates:
        st.markdown(f"**{md_literal(t.metric)}** judge prompt `{t.before_hash}` → `{t.after_hash}`")
        st.caption(f"reads {md_literal(', '.join(t.fields_before) or '?')} → "
                   f"{md_literal(', '.join(t.fields_after) or '?')}")
        for f in t.newly_forbidden:
            st.error(f"The new template reads **{md_literal(f)}**, which {md_literal(t.metric)} must never receive.")
            st.page_link(views.PAGE_ABLATION, label=f"Test it: ablate {md_literal(t.metric)} with {md_literal(f)} "
                         "blanked", icon=":material/science:",
                         query_params={"run": changes.run_id, "metric": t.metric, "blank": f})
        st.code(t.diff or "(no textual difference)", language="diff")


STATIC_ROWS = 20   # a table this short is drawn static; a longer one scrolls in place in a grid


def short_table(frame: pd.DataFrame, *, order: Sequence[str], labels: Mapping[str, str], formats: Mapping[str, str],
                key: str, **grid: Any) -> None:
    """A table of our own records (jumps, recorded changes): static when it has at most STATIC_ROWS rows (HTML,
    wrapping; no data grid for the browser to load, about 0.2 s of Trends' first draw), else a grid (`grid`:
    st.dataframe's column_config, row_height, ...). Columns in `order`, headed by `labels`; numbers and times
    by `formats` (column -> format spec)."""
    if len(frame) > STATIC_ROWS:
        st.dataframe(frame, hide_index=True, key=key, column_order=list(order), **grid)
        return
    shown = frame[[c for c in order if c in frame.columns]]
    st.table(static_tables.styled(shown.rename(columns=dict(labels)),
                                  formats={labels.get(c, c): f for c, f in formats.items() if c in shown.columns}))


def query_list(name: str) -> list[str]:
    """A comma-separated deep-link parameter as a list ('' and absent give [])."""
    value = query_param(name)
    return [v.strip() for v in value.split(",") if v.strip()] if value else []


def seed_list_from_query(key: str, param: str, options: Sequence[str], default: Sequence[str]) -> None:
    """seed_from_query for a multiselect: the URL's comma-separated `param`, filtered to `options`."""
    problem = linkparams.unknown_choices(param, query_list(param), options)
    if problem:
        st.warning(md_literal(problem))
    wanted = [v for v in query_list(param) if v in options] or None
    link = _seeded_from(key, param)
    if key not in st.session_state or (link and wanted is not None):
        st.session_state[key] = list(wanted if wanted is not None else default)
    else:
        st.session_state[key] = [v for v in st.session_state[key] if v in options]
