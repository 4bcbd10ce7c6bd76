"""Compare: what differs between two runs (pipeline config, judge prompts and the fields they read,
scores per metric and per sample, verdicts that flipped), and is the move in the measurement or in the
system's outputs?

Deep link: ?run=<run id>&run_b=<baseline run id>&metric=<metric>; the baseline defaults to the run before;
split=1 shows the split into instrument and outputs (an offline judge's at once; a paid one waits for its button).
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from lib.app import access, gate, loaders, ui
from lib.core.errors import InputError
from lib.diagnosis import trends
from lib.presentation import charts, glossary, linkparams, static_tables, views

ctx = ui.sidebar()

SCORE = st.column_config.NumberColumn(format="%.3f", width=56)
DELTA = st.column_config.NumberColumn(format="%+.3f", width=60)
SIDE_FORMATS = {"baseline": "{:.3f}", "run": "{:.3f}", "delta": "{:+.3f}"}
RUN_PICKER, METRIC_PICKER = 350, 190   # px: at 1024 px, the run on one row, the baseline and metric on the next
MOVES = 8   # the largest per-sample moves shown without asking
SIDE_LABELS = {"judge_model": "judge model", "prompt_hash": "prompt hash"}
# the flipped verdicts' widths fit 1024 px beside the sidebar; an item or its evidence wraps over four lines
FLIP_ROW = 84
FLIPS_HEIGHT = 360   # px: four rows, then the grid scrolls
FLIP_COLUMNS = {"sample_id": st.column_config.TextColumn(width=76),
                "flip": st.column_config.TextColumn(width=104, help="The verdict in the baseline, then in the run"),
                "item": st.column_config.TextColumn(width=170),
                "evidence": st.column_config.TextColumn(width=170, help=(
                    "The evidence the positive verdict cited (the run's for a flip to positive, the baseline's for "
                    "a flip to negative); the other side's after it when it cited different evidence"))}


def split_plan(metric: str, baseline: str, run_id: str) -> tuple[trends.SplitPlan | None, str]:
    """The split's plan on this server's terms, or None and the sentence saying why it cannot run here."""
    try:
        return loaders.split_plan(ctx.db_path, metric, baseline, run_id), ""
    except InputError as exc:
        return None, str(exc)


runs = loaders.runs(ctx.db_path, ctx.version)
st.title("Compare two runs")
if len(runs) < 2:
    st.info("Comparing needs at least two runs.")
    st.stop()
oldest_first = runs["run_id"].tolist()
ids = oldest_first[::-1]
labels = views.run_labels(runs)

# -- widgets -----------------------------------------------------------------------------------
ui.seed_from_query("compare_run", "run", ids, ids[0])
# pickers of fixed widths in a wrapping row: one row on a wide screen, and at 1024 px beside the sidebar each run
# picker keeps room for "nightly-20261117   (2026-11-17 02:25  leak fixed)"; three columns cut it to
# "nightly-20261201 (2026" (issue 46)
pickers = st.container(horizontal=True, wrap=True, gap="small", key="compare_pickers")
c1, c2, c3 = (pickers.container(width=w) for w in (RUN_PICKER, RUN_PICKER, METRIC_PICKER))
run_id = c1.selectbox("Run", ids, key="compare_run", format_func=labels.get)
before = views.previous_in(oldest_first, run_id) or ids[-1]
if not ui.seed_from_query("compare_base", "run_b", ids, before) and \
        st.session_state.get("_compare_base_of", run_id) != run_id:
    st.session_state["compare_base"] = before   # a changed run, no link's baseline: the run before it
st.session_state["_compare_base_of"] = run_id
baseline = c2.selectbox("Baseline", ids, key="compare_base", format_func=labels.get,
                        help="Defaults to the run before; deltas are run - baseline.")
metrics_run = loaders.run_metrics(ctx.db_path, ctx.version, run_id)
metric_names = views.ordered_metrics(metrics_run["metric"].tolist())
ui.seed_from_query("compare_metric", "metric", metric_names,
                   "faithfulness" if "faithfulness" in metric_names else (metric_names or [None])[0])
metric = c3.selectbox("Metric", metric_names, key="compare_metric")
ui.set_query(run=run_id, run_b=baseline, metric=metric)

# -- lib calls ---------------------------------------------------------------------------------
config = views.config_rows(trends.config_diff(loaders.run_header(ctx.db_path, ctx.version, baseline).pipeline,
                                                loaders.run_header(ctx.db_path, ctx.version, run_id).pipeline))
changes = loaders.run_changes(ctx.db_path, ctx.version, run_id, baseline)
sides = views.metric_sides(loaders.run_metrics(ctx.db_path, ctx.version, baseline), metrics_run)
scores_base = loaders.sample_scores(ctx.db_path, ctx.version, baseline)
scores_run = loaders.sample_scores(ctx.db_path, ctx.version, run_id)
deltas = views.paired_deltas(scores_base, scores_run, metric) if metric else pd.DataFrame()
summary = views.paired_summary(deltas) if len(deltas) else None
aligned = views.aligned_verdicts(scores_base, scores_run, metric) if metric else pd.DataFrame()
flipped = views.flipped_verdicts(aligned) if len(aligned) else pd.DataFrame()
flip_counts = views.flip_summary(aligned) if len(aligned) else None
figure = charts.paired_delta_figure(deltas, metric=metric) if summary is not None else None

# -- render ------------------------------------------------------------------------------------
if run_id == baseline:
    st.warning("Run and baseline are the same run.")
links = st.columns(2)
with links[0]:
    st.page_link(views.PAGE_RUN, label=f"Open run {ui.md_literal(run_id)}", icon=":material/open_in_new:",
                 query_params={"run": run_id, "metric": metric or ""})
with links[1]:
    st.page_link(views.PAGE_RUN, label=f"Open baseline {ui.md_literal(baseline)}", icon=":material/open_in_new:",
                 query_params={"run": baseline, "metric": metric or ""})

st.subheader("Pipeline config")
if config.empty:
    st.success("Identical pipeline config.")
else:
    st.table(static_tables.styled(config))
st.subheader("Metrics side by side")
st.table(static_tables.styled(sides.rename(columns=SIDE_LABELS), formats=SIDE_FORMATS))   # "a -> b" wraps

st.subheader("Judge instrument")
if changes.judge_models or changes.bindings or changes.templates:
    ui.show_run_changes(replace(changes, pipeline={}))  # the config diff is above
else:
    st.success("Same judge models, prompts and bindings for every metric.")

if not metric:
    st.stop()
st.subheader(f"Per-sample deltas: {ui.md_literal(metric)}")
if summary is None:
    st.info("No sample is scored in both runs.")
else:
    st.markdown(f"Mean per-sample change (run - baseline) **{summary.mean:+.3f}**, 95% paired-bootstrap interval "
                f"{summary.lo:+.3f} to {summary.hi:+.3f}, over the {summary.n} samples scored in both runs.")
    d1, d2 = st.columns(2, gap="medium")   # the moves' four columns fit the right half at 1024 px
    with d1:
        # no toolbar: in half of 1024 px it lay over the chart's title (issue 46); the moves are in the table
        st.plotly_chart(figure, key="compare_hist", config={"displayModeBar": False})
    with d2:
        # the largest moves as a static table (a grid costs the browser a tenth of a second or more to draw, and
        # this page is measured against one chart, issue 28); every sample's move in a grid on request
        moves = st.container()
        show_all = len(deltas) > MOVES and st.toggle(f"Show all {len(deltas)} samples", key="compare_all_moves")
        with moves:
            if show_all:
                st.caption("Per-sample moves, largest first")
                st.dataframe(deltas, hide_index=True, height=280, key="compare_deltas",
                             column_config={"sample_id": st.column_config.TextColumn(width=76), "baseline": SCORE,
                                            "run": SCORE, "delta": DELTA})
            else:
                st.caption("Largest per-sample moves" + (f" ({MOVES} of {len(deltas)})" if len(deltas) > MOVES else ""))
                st.table(static_tables.styled(deltas.head(MOVES), formats=SIDE_FORMATS))

st.subheader(f"Verdicts that flipped: {ui.md_literal(metric)}")
if flip_counts is None:
    st.info("No items align between the two runs (the judged artifact changed in every sample).")
else:
    st.caption(f"{len(aligned)} items align (same sample, same item text). {flip_counts.to_positive} flipped to "
               f"positive, {flip_counts.to_negative} to negative (McNemar exact p = {flip_counts.p_value:.2g}).",
               help=glossary.help_for("McNemar exact p"))
    if not flipped.empty:
        st.dataframe(views.flip_rows(flipped), hide_index=True, key="compare_flips",
                     height=views.grid_height(len(flipped), row_height=FLIP_ROW, most=FLIPS_HEIGHT),
                     row_height=FLIP_ROW, column_config=FLIP_COLUMNS)

st.subheader("Instrument or outputs?", help=glossary.help_for("instrument", "split"))
st.caption("Re-judges each run's outputs with both runs' instruments (judge model, template, binding), a 2x2, and "
           "splits the move into what the instrument changed and what the outputs changed.")
split_key = (baseline, run_id, metric)
plan, why_not = split_plan(metric, baseline, run_id)
server = ui.load_settings()
may_split = not ctx.frozen and plan is not None and (   # read as of a date, nothing is judged again
    not plan.paid or access.may_launch(ctx.user, server.endpoint, server, login=gate.login_configured()))
# split=1 in a link (a jump's suggested test on the Overview, or a pasted Compare link) shows the split of the runs
# it names; the URL keeps split=1 while that split is on screen, and choosing other runs drops it (no re-judging
# by itself). A paid split waits for its click.
if ui.link_followed("compare_split_link", "split"):
    linked_split, split_problem = linkparams.flag("split", ui.query_param("split"))
    if split_problem:
        st.warning(ui.md_literal(split_problem))
    if linked_split and may_split and not plan.paid:
        st.session_state.setdefault("compare_splits", set()).add(split_key)
if ctx.frozen:   # the split judges again (its replies are cached in the store): nothing is launched then
    st.info(f"{ctx.frozen}: the split, which judges again, is not offered.")
elif plan is None:
    st.info(ui.md_literal(f"The split re-judges with the recorded judges; here it cannot: {why_not}."))
elif not may_split:
    st.info(f"The split calls {ui.md_literal(', '.join(sorted(plan.judges)))} on this server's judge; it is "
            "launched by the people this server's operator lists (EVALDRIFT_ABLATION_USERS).")
else:
    if plan.paid:
        st.caption(ui.md_literal(plan.describe().capitalize() + f", on {server.endpoint}."))
    if st.button("Split the move into instrument and outputs", key="compare_split", icon=":material/call_split:"):
        st.session_state.setdefault("compare_splits", set()).add(split_key)
split_shown = may_split and split_key in st.session_state.get("compare_splits", set())
ui.set_query(split="1" if split_shown else None)
if split_shown:
    with st.spinner("Re-judging both runs' samples with both instruments..."):
        split = loaders.split(ctx.db_path, ctx.version, metric, baseline, run_id)
    st.info(ui.md_literal(split.sentence))
    s1, s2, s3, s4 = st.columns(4)
    s1.metric("Re-judged move", views.signed(split.total))
    s2.metric("Instrument", views.signed(split.instrument))
    s3.metric("Outputs", views.signed(split.outputs))
    s4.metric("Stored move", f"{split.stored_delta:+.3f}" if split.stored_delta is not None else "—")
    cells = views.split_cells(split)
    st.table(static_tables.styled(cells, formats=dict.fromkeys(cells.columns, "{:.3f}"), index=True))
