"""Trends' charts, one per metric, from the frames the page already holds: pure, so a loader can cache them.

Building a Plotly figure is most of the Trends page's server time (the
validated property tree: a few hundred milliseconds for five charts), so the
page caches what this returns, as plain figure dicts, per database version,
metric choice and date range (lib.app.loaders.trend_figures).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

import pandas as pd

from lib.diagnosis import trends
from lib.diagnosis.rejudge import Series
from lib.presentation import charts, history_charts, views
from lib.presentation.thin import MAX_POINTS

SMALL_MULTIPLE_POINTS = 150   # a panel among several (at most about 900 px wide): a bucket's low and high each 3 px


def trend_figures(window: pd.DataFrame, events: pd.DataFrame, jumps: pd.DataFrame, noise_sd: Mapping[str, float],
                  series: Sequence[Series], shown: Sequence[str], since: datetime, until: datetime) -> dict[str, dict]:
    """Each shown metric's trend chart over `window` (the trend between since and until), as a figure dict.

    The score line with its noise band, recorded changes, jumps, the comparable segments shaded, and each
    re-judged series of the metric as a second line; one chart with its legend when one metric is shown. When
    several are (the page stacks them as panels of one figure: lib.presentation.trend_stack), each is thinned
    past SMALL_MULTIPLE_POINTS runs (with every jump and change kept: lib.presentation.thin), a single chart
    past MAX_POINTS.
    """
    out: dict[str, dict] = {}
    # every shown metric's segments at once (a metric's own are the same read alone): per metric, the segment
    # index's grouping and sorting of the window were most of the page's chart time
    segs = trends.segments(window[window["metric"].isin(shown)])
    for m in shown:
        mine = window[window["metric"] == m]
        fig = charts.trend_figure(mine, metric=m, events=views.events_for(events, [m]),
                                  jumps=jumps[jumps["metric"] == m], band=trends.band(noise_sd.get(m, float("nan"))),
                                  height=300 if len(shown) > 1 else 460, legend=len(shown) == 1,
                                  max_points=SMALL_MULTIPLE_POINTS if len(shown) > 1 else MAX_POINTS)
        history_charts.shade_segments(fig, [s for s in segs if s.metric == m], y=float(mine["score"].min()) - 0.01)
        for s in series:
            if s.metric == m:
                history_charts.add_series(fig, s, since=pd.Timestamp(since), until=pd.Timestamp(until))
        out[m] = fig.to_dict()
    return out


# What each layer of a trend figure looks like, in the order the caption says them; a layer is said only when the
# figure draws it (a short history has no band yet and, with one instrument, no tints: issue 46).
LAYER_WORDS = (
    ("band", "Grey band: ±2 × the run-to-run spread around each score."),
    ("segments", "Tinted stretches: runs measured with one instrument (comparable segments; hover the squares at the "
                 "bottom)."),
    ("changes", "Dotted lines and triangles: recorded changes (purple judge model, orange prompt, brown binding, blue "
                "pipeline; hover for what changed)."),
    ("jumps", "Red rings: jumps beyond the jump threshold."),
    ("rejudged", "Dashed green: a re-judged series, with its own jumps (diamonds, their change written beside)."),
)
NO_BAND = ("No grey band yet: the run-to-run spread is measured once {n} run-to-run differences within one "
           "instrument exist.")


def drawn_layers(figure: Mapping) -> frozenset[str]:
    """Which of LAYER_WORDS' layers a trend figure dict (trend_figures, or trend_stack's panels) draws."""
    names = [str(t.get("name") or "") for t in figure.get("data", ())]
    found = {"band" for n in names if n.startswith("band ±")}
    found |= {"segments" for n in names if n == "instrument segments"}
    found |= {"changes" for n in names if n == "recorded change"}
    found |= {"jumps" for n in names if n == "jump beyond noise"}
    found |= {"rejudged" for t in figure.get("data", ()) if (t.get("line") or {}).get("dash") == "dash"}
    return frozenset(found)


def caption(figure: Mapping) -> str:
    """The Trends caption: what each mark of `figure` means, naming only the marks it draws."""
    layers = drawn_layers(figure)
    words = [w for layer, w in LAYER_WORDS if layer in layers]
    if "band" not in layers:
        words.append(NO_BAND.format(n=trends.MIN_SPREAD_STEPS))
    return " ".join([*words, "Click any point to open that run."])
