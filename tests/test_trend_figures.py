"""Trends' charts as the page caches them (lib/presentation/trend_figures.py): one figure dict per metric shown,
each point still carrying its run for a click, the re-judged series drawn beside the recorded one."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import plotly.graph_objects as go

from lib.core.records import MAIN
from lib.diagnosis import rejudge, trends
from lib.presentation import charts, history_charts, trend_figures, views
from lib.store import Store

SINCE, UNTIL = datetime(2000, 1, 1), datetime(2100, 1, 1)


def _figures(store: Store, shown: list[str], since: datetime = SINCE, until: datetime = UNTIL) -> dict[str, dict]:
    history = store.metric_history(suite=MAIN)
    window = views.in_range(history, since, until)
    jumps = views.in_range(views.jumps_frame(trends.find_jumps(store, history=history)), since, until)
    return trend_figures.trend_figures(window, views.in_range(trends.change_events(history), since, until), jumps,
                                       trends.trend_noise(history), rejudge.finished_series(store), shown, since,
                                       until)


def test_one_figure_per_metric_shown_small_multiples_without_a_legend(demo_db: Path) -> None:
    with Store(demo_db) as store:
        metrics = views.ordered_metrics(store.metric_history(suite=MAIN)["metric"].unique().tolist())
        many = _figures(store, metrics)
        one = _figures(store, ["faithfulness"])
    assert list(many) == metrics
    assert all(f["layout"]["showlegend"] is False for f in many.values())
    assert one["faithfulness"]["layout"]["showlegend"] is True
    fig = go.Figure(many["faithfulness"])   # a plain dict that Plotly (and st.plotly_chart) reads back
    score = next(t for t in fig.data if t.name == "faithfulness")
    assert len(score.customdata) == len(score.x) > 0   # every point still opens its run


def test_a_range_draws_only_its_runs(demo_db: Path) -> None:
    with Store(demo_db) as store:
        history = store.metric_history(suite=MAIN)
        days = views.run_days(history)
        since, until = views.day_bounds(days[10], days[19])
        fig = go.Figure(_figures(store, ["faithfulness"], since, until)["faithfulness"])
        inside = views.in_range(history[history["metric"] == "faithfulness"], since, until)
    score = next(t for t in fig.data if t.name == "faithfulness")
    assert sorted(score.customdata) == sorted(inside["run_id"].astype(str))
    assert charts.run_from_selection({"selection": {"points": [{"customdata": score.customdata[0]}]}}) \
        == score.customdata[0]


def test_the_chart_shades_each_instrument_and_draws_the_rejudged_line_with_its_own_jump(
        rejudged_demo_db: Path) -> None:
    from lib.diagnosis import trends
    from lib.jobs._demo import run_plans

    with Store(rejudged_demo_db) as store:
        fig = go.Figure(_figures(store, ["faithfulness"])["faithfulness"])
        history = store.metric_history(suite=MAIN)
    segs = [s for s in trends.segments(history) if s.metric == "faithfulness"]
    assert len(segs) == 5
    # every other segment tinted, edge to edge with its runs
    tinted = [s for s in fig.layout.shapes if s.type == "rect" and s.fillcolor == history_charts.SEGMENT_FILL]
    assert [(str(r.x0)[:19].replace(" ", "T"), str(r.x1)[:19].replace(" ", "T")) for r in tinted] == [
        (s.start.isoformat()[:19], s.end.isoformat()[:19]) for s in segs if s.index % 2 == 1]
    # one marker a segment whose hover names its instrument and its runs
    (marks,) = [t for t in fig.data if t.name == "instrument segments"]
    assert list(marks.customdata) == [s.first_run for s in segs]
    assert all(text.startswith(f"instrument segment {s.index + 1}: ") and s.label[:40] in text
               for text, s in zip(marks.text, segs, strict=True))
    # the re-judged series beside the recorded one, with its one jump: the retriever change of 10-31
    # (and the demo's own series: its open episode's 47 runs, re-judged when the demo was built)
    lines = [t for t in fig.data if (t.name or "").startswith("re-judged") and t.name != "re-judged jump"]
    assert sorted(len(t.x) for t in lines) == [47, 90]
    rings = [t for t in fig.data if t.name == "re-judged jump"]
    assert {c for t in rings for c in t.customdata} == {run_plans()[58].run_id}
    assert all("the system changed here" in text for t in rings for text in t.text)
