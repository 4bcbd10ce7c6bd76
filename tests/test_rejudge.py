"""Re-judged history (lib.diagnosis.rejudge): the demo's faithfulness re-measured with one trusted instrument.

The recorded faithfulness of the demo mixes five instruments: it leaps at the
leak (10-03), dips at the "ignore the reference" instruction (10-18), shows
only -0.05 at the retriever regression (10-31, masked by the leak) and crashes
at the fix (11-17). Re-judged with the fixed, projected template, the series
must show the regression alone, at its full size, and nothing at the three
instrument changes; the recorded scores must be untouched.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lib.core.errors import InputError, NotFoundError
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED, prompt_hash
from lib.diagnosis import rejudge
from lib.diagnosis.trends._diagnose import split_jump
from lib.jobs._demo import FIXED_FAITHFULNESS, run_plans
from lib.judging import OfflineJudge
from lib.judging.openai_judge import OpenAIJudge
from lib.store import Store
from lib.store import history as hs

PLANS = run_plans()
LEAK, INSTRUCTED, REGRESSION, FIX = (PLANS[i].run_id for i in (30, 45, 58, 75))
BEFORE_LEAK = PLANS[29].run_id
NOISE = 0.03


def offline() -> OfflineJudge:
    return OfflineJudge("offline-lexical-v2", noise=NOISE)


@pytest.fixture(scope="module")
def rejudged(demo_db: Path, rejudged_demo_db: Path) -> Iterator[tuple[Store, rejudge.Series]]:
    """The demo with faithfulness re-judged over all 90 runs by the trusted instrument (conftest)."""
    with Store(demo_db) as original:
        recorded = original.metric_history()
    store = Store(rejudged_demo_db)
    # the demo's own series (its open episode, re-judged when built) and this one, over all 90 runs
    every_run = recorded["run_id"].nunique()
    (series,) = [s for s in rejudge.finished_series(store, "faithfulness") if len(s.frame) == every_run]
    store._recorded_before = recorded  # type: ignore[attr-defined]
    yield store, series
    store.close()


def step_at(series: rejudge.Series, run_id: str) -> float:
    s = series.frame.reset_index(drop=True)
    i = int(s.index[s["run_id"] == run_id][0])
    return float(s.loc[i, "score"] - s.loc[i - 1, "score"])


def test_the_trusted_instrument_is_the_fixed_projected_template(rejudged) -> None:
    store, _ = rejudged
    trusted = rejudge.trusted_instrument(store, "faithfulness")
    assert trusted.template == FIXED_FAITHFULNESS
    assert trusted.binding == PROJECTED
    assert prompt_hash(FIXED_FAITHFULNESS) in trusted.source


def test_rejudged_faithfulness_shows_the_retriever_drop_and_no_instrument_step(rejudged) -> None:
    store, series = rejudged
    assert len(series.frame) == 90
    assert [j.run_id for j in series.jumps] == [REGRESSION]
    drop = step_at(series, REGRESSION)
    assert drop < -series.threshold
    for run in (LEAK, INSTRUCTED, FIX):
        assert abs(step_at(series, run)) <= series.threshold, run
    # Its size is what the 2x2 split of the whole change gives to the outputs (the leak hid most of it: the
    # recorded series showed about -0.05 that day).
    split = split_jump(store, "faithfulness", BEFORE_LEAK, PLANS[-1].run_id, lambda m: offline())
    assert drop == pytest.approx(split.outputs, abs=0.02)
    recorded = store.metric_history(metrics=["faithfulness"]).set_index("run_id")["score"]
    assert recorded[REGRESSION] - recorded[PLANS[57].run_id] > drop + 0.05


def test_the_recorded_scores_are_never_overwritten(rejudged) -> None:
    store, series = rejudged
    before = store._recorded_before  # type: ignore[attr-defined]
    after = store.metric_history()
    assert after[["run_id", "metric", "score", "prompt_hash"]].equals(before[["run_id", "metric", "score",
                                                                                "prompt_hash"]])
    assert (series.frame["prompt_hash"] == prompt_hash(FIXED_FAITHFULNESS)).all()


def test_a_finished_series_is_answered_from_the_store(rejudged) -> None:
    store, series = rejudged
    spec = rejudge.RejudgeSpec.from_dict(hs.series(store, series.series_id)["spec"])  # type: ignore[index]

    class Refuses(OfflineJudge):
        def complete(self, request):
            raise AssertionError("a finished series called the judge")

    frame = rejudge.run_rejudge(store, spec, Refuses("offline-lexical-v2"))
    assert frame is not None and frame["score"].tolist() == series.frame["score"].tolist()
    cost = rejudge.estimate(store, spec, cacheable=False)
    assert (cost.stored, cost.calls) == (36000, 0)
    assert "nothing to call" in cost.sentence


# -- a small history: resume, cost, call cache --------------------------------------------------------
SMALL_RUNS = 4   # the demo's first nightly runs in `small_demo_store` (tests/conftest.py)


def spec_for(store: Store, **kw: object) -> rejudge.RejudgeSpec:
    return rejudge.RejudgeSpec("faithfulness", tuple(store.run_ids()), DEFAULT_TEMPLATES["faithfulness"], **kw)


class Counting(OfflineJudge):
    """The offline judge, counting its calls."""

    def __init__(self) -> None:
        super().__init__("offline-lexical-v2", noise=NOISE)
        self.calls = 0

    def complete(self, request):
        self.calls += 1
        return super().complete(request)


def test_a_stopped_rejudge_resumes_without_redoing_finished_runs(small_demo_store: Store) -> None:
    spec = spec_for(small_demo_store)
    seen: list[tuple[int, int]] = []
    first = Counting()
    assert rejudge.run_rejudge(small_demo_store, spec, first, progress=lambda d, t: seen.append((d, t)),
                               should_stop=lambda: len(seen) >= 2) is None
    assert seen == [(400, 1600), (800, 1600)]
    row = hs.series(small_demo_store, spec.series_id)
    assert (row["status"], row["done"], row["total"]) == ("running", 800, 1600)  # type: ignore[index]
    second = Counting()
    frame = rejudge.run_rejudge(small_demo_store, spec, second)
    assert second.calls == first.calls > 700   # the two runs left, nothing twice
    assert frame is not None and len(frame) == 4
    assert frame["score"].nunique() == 1         # same samples, one instrument: one score, resumed or not
    assert hs.series(small_demo_store, spec.series_id)["status"] == "done"  # type: ignore[index]


def test_the_cost_is_counted_before_launch(small_demo_store: Store, openai_server) -> None:
    spec = spec_for(small_demo_store, judge="judge-model", endpoint=openai_server.base_url)
    offline_cost = rejudge.estimate(small_demo_store, spec_for(small_demo_store), cacheable=False)
    assert (offline_cost.judgings, offline_cost.calls, offline_cost.stored) == (1600, 1600, 0)
    cost = rejudge.estimate(small_demo_store, spec, cacheable=True)
    # The four runs share their samples: one call per distinct request, the rest from the call cache.
    first = small_demo_store.run_ids()[0]
    judged = sum(1 for s in small_demo_store.samples(first) if s.answer)   # an empty answer is excluded
    assert (cost.calls, cost.from_cache) == (judged, 3 * judged)
    assert cost.prompt_tokens > 0 and "prompt tokens" in cost.sentence


def test_a_model_rejudge_goes_through_the_call_cache(small_demo_store: Store, openai_server) -> None:
    spec = spec_for(small_demo_store, judge="judge-model", endpoint=openai_server.base_url)
    predicted = rejudge.estimate(small_demo_store, spec, cacheable=True).calls
    judge = OpenAIJudge("judge-model", base_url=openai_server.base_url, api_key="sk-test", timeout=10.0,
                        concurrency=4)
    frame = rejudge.run_rejudge(small_demo_store, spec, judge)
    assert frame is not None and frame["n"].min() > 390
    assert len(openai_server.requests) == predicted
    assert frame["cached"].sum() == 3 * predicted   # runs 2-4 hold the same samples: answered from the cache
    again = rejudge.RejudgeSpec.from_dict({**spec.to_dict(), "label": "same instrument, new label"})
    assert again.series_id == spec.series_id
    other = rejudge.RejudgeSpec("faithfulness", tuple(small_demo_store.run_ids()[:2]), spec.template,
                                judge="judge-model",
                                endpoint=openai_server.base_url)
    assert other.series_id != spec.series_id
    assert rejudge.estimate(small_demo_store, other, cacheable=True).calls == 0


@pytest.mark.parametrize(("kw", "error", "field"), [
    ({"metric": "fluency"}, InputError, "metric"),
    ({"run_ids": ()}, InputError, "runs"),
    ({"binding": "sideways"}, InputError, "binding"),
    ({"template": "  "}, InputError, "template"),
])
def test_a_bad_spec_is_refused_naming_its_field(kw: dict, error: type, field: str) -> None:
    args = {"metric": "faithfulness", "run_ids": ("r1",), "template": DEFAULT_TEMPLATES["faithfulness"], **kw}
    with pytest.raises(error) as info:
        rejudge.RejudgeSpec(**args)
    assert info.value.field == field


def test_an_unknown_run_is_refused_before_anything_is_written(small_demo_store: Store) -> None:
    spec = rejudge.RejudgeSpec("faithfulness", (small_demo_store.run_ids()[0], "no-such-run"),
                               DEFAULT_TEMPLATES["faithfulness"])
    with pytest.raises(NotFoundError, match="no-such-run"):
        rejudge.run_rejudge(small_demo_store, spec, offline())
    assert hs.series(small_demo_store, spec.series_id) is None
    with pytest.raises(NotFoundError):
        rejudge.runs_between(small_demo_store, small_demo_store.run_ids()[0], "no-such-run")
    ids = small_demo_store.run_ids()
    assert rejudge.runs_between(small_demo_store, ids[2], ids[1]) == tuple(ids[1:3])


@pytest.mark.parametrize(("judge", "endpoint", "setting"), [
    ("offline-lexical-v9", "offline", "EVALDRIFT_JUDGE_MODEL"),     # no such offline judge
    ("gpt-x", "http://127.0.0.1:9/v1", "OPENAI_BASE_URL"),          # not this server's endpoint
])
def test_the_dashboard_builds_a_rejudge_judge_from_the_operators_settings_alone(judge: str, endpoint: str,
                                                                                setting: str) -> None:
    from lib.app.ui_history import judge_for_rejudge
    from lib.core.errors import TrustError

    spec = rejudge.RejudgeSpec("faithfulness", ("r1",), DEFAULT_TEMPLATES["faithfulness"], judge=judge,
                               endpoint=endpoint)
    with pytest.raises(TrustError) as info:
        judge_for_rejudge(spec)
    assert info.value.setting == setting
    ok = rejudge.RejudgeSpec("faithfulness", ("r1",), DEFAULT_TEMPLATES["faithfulness"])
    assert isinstance(judge_for_rejudge(ok), OfflineJudge)
