"""Import: does my own file go in as a run, and how does it score?

Upload a JSONL, CSV or Parquet file (one row per sample), or another tool's
results (a Ragas table, an Inspect AI log, promptfoo's results.json, a DeepEval
test run, an MLflow tracking store), read as
the CLI's `import` reads it. See what was detected (tool, version, grader,
metrics, repeats) or which columns give which field, a preview, and every bad
row with its field; record it as a run with the scores it carries, or score
your own table here with the configured judge.
"""

import hashlib
from datetime import datetime

import streamlit as st

import lib.app.ui
from lib.app import access, gate, imports, ui_replacing
from lib.core.errors import EvaldriftError
from lib.core.metrics import METRIC_NAMES
from lib.intake.uploads import (
    READ_AS,
    SUFFIXES,
    TABLE,
    column_mapping,
    detect_upload,
    has_scores,
    metric_map_from,
    mlflow_evaluations,
    plan_table,
    prepare_tool_upload,
    promptfoo_targets,
    read_upload,
    run_facts,
    unknown_columns,
)
from lib.judging.build import settings_judge
from lib.presentation.report import md_escape

PREVIEW_ROWS = 20
SHOW_ERRORS = 10     # as lines of text; the table below holds them all

ctx = lib.app.ui.sidebar(create=True)   # a new database path: the first run recorded here creates it
st.title("Import")
st.caption("Record your own eval file as a run: its samples, and either the scores it carries or scores from "
           "the judge configured for this dashboard. Nothing is written until you press Record.")
ui_replacing.replaced_runs(ctx, key="imp_archive")


@st.cache_data(show_spinner=False, max_entries=4)
def load_upload(name: str, digest: str, data: bytes, metrics: tuple[str, ...]):
    return read_upload(name, data, metrics=metrics)


uploaded = st.file_uploader("Your file", type=[s.lstrip(".") for s in SUFFIXES], key="imp_file",
                            disabled=bool(ctx.frozen),
                            help=ctx.frozen or "One row per sample: answer, and question, contexts (a list) and "
                                 "ground_truth where a metric receives them; optional per-sample score columns. "
                                 "Or a Ragas result, an Inspect AI log (.eval, .json), promptfoo's results.json, "
                                 "a DeepEval test_run_*.json or an MLflow tracking store (mlflow.db).")
read_as = TABLE
if uploaded is not None:
    detected = detect_upload(uploaded.name, uploaded.getvalue())
    choices = [detected, *(k for k in READ_AS if k != detected)]
    if st.session_state.get("_imp_format_for") != uploaded.file_id:   # each new file: read as what it is detected
        st.session_state["imp_format"] = detected                    # as, not as the last file was, until the
        st.session_state["_imp_format_for"] = uploaded.file_id       # user picks another
    read_as = st.selectbox("Read it as", choices, format_func=lambda k: READ_AS[k], key="imp_format",
                           help="Detected from the file's name and first bytes, as `python -m lib import` does.")
    st.caption(f"Detected: {READ_AS[detected]}.")
with st.expander("When it ran, and its pipeline", expanded=False):
    started_text = st.text_input("Start time (ISO, e.g. 2026-10-03T02:00)", key="imp_started_at",
                                 help="Empty: the time the file records, else now.")
    pipeline_text = st.text_area("Pipeline config (a JSON object)", key="imp_pipeline", height=80,
                                 help="Empty: none recorded, and Trends draws no pipeline change from this run.")
if uploaded is not None and read_as != TABLE:
    data = uploaded.getvalue()
    st.subheader("What the file says")
    c1, c2 = st.columns(2)
    version = c1.text_input("Tool version (when the file does not record it)", key="imp_tool_version")
    grader = c2.text_input("Grader model (when the file does not name it)", key="imp_grader")
    provider = None
    if read_as == "promptfoo":
        names = promptfoo_targets(uploaded.name, data)
        if len(names) > 1:
            provider = st.selectbox("Provider (each is its own run)", names, key="imp_provider")
    if read_as == "mlflow":
        names = mlflow_evaluations(uploaded.name, data)
        if len(names) > 1:
            provider = st.selectbox("Evaluation (each is its own run)", names, key="imp_mlflow_run")
    map_text = st.text_input("Metric map (SCORER=METRIC, comma-separated)", key="imp_metric_map",
                             disabled=read_as not in ("inspect", "deepeval", "mlflow"),
                             help="Inspect scorers, DeepEval metrics, MLflow scorers beyond the defaults; "
                                  "model_graded_fact is answer_correctness by default.")
    run_id = st.text_input("Run id", value=f"import-{datetime.now():%Y-%m-%d-%H%M}", key="imp_run_id").strip()
    try:
        started_at, pipeline = run_facts(started_text, pipeline_text)
        plan = prepare_tool_upload(uploaded.name, data, fmt=read_as, run_id=run_id or "import", started_at=started_at,
                                   pipeline=pipeline, version=version, grader=grader, provider=provider,
                                   metric_map=metric_map_from(map_text))
    except EvaldriftError as exc:
        st.error(f"{uploaded.name}: nothing was recorded.", icon=":material/error:")
        st.text(str(exc))   # plain text: a file's content is never rendered as Markdown or HTML
        st.stop()
    for what, detected in plan_table(plan).itertuples(index=False):
        st.text(f"{what}: {detected}")   # plain text: names from the file are never rendered as Markdown
    for warning in plan.warnings:   # warnings quote the file (grader names): escaped, never a live link or image
        st.warning(md_escape(warning), icon=":material/warning:")
    if not st.button("Record run", type="primary", key="imp_record", disabled=bool(ctx.frozen) or not run_id,
                     help=ctx.frozen):
        st.stop()
    try:
        imports.record_tool_upload(ctx, plan)
    except EvaldriftError as exc:
        st.error(md_escape(str(exc)))
        st.stop()
    st.success(f"Recorded run {run_id}: {len(plan.run.samples['main'])} samples; "
               + ", ".join(m.metric for m in plan.run.metrics) + ".")
    st.page_link("pages/trends.py", label="See it on Trends", icon=":material/show_chart:")
    st.page_link("pages/run.py", label="Open the run", icon=":material/description:", query_params={"run": run_id})
    st.stop()
# As the CLI: a file without scores is scored (`score`, every metric), a file with scores recorded as it is (`ingest`)
if uploaded is not None:
    digest = hashlib.sha256(uploaded.getvalue()).hexdigest()
    if st.session_state.get("_imp_seeded_for") != digest:   # each new file: its default, then the user's choice
        carried = load_upload(uploaded.name, digest, uploaded.getvalue(), ())
        st.session_state["imp_score"] = carried.frame is not None and not has_scores(carried.frame)
        st.session_state["_imp_seeded_for"] = digest
score_here = st.toggle(f"Score it with the judge ({ctx.judge})", key="imp_score",
                       help="Off: record the scores the file carries. On: judge the samples with our harness "
                            "(each judge sees only the fields its metric receives). On by default for a file that "
                            "carries no score column, as `python -m lib score` scores it.")
metrics = st.multiselect("Metrics to score", METRIC_NAMES, default=list(METRIC_NAMES), key="imp_metrics",
                         disabled=not score_here, help="Every metric by default, as `python -m lib score`.")
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

for column, likely in unknown_columns(upload.frame):
    st.warning(md_escape(f"Column {column!r} is not read: " + (f"did you mean {likely!r}?" if likely else
                                                                "no field or score of ours has a name like it.")),
               icon=":material/warning:")
st.success(f"{len(upload.frame)} rows, no problem found.")
no_metric = not score_here and not has_scores(upload.frame)   # recording would give a run with no metric
if no_metric:
    st.warning("This file carries no score column and scoring is off: recording it would give a run with no "
               "metric, so Record run waits. Turn on scoring, or add the score columns.", icon=":material/warning:")
run_id = st.text_input("Run id", value=f"import-{datetime.now():%Y-%m-%d-%H%M}", key="imp_run_id").strip()
replace, replace_confirmed = ui_replacing.replace_choice(ctx, run_id, key="imp_replace")
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
        st.progress(status.fraction,
                    text=f"Scoring run {md_escape(job)}: {status.done} of {status.total or '?'} samples judged")
    elif status.state == imports.FAILED:
        st.error(md_escape(status.error))
    else:
        recorded(job, status.samples, status.metrics)


def recorded(job: str, samples: int, scored: tuple[str, ...], *, replaced: bool = False) -> None:
    st.success(f"Recorded run {md_escape(job)}: {samples} samples; " + (", ".join(scored) or "no scores") + "."
               + (" The copy it replaced is kept under Replaced runs." if replaced else ""))
    st.page_link("pages/trends.py", label="See it on Trends", icon=":material/show_chart:")
    st.page_link("pages/run.py", label="Open the run", icon=":material/description:", query_params={"run": job})


if not st.button("Record run", type="primary", key="imp_record", help=ctx.frozen,
                 disabled=bool(ctx.frozen) or not run_id or no_metric or (score_here and not (metrics and may_score))
                 or not replace.may_record(confirmed=replace_confirmed)):
    if "imp_job" in st.session_state:
        scoring(st.session_state["imp_job"])
    st.stop()

try:
    ui_replacing.check_record(ctx, run_id, confirmed=replace_confirmed)
    started_at, pipeline = run_facts(started_text, pipeline_text)
    if score_here:   # on the import runner's thread: a rerun of this page does not stop a paid judge's calls
        judge = settings_judge(lib.app.ui.load_settings(), model=ctx.judge)
        ctx.imports.submit(upload.frame, source=uploaded.name, run_id=run_id, metrics=wanted, judge=judge,
                           started_at=started_at, pipeline=pipeline)
        st.session_state["imp_job"] = run_id
        scoring(run_id)
        st.stop()
    run = imports.record_upload(ctx, upload.frame, source=uploaded.name, run_id=run_id, started_at=started_at,
                                pipeline=pipeline)
except EvaldriftError as exc:
    st.error(md_escape(str(exc)))
    st.stop()
recorded(run_id, len(run.samples["main"]), tuple(m.metric for m in run.metrics),
         replaced=replace.existing is not None)
