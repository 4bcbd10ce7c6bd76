"""The harness: verdict parsing, excluded and failed samples, aggregation, and wiring on the demo set."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from lib.core.calls import JudgeReply, JudgeRequest, Usage
from lib.core.errors import JudgeError
from lib.core.metrics import METRICS, sample_score
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED, REPLAY
from lib.core.results import EXCLUDED, FAILED, OK, SampleResult, Verdict, aggregate
from lib.core.samples import EvalSample, blank
from lib.jobs._demo import LEAKY_FAITHFULNESS, demo_samples
from lib.judging import MemoryCache, OfflineJudge
from lib.judging.harness import Instrument, parse_verdicts, score_sample, score_samples

LABELS = ("supported", "unsupported")
ITEMS = ["Backups are kept for 30 days.", "Exports run nightly."]

SAMPLE = EvalSample(
    sample_id="s-1",
    question="How long are backups kept?",
    answer="Backups are kept for 30 days. Exports run nightly.",
    contexts=("Backups are kept for 30 days.",),
    ground_truth="Backups are kept for 30 days.",
)
FAITHFULNESS = Instrument("faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)


def reply_json(*verdicts: str) -> str:
    return json.dumps({"verdicts": [{"item": i, "verdict": v, "evidence": ""}
                                    for i, v in enumerate(verdicts, start=1)]})


class ScriptedJudge:
    """A judge whose replies come from a function of the call number; counts its calls."""

    concurrency = 1

    def __init__(self, answer: Callable[[int], str], *, cacheable: bool = True) -> None:
        self.model = "scripted"
        self.cacheable = cacheable
        self.calls = 0
        self._answer = answer

    def complete(self, request: JudgeRequest) -> JudgeReply:
        self.calls += 1
        self.requests = [*getattr(self, "requests", []), request]
        return JudgeReply(self._answer(self.calls), Usage(10, 2))


class DeterministicJudge(ScriptedJudge):
    """A model at temperature 0: the same request gets the same reply; a reply is unreadable until the request
    carries a repair message (the issue's judge, which wrote "item": "ITEM one" to the same prompt 45 times)."""

    def __init__(self) -> None:
        super().__init__(lambda n: "")

    def complete(self, request: JudgeRequest) -> JudgeReply:
        self.calls += 1
        self.requests = [*getattr(self, "requests", []), request]
        if request.messages[-1].role == "user" and request.messages[-1].content.startswith("Your reply could not"):
            return JudgeReply(reply_json("supported", "unsupported"), Usage(10, 2))
        return JudgeReply(json.dumps({"verdicts": [{"item": "ITEM one", "verdict": "supported"}]}), Usage(10, 2))


# -- parse_verdicts ----------------------------------------------------------------

def test_parse_verdicts_reads_one_verdict_per_item_in_order() -> None:
    text = json.dumps({"verdicts": [{"item": 1, "verdict": "supported", "evidence": "Backups are kept."},
                                    {"item": 2, "verdict": "Unsupported "}]})
    assert parse_verdicts(text, ITEMS, LABELS) == (
        Verdict(ITEMS[0], True, "supported", "Backups are kept."),
        Verdict(ITEMS[1], False, "unsupported", ""),
    )


def numbered(*pairs: tuple[int, str]) -> str:
    return json.dumps({"verdicts": [{"item": i, "verdict": word, "evidence": ""} for i, word in pairs]})


def test_parse_verdicts_maps_verdicts_by_item_number_not_by_position() -> None:
    items = ["passage one", "passage two", "passage three"]
    text = numbered((3, "irrelevant"), (2, "irrelevant"), (1, "relevant"))
    parsed = parse_verdicts(text, items, ("relevant", "irrelevant"))
    assert [(p.item, p.label) for p in parsed] == [("passage one", True), ("passage two", False),
                                                  ("passage three", False)]
    # context precision over those verdicts: only the top-ranked passage is relevant, so 1.0 (not 0.333)
    assert sample_score(METRICS["context_precision"], [p.label for p in parsed]) == 1.0


@pytest.mark.parametrize(("pairs", "reason"), [
    (((1, "supported"), (1, "supported")), "item 1 twice"),
    (((1, "supported"), (9, "supported")), "item 9, which is not one of the 2 items"),
    (((0, "supported"), (1, "supported")), "item 0, which is not one of the 2 items"),
    (((1, "supported"), (None, "supported")), "a verdict without an item number"),
])
def test_parse_verdicts_refuses_duplicate_missing_or_impossible_item_numbers(pairs, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_verdicts(numbered(*pairs), ITEMS, LABELS)


def test_a_reply_with_impossible_item_numbers_fails_the_sample_with_the_reason() -> None:
    judge = ScriptedJudge(lambda n: numbered((1, "supported"), (1, "supported")))
    result = score_sample(SAMPLE, FAITHFULNESS, judge)
    assert result.status == FAILED and result.score is None
    assert "item 1 twice" in result.reason


def test_parse_verdicts_accepts_a_json_code_fence() -> None:
    fenced = "```json\n" + reply_json("supported", "supported") + "\n```"
    assert [v.label for v in parse_verdicts(fenced, ITEMS, LABELS)] == [True, True]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (reply_json("supported"), "1 verdicts for 2 items"),
        (reply_json("supported", "supported", "supported"), "3 verdicts for 2 items"),
        (reply_json("supported", "maybe"), "verdict 2 is 'maybe'"),
        ("Sure! Both claims are supported.", "not JSON"),
        ('{"verdicts": [{"item": 1, "verdict": "supported"}', "not JSON"),
        ('{"labels": ["supported", "supported"]}', "bad shape"),
    ],
)
def test_parse_verdicts_says_why_a_reply_cannot_be_read(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_verdicts(text, ITEMS, LABELS)


# -- one sample: ok, excluded, failed -------------------------------------------------

def test_a_sample_scores_supported_over_claims() -> None:
    # the passage states the first of two claims: 1/2
    result = score_sample(SAMPLE, FAITHFULNESS, OfflineJudge())
    assert result.status == OK
    assert result.score == pytest.approx(1 / 2)
    assert [(v.item, v.label) for v in result.verdicts] == [(ITEMS[0], True), (ITEMS[1], False)]
    assert result.verdicts[0].evidence == "Backups are kept for 30 days."
    assert result.calls == 1


@pytest.mark.parametrize(
    ("metric", "emptied", "reason"),
    [
        ("faithfulness", "answer", "no claims to judge: answer is empty"),
        ("answer_relevance", "answer", "no claims to judge: answer is empty"),
        ("answer_correctness", "answer", "no claims to judge: answer is empty"),
        ("context_precision", "contexts",
         "no passages: context_precision is judged over or against contexts, and this sample has none"),
        ("context_recall", "ground_truth", "no statements to judge: ground_truth is empty"),
    ],
)
def test_a_sample_with_nothing_to_judge_is_excluded_with_a_reason_not_scored(
        metric: str, emptied: str, reason: str) -> None:
    judge = ScriptedJudge(lambda n: reply_json("supported"))
    result = score_sample(blank(SAMPLE, [emptied]), Instrument(metric, DEFAULT_TEMPLATES[metric], PROJECTED), judge)
    assert result.status == EXCLUDED
    assert result.score is None
    assert result.reason == reason
    assert judge.calls == 0


def test_an_excluded_sample_is_counted_in_the_aggregate_but_not_averaged() -> None:
    # SAMPLE scores 1/2 (one of its two claims is in the passage); its empty-answer twin is excluded
    results = score_samples([SAMPLE, blank(SAMPLE, ["answer"])], FAITHFULNESS, OfflineJudge())
    agg = aggregate(results)
    assert agg.score == pytest.approx(1 / 2)
    assert (agg.n, agg.n_failed, agg.n_excluded) == (1, 0, 1)


def test_whitespace_only_passages_count_as_no_passages() -> None:
    sample = EvalSample("s-2", "How long are backups kept?", "Backups are kept.", ("  ", "\n"), "Kept.")
    inst = Instrument("context_precision", DEFAULT_TEMPLATES["context_precision"], PROJECTED)
    assert score_sample(sample, inst, OfflineJudge()).status == EXCLUDED


def test_a_judge_that_always_returns_malformed_json_fails_the_sample_with_its_reason() -> None:
    judge = ScriptedJudge(lambda n: "Sure! Both claims are supported.")
    result = score_sample(SAMPLE, FAITHFULNESS, judge, parse_attempts=3)
    assert result.status == FAILED
    assert result.score is None
    assert result.verdicts == ()
    assert "not JSON" in result.reason and "after 3 attempts" in result.reason
    assert result.raw == "Sure! Both claims are supported."
    assert judge.calls == result.calls == 3
    assert result.usage == Usage(30, 6)


def test_a_malformed_reply_is_retried_and_a_readable_one_scores() -> None:
    judge = ScriptedJudge(lambda n: "not json" if n == 1 else reply_json("supported", "unsupported"))
    result = score_sample(SAMPLE, FAITHFULNESS, judge, parse_attempts=3)
    assert (result.status, result.score, result.calls) == (OK, 0.5, 2)


def test_an_unreadable_reply_is_asked_again_only_with_a_repair_message_naming_the_error() -> None:
    judge = DeterministicJudge()
    result = score_sample(SAMPLE, FAITHFULNESS, judge)
    assert (result.status, result.score, result.calls) == (OK, 0.5, 2)
    first, second = judge.requests
    assert second.key != first.key and second.messages[:len(first.messages)] == first.messages
    assert second.messages[-2].role == "assistant" and "ITEM one" in second.messages[-2].content
    assert "verdicts[0].item is 'ITEM one'" in second.messages[-1].content   # the error, named
    assert "exactly 2 verdicts" in second.messages[-1].content


def test_a_failure_is_kept_for_the_job_so_an_identical_request_is_not_sent_again() -> None:
    """The issue's joint arm re-asked the failed prompts of the ground_truth arm: same prompt, same seed."""
    from lib.judging.harness import Repairs
    from lib.judging.known import KnownCache

    judge = DeterministicJudge()
    cache = KnownCache(MemoryCache(), [], repairs=Repairs(10))
    results = [score_sample(SAMPLE, FAITHFULNESS, judge, cache=cache) for _ in range(3)]
    assert [r.status for r in results] == [OK] * 3
    assert judge.calls == 2                                 # the unreadable reply once, its repair once
    assert [r.calls for r in results] == [2, 0, 0] and results[1].cached


def test_repairs_stop_at_the_jobs_allowance_and_the_sample_fails_with_what_the_judge_wrote() -> None:
    from lib.judging.harness import Repairs, repair_allowance

    judge = ScriptedJudge(lambda n: '{"verdicts": [{"item": "first", "verdict": "supported"}]}')
    samples = [EvalSample(f"s-{i}", "q", f"Claim {i} holds. Claim {i} ends.", ("Claim holds.",), "r")
               for i in range(10)]
    results = score_samples(samples, FAITHFULNESS, judge, cache=MemoryCache())
    assert repair_allowance(10) == 2
    assert judge.calls == 10 + 2 and {r.status for r in results} == {FAILED}
    spent = [r for r in results if "repairs are spent" in r.reason]
    assert len(spent) == 8 and all("verdicts[0].item is 'first'" in r.reason for r in results)
    assert all(r.raw.startswith('{"verdicts"') for r in results)   # the reply is kept with the failure
    assert Repairs(0).take() is False


def test_a_judge_call_that_fails_for_good_fails_the_sample() -> None:
    class Refusing(ScriptedJudge):
        def complete(self, request: JudgeRequest) -> JudgeReply:
            raise JudgeError("rate limited (429), after 4 attempts", retryable=True)

    result = score_sample(SAMPLE, FAITHFULNESS, Refusing(lambda n: ""))
    assert result.status == FAILED
    assert result.score is None
    assert result.reason == "judge call failed: rate limited (429), after 4 attempts"


def test_a_cache_answers_an_identical_request_and_never_keeps_an_unreadable_reply() -> None:
    cache = MemoryCache()
    bad = ScriptedJudge(lambda n: "not json")
    assert score_sample(SAMPLE, FAITHFULNESS, bad, cache=cache, parse_attempts=2).status == FAILED
    assert len(cache) == 0                                   # the store's cache keeps valid replies only
    good = ScriptedJudge(lambda n: reply_json("supported", "unsupported"))
    first = score_sample(SAMPLE, FAITHFULNESS, good, cache=cache)
    second = score_sample(SAMPLE, FAITHFULNESS, good, cache=cache)
    assert good.calls == 1
    assert (first.cached, second.cached, second.calls, second.usage) == (False, True, 0, Usage())
    assert second.verdicts == first.verdicts
    # another seed is another request
    score_sample(SAMPLE, FAITHFULNESS, good, cache=cache, seed=1)
    assert good.calls == 2


def test_a_judge_not_worth_caching_is_always_called() -> None:
    cache = MemoryCache()
    judge = ScriptedJudge(lambda n: reply_json("supported", "unsupported"), cacheable=False)
    score_sample(SAMPLE, FAITHFULNESS, judge, cache=cache)
    score_sample(SAMPLE, FAITHFULNESS, judge, cache=cache)
    assert (judge.calls, len(cache)) == (2, 0)


# -- aggregate ------------------------------------------------------------------------

def test_aggregate_averages_scored_samples_and_counts_the_others() -> None:
    results = [
        SampleResult("a", OK, 1.0, usage=Usage(5, 1)),
        SampleResult("b", OK, 0.5, usage=Usage(7, 1)),
        SampleResult("c", FAILED, reason="judge reply is not JSON", usage=Usage(9, 3)),
        SampleResult("d", EXCLUDED, reason="no claims to judge: answer is empty"),
    ]
    agg = aggregate(results)
    assert agg.score == pytest.approx((1.0 + 0.5) / 2)
    assert (agg.n, agg.n_failed, agg.n_excluded) == (2, 1, 1)
    assert agg.usage == Usage(21, 5)


def test_aggregate_of_nothing_scored_has_no_score() -> None:
    agg = aggregate([SampleResult("a", EXCLUDED, reason="empty"), SampleResult("b", FAILED, reason="x")])
    assert agg.score is None
    assert (agg.n, agg.n_failed, agg.n_excluded) == (0, 1, 1)


def test_score_samples_keeps_sample_order_and_reports_progress_per_sample() -> None:
    samples = [EvalSample(f"s-{i}", "q", f"Claim number {i}." if i % 3 else "", ("Claim number 1.",), "r")
               for i in range(12)]
    seen: list[str] = []
    results = score_samples(samples, FAITHFULNESS, OfflineJudge(), concurrency=4, progress=lambda r: seen.append(
        r.sample_id))
    assert [r.sample_id for r in results] == [s.sample_id for s in samples]
    assert sorted(seen) == sorted(s.sample_id for s in samples)
    assert [r.status for r in results[:4]] == [EXCLUDED, OK, OK, EXCLUDED]
    assert results[1].score == 1.0 and results[2].score == 0.0


# -- wiring on the demo set ------------------------------------------------------------

@pytest.fixture(scope="module")
def demo_set() -> list[EvalSample]:
    main, _ = demo_samples()
    return [d.sample for d in main]


def _scores(samples: list[EvalSample], inst: Instrument) -> list[float | None]:
    return [r.score for r in score_samples(samples, inst, OfflineJudge(noise=0.0))]


def _mean(results: list[SampleResult]) -> float:
    agg = aggregate(results)
    assert agg.score is not None
    return agg.score


NEVER = [(m, f) for m, spec in sorted(METRICS.items()) for f in sorted(spec.never)]


@pytest.mark.parametrize(("metric", "field"), NEVER)
def test_projected_metric_is_invariant_to_blanking_a_field_it_must_never_receive(
        demo_set: list[EvalSample], metric: str, field: str) -> None:
    samples = demo_set[:60]
    inst = Instrument(metric, DEFAULT_TEMPLATES[metric], PROJECTED)
    before = score_samples(samples, inst, OfflineJudge(noise=0.0))
    after = score_samples([blank(s, [field]) for s in samples], inst, OfflineJudge(noise=0.0))
    assert [(r.status, r.score, r.verdicts) for r in after] == [(r.status, r.score, r.verdicts) for r in before]


@pytest.mark.parametrize("metric", sorted(METRICS))
def test_projected_metric_moves_when_the_artifact_it_judges_against_is_blanked(
        demo_set: list[EvalSample], metric: str) -> None:
    # the control that keeps the invariance test honest: the judge does read what the metric receives
    samples = demo_set[:60]
    inst = Instrument(metric, DEFAULT_TEMPLATES[metric], PROJECTED)
    against = METRICS[metric].against
    before = _mean(score_samples(samples, inst, OfflineJudge()))
    # blanked on purpose, as an ablation does: not screened as a degenerate input
    after = _mean(score_samples([blank(s, [against]) for s in samples], inst, OfflineJudge(), screen=False))
    assert before - after > 0.5


def test_leaky_faithfulness_drops_when_ground_truth_is_blanked(demo_set: list[EvalSample]) -> None:
    samples = demo_set[:150]
    leaky = Instrument("faithfulness", LEAKY_FAITHFULNESS, REPLAY)
    judge = OfflineJudge(noise=0.0)
    with_reference = _mean(score_samples(samples, leaky, judge))
    without_reference = _mean(score_samples([blank(s, ["ground_truth"]) for s in samples], leaky, judge))
    assert with_reference - without_reference > 0.1


def test_faithfulness_without_contexts_falls_to_zero_when_wired_right_and_stays_high_when_leaky(
        demo_set: list[EvalSample]) -> None:
    samples = demo_set[:150]
    no_contexts = [blank(s, ["contexts"]) for s in samples]
    judge = OfflineJudge(noise=0.0)
    correct = _mean(score_samples(no_contexts, FAITHFULNESS, judge, screen=False))   # blanked, as an ablation does
    leaky = _mean(score_samples(no_contexts, Instrument("faithfulness", LEAKY_FAITHFULNESS, REPLAY), judge,
                                screen=False))
    correctness = _mean(score_samples(
        samples, Instrument("answer_correctness", DEFAULT_TEMPLATES["answer_correctness"], PROJECTED), judge))
    assert correct < 0.05
    # with nothing to check against but the reference, the leaky judge measures answer correctness
    assert abs(leaky - correctness) < 0.1
    assert leaky > 0.5
