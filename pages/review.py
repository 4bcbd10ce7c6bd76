"""Review: what happened to the eval this week (or in any date range), ready to present and export?

For the runs started in the range: what moved beyond the judge's noise and
which recorded change is the first suspect for it, what changed in the
instrument (judge model, prompt, binding) and in the pipeline, whether the
canary alarmed, and the ablations that tested these runs, with their
verdicts. The whole review downloads as Markdown for the meeting notes.
"""

from dataclasses import asdict
from datetime import timedelta

import streamlit as st

import lib.app.ui
import lib.app.ui_history
from lib.app import loaders
from lib.presentation import judging_counts, linkparams, mdtext, review

RANGE_KEY = "rev_range"
WRAPPED_ROW = 104   # px: five lines of a long cell, wrapped; widths fit a 1024 px screen beside the sidebar
SUSPECT_COLUMNS = {"what changed": st.column_config.TextColumn(width=260),
                   "test": st.column_config.TextColumn(width=200)}
CHANGE_COLUMNS = {"started_at": st.column_config.DatetimeColumn("when", format="YYYY-MM-DD HH:mm"),
                  "text": st.column_config.TextColumn("what changed", width=180)}
CHANGE_ORDER = ("started_at", "kind", "metric", "text", "run_id")
SIDES = {"instrument": "at an instrument change", "pipeline": "at a pipeline change",
         "unexplained": "with no recorded change"}
md = review.md_escape

ctx = lib.app.ui.sidebar()
version = ctx.version


def shift_range(days: int) -> None:
    start, end = st.session_state[RANGE_KEY]
    st.session_state[RANGE_KEY] = (start + timedelta(days=days), end + timedelta(days=days))


st.title("Weekly review")
default = loaders.review_bounds(ctx.db_path, version)
if default is None:
    st.info("This database holds no runs yet.")
    st.stop()
url_range, url_problem = linkparams.date_range(lib.app.ui.query_param("from"), lib.app.ui.query_param("to"))
if url_problem:
    st.warning(f"{md(url_problem)} Showing the latest week.")
if len(st.session_state.get(RANGE_KEY, ())) != 2:   # half picked (one day) when the user left: as if unset
    st.session_state.pop(RANGE_KEY, None)
lib.app.ui.seed_value(RANGE_KEY, ("from", "to"), url_range, default)   # a link to another week is followed

c1, c2, c3, c4 = st.columns([5, 2, 2, 2], vertical_alignment="bottom")
picked = c1.date_input("Runs started between", key=RANGE_KEY, format="YYYY-MM-DD",
                       help="Default: the last seven days of data, ending on the day of the latest run. "
                            "Latest: back to it.")
first_day, last_day = loaders.data_range(ctx.db_path, version)
shown = st.session_state[RANGE_KEY]
c2.button("Earlier", key="rev_prev", on_click=shift_range, args=(-7,), icon=":material/chevron_left:",
          disabled=len(shown) == 2 and shown[0] <= first_day,
          help=f"The week before. The first run started on {first_day}.")
c3.button("Later", key="rev_next", on_click=shift_range, args=(7,), icon=":material/chevron_right:",
          disabled=len(shown) == 2 and shown[1] >= last_day,
          help=f"The week after. The latest run started on {last_day}.")
c4.button("Latest", key="rev_latest", on_click=lambda: st.session_state.update({RANGE_KEY: default}))
if len(picked) != 2:
    st.info("Pick the last day of the range.")
    st.stop()
start, end = picked
lib.app.ui.set_query(**{"from": start.isoformat(), "to": end.isoformat()})
rev = loaders.weekly_review(ctx.db_path, version, lib.app.ui_history.version(ctx), start, end)

# -- the summary: what to say first ----------------------------------------------------------------------------
st.header(md(rev.title))
m1, m2, m3 = st.columns(3)   # three a row: six labels in one row are cut short on a laptop screen
m4, m5, m6 = st.columns(3)
m1.metric("Runs", len(rev.runs))
m2.metric("Moves beyond noise", len(rev.jumps))
m3.metric("Instrument changes", len(rev.instrument_changes))
m4.metric("Pipeline changes", len(rev.pipeline_changes))
m5.metric("Canary alarms", f"{len(rev.canary_alarms)} of {rev.canary_runs}")
m6.metric("Ablations", len(rev.ablations))
with st.container(border=True):
    st.markdown("\n".join(f"- {md(line)}" for line in rev.headline))

st.subheader("Re-judged conclusions")
if rev.conclusions:
    st.markdown("\n".join(f"- {md(line)}" for line in rev.conclusions))
else:
    st.caption("No history of these metrics has been re-judged with one instrument.")

st.subheader(f"Incidents: state, note and who set it ({len(rev.incidents)})")
if rev.incidents:
    st.markdown("\n".join(f"- {md(n.line)}" for n in rev.incidents))
else:
    st.caption("No incident by the end of this range.")

st.subheader(f"Still open ({len(rev.still_open)})")
if rev.still_open:
    st.markdown("\n".join(f"- {md(line)}" for line in rev.still_open))
    st.page_link("pages/overview.py", label="Explain or accept them on the Overview", icon=":material/flag:")
else:
    st.caption("Nothing is open: every incident is explained or accepted.")

# -- what moved ------------------------------------------------------------------------------------------------
st.subheader("What moved beyond noise")
if not rev.jumps:
    st.caption("Nothing moved beyond the judge's noise in these runs.")
for finding in rev.jumps:
    j = finding.jump
    show = st.error if finding.side == "instrument" else st.warning
    show(f"**{md(j.metric)}** {j.before:.3f} → {j.after:.3f} ({j.delta:+.3f}) at {md(j.run_id)}, "
         f"{j.ratio:.1f}x the jump threshold, {SIDES[finding.side]}.")
    st.dataframe([{"suspect": s.kind, "what changed": s.description, "test": s.test} for s in j.suspects],
                 hide_index=True, column_config=SUSPECT_COLUMNS, row_height=WRAPPED_ROW)
    tested = [a for a in finding.ablations if a.summary]
    for a in tested:
        st.markdown(f"Ablation **{md(a.ablation_id)}**: {md(a.lead)}")
    blank = next((s.blank for s in j.suspects if s.blank), None)
    if blank and not tested:
        st.page_link("pages/ablation.py", label=f"Test it: ablate {md(j.metric)} with {md(blank)} blanked",
                     query_params={"run": j.run_id, "metric": j.metric, "blank": blank},
                     icon=":material/science:")

# -- what changed ----------------------------------------------------------------------------------------------
st.subheader("What changed in the instrument")
if rev.instrument_changes:
    st.dataframe([asdict(c) for c in rev.instrument_changes], hide_index=True, column_config=CHANGE_COLUMNS,
                 column_order=CHANGE_ORDER, row_height=WRAPPED_ROW)
else:
    st.caption("No judge model, prompt or binding change.")
st.subheader("What changed in the pipeline")
if rev.pipeline_changes:
    st.dataframe([asdict(c) for c in rev.pipeline_changes], hide_index=True, column_config=CHANGE_COLUMNS,
                 column_order=CHANGE_ORDER, row_height=WRAPPED_ROW)
else:
    st.caption("No pipeline config change.")

# -- canary and ablations --------------------------------------------------------------------------------------
st.subheader("Canary")
(st.error if rev.canary_alarms else st.success)(md(rev.canary_sentence))
if rev.canary_alarms:
    st.dataframe(review.canary_rows(rev.canary_alarms), hide_index=True, key="rev_canary", column_config={
        "threshold": st.column_config.TextColumn(help="The canary's baseline plus its margin: above it, answers "
                                                 "only the reference supports were marked supported")})

st.subheader("Ablations")
if not rev.ablations:
    st.caption("No ablation tested these runs, and none was launched in this range or since, before the next run.")
for a in rev.ablations:
    with st.container(border=True):
        st.page_link("pages/ablation.py", label=f"{md(a.ablation_id)} on {md(a.run_id)} · {md(a.status)}",
                     query_params={"ablation": a.ablation_id, "run": a.run_id}, icon=":material/science:")
        st.caption(md(f"{a.what}. Launched {a.created_at:%Y-%m-%d %H:%M}. {a.progress}"), help=judging_counts.HELP)
        if a.summary:
            (st.error if a.alarming else st.success)(md(a.lead))   # one sentence; its caveats once, small
            if a.caveats:
                st.caption(md(" ".join(a.caveats)))
        if a.verdicts:
            st.markdown("\n".join(f"- {md(sentence)}" for _, sentence in a.verdicts))

# -- export ----------------------------------------------------------------------------------------------------
st.subheader("Export")
markdown = review.review_markdown(rev)
d1, d2 = st.columns(2)
d1.download_button("Download the review as Markdown", markdown, file_name=f"evaldrift-review-{start}-{end}.md",
                   mime="text/markdown", key="rev_download", on_click="ignore", icon=":material/download:")
d2.download_button("Download as plain text", mdtext.markdown_text(markdown), key="rev_download_text",
                   file_name=f"evaldrift-review-{start}-{end}.txt", mime="text/plain", on_click="ignore",
                   icon=":material/notes:", help="For a chat or a ticket that shows text as typed: the same review "
                                                 "without Markdown: no heading marks, table pipes, bold or escapes.")
# drawn when opened (a rerun): a code block makes the browser load and run its syntax highlighter (1.5 MB of
# JavaScript), about a fifth of the page's load in Chromium (1.15 against 0.91 CPU s) for a preview seldom opened
preview = st.expander("Preview the Markdown", key="rev_preview", on_change="rerun")
if preview.open:
    preview.code(markdown, language="markdown")
