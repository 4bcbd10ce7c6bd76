"""What Trends says about what it draws (issue 46): the re-judged change where the re-judged line jumps, a caption
that names only the marks the chart draws (a short history has no band yet), and data grids as tall as their rows.
Plain values, no database."""

from __future__ import annotations

from datetime import datetime, timedelta

import pandas as pd
import plotly.graph_objects as go
import pytest

from lib.diagnosis import trends
from lib.diagnosis.rejudge import Series, SeriesJump
from lib.presentation import charts, history_charts, trend_figures, views

DAY0 = datetime(2026, 10, 28, 2, 0)
RUNS = [f"r{i}" for i in range(6)]
SCORES = [0.795, 0.797, 0.796, 0.650, 0.651, 0.652]   # a re-judged drop of 0.146 at r3


def _when(i: int) -> datetime:
    return DAY0 + timedelta(days=i)


def _series() -> Series:
    frame = pd.DataFrame({"run_id": RUNS, "started_at": [_when(i) for i in range(6)], "score": SCORES})
    jump = SeriesJump("r3", _when(3), 0.796, 0.650, -0.146, 0.012)
    return Series("rj-1", "faithfulness", "the trusted template", frame, 0.003, 0.012, (jump,))


def _history(judges: list[str] | None = None) -> pd.DataFrame:
    judges = judges or ["j1"] * 6
    return pd.DataFrame({"run_id": RUNS, "started_at": [_when(i) for i in range(6)], "score": SCORES,
                         "metric": "faithfulness", "judge_model": judges, "prompt_hash": "p1", "binding": "projected",
                         "scorer": "evaldrift"})


def test_the_rejudged_line_says_its_change_where_it_jumps_and_the_chart_writes_it() -> None:
    fig = history_charts.add_series(go.Figure(), _series())
    line = next(t for t in fig.data if t.line.dash == "dash")
    at = list(line.customdata).index("r3")
    # hovering the jump's point gave "score 0.650" alone, while the Overview and Review quoted the -0.146
    assert "-0.146" in line.text[at] and "%{text}" in line.hovertemplate
    assert "+0.002" in line.text[1]   # a step within noise says its size too
    (ring,) = [t for t in fig.data if t.name == "re-judged jump"]
    assert "-0.146" in ring.text[0]
    assert [a.text for a in fig.layout.annotations] == ["re-judged -0.146"]   # read without hovering


def _figure(*, band: float | None = None, judges: list[str] | None = None, events: bool = False,
            jumps: bool = False, rejudged: bool = False) -> dict:
    history = _history(judges)
    ev = (pd.DataFrame({"run_id": ["r3"], "started_at": [_when(3)], "kind": ["pipeline"], "text": ["retriever"]})
          if events else None)
    jf = (pd.DataFrame({"started_at": [_when(3)], "run_id": ["r3"], "metric": ["faithfulness"], "before": [0.796],
                        "after": [0.650], "delta": [-0.146], "x_threshold": [3.0], "across_instruments": [False],
                        "first_suspect": ["pipeline"]}) if jumps else None)
    fig = charts.trend_figure(history, metric="faithfulness", events=ev, jumps=jf, band=band)
    history_charts.shade_segments(fig, trends.segments(history), y=0.6)
    if rejudged:
        history_charts.add_series(fig, _series())
    return fig.to_dict()


CAPTION_ROWS = [
    # (id, figure's layers, words that must be said, words that must not)
    ("a short history: nothing but the line", {}, ["No grey band yet", "Click any point"],
     ["Grey band:", "Tinted", "Dotted", "Red rings", "Dashed green"]),
    ("the band once the spread is measured", {"band": 0.01}, ["Grey band: ±2"], ["No grey band yet"]),
    ("two instruments: tinted segments", {"judges": ["j1"] * 3 + ["j2"] * 3}, ["Tinted stretches"], ["Grey band:"]),
    ("a recorded change", {"events": True}, ["Dotted lines and triangles"], ["Tinted"]),
    ("a jump", {"jumps": True}, ["Red rings"], ["Dashed green"]),
    ("a re-judged series", {"rejudged": True}, ["Dashed green"], ["Red rings"]),
]


@pytest.mark.parametrize(("layers", "said", "unsaid"), [r[1:] for r in CAPTION_ROWS], ids=[r[0] for r in CAPTION_ROWS])
def test_the_trends_caption_names_only_the_marks_the_chart_draws(layers: dict, said: list[str],
                                                                 unsaid: list[str]) -> None:
    caption = trend_figures.caption(_figure(**layers))
    assert all(w in caption for w in said), caption
    assert not [w for w in unsaid if w in caption], caption


def test_the_caption_reads_the_stacked_panels_too() -> None:
    from lib.presentation import trend_stack

    stacked, _ = trend_stack.stack({"faithfulness": _figure(band=0.01), "answer_relevance": _figure()})
    assert "Grey band:" in trend_figures.caption(stacked)


@pytest.mark.parametrize(("rows", "row_height", "most", "height"), [
    (2, 84, 360, 35 + 2 * 84 + 3),     # Compare's two flipped verdicts: no empty rows under them
    (4, 84, 360, 360),                 # four fill it (374 capped): the grid scrolls
    (0, 35, 300, 35 + 35 + 3),         # an empty grid keeps one row for its "empty" note
    (50, 35, 300, 300),
])
def test_a_grid_is_as_tall_as_its_rows_up_to_its_most(rows: int, row_height: int, most: int, height: int) -> None:
    assert views.grid_height(rows, row_height=row_height, most=most) == height
