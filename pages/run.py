"""Run: what did one run measure and with which instrument, what changed since the run before it, and
what did the judge say about each sample, with each piece of evidence traced to where it was found?

Deep link: ?run=<run id>&metric=<metric whose verdicts are shown>&view=<sample id>, and the sample filters
q=<search>&score=<lo>-<hi>&verdict=<verdict word>&found=<artifact>, and page=<n> of a large run's samples
(lib.presentation.linkparams.PARAMS).
"""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from lib.app import loaders, ui
from lib.core.metrics import get_metric
from lib.presentation import clip, linkparams, sample_pages, static_tables, views

ctx = ui.sidebar()

ANY = "any"
TEXT_COLUMNS = ("question", "answer", "contexts", "ground_truth")
# the sample table's widths fit 1024 px beside the sidebar, the row selector included; long cells wrap
SAMPLE_ROW = 72    # px: three lines (a grid wraps text only in rows over 64 px)
SAMPLES_HEIGHT = 360
SAMPLE_COLUMNS = {
    "sample_id": st.column_config.TextColumn(width=76),
    "status": st.column_config.TextColumn(width=60),
    "verdicts": st.column_config.TextColumn(width=108, help="Items given each verdict word"),
    "evidence": st.column_config.TextColumn(
        width=110, help="Where the positive verdicts' evidence strings were found (the 'Evidence found in' filter)"),
    "question": st.column_config.TextColumn(width=120),
}
VERDICT_ROW = 88   # px: a claim or its evidence wraps over four lines


def pick_row(table: pd.DataFrame) -> None:
    """A row clicked in the sample table becomes the sample in the viewer."""
    rows = st.session_state["run_samples"]["selection"]["rows"]
    if rows and rows[0] < len(table):
        st.session_state["run_sample"] = str(table.iloc[rows[0]]["sample_id"])


runs = loaders.runs(ctx.db_path, ctx.version)
st.title("Run")
if runs.empty:
    st.info("This database holds no runs yet.")
    st.stop()
ids = runs["run_id"].tolist()[::-1]  # newest first
labels = views.run_labels(runs)

# -- widgets: which run and metric -------------------------------------------------------------
ui.seed_from_query("run_pick", "run", ids, ids[0])
c1, c2 = st.columns([2, 1], gap="large")
run_id = c1.selectbox("Run", ids, key="run_pick", format_func=labels.get)
run_metrics = loaders.run_metrics(ctx.db_path, ctx.version, run_id)
metric_names = views.ordered_metrics(run_metrics["metric"].tolist())
ui.seed_from_query("run_metric", "metric", metric_names,
                   "faithfulness" if "faithfulness" in metric_names else (metric_names or [None])[0])
metric = c2.selectbox("Metric for the sample verdicts", metric_names, key="run_metric")


# -- lib calls ---------------------------------------------------------------------------------
header = loaders.run_header(ctx.db_path, ctx.version, run_id)
table = views.metric_table(run_metrics)
changes = loaders.run_changes(ctx.db_path, ctx.version, run_id)

# -- render: the run ---------------------------------------------------------------------------
st.caption(f"{ui.md_literal(run_id)} started {header.started_at:%Y-%m-%d %H:%M}" +
           (f" · {ui.md_literal(header.label)}" if header.label else ""))
st.subheader("Metrics")
st.table(static_tables.styled(views.metric_display(table), formats={"score": "{:.3f}"}))
if not table["attributed"].all():
    st.warning("Some scores lack their judge model, prompt hash or binding: flagged, not guessed.")
for line in loaders.chance(ctx.db_path, ctx.version, run_id):
    st.warning(ui.md_literal(line[0].upper() + line[1:]) + ". Such a sample should have been excluded.",
               icon=":material/block:")

st.subheader("Pipeline config")
# plain text, its indentation kept, across the page, where each line fits whole at 1024 px (st.json broke a value
# mid-word there). Not st.code: a code block makes the browser load and run its syntax highlighter (1.5 MB of
# JavaScript) on every Run page, about a sixth of the page's drawing in Chromium (tests/README.md).
st.text(json.dumps(header.pipeline, indent=2, sort_keys=True, ensure_ascii=False))
st.subheader("What changed since the run before")
if changes.prev_run_id is None:
    st.info("This is the first run: nothing to compare with.")
else:
    st.page_link(views.PAGE_COMPARE, label=f"Compare with {ui.md_literal(changes.prev_run_id)}",
                 icon=":material/compare_arrows:",
                 query_params={"run": run_id, "run_b": changes.prev_run_id, "metric": metric or ""})
    if changes.is_empty:
        st.success(f"Nothing recorded changed since {ui.md_literal(changes.prev_run_id)}: same judge models, "
                   "prompts, bindings and pipeline config.")
    else:
        ui.show_run_changes(changes)

if not metric:
    st.stop()

# -- widgets: sample filters -------------------------------------------------------------------
spec = get_metric(metric)
pos, neg = spec.labels
st.subheader(f"Samples, with {ui.md_literal(metric)} verdicts")
f1, f2, f3, f4 = st.columns([3, 2, 2, 2])
linked_search, search_problem = linkparams.search(ui.query_param("q"))
ui.seed_value("run_search", "q", linked_search, "", search_problem)
search = f1.text_input("Search the texts", key="run_search", placeholder="words in any artifact or the sample id",
                       max_chars=linkparams.MAX_SEARCH)
linked_span, span_problem = linkparams.score_range(ui.query_param("score"))
ui.seed_value("run_score_range", "score", linked_span, (0.0, 1.0), span_problem)
score_range = f2.slider(f"{metric} score", 0.0, 1.0, step=linkparams.SCORE_STEP, key="run_score_range")
ui.seed_from_query("run_verdict", "verdict", [ANY, pos, neg], ANY)   # also resets another metric's verdict words
verdict = f3.selectbox("Has a verdict", [ANY, pos, neg], key="run_verdict")
ui.seed_from_query("run_location", "found", [ANY, *views.PROVENANCE_LOCATIONS], ANY)
location = f4.selectbox("Evidence found in", [ANY, *views.PROVENANCE_LOCATIONS], key="run_location",
                        help=f"Positive verdicts whose evidence string was found in this artifact. {metric} should "
                             f"find its evidence in {spec.against}.")

linked_page, page_problem = linkparams.page_number(ui.query_param("page"))
page_linked = ui.seed_value("run_page", "page", linked_page, 1, page_problem)

# -- lib calls ---------------------------------------------------------------------------------
view = loaders.sample_page(ctx.db_path, ctx.version, run_id, metric, search, tuple(score_range),
                           None if verdict == ANY else verdict, None if location == ANY else location,
                           int(st.session_state["run_page"]))
page_no = view.page   # a page past the last (a link's, or after a filter left fewer pages) is the last page
st.session_state["run_page"] = page_no
if page_linked and (past := linkparams.past_last_page(linked_page, view.pages)):
    st.warning(ui.md_literal(past))
shown, scores, provenance = view.rows, view.scores, view.provenance
evidence = views.evidence_summary(loaders.run_provenance(ctx.db_path, ctx.version, run_id, metric), metric)

# -- render: the sample table ------------------------------------------------------------------
if evidence.leak:
    st.error(ui.md_literal(evidence.sentence))
else:
    st.caption(ui.md_literal(evidence.sentence))
if view.paged:
    st.number_input(f"Page (of {view.pages:,})", min_value=1, max_value=view.pages, key="run_page",
                    help=f"A run this large is read {sample_pages.PAGE_ROWS} samples at a time; search, score and "
                         "verdict filters run over the whole run, the evidence filter over the page's samples.")
    st.caption(f"{view.matched:,} of {view.total:,} samples match; page {view.page:,} of {view.pages:,} "
               f"({len(shown)} shown). Click a row to view it below.")
else:
    st.caption(f"{len(shown)} of {view.total} samples. Click a row to view it below.")
listed = views.sample_list(shown, metric)
st.dataframe(listed, hide_index=True, key="run_samples", on_select=lambda: pick_row(listed),
             selection_mode="single-row", row_height=SAMPLE_ROW,
             height=views.grid_height(len(listed), row_height=SAMPLE_ROW, most=SAMPLES_HEIGHT),
             column_config={**SAMPLE_COLUMNS, "score": st.column_config.NumberColumn(
                 format="%.3f", width=52, help=f"The sample's {metric} score (blank: not scored)")})

# -- widgets and render: one sample ------------------------------------------------------------
options = shown["sample_id"].tolist()
if not options:   # nothing passes the filters: the viewer still offers the run's samples (this page of them)
    every = loaders.sample_page(ctx.db_path, ctx.version, run_id, metric, "", (0.0, 1.0), None, None, page_no)
    shown, scores, provenance = every.rows, every.scores, every.provenance
    options = shown["sample_id"].tolist()
linked = ui.query_param("view")
if linked and linked not in options:  # a deep-linked sample outside the filters or this page stays viewable
    options = [*options, linked]
ui.seed_from_query("run_sample", "view", options, options[0] if options else None)
sample_id = st.selectbox("Sample", options, key="run_sample")
ui.set_query(run=run_id, metric=metric, view=sample_id, q=search or None,
             score=linkparams.score_text(*score_range), verdict=None if verdict == ANY else verdict,
             found=None if location == ANY else location, page=linkparams.page_text(page_no))
if sample_id is None:
    st.stop()
if sample_id not in set(options[:len(shown)]):
    shown, scores, provenance = loaders.one_sample(ctx.db_path, ctx.version, run_id, metric, sample_id)
    if shown.empty:
        st.warning(f"No sample {ui.md_literal(sample_id)} in this run.")
        st.stop()
row = shown[shown["sample_id"] == sample_id].iloc[0]
status = views.sample_status(scores, metric, sample_id)
records = views.verdict_records(scores, provenance, metric, sample_id)

with st.container(border=True, key="run_sample_viewer"):
    score_text = f"{status['score']:.3f}" if status["score"] is not None else "no score"
    st.markdown(f"**{ui.md_literal(sample_id)}** · {ui.md_literal(metric)} {score_text} · status "
                f"{ui.md_literal(status['status'])}")
    if status["reason"]:
        st.text(f"reason: {clip.clip(str(status['reason'])).shown}")
    if others := views.other_scores(scores, metric, sample_id):
        st.caption("Other metrics: " + " · ".join(
            f"{ui.md_literal(m)} {'not scored' if x is None else f'{x:.3f}'}" for m, x in others))
    for col, name in zip(st.columns(4), TEXT_COLUMNS, strict=True):
        with col:
            st.caption(name + ("  (judged against)" if name == spec.against else
                               "  (items judged)" if name == spec.items_from else ""))
            # each text cut to what a page can send, the whole of it offered as a download
            if name == "contexts":
                parts, hidden = clip.clip_passages(row["passages"])
                for i, part in enumerate(parts, start=1):
                    st.text(f"[{i}] {part.shown}")
                if not row["passages"]:
                    st.text("(no passages)")
                cut = hidden or any(part.cut for part in parts)
                if cut:
                    st.caption(f"passages cut to {clip.SHOW_CHARS:,} characters together"
                               + (f"; {hidden} more not shown" if hidden else ""))
                whole = "\n\n".join(row["passages"]) if cut else ""
            else:
                part = clip.clip(row[name] or "")
                st.text(part.shown or "(empty)")
                if part.cut:
                    st.caption(part.note)
                whole = row[name] if part.cut else ""
            if whole:
                st.download_button(f"Download the whole {name}", data=whole, file_name=f"{name}.txt",
                                   mime="text/plain", key=f"run_download_{name}")
    st.caption(f"Verdict records: one per {spec.item_kind}; for each positive verdict, where its evidence string "
               f"was found ({spec.against} is the legitimate place).")
    # long claims and evidence wrap over four lines, where the evidence was found comes before it, and the
    # widths fit the viewer's box at 1024 px beside the sidebar
    st.dataframe(records, hide_index=True, key="run_verdicts", row_height=VERDICT_ROW,
                 height=min(40 + VERDICT_ROW * len(records), 720),
                 column_order=("n", "item", "verdict", "location", "evidence", "match"),
                 column_config={"n": st.column_config.NumberColumn("#", width=32),
                                "item": st.column_config.TextColumn(width=136),
                                "verdict": st.column_config.TextColumn(width=84),
                                "location": st.column_config.TextColumn("found in", width=84),
                                "evidence": st.column_config.TextColumn(width=136),
                                "match": st.column_config.TextColumn(width=52)})
