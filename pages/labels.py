"""Labels: is the judge right, and what should people label next? Label a run's samples item by item, beside the
judge's verdicts and evidence, and watch each instrument's agreement with people and the run's metric corrected
by their labels.

The queue walks the run's samples in the order that narrows the corrected interval fastest (where the judge is
least sure or disagrees with another instrument first; lib.diagnosis.agreement._active says why); one click stores
one item's label (a second click on the other word supersedes it, visibly: the history keeps both). The labeller
is the signed-in user, or a typed name.

A label click reruns only the labelling area (an st.fragment): the agreement table and the corrected metric above
it are recomputed when the labeller asks ("Update the figures") or the page loads, never on a click (they took
about 3 s on the demo, and a click waited for them: 3.9 s at load 17 against 0.5-1 s for a plain button).
"""

from __future__ import annotations

import streamlit as st

from lib.app import labelling, loaders, ui, ui_history
from lib.core.metrics import METRIC_NAMES, get_metric
from lib.core.records import MAIN
from lib.core.samples import EvalSample
from lib.diagnosis.agreement import AUC_DROPPED
from lib.presentation import review

md = review.md_escape

ctx = ui.sidebar()
st.session_state.setdefault("lab_skip", [])
st.session_state["lab_since"] = 0   # samples finished since the figures were computed (a full run computes them)
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
runs_key = loaders.runs_version(ctx.version)
order = loaders.label_order(ctx.db_path, runs_key, run_id, metric)
samples = loaders.labellable(ctx.db_path, runs_key, run_id, metric)
agreement = loaders.agreement_table(ctx.db_path, ctx.version, metric)
corrected = loaders.corrected_of_run(ctx.db_path, ctx.version, run_id, metric)

# -- render ------------------------------------------------------------------------------------
st.subheader("Agreement with people, per instrument")
if agreement.empty:
    st.info("No labelled samples with judgings for this metric yet.")
else:
    ui.short_table(agreement, order=list(agreement.columns), labels={}, formats={}, key="lab_agreement")
    if "AUC" not in agreement.columns:
        st.caption(AUC_DROPPED)
st.subheader("What to label next")
st.write(md(labelling.next_words(corrected, order, metric)))


def record(sample_id: str, item: int, value: bool, labelled: frozenset[int], n_items: int) -> None:
    """A label button's callback: store the label (the labelling area alone reruns); count a finished sample."""
    labelling.record_label(ctx, run_id=run_id, suite=MAIN, metric=metric, sample_id=sample_id, item=item,
                           value=value, labeller=labeller, order=order)   # the label keeps the queue's weights
    if item not in labelled and len(labelled | {item}) == n_items:
        st.session_state["lab_since"] = st.session_state.get("lab_since", 0) + 1


def skip(sample_id: str) -> None:
    st.session_state["lab_skip"] = [*st.session_state["lab_skip"], sample_id]


@st.fragment
def labelling_area() -> None:
    """The queue, the current sample and its label buttons: a click reruns only this."""
    since = st.session_state.get("lab_since", 0)
    if since and st.button(f"Update the figures ({since} sample{'s' if since != 1 else ''} labelled since)",
                           key="lab_update", help="Recompute the agreement and the corrected metric above "
                                                  "(a few seconds on a long history)."):
        st.rerun()   # the whole page: the figures above are computed by a full run
    q = labelling.queue(ctx, run_id, MAIN, metric, labeller, skip=tuple(st.session_state["lab_skip"]),
                        order=order.sample_ids, samples=samples)
    st.progress(q.share, text=f"{q.done} of {q.total} samples of this run labelled by you")
    if q.current is None:
        st.success("Every sample of this run is labelled by you." if not st.session_state["lab_skip"]
                   else "No more samples in the queue (some were skipped).")
        if st.session_state["lab_skip"] and st.button("Back to the skipped samples", key="lab_unskip"):
            st.session_state["lab_skip"] = []
            st.rerun(scope="fragment")
        return
    sample: EvalSample = q.current
    st.subheader(f"Sample {md(sample.sample_id)}")
    st.caption(md(labelling.reach_words(loaders.label_reach(ctx.db_path, runs_key, metric, sample))))
    st.text(f"Question: {sample.question}")   # sample text is untrusted: plain text, never Markdown or HTML
    with st.expander("Passages", expanded=True):
        for k, passage in enumerate(sample.contexts, start=1):
            st.text(f"[{k}] {passage}")
    with st.expander("Reference answer (ground_truth)", expanded=False):
        st.text(sample.ground_truth)

    kind = get_metric(metric).item_kind
    items = labelling.judged_items(ctx, run_id, MAIN, metric, sample, labeller)
    labelled = frozenset(i.number for i in items if i.label is not None)
    for item in items:
        left, right = st.columns([5, 2])
        left.text(f"{kind} {item.number}: {item.text}")
        judge = f"judge: {item.verdict}" + (f" — evidence: {item.evidence}" if item.evidence else "") \
            if item.verdict else "judge: not judged"
        left.text(judge)
        mine = {1.0: pos, 0.0: neg}.get(item.label) if item.label is not None else None
        b1, b2 = right.columns(2)
        for col, word, value in ((b1, pos, True), (b2, neg, False)):
            col.button(word, key=f"lab_{sample.sample_id}_{item.number}_{word}",
                       type="primary" if mine == word else "secondary", on_click=record,
                       disabled=bool(ctx.frozen), help=ctx.frozen,
                       args=(sample.sample_id, item.number, value, labelled, len(items)))
        if mine:
            right.caption(f"you: {mine}")
        others = labelling.item_words(item, pos, neg)
        if others:
            right.caption(md(others))

    st.button("Skip this sample", key="lab_skip_btn", on_click=skip, args=(sample.sample_id,))


labelling_area()
