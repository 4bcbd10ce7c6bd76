"""Trends' several charts stacked into one figure (lib.presentation.trend_stack), and a click naming its panel."""

from __future__ import annotations

from itertools import pairwise

import pytest

from lib.presentation import trend_stack
from lib.presentation.charts import point_from_selection


def chart(metric: str, *, shapes: list[dict] | None = None, annotations: list[dict] | None = None) -> dict:
    """A one-metric chart as lib.presentation.trend_figures gives it (the parts stack reads)."""
    return {"data": [{"type": "scatter", "name": metric, "x": [1, 2], "y": [0.5, 0.6], "customdata": ["r1", "r2"]},
                     {"type": "scatter", "name": "jump beyond noise", "x": [2], "y": [0.6], "customdata": ["r2"]}],
            "layout": {"title": {"text": f"{metric} <span>band</span>", "font": {"size": 15}}, "height": 300,
                       "xaxis": {"type": "date"}, "yaxis": {"title": {"text": "score"}},
                       "margin": {"l": 10, "r": 10, "t": 40, "b": 10}, "hovermode": "closest",
                       "shapes": shapes or [], "annotations": annotations or []}}


@pytest.mark.parametrize(("ref", "suffix", "expected"), [
    ("x", "3", "x3"),                      # data coordinates: the panel's axis
    ("y", "3", "y3"),
    ("y domain", "3", "y3 domain"),        # a fraction of the axis: of the panel's axis
    ("x domain", "", "x domain"),          # the first panel keeps Plotly's unnumbered names
    ("paper", "2", "paper"),               # left to the caller (stack maps a paper y to the panel's domain)
])
def test_each_kind_of_reference_points_at_the_panel(ref: str, suffix: str, expected: str) -> None:
    assert trend_stack._reref(ref, suffix) == expected


def test_each_metric_gets_a_panel_its_traces_and_marks_and_the_panels_share_the_time_axis() -> None:
    band = {"type": "rect", "xref": "x", "yref": "y domain", "x0": 1, "x1": 2, "y0": 0, "y1": 1}
    line = {"type": "line", "xref": "x", "yref": "paper", "x0": 2, "x1": 2, "y0": 0, "y1": 1}
    note = {"text": "n", "xref": "x", "yref": "y", "x": 1, "y": 0.5}
    figure, metrics = trend_stack.stack({"faithfulness": chart("faithfulness", shapes=[band, line]),
                                         "context_recall": chart("context_recall", annotations=[note]),
                                         "answer_relevance": chart("answer_relevance")})
    layout = figure["layout"]
    assert metrics == ["faithfulness"] * 2 + ["context_recall"] * 2 + ["answer_relevance"] * 2
    assert [(t["name"], t["xaxis"], t["yaxis"]) for t in figure["data"][::2]] == [
        ("faithfulness", "x", "y"), ("context_recall", "x2", "y2"), ("answer_relevance", "x3", "y3")]
    assert [t["customdata"] for t in figure["data"]] == [["r1", "r2"], ["r2"]] * 3   # a click still names its run
    # panels top to bottom, inside the plot, not overlapping
    domains = [layout[f"yaxis{s}"]["domain"] for s in ("", "2", "3")]
    assert domains[0][1] == 1 and domains[-1][0] == 0
    assert all(upper[0] > lower[1] for upper, lower in pairwise(domains))
    # one time axis: the second and third follow the first; each y axis keeps its chart's settings
    assert [layout[f"xaxis{s}"].get("matches") for s in ("", "2", "3")] == [None, "x", "x"]
    assert all(layout[f"xaxis{s}"]["type"] == "date" for s in ("", "2", "3"))
    assert layout["yaxis2"]["title"] == {"text": "score"} and layout["yaxis2"]["anchor"] == "x2"
    # marks follow their panel: a band across the axis, a line across the chart, a note in data coordinates
    assert [(s["xref"], s["yref"]) for s in layout["shapes"]] == [("x", "y domain"), ("x", "y domain")]
    notes = [a for a in layout["annotations"] if a["text"] == "n"]
    assert [(a["xref"], a["yref"]) for a in notes] == [("x2", "y2")]
    # each chart's title is a label at the top of its panel
    titles = {a["text"].split()[0]: a for a in layout["annotations"] if "band" in a["text"]}
    assert list(titles) == ["faithfulness", "context_recall", "answer_relevance"]
    assert [titles[m]["y"] for m in titles] == [d[1] for d in domains]
    assert layout["showlegend"] is False and layout["height"] > 3 * trend_stack.PANEL_PX


def test_nothing_to_stack_is_refused() -> None:
    with pytest.raises(ValueError, match="nothing to stack"):
        trend_stack.stack({})


@pytest.mark.parametrize(("points", "expected"), [
    ([{"curve_number": 3, "customdata": "r7"}], ("r7", "b")),                 # the trace names the panel's metric
    ([{"curve_number": 3, "customdata": ["r7", "x"]}], ("r7", "b")),          # customdata as a list: run id first
    ([{"curve_number": 0}, {"curve_number": 2, "customdata": "r2"}], ("r2", "b")),  # the band has no run: skipped
    ([{"curve_number": 9, "customdata": "r9"}], ("r9", None)),                # past the labels: the run alone
    ([{"customdata": "r1"}], ("r1", None)),                                   # no curve number
    ([], None),
])
def test_a_clicked_point_gives_its_run_and_its_panels_metric(points: list[dict], expected: object) -> None:
    labels = ["a", "a", "b", "b"]
    assert point_from_selection({"selection": {"points": points}}, labels) == expected


@pytest.mark.parametrize("lines", [1, 2, 3])
def test_a_title_of_several_lines_has_room_above_its_panel(lines: int) -> None:
    """A thinned chart's title has a second line ('292 of 2,000 runs drawn ...'): it must not be cut off above the
    first panel nor run into the date labels of the panel above (seen at 2,000 runs)."""
    def titled(metric: str) -> dict:
        fig = chart(metric)
        fig["layout"]["title"]["text"] = "<br>".join([f"{metric} <span>band</span>"] + ["thinned"] * (lines - 1))
        return fig

    figure, _ = trend_stack.stack({"faithfulness": titled("faithfulness"), "context_recall": titled("context_recall")})
    layout = figure["layout"]
    title_px = 28 + 16 * (lines - 1)   # a 15 px first line and its 6 px shift above the panel; 11 px lines below
    assert layout["margin"]["t"] >= title_px
    plot_px = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    gap_px = (layout["yaxis"]["domain"][0] - layout["yaxis2"]["domain"][1]) * plot_px
    assert gap_px >= 36 + title_px - 1e-6   # the upper panel's dates (two lines at a year's start), the title
