"""Plotly figures from frames: pure functions, no Streamlit, no queries.

Any text that came from a sample or a judge is escaped before it reaches a
hover label (plotly renders a subset of HTML there).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from lib.diagnosis.trends import SCORE_RANGE
from lib.presentation.thin import MAX_POINTS, thin


def safe(text: object, limit: int = 300) -> str:
    """Escape untrusted text for a plotly label, cut to `limit` characters."""
    s = str(text)
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return html.escape(s)


# -- trend and overview figures (owned by the Trends/Overview pages) --------------------
CHANGE_COLOURS: dict[str, str] = {"judge model": "#7b1fa2", "served model": "#c2185b", "prompt": "#ef6c00",
                                  "binding": "#6d4c41", "scoring library": "#00838f", "pipeline": "#1565c0",
                                  "judge drift": "#b71c1c"}
SCORE_COLOUR = "#37474f"
JUMP_COLOUR = "#c62828"
HEATMAP_CELL_W = 230   # px per blanked-field column of the verdict heatmap
HEATMAP_LABEL_W = 190  # px for the metric names
MARKER_STEP = 0.03   # score units between the markers of changes recorded at one run


def trend_figure(series: pd.DataFrame, *, metric: str, events: pd.DataFrame | None = None,
                 jumps: pd.DataFrame | None = None, band: float | None = None, height: int = 330,
                 legend: bool = True, max_points: int = MAX_POINTS) -> go.Figure:
    """One metric over runs: the score, its noise band, recorded changes, and the flagged jumps.

    Over 60 lines on purpose: one figure, its traces listed in drawing order (band, score, changes, jumps).
    A series longer than lib.presentation.thin.MAX_POINTS runs is thinned for drawing, and the title says so.

    Every point carries its run id in `customdata` (see run_from_selection), so a
    click on the score, a change marker or a jump opens that run.

    Args:
        series: store.metric_history rows of one metric: run_id, started_at, score, judge_model, prompt_hash.
        metric: the metric's name (the title).
        events: diagnose.change_events rows that apply to this metric (run_id, started_at, kind, text).
        jumps: views.jumps_frame rows of this metric.
        band: half-width of the noise band drawn around the series (stats.noise_band of the noise sd).
        legend: show the legend (stacked panels leave it out; the page explains the marks once).
        max_points: runs drawn before the series is thinned (a panel among several: fewer).
    """
    keep = {*(jumps["run_id"].astype(str) if jumps is not None else ()),
            *(events["run_id"].astype(str) if events is not None else ())}
    drawn = thin(series, keep=keep, max_points=max_points)   # past it: bucket extremes, every jump and change
    s = drawn.series
    x, y, ids = s["started_at"], s["score"].astype(float), s["run_id"].astype(str).tolist()
    # the traces and shapes as plain dicts, validated once by the one go.Figure at the end: go.Scatter then
    # add_trace validated each trace twice, and each add_shape the whole shape tuple again (half a chart's build)
    traces: list[dict] = []
    shapes: list[dict] = []
    if band is not None and band == band and len(s):
        # one closed outline (along the top, back along the bottom): a trace fewer per chart than two filled lines
        traces.append(dict(type="scatter", x=pd.concat([x, x[::-1]], ignore_index=True),
                           y=pd.concat([(y + band).clip(upper=SCORE_RANGE[1]),
                                        (y - band).clip(lower=SCORE_RANGE[0])[::-1]], ignore_index=True),
                           mode="lines",
                           line=dict(width=0), fill="toself", fillcolor="rgba(96,125,139,0.18)",
                           hoverinfo="skip", hoveron="points",   # a click inside the band is the score's
                           name=f"band ±{band:.3f} (2 × run-to-run spread)"))
    jtext = _jump_texts(jumps)
    # a jump's ring sits on its score point, and the hover picks one of the two: both say the jump and its suspect
    hover = [f"{safe(r.run_id)}<br>judge {safe(r.judge_model)} · prompt {safe(r.prompt_hash)}"
             + (f"<br><b>{jtext[r.run_id]}</b>" if r.run_id in jtext else "") for r in s.itertuples(index=False)]
    traces.append(dict(type="scatter", x=x, y=y, mode="lines+markers", name=metric, customdata=ids, text=hover,
                       line=dict(color=SCORE_COLOUR, width=1.5), marker=dict(size=5, color=SCORE_COLOUR),
                       hovertemplate="%{text}<br>%{x|%Y-%m-%d %H:%M}<br>score %{y:.3f}<extra></extra>"))
    top = min(float((y + (band if band and band == band else 0)).max()), SCORE_RANGE[1]) + 0.02 if len(s) else 1.0
    if events is not None and not events.empty:
        by_run = events.groupby("run_id", sort=False)
        ex, ey, eid, etext, ecolour = [], [], [], [], []
        for rid, g in by_run:
            kinds = list(dict.fromkeys(str(k) for k in g["kind"]))
            when = g["started_at"].iloc[0]
            # add_vline's own shape, given whole: add_vline works out the axes of every shape again each call
            shapes.append(dict(type="line", x0=when, x1=when, xref="x", y0=0, y1=1, yref="y domain",
                               line=dict(dash="dot", width=1, color=CHANGE_COLOURS.get(kinds[0], "#546e7a"))))
            said = "<br>".join(f"{safe(k)}: {safe(t, 160)}" for k, t in zip(g["kind"], g["text"], strict=True))
            for i, kind in enumerate(kinds):   # changes at one run: one marker each, stacked, one hover for all
                ex.append(when)
                ey.append(top + i * MARKER_STEP)
                eid.append(str(rid))
                ecolour.append(CHANGE_COLOURS.get(kind, "#546e7a"))
                etext.append(said)
        traces.append(dict(type="scatter", x=ex, y=ey, mode="markers", name="recorded change", customdata=eid,
                           text=etext, marker=dict(symbol="triangle-down", size=11, color=ecolour),
                           hovertemplate="%{text}<extra>change</extra>", showlegend=False))
        for kind in dict.fromkeys(events["kind"]) if legend else ():   # the legend's key: one entry per kind
            traces.append(dict(type="scatter", x=[None], y=[None], mode="markers", name=f"{kind} change",
                               hoverinfo="skip", marker=dict(symbol="triangle-down", size=10,
                                                             color=CHANGE_COLOURS.get(str(kind), "#546e7a"))))
    if jumps is not None and not jumps.empty:
        traces.append(dict(type="scatter", x=jumps["started_at"], y=jumps["after"], mode="markers",
                           name="jump beyond noise", customdata=jumps["run_id"].astype(str).tolist(),
                           text=[jtext[str(r)] for r in jumps["run_id"]],
                           marker=dict(symbol="circle-open", size=15, color=JUMP_COLOUR, line=dict(width=2.5)),
                           hovertemplate="%{text}<extra></extra>"))
    title = safe(metric) + (f"  <span style='font-size:12px;color:#78909c'>band ±{band:.3f} = 2 × run-to-run "
                            f"spread</span>"
                            if band is not None and band == band else "")
    if drawn.thinned:
        title += (f"<br><span style='font-size:11px;color:#78909c'>{len(s):,} of {drawn.total:,} runs drawn: each "
                  f"{drawn.bucket} runs by their lowest and highest score; every jump and change drawn</span>")
    # the legend goes under the axis: above it, on a narrow screen, it wraps over the title
    below = 90 if legend else 0
    fig = go.Figure(data=traces, layout=dict(shapes=shapes) if shapes else None)
    fig.update_layout(height=height + below, margin=dict(l=10, r=10, t=40, b=10 + below),
                      hovermode="closest", title=dict(text=title, font=dict(size=15)), clickmode="event+select",
                      showlegend=legend, legend=dict(orientation="h", y=-0.12, yanchor="top", x=0, xanchor="left",
                                                     font=dict(size=11)),
                      xaxis=dict(type="date"), yaxis=dict(title="score"))
    return fig


def validated(figure: dict) -> dict:
    """`figure` as st.plotly_chart's own validation makes it (a validated go.Figure's dict), for a cache to keep
    and `drawn` to hand to st.plotly_chart without its validating the whole property tree again each run."""
    return go.Figure(figure).to_dict()


def drawn(figure: dict) -> go.Figure:
    """A figure dict from `validated`, as a go.Figure taken as it is (plotly's `_validate=False`): st.plotly_chart
    reads a go.Figure's dict as it stands, where a dict is validated again first (a fifth of a warm Trends run)."""
    return go.Figure(figure, _validate=False)


def _jump_texts(jumps: pd.DataFrame | None) -> dict[str, str]:
    """Run id -> the hover text of its jump: the move, its size against the threshold, its first suspect."""
    if jumps is None or jumps.empty:
        return {}
    return {str(r.run_id): f"jump {r.before:.3f} -> {r.after:.3f} ({r.delta:+.3f}, {r.x_threshold:.1f}x the jump "
                           "threshold)" + ("<br>across instruments: test it with the 2x2 split"
                                           if getattr(r, "across_instruments", False) else "")
            + f"<br>first suspect: {safe(r.first_suspect, 160)}" for r in jumps.itertuples(index=False)}


def run_from_selection(event: object) -> str | None:
    """The run id of the first selected point that carries one, from a st.plotly_chart selection event.

    Reads event["selection"]["points"][i]["customdata"]; a point's customdata is
    the run id, or a list whose first element is. Points without one (the noise
    band) are skipped; no selection gives None.
    """
    picked = point_from_selection(event, ())
    return picked[0] if picked else None


def point_from_selection(event: object, trace_labels: Sequence[str]) -> tuple[str, str | None] | None:
    """(run id, label of its trace) of the first selected point that carries a run id (as run_from_selection);
    the label is trace_labels[the point's curve_number], or None when the list does not reach it."""
    try:
        points = event["selection"]["points"]  # type: ignore[index]
    except (KeyError, TypeError, IndexError):
        return None
    for point in points or ():
        try:
            data = point["customdata"]
        except (KeyError, TypeError):
            continue
        if isinstance(data, list | tuple):
            data = data[0] if data else None
        if isinstance(data, str) and data:
            curve = point.get("curve_number") if isinstance(point, dict) else None
            label = trace_labels[curve] if isinstance(curve, int) and 0 <= curve < len(trace_labels) else None
            return data, label
    return None


def paired_delta_figure(deltas: pd.DataFrame, *, metric: str) -> go.Figure:
    """Per-sample change between two runs (run - baseline) for one metric, with zero and the mean marked.

    Args:
        deltas: views.paired_deltas(...): sample_id, baseline, run, delta.
    """
    fig = go.Figure(go.Histogram(x=deltas["delta"], nbinsx=41, marker_color="#78909c",
                                 hovertemplate="change %{x}<br>%{y} samples<extra></extra>"))
    fig.add_vline(x=0, line_dash="dot", line_color="#757575")
    if len(deltas):
        mean = float(deltas["delta"].mean())
        fig.add_vline(x=mean, line_color=JUMP_COLOUR, annotation_text=f"mean {mean:+.3f}",
                      annotation_position="top right")
    fig.update_layout(height=280, margin=dict(l=10, r=10, t=40, b=10), bargap=0.05,
                      title=dict(text=f"{safe(metric)}: per sample", font=dict(size=14)),   # fits half of 1024 px
                      xaxis_title="run - baseline (per sample)", yaxis_title="samples")
    return fig


# -- ablation, canary and review figures (owned by the Ablation/Canary/Review pages) ----
VERDICT_COLOURS: dict[str, str] = {
    "LEAK": "#c62828", "INSENSITIVE": "#ef6c00", "INCONCLUSIVE": "#f2c94c",
    "CLEAN": "#2e7d32", "SENSITIVE": "#00897b", "not tested": "#e0e0e0",
}
_LIGHT_CELLS = frozenset({"INCONCLUSIVE", "not tested"})


def _wrapped(text: object, width: int = 80) -> str:
    """Escaped, line-wrapped hover text."""
    import textwrap

    return "<br>".join(safe(line, limit=width + 10) for line in textwrap.wrap(str(text), width)) or "&nbsp;"


def verdict_heatmap(matrix: pd.DataFrame) -> go.Figure:
    """Metrics x blanked fields, each cell coloured by its verdict and labelled with what the wiring table expects.

    Args:
        matrix: ablation_views.verdict_matrix(result): metric, arm, kind, expected, delta, ratio, sentence.
    """
    kinds = list(VERDICT_COLOURS)
    metrics = list(dict.fromkeys(matrix["metric"]))
    arms = list(dict.fromkeys(matrix["arm"]))
    z: list[list[float | None]] = [[None] * len(arms) for _ in metrics]
    hover = [[""] * len(arms) for _ in metrics]
    fig = go.Figure()
    annotations = []
    for r in matrix.itertuples(index=False):
        i, j = metrics.index(r.metric), arms.index(r.arm)
        kind = r.kind if r.kind in VERDICT_COLOURS else "INCONCLUSIVE"
        z[i][j] = kinds.index(kind)
        move = "" if r.delta is None or pd.isna(r.delta) else f"<br>{r.delta:+.3f}"
        if r.ratio is not None and not pd.isna(r.ratio):
            move += f" ({r.ratio:.0f}x noise)" if r.ratio >= 1 else " (within noise)"
        annotations.append(dict(x=r.arm, y=r.metric, text=f"<b>{r.kind}</b>{move}<br><i>expected {r.expected}</i>",
                                showarrow=False, font=dict(size=13, color="#222" if kind in _LIGHT_CELLS else "white")))
        hover[i][j] = _wrapped(r.sentence or f"{r.metric} with {r.arm} blanked: not tested; expected {r.expected}.")
    n = len(kinds)
    scale = [s for k, c in enumerate(VERDICT_COLOURS.values()) for s in ((k / n, c), ((k + 1) / n, c))]
    fig.add_trace(go.Heatmap(z=z, x=arms, y=metrics, zmin=-0.5, zmax=n - 0.5, colorscale=scale, showscale=False,
                             xgap=4, ygap=4, customdata=hover, hovertemplate="%{customdata}<extra></extra>"))
    for kind in dict.fromkeys(matrix["kind"]):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=str(kind), hoverinfo="skip",
                                 marker=dict(symbol="square", size=14,
                                             color=VERDICT_COLOURS.get(kind, VERDICT_COLOURS["INCONCLUSIVE"]))))
    # sized to its cells (a one-cell matrix is one cell wide, not the page); the page draws it at this width
    fig.update_layout(annotations=annotations, height=140 + 95 * len(metrics),
                      width=HEATMAP_LABEL_W + HEATMAP_CELL_W * max(len(arms), 2), margin=dict(l=10, r=10, t=40, b=10),
                      xaxis=dict(title="field(s) blanked", side="top", type="category"),
                      yaxis=dict(autorange="reversed", type="category"), plot_bgcolor="white",
                      legend=dict(orientation="h", y=-0.05, yanchor="top"))
    return fig


def delta_histogram(deltas: pd.DataFrame, *, metric: str, arm: str) -> go.Figure:
    """Per-sample change (ablated - baseline, means over repeats) for one cell, with zero and the mean marked.

    Args:
        deltas: ablation.per_sample_deltas(...): sample_id, baseline, ablated, delta.
    """
    fig = go.Figure(go.Histogram(x=deltas["delta"], nbinsx=41, marker_color="#5c6bc0",
                                 hovertemplate="change %{x}<br>%{y} samples<extra></extra>"))
    fig.add_vline(x=0, line_dash="dot", line_color="#757575")
    if len(deltas):
        mean = float(deltas["delta"].mean())
        fig.add_vline(x=mean, line_color="#c62828", annotation_text=f"mean {mean:+.3f}",
                      annotation_position="top left")
    fig.update_layout(height=300, margin=dict(l=10, r=10, t=40, b=10), bargap=0.05,
                      title=dict(text=f"{safe(metric)}: per-sample change with {safe(arm)} blanked",
                                 font=dict(size=14)),
                      xaxis_title="ablated - baseline (per sample)", yaxis_title="samples")
    return fig


def canary_figure(frame: pd.DataFrame, baseline: float | None, threshold: float | None, *,
                  metric: str = "faithfulness") -> go.Figure:
    """The canary set's score per run, its baseline and alarm threshold, alarm runs in red.

    Args:
        frame: diagnose.canary_status(...).frame: run_id, started_at, score, alarm.
    """
    ids = [safe(r) for r in frame["run_id"]]
    hover = "%{customdata}<br>%{x|%Y-%m-%d %H:%M}<br>canary " + safe(metric) + " %{y:.3f}<extra></extra>"
    fig = go.Figure(go.Scatter(x=frame["started_at"], y=frame["score"], mode="lines+markers", name="canary score",
                               line=dict(color="#546e7a"), marker=dict(size=5), customdata=ids, hovertemplate=hover))
    alarm = frame["alarm"].astype(bool).to_numpy()
    if alarm.any():
        fig.add_trace(go.Scatter(x=frame["started_at"][alarm], y=frame["score"][alarm], mode="markers", name="alarm",
                                 marker=dict(color="#c62828", size=9), customdata=[i for i, a in zip(ids, alarm,
                                                                                                    strict=True) if a],
                                 hovertemplate=hover))
    if baseline is not None:
        fig.add_hline(y=baseline, line_dash="dash", line_color="#757575", annotation_text=f"baseline {baseline:.2f}",
                      annotation_position="bottom right")
    if threshold is not None:
        fig.add_hline(y=threshold, line_dash="dot", line_color="#c62828",
                      annotation_text=f"alarm threshold {threshold:.2f}", annotation_position="top right")
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=30, b=10), yaxis=dict(range=[0, 1.05],
                      title=f"canary {safe(metric)}"), legend=dict(orientation="h", y=1.08), hovermode="closest")
    return fig
