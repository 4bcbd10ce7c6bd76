"""The demo ships people's labels: agreement on the timeline, in the Overview's incidents and the Review, from
first start."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lib.core.labels import content_key, label_items
from lib.core.records import MAIN
from lib.diagnosis import incidents
from lib.diagnosis.agreement import segments_frame, trend_agreement
from lib.diagnosis.agreement._agreement import labelled_pairs
from lib.diagnosis.trends import segments
from lib.jobs._demo import LABELLER, N_LABELLED
from lib.presentation.review import review, review_markdown
from lib.store import Store
from tests.test_pages_core import ROOT, TIMEOUT, _store_closed_after, open_page, texts  # noqa: F401 (a fixture)

JUDGE_CHANGE, LEAK, FIX = "nightly-20260921", "nightly-20261003", "nightly-20261117"


@pytest.fixture(scope="module")
def store(demo_db: Path):
    with Store(demo_db) as s:
        yield s


def test_the_demo_ships_labels_of_every_claim_of_its_labelled_samples(store: Store) -> None:
    labels = store.labels(MAIN, metric="faithfulness")
    assert labels["sample_id"].nunique() == N_LABELLED and set(labels["labeller"]) == {LABELLER}
    assert labels["item"].notna().all() and set(labels["value"]) == {0.0, 1.0}
    assert store.calibration_version(MAIN) == len(store.label_history(MAIN))


def test_each_segment_and_change_carries_agreement_and_the_leak_shows_as_bias(store: Store) -> None:
    segs, changes = trend_agreement(store, store.metric_history())
    faith = [s for s in segs if s.segment.metric == "faithfulness"]
    assert [s.segment.first_run for s in faith][1:] == [JUDGE_CHANGE, LEAK, "nightly-20261018", FIX]
    assert all(s.agreement.n_samples == N_LABELLED for s in faith)
    before, leaky, instructed, fixed = faith[1].agreement, faith[2].agreement, faith[3].agreement, faith[4].agreement
    # The reference shown to the judge: it agrees with people less, and is more generous than they are.
    assert leaky.accuracy.high < before.accuracy.low and leaky.bias.low > before.bias.high + 0.05
    assert instructed.bias.low > 0.05                 # "ignore the reference" did not stop it
    assert fixed.accuracy.low > leaky.accuracy.high and abs(fixed.bias.value) < 0.03
    by_run = {c.run_id: c for c in changes if c.metric == "faithfulness"}
    assert by_run[JUDGE_CHANGE].change == "judge model offline-lexical-v1 -> offline-lexical-v2"
    leak = by_run[LEAK].sentence
    assert f"on {N_LABELLED} labelled samples" in leak and "bias (judge - people)" in leak
    assert "binding projected -> replay" in by_run[LEAK].change


def test_each_agreement_is_on_the_very_segment_the_trends_page_shades(store: Store) -> None:
    """A segment's agreement holds the Segment itself (lib.diagnosis.trends), not a copy of its fields that could
    drift: same runs, same dates, same instrument, in the same order."""
    history = store.metric_history()
    segs, _ = trend_agreement(store, history)
    labelled = {s.segment.metric for s in segs}
    assert "faithfulness" in labelled
    for metric in labelled:
        assert [s.segment for s in segs if s.segment.metric == metric] == [
            s for s in segments(history) if s.metric == metric]
    assert all(s.agreement.metric == s.segment.metric for s in segs)


def test_the_instrument_change_incident_and_the_review_say_both_agreements(store: Store) -> None:
    found, _ = incidents.load(store)
    leak = next(i for i in found if i.metric == "faithfulness" and i.run_id == LEAK and i.kind == "episode")
    assert any("agreement with people" in line and "->" in line for line in leak.evidence)
    assert [line[:10] for line in leak.agreement] == ["2026-10-03", "2026-10-18", "2026-11-17"]   # in, and out
    text = review_markdown(review(store, date(2026, 9, 19), date(2026, 9, 25)))
    assert "## Is the judge right?" in text and "offline-lexical-v1 -> offline-lexical-v2" in text
    assert "agreement with people on 150 labelled samples" in text


def test_the_readme_worked_example_is_what_the_demo_gives(store: Store) -> None:
    readme = (Path(__file__).resolve().parent.parent / "lib" / "diagnosis" / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Is the judge right?")[1].split("\n## ")[0]
    table = section.split("| segment (faithfulness) |")[1].split("\n\n")[0].splitlines()[2:]
    documented = [(row.split("|")[2].strip(), row.split("|")[4].strip().split(" [")[0]) for row in table]
    segs, _ = trend_agreement(store, store.metric_history())
    frame = segments_frame([s for s in segs if s.segment.metric == "faithfulness"])
    assert documented == [(a, b.split(" [")[0]) for a, b in zip(frame["agreement"], frame["bias"], strict=True)]


@pytest.fixture
def app(demo_db: Path, monkeypatch: pytest.MonkeyPatch, _store_closed_after: None) -> AppTest:   # noqa: F811
    monkeypatch.setenv("EVALDRIFT_DB", str(demo_db))
    return AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)


def test_trends_shows_each_segments_agreement_and_the_changes_both_sides(app: AppTest) -> None:
    open_page(app, "pages/trends.py", metric="faithfulness")
    table = next(t for t in app.table if "agreement" in t.value.columns)
    assert list(table.value["agreement"]) == ["0.97 [0.97, 0.97]", "0.97 [0.97, 0.97]", "0.84 [0.81, 0.86]",
                                              "0.81 [0.79, 0.83]", "0.97 [0.97, 0.98]"]
    said = " ".join(texts(app))
    assert "2026-09-21 faithfulness, judge model offline-lexical-v1 -> offline-lexical-v2: agreement" in said
    assert "bias (judge - people) -0.02 -> +0.12" in said


def test_the_leaks_bias_sits_on_the_samples_whose_claims_only_the_reference_supports(store: Store) -> None:
    leak_runs = [r for r in store.run_ids() if LEAK <= r < "nightly-20261018"]
    pairs, _ = labelled_pairs(store, MAIN, "faithfulness", run_ids=leak_runs)
    labels = store.labels(MAIN, metric="faithfulness")
    copies = store.latest_samples(MAIN, sorted(set(labels["sample_id"])), leak_runs[0])
    reference_only = set()
    for r in labels[labels["value"] == 0.0].itertuples(index=False):
        sample = copies[r.sample_id]
        claim = label_items("faithfulness", sample)[int(r.item) - 1]
        if r.content == content_key("faithfulness", sample) and claim in sample.ground_truth:
            reference_only.add(r.sample_id)
    diff = pairs.samples.assign(d=pairs.samples["judge"] - pairs.samples["people"])
    by_kind = diff.groupby(diff["sample_id"].isin(reference_only))["d"].mean()
    assert 40 < len(reference_only) < 150
    assert by_kind[True] > 0.2 and abs(by_kind[False]) < 0.05   # measured: +0.23 and -0.02
