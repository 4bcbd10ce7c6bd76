"""Import: does my own file go in as a run, and how does it score?

Upload a JSONL, CSV or Parquet file (one row per sample), see which of its
columns give which field (our names and the aliases we recognise), a preview,
and every bad row with its field; record it as a run with the scores it
carries, or score it here with the configured judge.
"""

import hashlib
from datetime import datetime

import streamlit as st

import lib.app.ui
from lib.app import access, gate, imports
from lib.core.errors import EvaldriftError
from lib.core.metrics import METRIC_NAMES
from lib.intake.uploads import SUFFIXES, column_mapping, read_upload
from lib.judging.build import settings_judge

PREVIEW_ROWS = 20
SHOW_ERRORS = 10     # as lines of text; the table below holds them all

ctx = lib.app.ui.sidebar()
st.title("Import")
st.caption("Record your own eval file as a run: its samples, and either the scores it carries or scores from "
           "the judge configured for this dashboard. Nothing is written until you press Record.")


@st.cache_data(show_spinner=False, max_entries=4)
def load_upload(name: str, digest: str, data: bytes, metrics: tuple[str, ...]):
    return read_upload(name, data, metrics=metrics)


uploaded = st.file_uploader("Your file", type=[s.lstrip(".") for s in SUFFIXES], key="imp_file",
                            help="One row per sample: answer, and question, contexts (a list) and ground_truth "
                                 "where a metric receives them; optional per-sample score columns.")
score_here = st.toggle(f"Score it with the judge ({ctx.judge})", key="imp_score",
                       help="Off: record the scores the file carries. On: judge the samples with our harness "
                            "(each judge sees only the fields its metric receives).")
metrics = st.multiselect("Metrics to score", METRIC_NAMES, default=["faithfulness"], key="imp_metrics",
                         disabled=not score_here)
if uploaded is None:
    st.info("Upload a file to see its columns, a preview and any bad rows.")
    st.stop()

data = uploaded.getvalue()
wanted = tuple(metrics) if score_here else ()
upload = load_upload(uploaded.name, hashlib.sha256(data).hexdigest(), data, wanted)

st.subheader("Columns")
st.dataframe(column_mapping(upload.frame, wanted), hide_index=True, width="stretch", key="imp_mapping")
if upload.frame is not None:
    st.subheader(f"Preview ({min(PREVIEW_ROWS, len(upload.frame))} of {len(upload.frame)} rows)")
    st.dataframe(upload.frame.head(PREVIEW_ROWS).astype(str), width="stretch", key="imp_preview")
if upload.errors:
    st.error(f"{len(upload.errors)} problem(s) in {uploaded.name}: fix them and upload the file again. "
             "Nothing was recorded.", icon=":material/error:")
    for line in (str(e) for e in upload.errors[:SHOW_ERRORS]):
        st.text(line)   # plain text: a file's content is never rendered as Markdown or HTML
    st.dataframe(upload.error_table(), hide_index=True, width="stretch", key="imp_errors")
    st.stop()

st.success(f"{len(upload.frame)} rows, no problem found.")
run_id = st.text_input("Run id", value=f"import-{datetime.now():%Y-%m-%d-%H%M}", key="imp_run_id").strip()
# scoring with a paid judge is for the people the operator lists, as launching an ablation is (lib.app.access)
may_score = access.may_launch(ctx.user, ctx.endpoint, lib.app.ui.load_settings(), login=gate.login_configured())
if score_here and not may_score:
    st.info("Scoring with a paid judge is for the people this server's operator lists "
            "(EVALDRIFT_ABLATION_USERS); record the file's own scores, or pick an offline judge in the sidebar.")


@st.fragment(run_every=1.0)
def scoring(job: str) -> None:
    """The background scoring's progress, read from the process' import runner (lib.app.imports)."""
    status = ctx.imports.status(job)
    if status is None:
        return
    if status.state == imports.RUNNING:
        st.progress(status.fraction, text=f"Scoring run {job}: {status.done} of {status.total or '?'} samples judged")
    elif status.state == imports.FAILED:
        st.error(status.error)
    else:
        recorded(job, status.samples, status.metrics)


def recorded(job: str, samples: int, scored: tuple[str, ...]) -> None:
    st.success(f"Recorded run {job}: {samples} samples; " + (", ".join(scored) or "no scores") + ".")
    st.page_link("pages/trends.py", label="See it on Trends", icon=":material/show_chart:")
    st.page_link("pages/run.py", label="Open the run", icon=":material/description:", query_params={"run": job})


if not st.button("Record run", type="primary", key="imp_record",
                 disabled=not run_id or (score_here and not (metrics and may_score))):
    if "imp_job" in st.session_state:
        scoring(st.session_state["imp_job"])
    st.stop()

try:
    if score_here:   # on the import runner's thread: a rerun of this page does not stop a paid judge's calls
        judge = settings_judge(lib.app.ui.load_settings(), model=ctx.judge)
        ctx.imports.submit(upload.frame, source=uploaded.name, run_id=run_id, metrics=wanted, judge=judge)
        st.session_state["imp_job"] = run_id
        scoring(run_id)
        st.stop()
    run = imports.record_upload(ctx, upload.frame, source=uploaded.name, run_id=run_id)
except EvaldriftError as exc:
    st.error(str(exc))
    st.stop()
recorded(run_id, len(run.samples["main"]), tuple(m.metric for m in run.metrics))
