"""Trend-chart layers for the whole story of a metric: comparable segments and re-judged series.

Pure functions that add to a charts.trend_figure: shading for each run of one
instrument (alternate segments tinted, hover names the instrument), and a
re-judged series as a second line with its own jumps. Labels are escaped
(charts.safe) like every other hover text.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from lib.diagnosis.rejudge import Series, SeriesJump
from lib.diagnosis.trends import Segment
from lib.presentation.charts import safe

SEGMENT_FILL = "rgba(121,134,203,0.10)"
REJUDGED_COLOUR = "#00897b"


def shade_segments(fig: go.Figure, segs: list[Segment], *, y: float) -> go.Figure:
    """Tint every other segment; a marker at height `y` in each (hover it) names the segment's instrument."""
    if len(segs) < 2:
        return fig
    xs, ys, texts, ids = [], [], [], []
    rects = []
    for s in segs:
        if s.index % 2 == 1:
            rects.append(dict(type="rect", x0=s.start, x1=s.end, xref="x", y0=0, y1=1, yref="y domain",  # add_vrect's
                              fillcolor=SEGMENT_FILL, line=dict(width=0), layer="below"))              # shape, quicker
        xs.append(s.start + (s.end - s.start) / 2)
        ys.append(y)
        texts.append(f"instrument segment {s.index + 1}: {safe(s.label, 200)}<br>{safe(s.first_run)} to "
                     f"{safe(s.last_run)} ({s.n_runs} runs, median {s.level:.3f})")
        ids.append(s.first_run)
    # the shapes at once and the trace as a dict: each add_shape validated every shape again, go.Scatter then
    # add_trace the trace twice
    fig.layout.shapes += tuple(rects)
    fig.add_trace(dict(type="scatter", x=xs, y=ys, mode="markers", name="instrument segments", text=texts,
                       customdata=ids, marker=dict(symbol="square", size=7, color="rgba(121,134,203,0.6)"),
                       hovertemplate="%{text}<extra></extra>", showlegend=False))
    return fig


def add_series(fig: go.Figure, series: Series, *, since: pd.Timestamp | None = None,
               until: pd.Timestamp | None = None) -> go.Figure:
    """A re-judged series as a second (dashed) line, with its own jumps ringed."""
    s = series.frame.dropna(subset=["score"])
    if since is not None:
        s = s[s["started_at"] >= since]
    if until is not None:
        s = s[s["started_at"] <= until]
    if s.empty:
        return fig
    name = safe(series.name, 120)
    shown = [j for j in series.jumps if (since is None or j.started_at >= since)
             and (until is None or j.started_at <= until)]
    said = {j.run_id: _jump_words(j) for j in shown}
    # the line's point and the jump's diamond sit on one spot and the hover picks either: both say the re-judged
    # change, since "score 0.650" alone hid the -0.145 the Overview and the Review quote (issue 46)
    steps = s["score"].astype(float).diff()
    text = [said.get(str(r), f"change {d:+.3f} from the re-judged run before" if d == d else "first re-judged run")
            for r, d in zip(s["run_id"], steps, strict=True)]
    fig.add_trace(dict(type="scatter", x=s["started_at"], y=s["score"].astype(float), mode="lines+markers",
                       name=name, customdata=s["run_id"].astype(str).tolist(), text=text,
                       line=dict(color=REJUDGED_COLOUR, width=1.5, dash="dash"),
                       marker=dict(size=4, color=REJUDGED_COLOUR),
                       hovertemplate=f"{name}<br>%{{customdata}}<br>%{{x|%Y-%m-%d}}<br>score %{{y:.3f}}: "
                                     "%{text}<extra>re-judged</extra>"))
    if shown:
        fig.add_trace(dict(
            type="scatter", x=[j.started_at for j in shown], y=[j.after for j in shown], mode="markers",
            name="re-judged jump", customdata=[j.run_id for j in shown], text=[said[j.run_id] for j in shown],
            marker=dict(symbol="diamond-open", size=15, color=REJUDGED_COLOUR, line=dict(width=2.5)),
            hovertemplate="%{text}<extra></extra>"))
        # the change in words on the chart, read without hovering (at once: add_annotation validates every one again)
        fig.layout.annotations += tuple(
            dict(x=j.started_at, y=j.after, text=f"re-judged {j.delta:+.3f}", showarrow=True, arrowhead=0, ax=0,
                 ay=28 if j.delta < 0 else -28, bgcolor="rgba(255,255,255,0.8)",
                 font=dict(size=11, color=REJUDGED_COLOUR))
            for j in shown)
    return fig


def _jump_words(j: SeriesJump) -> str:
    return (f"re-judged jump {j.before:.3f} -> {j.after:.3f} ({j.delta:+.3f}), threshold ±{j.threshold:.3f}: the "
            "system changed here")
