"""Labels: is the judge right? Label a run's samples item by item, beside the judge's verdicts and evidence,
and watch each instrument's agreement with people.

A queue walks the run's samples in id order; one click stores one item's label (a second click on the other
word supersedes it, visibly: the history keeps both). The labeller is the signed-in user, or a typed name.
"""

from __future__ import annotations

import streamlit as st

from lib.app import labelling, loaders, ui, ui_history
from lib.core.metrics import METRIC_NAMES, get_metric
from lib.core.records import MAIN
from lib.presentation import review

md = review.md_escape

ctx = ui.sidebar()
st.session_state.setdefault("lab_skip", [])
st.title("Labels")
st.caption("People's labels are the calibration set: every instrument's verdicts on these samples are compared "
           "with them (Trends shows the agreement of each comparable segment).")

runs = loaders.run_ids(ctx.db_path, ctx.version)
if not runs:
    st.info("This database holds no runs yet.")
    st.stop()

# -- widgets -----------------------------------------------------------------------------------
c1, c2 = st.columns(2)
metric = c1.selectbox("Metric", METRIC_NAMES, key="lab_metric")
run_id = c2.selectbox("Run whose samples to label", list(reversed(runs)), key="lab_run",
                      help="The judge's verdicts shown beside each sample are this run's.")
labeller = ui_history.current_user(ctx, "lab_name")
if not labeller or not labeller.strip():
    st.info("Type your name to start labelling (it is stored with each label).")
    st.stop()
labeller = labeller.strip()

# -- lib calls ---------------------------------------------------------------------------------
pos, neg = get_metric(metric).labels
q = labelling.queue(ctx, run_id, MAIN, metric, labeller, skip=tuple(st.session_state["lab_skip"]))

# -- render ------------------------------------------------------------------------------------
st.progress(q.share, text=f"{q.done} of {q.total} samples of this run labelled by you")
agreement = loaders.agreement_table(ctx.db_path, ctx.version, metric)
st.subheader("Agreement with people, per instrument")
if agreement.empty:
    st.info("No labelled samples with judgings for this metric yet.")
else:
    ui.short_table(agreement, order=list(agreement.columns), labels={}, formats={}, key="lab_agreement")

if q.current is None:
    st.success("Every sample of this run is labelled by you." if not st.session_state["lab_skip"]
               else "No more samples in the queue (some were skipped).")
    if st.session_state["lab_skip"] and st.button("Back to the skipped samples", key="lab_unskip"):
        st.session_state["lab_skip"] = []
        st.rerun()
    st.stop()

sample = q.current
st.subheader(f"Sample {md(sample.sample_id)}")
st.text(f"Question: {sample.question}")   # sample text is untrusted: plain text, never Markdown or HTML
with st.expander("Passages", expanded=True):
    for k, passage in enumerate(sample.contexts, start=1):
        st.text(f"[{k}] {passage}")
with st.expander("Reference answer (ground_truth)", expanded=False):
    st.text(sample.ground_truth)

kind = get_metric(metric).item_kind
for item in labelling.judged_items(ctx, run_id, MAIN, metric, sample, labeller):
    left, right = st.columns([5, 2])
    left.text(f"{kind} {item.number}: {item.text}")
    judge = f"judge: {item.verdict}" + (f" — evidence: {item.evidence}" if item.evidence else "") \
        if item.verdict else "judge: not judged"
    left.text(judge)
    mine = {1.0: pos, 0.0: neg}.get(item.label) if item.label is not None else None
    b1, b2 = right.columns(2)
    for col, word, value in ((b1, pos, True), (b2, neg, False)):
        if col.button(word, key=f"lab_{sample.sample_id}_{item.number}_{word}",
                      type="primary" if mine == word else "secondary"):
            labelling.record_label(ctx, run_id=run_id, suite=MAIN, metric=metric, sample_id=sample.sample_id,
                                   item=item.number, value=value, labeller=labeller)
            st.rerun()
    if mine:
        right.caption(f"you: {mine}")

if st.button("Skip this sample", key="lab_skip_btn"):
    st.session_state["lab_skip"] = [*st.session_state["lab_skip"], sample.sample_id]
    st.rerun()
