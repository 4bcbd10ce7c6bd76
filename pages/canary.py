"""Canary: has something started leaking the reference into the faithfulness judge?

A pinned set of samples whose answers state correct facts that only the
reference holds is scored for faithfulness on every run. Correctly wired,
faithfulness reads them low (the passages do not support those facts); when
the judge starts seeing ground_truth they read high, whatever the pipeline
does. The page shows that score per run against its baseline and threshold,
the runs that alarmed, and what the canary set is.
"""

import streamlit as st

import lib.app.ui
from lib.app import loaders
from lib.presentation import charts, review, static_tables
from lib.presentation.clip import clip_cells

SAMPLE_COLUMNS = ["sample_id", "question", "answer", "ground_truth"]
md = review.md_escape


def shown(value: object) -> str:
    """A sample's text cell for st.text ('—' when the run recorded none)."""
    return value if isinstance(value, str) else static_tables.MISSING

ctx = lib.app.ui.sidebar()
version = ctx.version


st.title("Canary")
st.caption("Answers that only the reference supports, scored for faithfulness on every run: a correctly wired "
           "judge marks most of their claims unsupported, a judge that sees ground_truth marks them supported.")

status = loaders.canary(ctx.db_path, version)
if status.frame.empty:
    st.info("No canary runs are recorded in this database (suite 'canary').")
    st.stop()

frame = status.frame
latest = frame.iloc[-1]
spells = review.alarm_spells(frame)
if status.latest_alarm:
    st.error(f"#### {md(status.sentence)}")
elif status.alarm_runs:
    st.warning(md(status.sentence))
else:
    st.success(md(status.sentence))

c1, c2, c3, c4 = st.columns(4)
c1.metric("Latest run", f"{latest['score']:.3f}", help=f"Canary faithfulness of {md(latest['run_id'])}.")
c2.metric("Baseline", f"{status.baseline:.3f}", help="Median of the first canary runs.")
c3.metric("Alarm threshold", f"{status.threshold:.3f}", help="Baseline plus the larger of 4 noise sds and 0.05.")
c4.metric("Runs in alarm", f"{len(status.alarm_runs)} of {len(frame)}")

st.plotly_chart(charts.canary_figure(frame, status.baseline, status.threshold), key="canary_chart",
                config={"displayModeBar": False})

st.subheader("Alarms")
if not spells:
    st.caption("The canary has never alarmed.")
for spell in spells:
    with st.container(border=True):
        st.markdown(md(f"Canary {spell.sentence}, from {spell.first_at:%Y-%m-%d} to {spell.last_at:%Y-%m-%d}."))
        st.page_link("pages/ablation.py", label=f"Test {md(spell.first_run)} for a ground_truth leak",
                     query_params={"run": spell.first_run, "metric": "faithfulness", "blank": "ground_truth"},
                     icon=":material/science:")
# drawn when opened (a rerun): 45 rows of a collapsed table were a third of the page's elements in the browser
every_alarm = st.expander(f"Every alarm run ({len(status.alarm_runs)})", key="canary_alarms_open", on_change="rerun")
if every_alarm.open:
    # static (run ids, times and scores are our own records): the page draws no data grid, whose code a fresh
    # browser session would load and run
    alarms = frame[frame["alarm"]][["run_id", "started_at", "score"]]
    every_alarm.table(static_tables.styled(
        alarms.assign(started_at=alarms["started_at"].dt.strftime("%Y-%m-%d %H:%M"))
        .rename(columns={"started_at": "started", "score": "canary faithfulness"}),
        formats={"canary faithfulness": "{:.3f}"}))

st.subheader("What the canary set is")
st.markdown("Each canary answer has one claim the passages state and several correct claims that **only the "
            "reference** states. Faithfulness asks whether the passages support each claim, so a correctly "
            "wired judge scores these answers low (the baseline above). A judge that is shown `ground_truth` finds "
            "support for the other claims in the reference and scores them near 1: the canary rises before "
            "anyone reads the main metric. The samples as recorded with the latest run:")
latest_samples = loaders.canary_samples(ctx.db_path, version, str(latest["run_id"]), tuple(SAMPLE_COLUMNS))
latest_samples = latest_samples.assign(**{c: clip_cells(latest_samples[c]) for c in SAMPLE_COLUMNS
                                         if c in latest_samples})
for sample in latest_samples.itertuples(index=False):   # sample text as plain text (st.text: no Markdown)
    with st.container(border=True):
        st.text(f"{sample.sample_id} · {sample.question}")
        left, right = st.columns(2)
        left.caption("answer")
        left.text(shown(sample.answer))
        right.caption("ground_truth (the reference)")
        right.text(shown(sample.ground_truth))
