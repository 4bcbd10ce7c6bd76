"""Ablation: is this metric reading a field it must never see (a wiring leak), or did the system really change?

Pick a run, metrics and the fields to blank. The run's samples are re-judged
on a background worker, paired (the same samples with and without the field),
repeated for a noise band, and the outcome comes back in words: per cell of the
metrics x fields matrix, against what the wiring table expects. A finished
ablation is answered from the store; an ablation launched in one browser shows
its progress in every other one.
"""

import streamlit as st

import lib.app.ui
from lib import jobs
from lib.app import access, calibration, gate, loaders, trust, ui_history
from lib.core.errors import EvaldriftError, InputError
from lib.core.metrics import METRIC_NAMES
from lib.core.prompts import BINDINGS
from lib.diagnosis import cost, trends
from lib.diagnosis.ablation import (
    LEAK,
    SWAPPABLE,
    AblationResult,
    AblationSpec,
    arm_label,
    four_readings_gap,
    four_readings_spec,
    split_headline,
)
from lib.presentation import ablation_form, ablation_views, charts, glossary, judging_counts, review, views

FIELDS = ("ground_truth", "question", "contexts")
SHOW_ABLATIONS = 10
BANNERS = {"error": st.error, "warning": st.warning, "success": st.success}
LEVEL_ORDER = {"error": 0, "warning": 1, "success": 2}
md = review.md_escape

ctx = lib.app.ui.sidebar()
server = lib.app.ui.load_settings()
version = ctx.version


st.title("Ablation")
st.caption("Blank a field, re-judge the same samples with and without it, and see whether the metric moves. "
           "A metric that moves when a field it must never receive is blanked has a wiring leak; one that "
           "does not move is blind to that field, so a jump in it is in the pipeline.")

run_ids = loaders.run_ids(ctx.db_path, version)
if not run_ids:
    st.info(f"This database holds no runs yet. {lib.app.ui.NO_RUNS_HINT}")
    st.stop()

# -- what to test: defaults from the URL, else from the ablation shown, else the latest run ---------------
shown_id = lib.app.ui.query_param("ablation")
# an ablation of a replaced copy of its run still seeds the form (launching it judges the run as it is now)
shown_row = loaders.ablation_record(ctx.db_path, shown_id, any_copy=True) if shown_id else None
shown_spec = shown_row["spec"] if shown_row else {}
newest_first = run_ids[::-1]
start_run, start_metric = ablation_form.start_at(loaders.incident_titles(ctx.db_path, ui_history.version(ctx)),
                                                  run_ids)
lib.app.ui.follow_alias("run", "latest", newest_first[0])   # the link table's promise: the newest run
if lib.app.ui.query_param("run") not in (None, *run_ids):
    st.warning(f"No run {md(lib.app.ui.query_param('run'))} in this database; showing {md(start_run)}.")
lib.app.ui.seed_from_query("abl_run", "run", newest_first, shown_spec.get("run_id", start_run), warn=False)
lib.app.ui.seed_list_from_query("abl_metrics", "metric", METRIC_NAMES,
                            shown_spec.get("metrics", [start_metric or ablation_form.DEFAULT_METRIC]))
lib.app.ui.seed_list_from_query("abl_blanks", "blank", FIELDS,
                            [b for b in shown_spec.get("blanks", ()) if b in FIELDS]
                            or list(ablation_form.DEFAULT_BLANKS))
lib.app.ui.seed_list_from_query("abl_swaps", "swap", SWAPPABLE,
                                [x for x in shown_spec.get("swaps", ()) if x in SWAPPABLE])
st.session_state.setdefault("abl_repeats", ablation_form.DEFAULT_REPEATS)
st.session_state.setdefault("abl_limit", 0)
st.session_state.setdefault("abl_all_samples", False)
shown_form = (ablation_form.form_values(shown_spec, loaders.run_fields(ctx.db_path, version, shown_spec["run_id"]))
              if shown_spec.get("run_id") in run_ids else None)
if shown_form is not None and st.session_state.get("_abl_form_of") != shown_id:
    st.session_state.update(shown_form.widgets())   # an ablation came on screen: the form shows its spec
    st.session_state["_abl_form_of"] = shown_id     # (once its spec is stored: a queued one may not be yet)

st.subheader("What to test")
c1, c5, c6 = st.columns([4, 1, 1])   # the metrics get a row of their own: five chips fit on one line
run_id = c1.selectbox("Run", newest_first, key="abl_run", help="The run whose samples and instruments are "
                      "re-judged (its own template and binding, replayed as it was wired).")
metrics = st.multiselect("Metrics", METRIC_NAMES, key="abl_metrics")
has = loaders.run_fields(ctx.db_path, version, run_id)
offered = [f for f in FIELDS if f in has]   # a field the run's file lacked has no arm
st.session_state["abl_blanks"] = [f for f in st.session_state.get("abl_blanks", []) if f in offered]
c3, c4 = st.columns([1, 2], vertical_alignment="center")   # "Whole matrix" whole at 1024 px
whole = c3.toggle("Whole matrix", key="abl_matrix", help="Blank each field the run has, in turn.")
blanks = c4.multiselect("Fields to blank", offered, key="abl_blanks", disabled=whole)
swappable = [f for f in SWAPPABLE if f in has]
st.session_state["abl_swaps"] = [f for f in st.session_state.get("abl_swaps", []) if f in swappable]
swaps = st.multiselect("Fields to swap with another sample's", swappable, key="abl_swaps",
                       help="Each sample is judged with another sample's value of the field (a pairing seeded by the "
                            "run id, recorded in the ablation). Blanking shows a field reaches the judge; swapping "
                            "shows the judge uses it, and which way it moves.")
repeats = c5.number_input("Repeats", min_value=1, max_value=20, key="abl_repeats",
                          help="Re-judgings of each arm; two or more measure the judge's noise band.")
limit = c6.number_input("Sample limit", min_value=0, step=50, key="abl_limit",
                        help="Only the first N samples (0: all), for a quick look.")
every_sample = st.checkbox("Judge every sample", key="abl_all_samples",
                           help="Off (the default): samples are judged in an order fixed by the seed, and each arm "
                                "stops once a 95% confidence sequence decides its verdict; the result says how many "
                                "samples each arm judged and why it stopped. On: every sample of every arm.")
arms = offered if whole else blanks
lib.app.ui.set_query(run=run_id, metric=",".join(metrics) or None, blank=",".join(arms) or None,
                     swap=",".join(swaps) or None)
if shown_form is not None and shown_form.joint_arms and shown_form.widgets() == {
        k: st.session_state.get(k) for k in shown_form.widgets()}:
    st.caption(md(f"The ablation shown also blanks {', '.join(shown_form.joint_arms)} together (fields joined by "
                  "+ are blanked at once)."))

if metrics and (arms or swaps):
    st.caption("What a correctly wired metric does when each field is blanked or swapped (from the wiring table):",
               help=glossary.help_for("invariant", "arm"))
    st.dataframe(ablation_views.expectation_table(metrics, [*arms, *ablation_views.swap_arms(swaps)]),
                 width="content")
JUDGE_CHOICE = "a judge (chosen below)"
scorer_pick = st.selectbox("Scored by", [JUDGE_CHOICE, *server.scorers], key="abl_scorer",
                           help="A judge (by default the one that recorded the run), or an external scorer this "
                                "server's operator allows (EVALDRIFT_SCORERS), e.g. Ragas' own faithfulness: "
                                "lib.judging.scorers.ragas_metrics:faithfulness.")
scorer = None if scorer_pick == JUDGE_CHOICE else scorer_pick
judge, endpoint = ctx.judge, ctx.endpoint
if scorer is None:
    own_judge = loaders.own_judge(ctx.db_path, version, run_id, tuple(metrics)) if metrics else None
    judges = list(dict.fromkeys(j for j in (own_judge, ctx.judge) if j))
    judge = st.radio("Judge", judges, key="abl_judge", horizontal=True,
                     format_func=lambda j: md(j) + (" (the run's own)" if j == own_judge else " (from the sidebar)"),
                     help="An ablation replays the judge that recorded the run; another judge does not reproduce "
                          "the run's instrument, and the headline says which one was used.") or ctx.judge
    endpoint = lib.app.ui.endpoint_for(judge)
else:
    st.caption(f"Scorer: `{scorer}`, run on this server's terms; its calls go to the operator's endpoint.")
# an external scorer calls a model (Ragas: the operator's endpoint), so it is launched as a paid judge is
may_launch = access.may_launch(ctx.user, endpoint if scorer is None else "external scorer", server,
                               login=gate.login_configured())
if not may_launch:
    st.info("Ablations with a paid judge are launched by the people this server's operator lists "
            "(EVALDRIFT_ABLATION_USERS); the offline judges are open to everyone.")
spec, refused, confirmed = None, "", True
if metrics and (arms or swaps):
    try:  # the cost before launch (lib.diagnosis.cost): a paid judge over the operator's budget is confirmed once
        spec = (AblationSpec(run_id, tuple(metrics), tuple(arms), repeats=int(repeats), judge=judge,
                             endpoint=endpoint, limit=int(limit) or None, sequential=not every_sample,
                             swaps=tuple(swaps))
                if scorer is None else
                AblationSpec(run_id, tuple(metrics), tuple(arms), repeats=int(repeats), limit=int(limit) or None,
                             scorer=scorer, sequential=not every_sample, swaps=tuple(swaps)))
        estimate = loaders.ablation_cost(ctx.db_path, version, spec, endpoint != "offline")
    except EvaldriftError as exc:
        spec, refused = None, str(exc)
if spec is not None and may_launch:
    st.caption(md(f"Before launch: {estimate.sentence}"))
    if cost.needs_confirmation(estimate, server.call_budget):
        confirmed = st.checkbox(f"Launch up to {estimate.calls} calls to the paid judge {md(judge)}",
                                key=f"abl_confirm_{spec.ablation_id}", help="Over this server's EVALDRIFT_CALL_BUDGET "
                                "(unset: every paid launch is confirmed).")
launch = st.button("Launch ablation", type="primary", key="abl_launch", help=ctx.frozen,
                   disabled=bool(ctx.frozen) or not (metrics and (arms or swaps) and may_launch and confirmed))

if launch:
    if spec is None:
        st.error(md(refused))
        st.stop()
    stored = loaders.ablation_record(ctx.db_path, spec.ablation_id)
    if stored and stored["status"] == "done" and stored["result"]:
        st.session_state["abl_from_store"] = spec.ablation_id
    elif not access.may_run(ctx.user, spec, server, login=gate.login_configured()):   # the spec's own judge
        st.error("Ablations with a paid judge are launched by the people this server's operator lists "
                 "(EVALDRIFT_ABLATION_USERS).")
        st.stop()
    else:
        st.session_state.pop("abl_from_store", None)
        ctx.runner.submit(spec)
    shown_id = spec.ablation_id
    st.session_state["_abl_form_of"] = shown_id   # the form already shows what was launched
    lib.app.ui.set_query(ablation=shown_id)


# -- the ablation shown: progress, stall, failure or result ------------------------------------------------
@st.fragment(run_every=1.0)
def progress_panel(ablation_id: str) -> None:
    """Polls the stored progress (shared by every session); the full page takes over when it ends."""
    status = ctx.runner.status(ablation_id)
    if status.state not in ("queued", "running"):
        st.rerun(scope="app")
    st.progress(status.fraction, text=judging_counts.progress_label(status.done, status.total))
    st.caption("Runs on a background worker: you can leave this page or open it in another browser; "
               "the result is stored.")
    allowed = access.may_stop(ctx.user, _endpoint_of(ablation_id), server, login=gate.login_configured())
    if st.button("Stop", key="abl_stop", icon=":material/stop:", disabled=bool(ctx.frozen) or not allowed,
                 help=ctx.frozen or "Stop this ablation within seconds (calls in flight are cancelled); every "
                      "finished judging is kept, and Resume does the rest.") and allowed:
        ctx.runner.stop(ablation_id)
        st.rerun(scope="app")
    if not allowed:
        st.caption(access.STOP_REFUSED)


def _endpoint_of(ablation_id: str) -> str | None:
    """The judge a stored ablation calls (None: its spec cannot be read here)."""
    row = loaders.ablation_record(ctx.db_path, ablation_id)
    try:
        spec = AblationSpec.from_dict(row["spec"]) if row else None
    except EvaldriftError:
        return None
    return None if spec is None else access.endpoint_of_spec(spec, server)


def render_result(row: dict, run_label: str) -> None:
    try:
        result = AblationResult.from_dict(row["result"])
    except InputError as exc:   # a result a newer evaldrift wrote into this database
        st.warning(md(str(exc)))
        return
    if st.session_state.get("abl_from_store") == result.ablation_id:
        st.info(f"Answered from stored results: this exact ablation finished at {row['updated_at']:%Y-%m-%d %H:%M}; "
                f"no judge was called again.")
    said = split_headline(result.verdicts, result.summary)   # one sentence first; the caveats once, in small print
    BANNERS[ablation_views.result_banner(result)](f"**{md(said.lead)}**")
    if said.caveats:
        st.caption(md(said.small_print))
    _next_steps(result, row)
    tally = loaders.ablation_counts(ctx.db_path, version, result.ablation_id, int(row["total"]))
    st.caption(md(f"{run_label}. {tally.sentence} {result.saved}".rstrip()), help=judging_counts.HELP)
    note = loaders.job_note(ctx.db_path, result.ablation_id)
    if note and note.judge.sentence:
        st.caption(md(f"Judge: {note.judge.sentence}."))
    _verdicts(result)
    _per_sample_changes(result)
    _four_readings(result)


def _next_steps(result: AblationResult, row: dict) -> None:
    """Where the verdict leads: the incident it answers, the run on Trends, the Review week that carries it."""
    run_id = result.spec.run_id
    steps = ablation_views.next_steps(
        run_id=run_id, metrics=result.spec.metrics, run_day=loaders.run_header(ctx.db_path, version, run_id)
        .started_at.date(), launched=row["created_at"],
        incidents=loaders.incident_titles(ctx.db_path, ui_history.version(ctx)),
        latest_week=loaders.review_bounds(ctx.db_path, version))
    with st.container(key="abl_next"):
        for step in steps:
            st.page_link(step.page, label=md(step.label), query_params=step.query, icon=":material/arrow_forward:")


def _verdicts(result: AblationResult) -> None:
    st.subheader("Metrics x fields")
    st.plotly_chart(charts.verdict_heatmap(ablation_views.verdict_matrix(result)), key="abl_heatmap", width="content",
                    config={"displayModeBar": False})

    st.subheader("Verdicts", help=f"±figures in these verdicts are the judge repeat band: 2 x the "
                 f"{trends.JUDGE_SPREAD}. {trends.HELP[trends.JUDGE_SPREAD]}")
    for v in sorted(result.verdicts, key=lambda v: LEVEL_ORDER[ablation_views.sentence_level(v.kind)]):
        BANNERS[ablation_views.sentence_level(v.kind)](md(v.sentence))
    for r in result.replay:
        if r.mismatch:
            st.warning(md(r.sentence))
        else:
            st.caption(md(r.sentence))
    if result.failures:
        st.warning("Some judgings failed (not scored, not counted as 0 or 1). Reasons:")
        st.dataframe([{"reason": k, "count": n} for k, n in result.failures.items()], width="content")
        failed = loaders.ablation_failures(ctx.db_path, version, result.ablation_id)
        if not failed.empty:   # shown as data, never rendered: the reply is the judge's text
            st.caption("What the judge wrote, for the first failed judgings (truncated):")
            st.dataframe(failed.rename(columns={"raw": "the judge wrote"}), width="stretch", hide_index=True,
                         key="abl_failed_replies")


def _per_sample_changes(result: AblationResult) -> None:
    st.subheader("Per-sample changes")
    cells = [(v.metric, v.arm) for v in result.verdicts if v.delta is not None]
    if not cells:
        st.caption("No cell has paired scores to compare.")
    else:
        leaks = {(v.metric, v.arm) for v in result.verdicts if v.kind == LEAK}
        first = next((i for i, cell in enumerate(cells) if cell in leaks), 0)
        # options are plain text, not Markdown: md() here showed its escapes ("ground\\_truth", issue 46)
        metric, arm = st.selectbox("Cell", cells, index=first, key="abl_cell",
                                   format_func=lambda c: f"{c[0]} with {arm_label(c[1])}")
        deltas = loaders.ablation_deltas(ctx.db_path, version, result.ablation_id, metric, arm)
        d1, d2 = st.columns([2, 3])
        d1.dataframe(deltas, hide_index=True, height=views.grid_height(len(deltas), row_height=35, most=300),
                     column_config={
            "sample_id": "sample", "baseline": st.column_config.NumberColumn("as wired", format="%.3f"),
            "ablated": st.column_config.NumberColumn(arm_label(arm), format="%.3f"),
            "delta": st.column_config.NumberColumn("change", format="%+.3f")})
        d2.plotly_chart(charts.delta_histogram(deltas, metric=metric, arm=arm), key="abl_hist",
                        config={"displayModeBar": False})


def _four_readings(result: AblationResult) -> None:
    st.subheader("The four readings", help=glossary.help_for("four readings"))
    four = result.four
    if four is None:
        st.caption("Faithfulness as wired, without the reference, without the passages and without both: "
                   + md(four_readings_gap(result.verdicts)))
        spec = result.spec
        # the judge the readings will call is this result's (moved to this server's after a confirmation, as
        # Resume is), never the form's: the permission and the cost are checked against that one
        four_review = trust.review_spec(four_readings_spec(spec.run_id, repeats=spec.repeats, judge=spec.judge,
                                                           endpoint=spec.endpoint, limit=spec.limit), server)
        if four_review.spec is None:
            st.caption(md(f"The four readings cannot run here: {four_review.sentence}"))
            return
        four_spec, four_label = four_review.spec, "Launch the four readings on this run"
        if four_review.action == trust.CONFIRM:
            st.warning(md(four_review.sentence))
            four_label += " on this server's judge"
        may_four = access.may_run(ctx.user, four_spec, server, login=gate.login_configured())
        agreed = True
        try:
            four_cost = loaders.ablation_cost(ctx.db_path, version, four_spec, four_spec.endpoint != "offline")
            st.caption(md(f"Before launch: {four_cost.sentence}"))
            if may_four and cost.needs_confirmation(four_cost, server.call_budget):
                agreed = st.checkbox(md(f"Launch up to {four_cost.calls} calls to the paid judge {four_spec.judge}"),
                                     key=f"abl_confirm_{four_spec.ablation_id}")
        except EvaldriftError as exc:
            st.caption(md(f"The four readings cannot run on this run: {exc}"))
            agreed = False
        if not may_four:
            st.info(md(f"The four readings call the paid judge {four_spec.judge}; they are launched by the people "
                       "this server's operator lists (EVALDRIFT_ABLATION_USERS)."))
        if st.button(four_label, key="abl_four", disabled=bool(ctx.frozen) or not (may_four and agreed),
                     help=ctx.frozen):
            ctx.runner.submit(four_spec)
            lib.app.ui.set_query(ablation=four_spec.ablation_id)
            st.rerun()
    else:
        f1, f2, f3, f4, f5 = st.columns(5)
        f1.metric("As wired", f"{four.as_wired:.3f}")
        f2.metric("Without the reference", f"{four.without_reference:.3f}", f"{-four.leak:+.3f}", delta_color="off")
        f3.metric("Without the passages", f"{four.without_contexts:.3f}",
                  f"{four.without_contexts - four.as_wired:+.3f}", delta_color="off")
        f4.metric("Without both", "n/a" if four.without_both is None else f"{four.without_both:.3f}",
                  help="Blank contexts+ground_truth together to measure it.")
        f5.metric("If independent", f"{four.independence:.3f}", f"{four.independence_gap:+.3f} as wired",
                  delta_color="off",
                  help=glossary.help_for("if independent"))
        st.info(md(four.sentence))


def rerun_controls(row: dict, label: str, key: str) -> None:
    """Resume or Retry a stored spec on this server's terms (lib.app.trust): as recorded, after the user confirms
    a move to this server's judge, or refused with the reason. The stored endpoint is never dialled."""
    try:
        stored = AblationSpec.from_dict(row["spec"])
    except EvaldriftError as exc:
        st.error(md(f"This ablation's stored spec cannot be run again: {exc}"))
        return
    review_ = trust.review_spec(stored, server)
    if review_.spec is None:
        st.error(md(review_.sentence))
        return
    if not access.may_run(ctx.user, review_.spec, server, login=gate.login_configured()):
        st.error("This ablation uses a paid judge; only the people this server's operator lists in "
                 "EVALDRIFT_ABLATION_USERS may run it.")
        return
    if review_.action == trust.CONFIRM:
        st.warning(md(review_.sentence))
        label, key = f"{label} on this server's judge", f"{key}_here"
    if st.button(label, key=key, type="primary", disabled=bool(ctx.frozen), help=ctx.frozen):
        ctx.runner.submit(review_.spec)
        lib.app.ui.set_query(ablation=review_.spec.ablation_id)
        st.rerun()


if shown_id:
    st.divider()
    status = ctx.runner.status(shown_id)
    row = loaders.ablation_record(ctx.db_path, shown_id)
    brief = loaders.ablation_briefs(ctx.db_path, version, row["run_id"]) if row else []
    what = next((b.what for b in brief if b.ablation_id == shown_id), "")
    st.subheader(f"Ablation {md(shown_id)}")
    run_label = f"Run {row['run_id']}: {what}" if row else ""
    if status.state == "done" and row and row["result"]:
        render_result(row, run_label)
    elif status.state in ("queued", "running"):
        st.caption(md(run_label))
        progress_panel(shown_id)
    elif status.state == "stalled" and row:
        st.warning(f"This ablation stopped at {status.done} of {status.total} judgings: the process that ran it "
                   f"is gone. Resume keeps every finished judging and does the rest.")
        rerun_controls(row, "Resume", "abl_resume")
    elif status.state == jobs.STOPPED and row:
        # the breaker or the deadline stopped it (lib.judging.breaker): nothing decided, the failed calls reopened
        st.warning(md(f"This ablation was {status.reason or 'stopped'}. Nothing was decided; {status.done} of "
                      f"{status.total} judgings are kept, and Resume asks the rest, the failed calls included."))
        rerun_controls(row, "Resume", "abl_resume")
    elif status.state == "failed":
        st.error("This ablation failed. The reason, as the worker recorded it:")
        st.code(status.error or "no reason recorded (see the server log)", language=None)
        if row:
            rerun_controls(row, "Retry", "abl_retry")
    elif shown_row is not None and not shown_row["current"]:
        st.warning(md(f"This ablation measured an earlier copy of run {shown_row['run_id']}: the run has been "
                      "recorded again since, so its verdict is about samples, templates and scores that are no longer "
                      "the run's, and it is not shown. Launch it again above to judge the run as it is now (the "
                      "call cache answers every prompt that did not change)."))
    else:
        st.warning("No ablation with this id in this database.")

# -- earlier ablations of the chosen run -----------------------------------------------------------------------
st.divider()
st.subheader(f"Ablations of {md(run_id)}")
briefs = loaders.ablation_briefs(ctx.db_path, version, run_id)
if not briefs:
    st.caption("None yet.")
for b in briefs[:SHOW_ABLATIONS]:
    # a row still 'running' whose process is gone is stalled (the runner knows; the stored row cannot)
    state = ctx.runner.status(b.ablation_id).state if b.status == "running" else b.status
    with st.container(border=True):
        st.page_link("pages/ablation.py", label=f"{md(b.ablation_id)} · {md(state)} · {b.created_at:%Y-%m-%d %H:%M}",
                     query_params={"ablation": b.ablation_id, "run": b.run_id}, icon=":material/science:")
        st.caption(md(f"{b.what}. {b.lead} {b.progress}"))
if len(briefs) > SHOW_ABLATIONS:
    st.caption(f"{len(briefs) - SHOW_ABLATIONS} older ablation(s) not shown.")

# -- jobs sent through the Batch API (python -m lib batch): progress as their last poll stored it ------------
batches = loaders.batch_jobs_newest(ctx.db_path)
if batches:
    st.divider()
    st.subheader("Batch jobs")
    st.caption("Ablations and re-judges sent through the OpenAI Batch API, newest first, as their last poll "
               "stored them. `python -m lib batch poll --finish` polls the open ones, collects the ended ones into "
               "the call cache and runs their jobs; a line the batch failed is asked live, never scored.")
    for job in batches:
        polled = f" (polled {job.polled_at:%Y-%m-%d %H:%M})" if job.polled_at else ""
        st.progress(job.answered_share, text=md(job.sentence + polled))

# -- gate a new judge: `python -m lib calibrate` from the page (lib.app.calibration) --------------------------
st.divider()
st.subheader("Gate a new judge")
st.caption("Judge the suite's calibration set (its samples people labelled) with a candidate judge and with the "
           "current instrument (the newest run's that evaldrift can judge with: another tool's runs are passed over), "
           "paired over the same samples. The candidate fails when it agrees with people worse beyond the margin, as "
           "`python -m lib calibrate` exits 1 in CI.")
g1, g2, g3 = st.columns([2, 3, 1])
gate_metric = g1.selectbox("Metric", METRIC_NAMES, key="gate_metric")
gate_model = g2.selectbox("Candidate judge", calibration.judge_choices(server), key="gate_model",
                          help="The operator's model (on this server's endpoint) or an offline judge.")
gate_margin = g3.number_input("Margin", min_value=0.0, max_value=1.0, value=calibration.MARGIN, step=0.01,
                              key="gate_margin", help="How much lower the candidate's agreement may be before it "
                                                      "fails.")
gate_template = st.text_area("Candidate template (optional)", key="gate_template", height=100,
                             help="Empty: the current instrument's template and binding. A template of its own is "
                                  "bound projected (only the fields the metric may read), unless you choose replay.")
gate_binding = (st.radio("Binding", BINDINGS, key="gate_binding", horizontal=True,
                         help="replay renders the template against the whole sample, as a harness did.")
                if gate_template.strip() else "")
gate_plan = None
try:   # counted before any call: the calibration set, and the calls left after the call cache
    gate_plan = loaders.gate_plan(ctx.db_path, calibration.GateRequest(
        metric=gate_metric, model=gate_model, template=gate_template if gate_template.strip() else "",
        binding=gate_binding or "", margin=float(gate_margin)))
except EvaldriftError as exc:
    st.info(md(f"The gate cannot run: {exc}"))
gate_ok, gate_agreed = False, False
if gate_plan is not None:
    st.caption(md(f"Before running: {gate_plan.sentence}"))
    gate_ok = calibration.may_gate(ctx.user, gate_plan, server, login=gate.login_configured())
    gate_agreed = True
    if not gate_ok:
        st.info("A gate with a paid judge is run by the people this server's operator lists "
                "(EVALDRIFT_ABLATION_USERS); the offline judges are open to everyone.")
    elif calibration.needs_confirmation(gate_plan, server.call_budget):
        gate_agreed = st.checkbox(md(f"Make up to {gate_plan.calls} calls to the paid judge "
                                     f"{', '.join(gate_plan.paid)}"), key=f"gate_confirm_{gate_plan.gate_id}")
if st.button("Run the gate", key="gate_launch", disabled=bool(ctx.frozen) or not (gate_ok and gate_agreed),
             help=ctx.frozen) and gate_plan is not None:
    st.session_state["gate_shown"] = lib.app.ui.gate_runner(ctx.path).submit(gate_plan, server)


@st.fragment(run_every=1.0)
def gate_progress(gate_id: str) -> None:
    """Polls the gate's worker; the full page shows the result once it ends."""
    if lib.app.ui.gate_runner(ctx.path).status(gate_id).state != "running":
        st.rerun(scope="app")
    st.caption("Judging the calibration set on a background worker...")


if st.session_state.get("gate_shown"):
    gate_status = lib.app.ui.gate_runner(ctx.path).status(st.session_state["gate_shown"])
    if gate_status.state == "running":
        gate_progress(gate_status.gate_id)
    elif gate_status.state == "failed":
        st.error("The gate failed. The reason, as the worker recorded it:")
        st.code(gate_status.error, language=None)
    elif gate_status.result is not None:
        (st.error if gate_status.result.worse else st.success)(md(calibration.verdict_words(gate_status.result)))
        st.dataframe(calibration.result_rows(gate_status.result), hide_index=True, width="content",
                     key="gate_result")
