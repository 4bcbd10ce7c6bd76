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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from lib import inbox, settings, views
from lib.ablation import AblationSpec
from lib.demo import ensure_demo
from lib.diagnose import RunChanges
from lib.errors import StoreBusyError
from lib.jobs import JobRunner
from lib.judges import OfflineJudge, OpenAIJudge
from lib.judges.base import Judge
from lib.judges.offline import VARIANTS
from lib.report import md_escape as md_literal
from lib.store import Store

OFFLINE = "offline"
ABLATION_NOISE = 0.03   # the offline judge's stand-in for a model's run-to-run variation
QUERY_KEYS = ("run", "metric", "view", "ablation", "run_b")
BUSY_RETRY_SECONDS = 2.0  # while another process holds the database, a page tries again this often


def load_settings() -> settings.Settings:
    try:
        secrets = dict(st.secrets)
    except Exception:  # no secrets.toml: the environment alone decides
        secrets = {}
    return settings.load(secrets=secrets)


@st.cache_resource(show_spinner="Opening the database (building the demo on first start)...")
def open_store(path: str) -> Store:
    """The process's one connection to a database file (DuckDB: one owning process)."""
    if Path(path).resolve() == settings.DEMO_DB.resolve():
        ensure_demo(path)
    return Store(path)


def judge_for_spec(spec: AblationSpec) -> Judge | None:
    """The judge an ablation spec names (None when an external scorer is used)."""
    if spec.scorer:
        return None
    if spec.endpoint == OFFLINE:
        return OfflineJudge(spec.judge, noise=ABLATION_NOISE)
    s = load_settings()
    return OpenAIJudge(spec.judge, base_url=spec.endpoint, api_key=s.api_key, timeout=s.judge_timeout,
                       concurrency=s.judge_concurrency)


@st.cache_resource
def job_runner(path: str) -> JobRunner:
    return JobRunner(open_store(path), judge_for_spec)


@dataclass(frozen=True)
class Context:
    """What every page needs: the store, its path, and the chosen judge."""

    store: Store
    db_path: str
    judge: str
    endpoint: str

    @property
    def runner(self) -> JobRunner:
        return job_runner(self.db_path)

    @property
    def version(self) -> str:
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


def sidebar() -> Context:
    """Database and judge pickers (defaults from the environment); returns the page context."""
    ensure_navigation()
    s = load_settings()
    st.session_state.setdefault("db_path", str(s.db_path))
    with st.sidebar:
        db_path = st.text_input("Database file", key="db_path",
                                help="A DuckDB file; EVALDRIFT_DB sets the default. The demo is built when absent.")
        models = list(VARIANTS)
        if s.judge_model not in models:
            models.insert(0, s.judge_model)
        judge = st.selectbox("Judge for ablations", models, index=models.index(s.judge_model), key="judge_model",
                             help="offline-lexical-* is the embedded offline judge; any other model is called on "
                                  "the OpenAI-compatible server at OPENAI_BASE_URL.")
    endpoint = OFFLINE if judge in VARIANTS else (s.base_url or "https://api.openai.com/v1")
    path = db_path.strip() or str(s.db_path)
    if not Path(path).exists() and Path(path).resolve() != settings.DEMO_DB.resolve():
        st.error(f"No database at {path}. Create one with `python -m lib ingest` or `python -m lib demo --db PATH`.")
        st.stop()
    try:
        store = open_store(path)
    except StoreBusyError:  # a nightly job or the CLI holds the file (DuckDB: one process at a time)
        st.info("Another process (a nightly job or the command line) is writing to this database right now; "
                "the page opens it as soon as it is free.")
        time.sleep(BUSY_RETRY_SECONDS)
        st.rerun()
    inbox.drain(store, s.inbox if Path(path).resolve() == s.db_path.resolve() else Path(path).parent / "inbox")
    with st.sidebar:
        st.caption(f"Database: `{path}`  \nJudge: `{judge}` ({'offline' if endpoint == OFFLINE else endpoint})")
    return Context(store, path, judge, endpoint)


def query_param(name: str, default: str | None = None) -> str | None:
    """A deep-link parameter from the URL."""
    value = st.query_params.get(name)
    return value if value not in (None, "") else default


def set_query(**params: str | None) -> None:
    """Put the current view into the URL so a pasted link opens the same view."""
    for k, v in params.items():
        if v is None:
            st.query_params.pop(k, None)
        else:
            st.query_params[k] = v


def seed_from_query(key: str, param: str, options: Sequence[str], default: str | None) -> None:
    """Start the keyed widget `key` at the URL's `param`, and follow the URL when a link changes it.

    Call before creating the widget (and give the widget no index/value of its
    own). A value no longer among `options` falls back to `default`.
    """
    wanted = query_param(param)
    wanted = wanted if wanted in options else None
    marker = f"_url_{key}"
    if key not in st.session_state or (wanted is not None and wanted != st.session_state.get(marker)):
        st.session_state[key] = wanted if wanted is not None else default
    elif st.session_state[key] not in options:
        st.session_state[key] = default
    st.session_state[marker] = wanted


def show_run_changes(changes: RunChanges, *, key: str) -> None:
    """Render what changed between two runs: instrument and pipeline rows, then each template diff
    with the fields each side reads (a newly read must-never-receive field in red, with its ablation)."""
    rows = views.change_rows(changes)
    if not rows.empty:
        st.dataframe(rows, hide_index=True, key=f"{key}_rows")
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


def query_list(name: str) -> list[str]:
    """A comma-separated deep-link parameter as a list ('' and absent give [])."""
    value = query_param(name)
    return [v.strip() for v in value.split(",") if v.strip()] if value else []


def seed_list_from_query(key: str, param: str, options: Sequence[str], default: Sequence[str]) -> None:
    """seed_from_query for a multiselect: the URL's comma-separated `param`, filtered to `options`."""
    wanted = [v for v in query_list(param) if v in options] or None
    marker = f"_url_{key}"
    if key not in st.session_state or (wanted is not None and wanted != st.session_state.get(marker)):
        st.session_state[key] = list(wanted if wanted is not None else default)
    else:
        st.session_state[key] = [v for v in st.session_state[key] if v in options]
    st.session_state[marker] = wanted
