"""Trends' per-metric charts stacked into one figure: one panel per metric, one shared time axis.

Each Plotly chart on a page costs the browser its own layout, axes and event
layers (about 60 ms a chart on this machine, on top of Plotly's one-off load),
so five metrics drawn as five charts were most of the Trends page's drawing
time. One figure with a panel per metric draws faster, and its panels share
the time axis: a judge or pipeline change lines up across every metric, and a
zoom or pan in one panel moves all of them.

`stack` is pure: it takes the figure dicts lib.presentation.trend_figures
built (one per metric) and re-points each trace, shape and annotation at its
panel's axes. The metric of each trace is returned beside the figure, so a
clicked point names its metric as well as its run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PANEL_PX = 200       # a panel's plotting height (a one-metric chart's 300 px less its title and margins)
GAP_PX = 76          # between panels: the upper one's date labels (two lines at a year's start), the next title
TOP_PX = 34          # the first panel's title, in the top margin
LINE_PX = 16         # each further line of a title (a thinned chart's says how it was thinned): in the margin and gaps
BOTTOM_PX = 30       # the last panel's date labels


def _axis_suffix(i: int) -> str:
    """Plotly's axis names: x, x2, x3, ... (the first has no number)."""
    return "" if i == 0 else str(i + 1)


def _reref(ref: object, suffix: str) -> object:
    """An x/y reference of a one-panel figure ('x', 'y', 'y domain', 'paper') as one in panel `suffix`."""
    if ref in ("x", "y"):
        return f"{ref}{suffix}"
    if ref in ("x domain", "y domain"):
        return f"{str(ref)[0]}{suffix} domain"
    return ref


def _panel_items(items: list[dict[str, Any]], suffix: str, *, y_paper: str) -> list[dict[str, Any]]:
    """Shapes or annotations of one panel, re-pointed at its axes (a y measured on the paper becomes the panel's
    own domain, so a band 'across the chart' stays across its panel)."""
    out = []
    for item in items:
        moved = dict(item)
        moved["xref"] = _reref(item.get("xref", "x"), suffix)
        yref = item.get("yref", "y")
        moved["yref"] = y_paper if yref == "paper" else _reref(yref, suffix)
        out.append(moved)
    return out


def stack(figures: Mapping[str, dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """One figure with a panel per entry of `figures` (in their order), and the metric of each of its traces.

    Each panel keeps its chart's height, axes, traces, shapes and annotations; its title becomes a left-aligned
    label above it. The x axes match (a zoom in one moves all), the legend is off (the page explains the marks).
    """
    names = list(figures)
    if not names:
        raise ValueError("nothing to stack")
    extra = LINE_PX * max(str((figures[m]["layout"].get("title") or {}).get("text") or "").count("<br>")
                          for m in names)
    top_px, gap_px = TOP_PX + extra, GAP_PX + extra
    plot_px = PANEL_PX * len(names) + gap_px * (len(names) - 1)
    first = figures[names[0]]["layout"]
    layout: dict[str, Any] = {
        "height": top_px + plot_px + BOTTOM_PX, "showlegend": False,
        "hovermode": first.get("hovermode", "closest"), "clickmode": first.get("clickmode", "event+select"),
        "margin": {**first.get("margin", {}), "t": top_px, "b": BOTTOM_PX}, "template": first.get("template"),
        "shapes": [], "annotations": []}
    data: list[dict[str, Any]] = []
    trace_metrics: list[str] = []
    for i, m in enumerate(names):
        fig, suffix = figures[m], _axis_suffix(i)
        own = fig["layout"]
        top = plot_px - i * (PANEL_PX + gap_px)
        domain = [(top - PANEL_PX) / plot_px, top / plot_px]
        layout[f"xaxis{suffix}"] = {**own.get("xaxis", {}), "anchor": f"y{suffix}",
                                    **({"matches": "x"} if i else {})}
        layout[f"yaxis{suffix}"] = {**own.get("yaxis", {}), "anchor": f"x{suffix}", "domain": domain}
        for trace in fig["data"]:
            data.append({**trace, "xaxis": f"x{suffix}", "yaxis": f"y{suffix}"})
            trace_metrics.append(m)
        y_paper = f"y{suffix} domain"
        layout["shapes"] += _panel_items(list(own.get("shapes", ())), suffix, y_paper=y_paper)
        layout["annotations"] += _panel_items(list(own.get("annotations", ())), suffix, y_paper=y_paper)
        title = own.get("title") or {}
        if title.get("text"):
            layout["annotations"].append({
                "text": title["text"], "font": title.get("font", {}), "showarrow": False, "xref": "paper", "x": 0,
                "xanchor": "left", "align": "left", "yref": "paper", "y": domain[1], "yanchor": "bottom", "yshift": 6})
    return {"data": data, "layout": layout}, trace_metrics
