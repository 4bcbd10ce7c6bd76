"""Streamlit glue for the whole story of a metric: re-judged history, incidents and their states.

The Trends page calls rejudge_panel (choose runs and an instrument, see the
cost, launch, watch progress); the Overview calls incident_panel (open
incidents first, oldest first, with their evidence and a state form). The
logic lives in lib.diagnosis.rejudge, lib.diagnosis.incidents and lib.diagnosis.incidents; this module only
lays widgets out and calls them. Stored text (notes, run ids, templates) is
shown as text, never as HTML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import streamlit as st

from lib.app import access, gate
from lib.app.ui import Context, load_settings, open_store
from lib.core.endpoints import OFFLINE
from lib.core.errors import EvaldriftError
from lib.core.prompts import BINDINGS
from lib.diagnosis import incidents, rejudge, trends
from lib.diagnosis.trends import Jump
from lib.jobs import RejudgeRunner
from lib.judging.base import Judge
from lib.judging.build import build_judge
from lib.presentation import glossary
from lib.presentation.report import md_escape as md
from lib.presentation.views import PAGE_RUN, PAGE_TRENDS
from lib.store import history as hs

TRUSTED = "trusted (default)"


def judge_for_rejudge(spec: rejudge.RejudgeSpec) -> Judge:
    """The judge for a re-judge, built from this server's settings alone (as trust.server_judge for ablations).

    Raises:
        TrustError: the spec names an offline judge that does not exist, or an endpoint that is not this
            server's (where the API key goes is the operator's setting, never the spec's).
    """
    return build_judge(spec.judge, spec.endpoint, load_settings())


@st.cache_resource
def rejudge_runner(path: str) -> RejudgeRunner:
    return RejudgeRunner(open_store(path), judge_for_rejudge)


def version(ctx: Context) -> str:
    """The data version including series and incident states (a cache key for page loaders)."""
    return f"{ctx.version}|{hs.version(ctx.store)}"


PANEL_READ_AT = "incident_panel_version"


def panel_read_at(ctx: Context) -> str:
    """The data version the incident panel's loaders read, kept for this script run: a re-judge that finishes
    while the page draws (after its standings were read, before its own line is drawn) is caught up by one more
    run (`_episode_rejudge`), so the panel never says "done" beside a standing that lacks the series."""
    st.session_state[PANEL_READ_AT] = version(ctx)
    return str(st.session_state[PANEL_READ_AT])


TYPED_NAME = "typed_name"   # the name typed on any page, kept apart from the widgets (Streamlit forgets a widget's
                            # value on a page that does not draw it), so the next page's field starts with it


def current_user(ctx: Context, key: str) -> str:
    """Who is acting: the signed-in user (st.user, through lib.app.gate) when login is on, else a name typed into
    a field (kept per session, and carried from page to page)."""
    if ctx.user:
        st.caption(f"Recorded as {md(ctx.user)} (signed in).")
        return ctx.user
    if st.session_state.get(key) in (None, "") and st.session_state.get(TYPED_NAME):
        st.session_state[key] = st.session_state[TYPED_NAME]

    def keep() -> None:
        st.session_state[TYPED_NAME] = st.session_state[key]

    return st.text_input("Your name", key=key, on_change=keep,
                         help="Recorded with each state change and label (login is off).")


@st.cache_data(show_spinner="Counting what the re-judge will cost...")
def _estimate(db_path: str, version: str, spec_dict: dict, cacheable: bool) -> rejudge.RejudgeCost:
    return rejudge.estimate(open_store(db_path), rejudge.RejudgeSpec.from_dict(spec_dict), cacheable=cacheable)


def _instrument(ctx: Context, metric: str) -> tuple[str, str, str]:
    """The instrument widgets: template (trusted default or any stored one) and binding; returns (template,
    binding, label)."""
    trusted = rejudge.trusted_instrument(ctx.store, metric)
    prompts = ctx.store.prompts()
    hashes = prompts[prompts["metric"] == metric]["prompt_hash"].tolist()
    c1, c2 = st.columns([3, 1])
    choice = c1.selectbox("Instrument (judge prompt)", [TRUSTED, *hashes], key="rj_prompt",
                          help=f"Trusted: {trusted.source}. Any stored template of this metric may be chosen.")
    if choice == TRUSTED:
        c2.selectbox("Binding", [trusted.binding], key="rj_binding_trusted", disabled=True)
        return trusted.template, trusted.binding, trusted.source
    binding = c2.selectbox("Binding", list(BINDINGS), key="rj_binding")
    return ctx.store.prompt(choice) or "", binding, f"prompt {choice}, {binding}"


def rejudge_panel(ctx: Context, metrics: Sequence[str], run_ids: Sequence[str]) -> None:
    """Choose a metric, the runs shown and an instrument; see the cost; launch; watch progress."""
    with st.expander("Re-judge this history with one instrument", expanded="rj_series" in st.session_state):
        st.caption("Every run in the range is judged again with one instrument, so every step of the new line is "
                   "the system's own. The recorded scores stay as they are; the new series is drawn beside them.")
        sid = st.session_state.get("rj_series")
        if sid:
            _show_status(ctx.path, sid, ctx.user, ctx.frozen)
        metric = st.selectbox("Metric to re-judge", list(metrics), key="rj_metric")
        template, binding, label = _instrument(ctx, metric)
        try:
            spec = rejudge.RejudgeSpec(metric, tuple(run_ids), template, binding, judge=ctx.judge,
                                       endpoint=ctx.endpoint, label=f"{label}, {ctx.judge}")
        except EvaldriftError as exc:
            st.error(md(exc))
            return
        if st.button("Count the cost", key="rj_cost", help="Counts the judgings, what the store and the call "
                     "cache already answer, and the judge calls left, before anything is launched."):
            st.session_state["rj_costed"] = spec.series_id
        if st.session_state.get("rj_costed") != spec.series_id:
            return
        cost = _estimate(ctx.db_path, version(ctx), spec.to_dict(), ctx.endpoint != OFFLINE)
        st.info(md(cost.sentence), icon=":material/payments:")
        allowed = access.may_launch(ctx.user, ctx.endpoint, load_settings(), login=gate.login_configured())
        if not allowed:
            st.info("Re-judging with a paid judge is launched by the people this server's operator lists "
                    "(EVALDRIFT_ABLATION_USERS); the offline judges are open to everyone.")
        if st.button(f"Re-judge {len(run_ids)} runs", type="primary", key="rj_launch",
                     disabled=bool(ctx.frozen) or not allowed, help=ctx.frozen):
            st.session_state["rj_series"] = rejudge_runner(ctx.path).submit(spec)
            st.rerun()


def _show_status(db_path: str, series_id: str, user: str | None, frozen: str | None = None) -> None:
    """A re-judge's state; its progress and Stop while it runs (`frozen`: why Stop is off, the store read as of a
    date)."""
    status = rejudge_runner(db_path).status(series_id)
    if status.state in ("queued", "running"):
        _progress(db_path, series_id, user, frozen)
    elif status.state == "done":
        st.success(f"Re-judged series {md(series_id)} is done and drawn on the chart.")
    elif status.state == "stopped":
        st.warning(f"Re-judge {md(series_id)} {md(status.reason or 'stopped')}. What it judged is kept: launch it "
                   "again to resume where it stopped.")
    elif status.state in ("failed", "stalled"):
        st.error(f"Re-judge {md(series_id)} {status.state}: {md(status.error or 'its process ended')}. "
                 "Launch it again to resume where it stopped.")


@st.fragment(run_every=1.0)
def _progress(db_path: str, series_id: str, user: str | None, frozen: str | None = None) -> None:
    """Polls the stored progress (shared by every session); the whole page reruns when the work ends."""
    status = rejudge_runner(db_path).status(series_id)
    if status.state not in ("queued", "running"):
        st.rerun(scope="app")
    label = (f"Re-judging: {status.done} of {status.total} judgings ({status.fraction:.0%})" if status.total
             else "Queued: waiting for the worker...")
    st.progress(status.fraction, text=label)
    st.caption("Runs on a background worker: you can leave this page; the series is stored as it goes.")
    allowed = access.may_stop(user, _series_endpoint(db_path, series_id), load_settings(),
                              login=gate.login_configured())
    if st.button("Stop", key="rj_stop", icon=":material/stop:", disabled=bool(frozen) or not allowed,
                 help=frozen or "Stop this re-judge within seconds (calls in flight are cancelled); what it judged "
                      "is kept, and launching it again resumes it.") and allowed:
        rejudge_runner(db_path).stop(series_id)
        st.rerun(scope="app")
    if not allowed:
        st.caption(access.STOP_REFUSED)


def _series_endpoint(db_path: str, series_id: str) -> str | None:
    """The judge a stored re-judged series calls (None: not recorded)."""
    row = hs.series(open_store(db_path), series_id)
    endpoint = (row or {}).get("spec", {}).get("endpoint")
    return str(endpoint) if endpoint else None


# -- incidents ----------------------------------------------------------------------------------
def load_incidents(db_path: str, version: str) -> tuple[list[incidents.Incident], list[rejudge.Series]]:
    """Every incident (with states) and every finished re-judged series of the store."""
    return incidents.load(open_store(db_path))


def incident_panel(ctx: Context, standings: list[incidents.Standing], found: list[incidents.Incident],
                   jumps: Sequence[Jump] = (),
                   evidence: Mapping[tuple[str, str], incidents.JumpEvidence] | None = None, *,
                   announced: frozenset[str] = frozenset(), series: Sequence[rejudge.Series] = ()) -> None:
    """Open incidents first (oldest first) with the level against the trusted baseline (`standings`, from
    lib.diagnosis.incidents), then the closed ones. `jumps` (diagnose.find_jumps): an open episode lists every
    jump inside it, largest first, each read from its `evidence` (incidents.load_jump_evidence), each with a link to
    its run (where its template and the ablation to test it are). `announced`: the incidents `watch` has told the
    team's channel about. `series`: the finished re-judged series (incidents.load), so an incident's re-judge says
    its answer in the incident's card."""
    still = incidents.open_first(found)
    st.subheader(f"Open incidents ({len(still)})", help=glossary.help_for("instrument", "episode"))
    for s in standings:
        st.markdown(f"**{md(s.sentence)}**")
        st.caption(md(s.same_instrument_sentence))
    if not still:
        st.success("Nothing is open: every incident has been explained or accepted.")
    user = current_user(ctx, "incident_user") if found else ""
    for inc in still:
        _incident(ctx, inc, user, jumps, evidence or {}, announced=inc.incident_id in announced, series=series)
    closed = [i for i in found if not i.is_open]
    if closed:
        with st.expander(f"Explained, accepted or no longer beyond the threshold ({len(closed)})"):
            for inc in closed:
                _incident(ctx, inc, user, announced=inc.incident_id in announced)


def _incident(ctx: Context, inc: incidents.Incident, user: str, jumps: Sequence[Jump] = (),
              evidence: Mapping[tuple[str, str], incidents.JumpEvidence] | None = None, *,
              announced: bool = False, series: Sequence[rejudge.Series] = ()) -> None:
    with st.container(border=True):
        colour = "red" if inc.is_open else "green"
        st.markdown(f":{colour}[**{md(inc.state)}**] · {md(inc.kind)} · {md(inc.title)}"
                    + (" · :blue-badge[announced]" if announced else ""))
        inside = incidents.episode_jumps(inc, jumps) if inc.is_open and inc.kind == "episode" else []
        if inside:
            st.caption(f"Every {md(inc.metric)} jump in this episode, largest first:",
                       help=trends.HELP[trends.JUMP_THRESHOLD])
            for j in inside:
                st.text(incidents.jump_line(j, (evidence or {}).get((j.metric, j.run_id))))
            # each jump's run is where its template diff is and, for a template that now reads a field the metric
            # must never receive, the ablation that tests it: without these the card was a dead end (issue 46)
            with st.container(horizontal=True, wrap=True, gap="small", key=f"runs_{inc.incident_id}"):
                for j in sorted(inside, key=lambda j: j.started_at):
                    st.page_link(PAGE_RUN, label=f"Open run {md(j.run_id)}", icon=":material/open_in_new:",
                                 query_params={"run": j.run_id, "metric": j.metric}, width="content")
        if incidents.needs_rejudge(inc):
            _episode_rejudge(ctx, inc, series)
        for line in inc.agreement:   # is the judge right? people's agreement on both sides of the change
            st.caption(md(line))
        for line in inc.corrected:   # the metric through people's labels, beside the judge's
            st.caption(md(line))
        with st.expander("Evidence"):
            for line in inc.evidence:
                st.text(line)
            for c in inc.changes:
                st.text(f"{c.at:%Y-%m-%d %H:%M} {c.user}: {c.state}" + (f" ({c.note})" if c.note else ""))
        with st.form(f"form_{inc.incident_id}", border=False):
            c1, c2, c3 = st.columns([2, 3, 1], vertical_alignment="bottom")   # four in a row cut "Record" at 1024 px
            state = c1.selectbox("State", incidents.STATES, index=incidents.STATES.index(inc.state)
                                 if inc.state in incidents.STATES else 0,
                                 key=f"state_{inc.incident_id}")
            note = c2.text_input("Note", key=f"note_{inc.incident_id}")
            if c3.form_submit_button("Record", key=f"record_{inc.incident_id}", disabled=bool(ctx.frozen),
                                     help=ctx.frozen):
                who = user
                if not who.strip():   # one name box for the page (login off), under "Open incidents"
                    st.error("Type your name in “Your name” under “Open incidents” at the top of the page: it is "
                             "recorded with the change.")
                    return
                try:
                    incidents.set_state(ctx.store, inc.incident_id, state, note=note, user=who)
                except EvaldriftError as exc:
                    st.error(md(exc))
                else:
                    st.rerun()


def _episode_rejudge(ctx: Context, inc: incidents.Incident, series: Sequence[rejudge.Series] = ()) -> None:
    """The re-judge that reads an episode across instrument changes with one instrument: one click, or its
    progress, or what it found (from `series`, the finished re-judged series)."""
    try:
        spec = incidents.rejudge_spec(ctx.store, inc, judge=ctx.judge, endpoint=ctx.endpoint)
    except EvaldriftError as exc:
        st.caption(md(exc))
        return
    row = hs.series(ctx.store, spec.series_id)
    if row is not None and row["status"] == "done":
        if st.session_state.get(PANEL_READ_AT, version(ctx)) != version(ctx):
            st.rerun()   # the series finished after the panel above was read: read it again, with the series
        # its answer here, in the card: "the line above" was the incident's title, not the conclusion (issue 46)
        said = [w for s in series if s.series_id == spec.series_id for w in incidents.series_words(s)]
        st.markdown(md(f"Re-judged with one instrument: {'; '.join(said)}." if said else
                       f"Re-judged with one instrument ({spec.label}), over {spec.run_ids[0]} to "
                       f"{spec.run_ids[-1]} ({len(spec.run_ids)} runs): its answer is in the evidence below."))
        st.page_link(PAGE_TRENDS, label="See the re-judged series on Trends", icon=":material/show_chart:",
                     query_params={"metric": inc.metric})
        return
    key = f"rj_{inc.incident_id}"
    if row is not None or st.session_state.get(key):
        _show_status(ctx.path, spec.series_id, ctx.user, ctx.frozen)
        return
    allowed = access.may_launch(ctx.user, ctx.endpoint, load_settings(), login=gate.login_configured())
    free = ctx.endpoint == OFFLINE
    if st.button(f"Re-judge these {len(spec.run_ids)} runs with one instrument", key=f"rj_btn_{inc.incident_id}",
                 icon=":material/replay:", disabled=bool(ctx.frozen) or not allowed,
                 help=ctx.frozen or f"{inc.metric} from {spec.run_ids[0]} to {spec.run_ids[-1]}, judged again "
                      f"by {ctx.judge} with the trusted instrument ({spec.label}), so every step of the new line is "
                      "the system's own"
                      + (" (the offline judge costs nothing)." if free else
                         ". Count the cost first on Trends if this judge is paid.")):
        st.session_state[key] = rejudge_runner(ctx.path).submit(spec)
        st.rerun()
