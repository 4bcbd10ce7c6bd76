"""Trends: how has each metric moved over runs, which moves exceed the judge's noise, and do they line up
with a recorded change of judge model, prompt, binding or pipeline? Click a point to open its run.

Deep link: ?metric=<name> shows one metric (absent: all); from=<YYYY-MM-DD>&to=<YYYY-MM-DD> the runs between
(absent: every run).
"""

from __future__ import annotations

import streamlit as st

from lib.app import loaders, ui, ui_history
from lib.presentation import charts, glossary, linkparams, review, trend_figures, views

ctx = ui.sidebar()

ALL = "all metrics"
JUMP_COLUMNS = {
    "started_at": st.column_config.DatetimeColumn("when", format="YYYY-MM-DD HH:mm"),
    "after": st.column_config.NumberColumn(format="%.3f"),
    "delta": st.column_config.NumberColumn(format="%+.3f"),
    "x_threshold": st.column_config.NumberColumn("x threshold", format="%.1f",
                                                 help="How many jump thresholds the move is (4·√2 run-to-run spreads)"),
    "first_suspect": st.column_config.TextColumn("first suspect", width=240),
}
EVENT_COLUMNS = {"started_at": st.column_config.DatetimeColumn("when", format="YYYY-MM-DD HH:mm"),
                 "metric": st.column_config.TextColumn(help="A pipeline change concerns every metric"),
                 "text": st.column_config.TextColumn("what changed", width=260)}
JUMP_ORDER = ("started_at", "metric", "after", "delta", "x_threshold", "first_suspect")
# what fits 1024 px: after and delta say before, a jump across instruments says so in its first suspect, and its
# run opens from its ring on the chart
EVENT_ORDER = ("started_at", "kind", "metric", "text", "run_id")   # short columns first: all but run_id fit 1024 px
LABELS = {"started_at": "when", "x_threshold": "x threshold", "first_suspect": "first suspect",
          "text": "what changed"}   # a static table's headers
FORMATS = {"started_at": "{:%Y-%m-%d %H:%M}", "after": "{:.3f}", "delta": "{:+.3f}",
           "x_threshold": "{:.1f}"}
CORRECTED_ORDER = ("metric", "from", "runs", "by the judge", "corrected by people's labels", "labelled samples")
AGREEMENT_ORDER = ("metric", "from", "runs", "labelled samples", "agreement", "bias")   # fits 1024 px; the
# instrument of each segment is named by the change sentences under the table
WRAPPED_ROW = 84   # px: four lines of a long cell, wrapped (widths fit a 1024 px screen beside the sidebar)


history = loaders.history(ctx.db_path, ctx.version)
st.title("Trends")
if history.empty:
    st.info("This database holds no runs yet.")
    st.stop()
metrics = views.ordered_metrics(history["metric"].unique().tolist())
days = views.run_days(history)

# -- widgets -----------------------------------------------------------------------------------
ui.seed_from_query("trends_metric", "metric", [ALL, *metrics], ALL)
c1, c2 = st.columns([1, 2], gap="large")
metric = c1.selectbox("Metric", [ALL, *metrics], key="trends_metric")
linked_span, span_problem = linkparams.day_span(ui.query_param("from"), ui.query_param("to"), days)
ui.seed_value("trends_range", ("from", "to"), linked_span, (days[0], days[-1]),
              f"{span_problem} Showing every run." if span_problem else None)
if not set(st.session_state["trends_range"]) <= set(days):   # another database's days
    st.session_state["trends_range"] = (days[0], days[-1])
if len(days) > 1:
    # value= tells select_slider it is a range (else a moved thumb comes back as one date); the link's range is
    # in the session state (.streamlit/config.toml silences Streamlit's log line about having both)
    first, last = c2.select_slider("Runs between", options=days, value=(days[0], days[-1]), key="trends_range",
                                   format_func=lambda d: d.isoformat())
else:
    first = last = days[0]
whole = (first, last) == (days[0], days[-1])
ui.set_query(metric=None if metric == ALL else metric, **{"from": None if whole else first.isoformat(),
                                                          "to": None if whole else last.isoformat()})
shown = metrics if metric == ALL else [metric]

# -- lib calls ---------------------------------------------------------------------------------
since, until = views.day_bounds(first, last)
window = views.in_range(history, since, until)
events = views.in_range(loaders.events(ctx.db_path, ctx.version), since, until)
jumps = views.in_range(views.jumps_frame(loaders.jumps(ctx.db_path, ctx.version)), since, until)

# -- render ------------------------------------------------------------------------------------
caption = st.empty()   # said above the chart, once the figure (and so what it draws) is known
ui_history.rejudge_panel(ctx, shown, window.drop_duplicates("run_id")["run_id"].tolist())
series_version = ui_history.version(ctx)
figure, trace_metrics = loaders.trend_chart(ctx.db_path, ctx.version, series_version, tuple(shown), first, last)
caption.caption(trend_figures.caption(figure),   # the marks this figure draws, and only those
                help=glossary.help_for("run-to-run spread", "jump threshold", "instrument", "comparable segment",
                                       "binding"))
event = st.plotly_chart(charts.drawn(figure), on_select="rerun", selection_mode="points", key="trend_chart")
picked = charts.point_from_selection(event, trace_metrics)
if picked:
    run_id, picked_metric = picked
    st.switch_page(views.PAGE_RUN, query_params={"run": run_id, "metric": picked_metric or shown[0]})

if st.toggle("Through people's labels", key="trends_corrected",
             help="Each comparable segment with labelled samples: its metric by the judge beside the value people's "
                  "labels correct it to (prediction-powered inference, 95% interval over samples), calibrated on "
                  "that segment's own instrument. Label more on the Labels page."):
    corrected = loaders.corrected_segments(ctx.db_path, ctx.version)
    corrected = corrected[corrected["metric"].isin(shown) & (corrected["to"] >= since) & (corrected["from"] <= until)]
    if corrected.empty:
        st.info("No segment in this range has two or more labelled samples of these metrics.")
    else:
        st.caption("Each segment's metric by its judge, and corrected by people's labels (each sample once: its "
                   "judge score averaged over the segment's runs).")
        ui.short_table(corrected, order=CORRECTED_ORDER, labels={}, formats={"from": "{:%Y-%m-%d}"},
                       key="trends_corrected_table")

st.subheader("Jumps beyond noise in this range", help=glossary.help_for("jump threshold"))
shown_jumps = jumps[jumps["metric"].isin(shown)]
if shown_jumps.empty:
    st.success("None.")
else:
    ui.short_table(shown_jumps, order=JUMP_ORDER, labels=LABELS, formats=FORMATS, key="trends_jumps",
                   column_config=JUMP_COLUMNS, row_height=WRAPPED_ROW)

st.subheader("Recorded changes in this range", help="A pipeline change concerns every metric.")
shown_events = views.events_for(events, shown)
if shown_events.empty:
    st.success("None.")
else:
    ui.short_table(views.events_table(shown_events), order=EVENT_ORDER, labels=LABELS, formats=FORMATS,
                   key="trends_events", column_config=EVENT_COLUMNS, row_height=WRAPPED_ROW)

st.subheader("Is the judge right? Agreement with people's labels",
             help="Each comparable segment's judgings of the labelled samples against people's labels: accuracy of "
                  "item verdicts with its 95% interval over samples, Cohen's kappa, and bias (judge minus people) of "
                  "sample scores. Label samples on the Labels page or with `python -m lib labels import`.")
agreed, changed = loaders.agreement_trend(ctx.db_path, ctx.version)
shown_agreed = agreed[agreed["metric"].isin(shown)]
if shown_agreed.empty:
    st.info("No labelled samples for these metrics yet: label some on the Labels page.")
else:
    ui.short_table(shown_agreed, order=AGREEMENT_ORDER, labels={}, formats={"from": "{:%Y-%m-%d}"},
                   key="trends_agreement")
    for r in views.in_range(changed[changed["metric"].isin(shown)], since, until).itertuples(index=False):
        st.caption(review.md_escape(f"{r.started_at:%Y-%m-%d} {r.metric}, {r.text}"))   # stored names: escaped
