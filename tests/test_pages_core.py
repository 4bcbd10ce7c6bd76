"""The Overview, Trends, Run and Compare pages on the demo database, and the frames they show
(lib.presentation.views)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path
from urllib.parse import parse_qs

import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from lib.app import ui
from lib.core.metrics import METRIC_NAMES
from lib.core.prompts import prompt_hash
from lib.diagnosis.trends import Jump, RunChanges
from lib.diagnosis.trends._diagnose import Suspect
from lib.jobs._demo import INSTRUCTED_FAITHFULNESS, LEAKY_FAITHFULNESS, run_plans
from lib.presentation import views
from lib.presentation.charts import run_from_selection, trend_figure

ROOT = Path(__file__).resolve().parent.parent
PLANS = run_plans()
LEAK_RUN = PLANS[30].run_id          # the harness refactor: faithfulness reads ground_truth
REGRESSION_RUN = PLANS[58].run_id    # the retriever regression
TIMEOUT = 60


@pytest.fixture(scope="module")
def _store_closed_after(demo_db: Path) -> Iterator[None]:
    """The pages open the demo through the process-wide store cache; close it when this module is done."""
    yield
    store = ui.open_store(str(demo_db))
    store.close()
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def app(demo_db: Path, monkeypatch: pytest.MonkeyPatch, _store_closed_after: None) -> AppTest:
    monkeypatch.setenv("EVALDRIFT_DB", str(demo_db))
    return AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)


def open_page(at: AppTest, page: str, **params: str) -> AppTest:
    """`page` opened by a link carrying `params` (a deep link: no Overview run first)."""
    at.query_params.clear()
    at.query_params.update(params)
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest) -> list[str]:
    """Every message on the page, with ui.md_literal's backslash escapes removed."""
    return [re.sub(r"\\(.)", r"\1", e.value)
            for e in (*at.markdown, *at.text, *at.caption, *at.error, *at.warning, *at.success, *at.info)]


def table(at: AppTest, *columns: str) -> pd.DataFrame:
    """The first table on the page with these columns, a grid or a static table (its data, not its text; a
    display-only st.dataframe has no key in AppTest)."""
    for d in (*at.dataframe, *at.table):
        if set(columns) <= set(d.value.columns):
            return d.value
    raise AssertionError(f"no table with columns {columns}")


def link_params(link: object) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(link.proto.query_string).items()}  # type: ignore[attr-defined]


# -- pages ---------------------------------------------------------------------------------------
def test_overview_shows_every_metric_with_a_sparkline_and_the_latest_faithfulness_jump(app: AppTest) -> None:
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    assert [m.label for m in app.metric] == list(METRIC_NAMES)
    sparks = [c.proto.spec for c in app.get("vega_lite_chart")]
    assert len(sparks) == len(METRIC_NAMES) and all('"domain"' in spec for spec in sparks)
    alert = next(t for t in texts(app) if "faithfulness" in t and "jump threshold" in t)
    assert "0.645" in alert  # the leak fixed at run 75: faithfulness falls to its true level
    assert any(t.startswith("prompt: faithfulness prompt") for t in (e.value for e in app.text))
    # the fix run's jump is tested by its split (both runs' instruments on both runs' outputs), never by
    # an ablation of the one run
    assert not [p for p in app.get("page_link") if "ablation" in p.proto.page]
    compare_links = [link_params(p) for p in app.get("page_link") if "compare" in p.proto.page]
    assert {"run": PLANS[75].run_id, "run_b": PLANS[74].run_id, "metric": "faithfulness",
            "split": "1"} in compare_links
    assert any("earlier jumps" in p.proto.label for p in app.get("page_link"))


def test_overview_reports_canary_lint_and_attribution(app: AppTest) -> None:
    app.run()
    assert any("Canary faithfulness" in t for t in texts(app))
    assert any("2 of 8 stored templates have lint findings" in t for t in texts(app))
    lint = table(app, "prompt_hash", "findings", "in_latest_run")
    assert set(lint["prompt_hash"]) == {prompt_hash(LEAKY_FAITHFULNESS), prompt_hash(INSTRUCTED_FAITHFULNESS)}
    assert not lint["in_latest_run"].any()
    assert any("Every stored score records" in t for t in texts(app))


def test_trends_draws_a_panel_per_metric_in_one_chart_and_one_chart_for_a_deep_linked_metric(app: AppTest) -> None:
    open_page(app, "pages/trends.py")
    (chart,) = app.get("plotly_chart")
    spec = json.loads(chart.proto.spec)
    assert sorted(k for k in spec["layout"] if k.startswith("yaxis")) == sorted(
        ["yaxis", *(f"yaxis{i}" for i in range(2, len(METRIC_NAMES) + 1))])
    assert {t.get("name") for t in spec["data"]} >= set(METRIC_NAMES)
    jumps = table(app, "when", "metric", "x threshold")
    assert PLANS[30].started_at in set(jumps["when"][jumps["metric"] == "faithfulness"])   # the leak's jump

    open_page(app, "pages/trends.py", metric="context_recall")
    assert app.selectbox("trends_metric").value == "context_recall"
    assert len(app.get("plotly_chart")) == 1
    assert set(table(app, "when", "metric", "x threshold")["metric"]) == {"context_recall"}


def test_trends_metric_choice_is_written_to_the_url(app: AppTest) -> None:
    open_page(app, "pages/trends.py")
    app.selectbox("trends_metric").select("faithfulness").run()
    assert app.query_params.get("metric") == "faithfulness"
    assert len(app.get("plotly_chart")) == 1


def test_run_deep_link_opens_the_run_its_metrics_and_the_sample(app: AppTest) -> None:
    open_page(app, "pages/run.py", run=LEAK_RUN, metric="faithfulness", view="doc-0019")
    assert app.selectbox("run_pick").value == LEAK_RUN
    metrics = table(app, "metric", "judge model", "prompt hash", "binding")
    assert list(metrics["metric"]) == list(METRIC_NAMES)
    assert metrics.set_index("metric").loc["faithfulness", "binding"] == "replay"
    assert app.selectbox("run_sample").value == "doc-0019"
    assert any(t.startswith("**doc-0019**") for t in texts(app))  # the viewer's header
    assert any(t.startswith("[1] ") for t in (e.value for e in app.text))  # passages shown as plain text
    verdicts = table(app, "item", "verdict", "evidence", "location")
    assert {"item", "verdict", "evidence", "location"} <= set(verdicts.columns)
    assert "ground_truth" in set(verdicts["location"])
    assert any("must never receive ground_truth" in t for t in texts(app))  # evidence found in the reference
    assert any(c.language == "diff" for c in app.code)  # the template diff against the run before
    assert app.query_params == {"run": LEAK_RUN, "metric": "faithfulness", "view": "doc-0019"}


def test_run_sample_filters_narrow_the_table(app: AppTest) -> None:
    open_page(app, "pages/run.py", run=LEAK_RUN)
    everything = len(app.dataframe("run_samples").value)
    app.selectbox("run_location").select("ground_truth").run()
    shown = app.dataframe("run_samples").value
    assert 0 < len(shown) < everything
    assert shown["evidence"].str.contains("ground_truth").all()
    app.text_input("run_search").input("webhook").run()
    found = app.dataframe("run_samples").value  # the search looks in all four artifacts (see test_filter_samples)
    assert 0 < len(found) < len(shown)


def test_run_defaults_to_the_latest_run(app: AppTest) -> None:
    open_page(app, "pages/run.py")
    assert app.selectbox("run_pick").value == PLANS[-1].run_id
    assert any("Nothing recorded changed" in t for t in texts(app))


def test_compare_shows_the_config_diff_of_the_regression_against_the_run_before(app: AppTest) -> None:
    open_page(app, "pages/compare.py", run=REGRESSION_RUN)
    assert app.selectbox("compare_base").value == PLANS[57].run_id
    config = table(app, "key", "baseline", "run")
    assert config.to_dict("records") == [{"key": "retriever.embedding_model", "baseline": "e5-base-v2",
                                          "run": "e5-small-v2-int8"}]
    sides = table(app, "metric", "baseline", "run", "delta", "binding").set_index("metric")
    assert sides.loc["context_recall", "delta"] < -0.1
    assert len(table(app, "sample_id", "flip", "item", "evidence")) > 0
    assert app.query_params.get("run_b") == PLANS[57].run_id
    # the largest moves at once, in a static table; every sample's move in a grid once asked for
    moves = table(app, "sample_id", "baseline", "run", "delta")
    assert len(moves) == 8 and moves["delta"].abs().is_monotonic_decreasing
    assert not [d for d in app.dataframe if "delta" in d.value.columns]
    app.toggle("compare_all_moves").set_value(True).run()
    every = table(app, "sample_id", "baseline", "run", "delta")
    assert len(every) > 300 and every.head(8).equals(moves)


@pytest.mark.slow
def test_compare_splits_the_leak_into_instrument(app: AppTest) -> None:
    open_page(app, "pages/compare.py", run=LEAK_RUN, metric="faithfulness")
    assert any("must never receive" in t for t in texts(app))
    app.button("compare_split").click().run()
    assert not app.exception, [e.value for e in app.exception]
    sentence = next(t for t in texts(app) if "re-judged" in t)
    assert "mostly the measurement" in sentence
    cells = table(app, f"{PLANS[29].run_id}'s instrument", f"{LEAK_RUN}'s instrument")
    assert cells.shape == (2, 2)


# -- the chart selection handler -------------------------------------------------------------------
@pytest.mark.parametrize(("event", "expected"), [
    ({"selection": {"points": [{"x": "2026-10-03", "y": 0.92, "customdata": "nightly-20261003"}]}},
     "nightly-20261003"),
    ({"selection": {"points": [{"customdata": ["nightly-20261031", 3]}]}}, "nightly-20261031"),
    ({"selection": {"points": [{"x": 1, "y": 2}, {"customdata": "r-2"}]}}, "r-2"),  # a band point has none
    ({"selection": {"points": []}}, None),
    ({"selection": {}}, None),
    ({}, None),
    (None, None),
])
def test_run_from_selection_reads_the_first_run_id(event: object, expected: str | None) -> None:
    assert run_from_selection(event) == expected


def test_trend_figure_puts_run_ids_in_customdata_and_escapes_hover_text() -> None:
    series = pd.DataFrame({"run_id": ["r<1>", "r2"], "started_at": [datetime(2026, 1, 1), datetime(2026, 1, 2)],
                           "score": [0.5, 0.9], "judge_model": ["m", "m"], "prompt_hash": ["<b>x</b>", "h"]})
    events = pd.DataFrame({"run_id": ["r2"], "started_at": [datetime(2026, 1, 2)], "kind": ["prompt"],
                           "metric": ["faithfulness"], "text": ["<script>alert(1)</script>"]})
    fig = trend_figure(series, metric="faithfulness", events=events, band=0.02)
    score = next(t for t in fig.data if t.name == "faithfulness")
    assert list(score.customdata) == ["r<1>", "r2"]
    hover = " ".join(str(t.text) for t in fig.data)
    assert "<script>" not in hover and "<b>x</b>" not in hover and "&lt;script&gt;" in hover


# -- lib.presentation.views -------------------------------------------------------------------------------------
def history_frame(scores: dict[str, list[float]]) -> pd.DataFrame:
    rows = []
    for metric, values in scores.items():
        for i, v in enumerate(values):
            rows.append({"run_id": f"r{i}", "started_at": datetime(2026, 1, 1 + i), "metric": metric, "score": v,
                         "n": 10, "n_failed": 0, "n_excluded": 0, "judge_model": "m", "prompt_hash": "h",
                         "binding": "projected"})
    return pd.DataFrame(rows)


def test_metric_cards_give_latest_score_delta_and_sparkline_in_registry_order() -> None:
    cards = views.metric_cards(history_frame({"context_recall": [0.5] * 9 + [0.6],
                                              "faithfulness": [0.5] * 9 + [0.503]}), spark_runs=3)
    assert [c.metric for c in cards] == ["faithfulness", "context_recall"]
    faith, recall = cards
    assert (faith.run_id, faith.score, faith.previous) == ("r9", 0.503, 0.5)
    assert faith.delta == pytest.approx(0.003) and faith.spark == (0.5, 0.5, 0.503)
    # eight differences of 0 besides the last: the robust sd is 0, so the threshold is the 0.005 floor
    assert faith.noise_sd == 0 and faith.threshold == pytest.approx(0.005)
    assert not faith.beyond_noise
    assert recall.delta == pytest.approx(0.1) and recall.beyond_noise
    # five runs with no per-sample scores: too few differences for a spread, no pairs: not decided either way
    (short,) = views.metric_cards(history_frame({"faithfulness": [0.5, 0.5, 0.5, 0.5, 0.9]}))
    assert not short.decided and not short.beyond_noise and math.isnan(short.noise_sd)


@pytest.mark.parametrize(("values", "points", "domain"), [
    ((0.5, 0.6, 0.55), [0.5, 0.6, 0.55], (0.5, 0.6)),          # a moving series: its own range
    ((0.5, 0.5, 0.5), [0.5, 0.5, 0.5], (0.49, 0.51)),         # flat: a band around the value
    ((0.7,), [0.7, 0.7], (0.69, 0.71)),                       # one run: drawn as a flat line
    ((float("nan"), 0.4, 0.6), [0.4, 0.6], (0.4, 0.6)),       # an unscored run: no point
    ((), [], (0.0, 1.0)),                                     # nothing yet: still a finite domain
])
def test_a_sparkline_fixes_both_scales_to_finite_domains(values: tuple[float, ...], points: list[float],
                                                        domain: tuple[float, float]) -> None:
    # Issue 28 item 6: a scale left to the data met no data when Streamlit first drew it ("Infinite extent").
    spec = views.sparkline_spec(values)
    assert [p["score"] for p in spec["data"]["values"]] == points
    y = spec["encoding"]["y"]["scale"]["domain"]
    assert y == pytest.approx(list(domain))
    x = spec["encoding"]["x"]["scale"]["domain"]
    assert all(math.isfinite(v) for v in [*x, *y]) and x[0] < x[1] and y[0] < y[1]


def make_jump(metric: str, day: int, *suspects: Suspect) -> Jump:
    return Jump(metric, f"r{day}", f"r{day - 1}", datetime(2026, 1, day), 0.5, 0.7, 0.2, 0.05, 0.01,
                suspects or (Suspect("none", "no recorded change at this run", "re-judge both runs"),))


def test_recent_jumps_keep_the_latest_per_metric_newest_first() -> None:
    jumps = [make_jump("faithfulness", 3), make_jump("faithfulness", 9), make_jump("context_recall", 5)]
    recent, earlier = views.recent_jumps(jumps)
    assert [(j.metric, j.run_id) for j in recent] == [("faithfulness", "r9"), ("context_recall", "r5")]
    assert [(j.metric, j.run_id) for j in earlier] == [("faithfulness", "r3")]


def test_suspect_actions_link_every_suspect_to_the_compare_split() -> None:
    # a one-run ablation is never a jump's test, even when a suspect names a field to blank
    jump = make_jump("faithfulness", 4,
                     Suspect("prompt", "faithfulness prompt a -> b", "split faithfulness's jump", "ground_truth"),
                     Suspect("pipeline", "pipeline retriever.top_k: 3 -> 5", "split faithfulness's jump"))
    first, second = views.suspect_actions(jump)
    split = {"run": "r4", "run_b": "r3", "metric": "faithfulness", "split": "1"}
    assert (first.page, first.params) == (views.PAGE_COMPARE, split)
    assert (second.page, second.params) == (views.PAGE_COMPARE, split)


def test_unattributed_flags_scores_missing_any_part_of_the_instrument() -> None:
    h = history_frame({"faithfulness": [0.5, 0.6, 0.7]})
    h.loc[1, "judge_model"] = None
    h.loc[2, "binding"] = None
    assert list(views.unattributed(h)["run_id"]) == ["r1", "r2"]
    assert views.unattributed(h.iloc[:1]).empty


def test_lint_findings_mark_templates_still_in_use() -> None:
    lint = pd.DataFrame({"metric": ["faithfulness", "faithfulness", "context_recall"], "prompt_hash": ["a", "b", "c"],
                         "reads": ["", "", ""], "findings": ["reads ground_truth", "", "reads answer"],
                         "runs": [3, 4, 5], "last_run": ["r2", "r9", "r9"], "bindings": ["", "", ""]})
    found = views.lint_findings(lint, "r9")
    assert list(found["prompt_hash"]) == ["c", "a"]
    assert list(found["in_latest_run"]) == [True, False]


def test_in_range_and_day_bounds_include_both_days_whole() -> None:
    frame = pd.DataFrame({"started_at": pd.to_datetime(["2026-01-01 02:00", "2026-01-02 23:59", "2026-01-03 00:01"])})
    since, until = views.day_bounds(date(2026, 1, 1), date(2026, 1, 2))
    assert len(views.in_range(frame, since, until)) == 2
    assert len(views.in_range(frame, None, None)) == 3


def verdicts(*items: tuple[str, bool, str]) -> str:
    return json.dumps([{"item": i, "label": lab, "verdict": "supported" if lab else "unsupported", "evidence": ev}
                       for i, lab, ev in items])


SAMPLES = pd.DataFrame({
    "sample_id": ["s1", "s2", "s3"],
    "question": ["How long are backups kept?", "When do exports run?", "What does it cost?"],
    "answer": ["Backups are kept 30 days. They are encrypted.", "Exports run at 02:00.", ""],
    "contexts": [["Backups are kept 30 days."], ["Unrelated passage."], []],
    "ground_truth": ["Backups are kept 30 days and encrypted.", "Exports run at 02:00.", "It costs 5 dollars."],
})
SCORES = pd.DataFrame([
    {"metric": "faithfulness", "sample_id": "s1", "status": "ok", "score": 0.5, "reason": "",
     "verdicts": verdicts(("Backups are kept 30 days.", True, "Backups are kept 30 days."),
                          ("They are encrypted.", False, ""))},
    {"metric": "faithfulness", "sample_id": "s2", "status": "ok", "score": 1.0, "reason": "",
     "verdicts": verdicts(("Exports run at 02:00.", True, "Exports run at 02:00."))},
    {"metric": "faithfulness", "sample_id": "s3", "status": "excluded", "score": None,
     "reason": "no claims to judge: answer is empty", "verdicts": "[]"},
    {"metric": "context_recall", "sample_id": "s1", "status": "ok", "score": 1.0, "reason": "", "verdicts": "[]"},
])
PROVENANCE = pd.DataFrame({
    "run_id": ["r", "r"], "sample_id": ["s1", "s2"], "item": ["Backups are kept 30 days.", "Exports run at 02:00."],
    "evidence": ["Backups are kept 30 days.", "Exports run at 02:00."], "location": ["contexts", "ground_truth"],
    "match": ["exact", "exact"],
})


def test_sample_table_counts_verdicts_and_evidence_locations_per_sample() -> None:
    t = views.sample_table(SAMPLES, SCORES, PROVENANCE, "faithfulness").set_index("sample_id")
    assert t.loc["s1", "faithfulness"] == 0.5 and t.loc["s1", "context_recall"] == 1.0
    assert pd.isna(t.loc["s2", "context_recall"])
    assert (t.loc["s1", "items"], t.loc["s1", "supported"], t.loc["s1", "unsupported"]) == (2, 1, 1)
    assert (t.loc["s2", "in_contexts"], t.loc["s2", "in_ground_truth"]) == (0, 1)
    assert t.loc["s3", "status"] == "excluded" and t.loc["s3", "items"] == 0
    assert t.loc["s1", "passages"] == ("Backups are kept 30 days.",)


@pytest.mark.parametrize(("kwargs", "expected"), [
    ({}, ["s1", "s2", "s3"]),
    ({"search": "EXPORTS"}, ["s2"]),
    ({"search": "5 dollars"}, ["s3"]),                # found in ground_truth
    ({"score_range": (0.9, 1.0)}, ["s2"]),            # an unscored sample passes only the full range
    ({"verdict": "unsupported"}, ["s1"]),
    ({"location": "ground_truth"}, ["s2"]),
    ({"location": "contexts", "verdict": "supported"}, ["s1"]),
    ({"search": "backups", "location": "ground_truth"}, []),
])
def test_filter_samples(kwargs: dict[str, object], expected: list[str]) -> None:
    t = views.sample_table(SAMPLES, SCORES, PROVENANCE, "faithfulness")
    assert list(views.filter_samples(t, "faithfulness", **kwargs)["sample_id"]) == expected  # type: ignore[arg-type]


def test_verdict_records_mark_where_positive_evidence_was_found() -> None:
    records = views.verdict_records(SCORES, PROVENANCE, "faithfulness", "s1")
    assert records[["n", "verdict", "location"]].to_dict("records") == [
        {"n": 1, "verdict": "supported", "location": "contexts"},
        {"n": 2, "verdict": "unsupported", "location": ""},
    ]
    assert views.verdict_records(SCORES, PROVENANCE, "faithfulness", "nope").empty
    assert views.sample_status(SCORES, "faithfulness", "s3") == {
        "status": "excluded", "score": None, "reason": "no claims to judge: answer is empty"}


def test_evidence_summary_calls_evidence_in_a_forbidden_artifact_a_leak() -> None:
    s = views.evidence_summary(PROVENANCE, "faithfulness")
    assert s.positive == 2 and s.counts == {"contexts": 1, "ground_truth": 1, "question": 0, "nowhere": 0}
    assert s.forbidden == {"ground_truth": 1} and s.leak
    assert "must never receive ground_truth" in s.sentence
    assert not views.evidence_summary(PROVENANCE.iloc[:1], "faithfulness").leak


def test_paired_deltas_pair_samples_scored_in_both_runs_largest_first() -> None:
    base = pd.DataFrame({"metric": "faithfulness", "sample_id": ["a", "b", "c", "d"],
                         "status": ["ok", "ok", "ok", "failed"], "score": [0.5, 1.0, 0.2, None]})
    run = pd.DataFrame({"metric": "faithfulness", "sample_id": ["a", "b", "c", "d"],
                        "status": ["ok", "ok", "excluded", "ok"], "score": [0.75, 0.5, None, 1.0]})
    d = views.paired_deltas(base, run, "faithfulness")
    assert d.to_dict("records") == [{"sample_id": "b", "baseline": 1.0, "run": 0.5, "delta": -0.5},
                                    {"sample_id": "a", "baseline": 0.5, "run": 0.75, "delta": 0.25}]
    assert views.paired_summary(d).mean == pytest.approx(-0.125)


def test_flips_align_items_by_text_and_count_each_direction() -> None:
    base = pd.DataFrame({"metric": "faithfulness", "sample_id": ["s1", "s2"],
                         "verdicts": [verdicts(("A.", False, ""), ("B.", True, "B."), ("C.", True, "C.")),
                                      verdicts(("D.", False, ""))]})
    run = pd.DataFrame({"metric": "faithfulness", "sample_id": ["s1", "s2"],
                        "verdicts": [verdicts(("A.", True, "A (ref)."), ("B.", False, ""), ("C.", True, "C.")),
                                     verdicts(("E.", True, "E."))]})   # s2's answer changed: nothing aligns
    aligned = views.aligned_verdicts(base, run, "faithfulness")
    assert list(aligned["item"]) == ["A.", "B.", "C."]
    flipped = views.flipped_verdicts(aligned)
    assert flipped[["item", "direction", "evidence_run"]].to_dict("records") == [
        {"item": "A.", "direction": "to positive", "evidence_run": "A (ref)."},
        {"item": "B.", "direction": "to negative", "evidence_run": ""}]
    f = views.flip_summary(aligned)
    assert (f.to_positive, f.to_negative, f.unchanged) == (1, 1, 1)


def test_metric_sides_and_config_rows_show_both_runs() -> None:
    cols = ["metric", "score", "n", "n_failed", "n_excluded", "judge_model", "prompt_hash", "binding", "fingerprint"]
    a = pd.DataFrame([["faithfulness", 0.78, 10, 0, 0, "m1", "h1", "projected", None]], columns=cols)
    b = pd.DataFrame([["faithfulness", 0.94, 10, 0, 0, "m1", "h2", "replay", None],
                      ["context_recall", 0.8, 10, 0, 0, "m1", "h3", "projected", None]], columns=cols)
    sides = views.metric_sides(a, b).set_index("metric")
    assert list(sides.index) == ["faithfulness", "context_recall"]
    assert sides.loc["faithfulness", "delta"] == pytest.approx(0.16)
    assert sides.loc["faithfulness", "prompt_hash"] == "h1 -> h2" and sides.loc["faithfulness", "judge_model"] == "m1"
    assert pd.isna(sides.loc["context_recall", "baseline"])
    rows = views.config_rows({"retriever.top_k": (3, 5), "generator.model": ("a", None)})
    assert rows.to_dict("records") == [{"key": "retriever.top_k", "baseline": "3", "run": "5"},
                                       {"key": "generator.model", "baseline": "a", "run": "(absent)"}]


def test_change_rows_and_previous_in() -> None:
    changes = RunChanges("r2", "r1", judge_models={"faithfulness": ("v1", "v2")},
                         bindings={"faithfulness": ("projected", "replay")}, pipeline={"retriever.top_k": (3, 5)})
    assert views.change_rows(changes)[["kind", "what"]].values.tolist() == [
        ["judge model", "faithfulness"], ["binding", "faithfulness"], ["pipeline", "retriever.top_k"]]
    assert views.previous_in(["r1", "r2", "r3"], "r3") == "r2"
    assert views.previous_in(["r1", "r2"], "r1") is None
    assert views.previous_in(["r1"], "zz") is None


def test_history_summary_run_labels_and_run_days() -> None:
    h = history_frame({"faithfulness": [0.5, 0.6], "context_recall": [0.7, 0.8]})
    s = views.history_summary(h)
    assert (s.n_runs, s.latest_run, s.latest_at) == (2, "r1", datetime(2026, 1, 2))
    assert views.history_summary(h.iloc[:0]).n_runs == 0
    assert views.run_days(h) == [date(2026, 1, 1), date(2026, 1, 2)]
    runs = pd.DataFrame({"run_id": ["r0", "r1"], "started_at": [datetime(2026, 1, 1, 2, 5), datetime(2026, 1, 2)],
                         "label": ["", "harness refactor"]})
    assert views.run_labels(runs) == {"r0": "r0   (2026-01-01 02:05)",
                                      "r1": "r1   (2026-01-02 00:00  harness refactor)"}


def test_lint_summary_counts_templates_in_use_and_events_for_keeps_pipeline_changes() -> None:
    lint = pd.DataFrame({"metric": ["faithfulness", "faithfulness"], "prompt_hash": ["a", "b"], "reads": ["", ""],
                         "findings": ["reads ground_truth", ""], "runs": [3, 4], "last_run": ["r9", "r9"],
                         "bindings": ["", ""]})
    s = views.lint_summary(lint, "r9")
    assert (s.total, len(s.findings), s.in_latest) == (2, 1, 1)
    events = pd.DataFrame({"run_id": ["r1", "r2", "r3"], "started_at": pd.to_datetime(["2026-01-01"] * 3),
                           "kind": ["prompt", "pipeline", "judge model"], "metric": ["faithfulness", None,
                                                                                    "context_recall"],
                           "text": ["", "", ""]})
    assert list(views.events_for(events, ["faithfulness"])["run_id"]) == ["r1", "r2"]
