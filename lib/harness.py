"""Score samples: (metric, template, binding, judge) -> one result per sample.

A sample is `ok` (a score in [0, 1] and its verdict records), `excluded`
(nothing to judge, e.g. an empty answer: a reason, no score) or `failed` (the
judge could not be read after retries: a reason and the raw reply, no score).
Aggregates skip the last two and count them; nothing is ever scored 0 or 1 by
default.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from pydantic import BaseModel, ValidationError

from lib.degenerate import exclusion_reason
from lib.errors import JudgeError
from lib.judges.base import CallCache, Judge, JudgeReply, JudgeRequest, Message, Usage, judge_endpoint
from lib.judges.structured import ReplyShape
from lib.metrics import get_metric, sample_score
from lib.prompts import SYSTEM_MESSAGE, build_prompt
from lib.samples import EvalSample

OK = "ok"
FAILED = "failed"
EXCLUDED = "excluded"
CALL_FAILED = "judge call failed: "   # a failed sample's reason when its call failed after the judge's retries


@dataclass(frozen=True)
class Verdict:
    """One item's verdict record."""

    item: str
    label: bool
    verdict: str
    evidence: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"item": self.item, "label": self.label, "verdict": self.verdict, "evidence": self.evidence}


@dataclass(frozen=True)
class SampleResult:
    """The outcome of judging one sample for one metric."""

    sample_id: str
    status: str
    score: float | None = None
    verdicts: tuple[Verdict, ...] = ()
    reason: str = ""
    raw: str = ""
    usage: Usage = field(default_factory=Usage)
    calls: int = 0
    cached: bool = False
    fingerprint: str | None = None

    def verdicts_json(self) -> str:
        return json.dumps([v.to_dict() for v in self.verdicts], ensure_ascii=False)


@dataclass(frozen=True)
class Aggregate:
    """A metric over a set of sample results."""

    score: float | None
    n: int
    n_failed: int
    n_excluded: int
    usage: Usage = field(default_factory=Usage)


def aggregate(results: Sequence[SampleResult]) -> Aggregate:
    """Mean of the scored samples; failures and exclusions counted, never scored."""
    scores = [r.score for r in results if r.status == OK and r.score is not None]
    usage = Usage()
    for r in results:
        usage = usage + r.usage
    return Aggregate(
        score=math.fsum(scores) / len(scores) if scores else None,
        n=len(scores),
        n_failed=sum(r.status == FAILED for r in results),
        n_excluded=sum(r.status == EXCLUDED for r in results),
        usage=usage,
    )


class _VerdictOut(BaseModel):
    item: int | None = None
    verdict: str
    evidence: str = ""


class _Reply(BaseModel):
    verdicts: list[_VerdictOut]


def _by_item(reply: _Reply, n_items: int) -> list[_VerdictOut]:
    """The reply's verdicts in item order, read by their item numbers (1..n), each exactly once."""
    slots: dict[int, _VerdictOut] = {}
    for v in reply.verdicts:
        if v.item is None:
            raise ValueError("judge returned a verdict without an item number")
        if not 1 <= v.item <= n_items:
            raise ValueError(f"judge returned item {v.item}, which is not one of the {n_items} items")
        if v.item in slots:
            raise ValueError(f"judge returned item {v.item} twice")
        slots[v.item] = v
    return [slots[i] for i in range(1, n_items + 1)]


def parse_verdicts(text: str, items: Sequence[str], labels: tuple[str, str]) -> tuple[Verdict, ...]:
    """Read a judge reply into one Verdict per item, or raise ValueError saying why.

    Verdicts are matched to items by their item numbers, never by their order
    in the reply: a duplicate, missing or out-of-range number is unreadable.
    """
    cleaned = text.strip()
    if cleaned.startswith("```"):
        cleaned = cleaned.strip("`")
        cleaned = cleaned[cleaned.find("{"):] if "{" in cleaned else cleaned
    try:
        reply = _Reply.model_validate_json(cleaned)
    except ValidationError as exc:
        first = exc.errors()[0]
        kind = "not JSON" if first["type"] == "json_invalid" else f"bad shape ({first['msg']})"
        raise ValueError(f"judge reply is {kind}") from None
    if len(reply.verdicts) != len(items):
        raise ValueError(f"judge returned {len(reply.verdicts)} verdicts for {len(items)} items")
    positive, negative = labels
    out = []
    for i, (v, item) in enumerate(zip(_by_item(reply, len(items)), items, strict=True), start=1):
        word = v.verdict.strip().lower()
        if word not in (positive, negative):
            raise ValueError(f"verdict {i} is {v.verdict!r}, expected {positive!r} or {negative!r}")
        out.append(Verdict(item=item, label=word == positive, verdict=word, evidence=v.evidence))
    return tuple(out)


@dataclass(frozen=True)
class Instrument:
    """What produces a score: a metric's template, how it is bound, and the judge."""

    metric: str
    template: str
    binding: str


def score_sample(sample: EvalSample, instrument: Instrument, judge: Judge, *, seed: int | None = 0,
                 cache: CallCache | None = None, parse_attempts: int = 3, screen: bool = True) -> SampleResult:
    """Judge one sample for one metric.

    Args:
        sample: the sample.
        instrument: metric, template and binding.
        judge: the judge.
        seed: the request seed (repeats of a noise band use different seeds).
        cache: a call cache consulted before calling and fed valid replies.
        parse_attempts: calls made when replies cannot be read, before the
            sample is marked failed.
        screen: exclude a degenerate sample (lib.degenerate) before any call.
            An ablation screens the unblanked sample itself and passes False
            for its blanked copies: blanking is the measurement.
    """
    spec = get_metric(instrument.metric)
    excluded = exclusion_reason(sample, instrument.metric) if screen else None
    if excluded:
        return SampleResult(sample.sample_id, EXCLUDED, reason=excluded)
    prompt, items = build_prompt(instrument.template, instrument.metric, sample, instrument.binding)
    if not items:
        return SampleResult(sample.sample_id, EXCLUDED,
                            reason=f"no {spec.item_kind}s to judge: {spec.items_from} is empty")
    request = JudgeRequest(judge.model, (Message("system", SYSTEM_MESSAGE), Message("user", prompt)), 0.0, seed,
                           endpoint=judge_endpoint(judge), shape=ReplyShape(len(items), spec.labels),
                           template=instrument.template)
    use_cache = cache is not None and judge.cacheable
    usage = Usage()
    calls = 0
    raw = ""
    reason = ""
    read_cache = use_cache
    for _ in range(parse_attempts):
        reply: JudgeReply | None = cache.get(request.key) if read_cache else None  # type: ignore[union-attr]
        cached = reply is not None
        if reply is None:
            try:
                reply = judge.complete(request)
            except JudgeError as exc:
                return SampleResult(sample.sample_id, FAILED, reason=CALL_FAILED + exc.reason,
                                    usage=usage, calls=calls + 1)
            calls += 1
            usage = usage + reply.usage
        raw = reply.text
        try:
            verdicts = parse_verdicts(reply.text, items, spec.labels)
        except ValueError as exc:
            reason = str(exc)
            read_cache = False
            continue
        if use_cache and not cached:
            cache.put(request, reply)  # type: ignore[union-attr]
        score = sample_score(spec, [v.label for v in verdicts])
        return SampleResult(sample.sample_id, OK, score, verdicts, raw=raw, usage=usage, calls=calls,
                            cached=cached, fingerprint=reply.fingerprint)
    return SampleResult(sample.sample_id, FAILED, reason=f"{reason} (after {parse_attempts} attempts)",
                        raw=raw[:2000], usage=usage, calls=calls)


def score_samples(samples: Sequence[EvalSample], instrument: Instrument, judge: Judge, *,
                  seed: int | None = 0, cache: CallCache | None = None,
                  progress: Callable[[SampleResult], None] | None = None,
                  concurrency: int | None = None, screen: bool = True) -> list[SampleResult]:
    """Judge every sample; results in the samples' order.

    Calls run `concurrency` at a time (default: the judge's own). `progress`
    is called once per finished sample, from the calling thread. `screen`: as
    for score_sample (False only for deliberately blanked copies).
    """
    width = max(1, concurrency if concurrency is not None else getattr(judge, "concurrency", 1))

    def one(s: EvalSample) -> SampleResult:
        return score_sample(s, instrument, judge, seed=seed, cache=cache, screen=screen)

    if width == 1 or len(samples) < 2:
        out = []
        for s in samples:
            r = one(s)
            out.append(r)
            if progress:
                progress(r)
        return out
    with ThreadPoolExecutor(max_workers=width, thread_name_prefix="judge") as pool:
        results = []
        for r in pool.map(one, samples):
            results.append(r)
            if progress:
                progress(r)
        return results
