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
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import lru_cache

from pydantic import BaseModel, ValidationError, field_validator

from lib.core.calls import JudgeReply, JudgeRequest, Message, ReplyShape, Usage
from lib.core.degenerate import exclusion_reason
from lib.core.errors import JudgeError
from lib.core.metrics import get_metric, sample_score
from lib.core.prompts import SYSTEM_MESSAGE, build_prompt
from lib.core.results import CALL_FAILED, EXCLUDED, FAILED, OK, SampleResult, Verdict
from lib.core.samples import EvalSample
from lib.judging.base import CallCache, Judge, judge_endpoint
from lib.judging.flights import FLIGHTS
from lib.judging.known import KnownCache

_ITEM_WORDS = re.compile(r"^\s*(?:item\s*)?(\d+)\s*$", re.IGNORECASE)


class _VerdictOut(BaseModel):
    item: int | None = None
    verdict: str
    evidence: str = ""

    @field_validator("item", mode="before")
    @classmethod
    def _item_number(cls, value: object) -> object:
        """"ITEM 1" and "1" are item 1 (a small model copies the prompt's item labels); anything else is left
        to fail as no item number."""
        if isinstance(value, str):
            m = _ITEM_WORDS.match(value)
            if m:
                return int(m.group(1))
        return value


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


def _clip(value: object, n: int = 80) -> object:
    """A value the judge wrote, cut short enough for a failure reason."""
    if isinstance(value, str) and len(value) > n:
        return value[:n] + "..."
    if not isinstance(value, str | int | float | bool | type(None)):
        return _clip(json.dumps(value, ensure_ascii=False), n)
    return value


def parse_verdicts(text: str, items: Sequence[str], labels: tuple[str, str]) -> tuple[Verdict, ...]:
    """Read a judge reply into one Verdict per item, or raise ValueError saying why.

    Verdicts are matched to items by their item numbers, never by their order
    in the reply: a duplicate, missing or out-of-range number is unreadable.
    """
    return _parse_verdicts(text, tuple(items), labels)


# A history re-judges the same samples run after run, and a judge that repeats itself (every model at
# temperature 0, the offline judge on most items) sends the same reply for the same items: read it once.
@lru_cache(maxsize=8192)
def _parse_verdicts(text: str, items: tuple[str, ...], labels: tuple[str, str]) -> tuple[Verdict, ...]:
    cleaned = text.strip()
    if cleaned.startswith("```"):
        cleaned = cleaned.strip("`")
        cleaned = cleaned[cleaned.find("{"):] if "{" in cleaned else cleaned
    try:
        reply = _Reply.model_validate_json(cleaned)
    except ValidationError as exc:
        first = exc.errors()[0]
        if first["type"] == "json_invalid":
            raise ValueError(f"judge reply is not JSON: {_clip(text)!r}") from None
        where = ".".join(str(x) if isinstance(x, str) else f"[{x}]" for x in first["loc"]).replace(".[", "[")
        if first["type"] == "missing":
            raise ValueError(f"judge reply is bad shape: no {where} in {_clip(text)!r}") from None
        raise ValueError(f"judge reply is bad shape: {where or 'the reply'} is {_clip(first['input'])!r} "
                         f"({first['msg'].lower()})") from None
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


def build_request(sample: EvalSample, instrument: Instrument, model: str, endpoint: str,
                  seed: int | None) -> tuple[JudgeRequest | None, list[str]]:
    """The request a judge is sent for a sample, and its items (None, []: no items, nothing to ask).

    `endpoint` is the judge's normalised endpoint (lib.judging.base.judge_endpoint): part of the cache key.
    """
    spec = get_metric(instrument.metric)
    prompt, items = _prompt(instrument.template, instrument.metric, sample, instrument.binding)
    if not items:
        return None, []
    return JudgeRequest(model, (Message("system", SYSTEM_MESSAGE), Message("user", prompt)), 0.0, seed,
                        endpoint=endpoint, shape=ReplyShape(len(items), spec.labels),
                        template=instrument.template), list(items)


REPAIR_SHARE = 0.2   # of a job's judgings, at most this share (rounded up) may be asked again with a repair


def repair_allowance(judgings: int) -> int:
    """The repairs a job of this many judgings may ask for: what its cost estimate adds (lib.diagnosis.cost)."""
    return math.ceil(REPAIR_SHARE * judgings) if judgings > 0 else 0


class Repairs:
    """A job's allowance of repair requests, shared by its threads."""

    def __init__(self, allowed: int) -> None:
        self.allowed = allowed
        self.used = 0
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            if self.used >= self.allowed:
                return False
            self.used += 1
            return True


def repair_request(request: JudgeRequest, reply: str, reason: str) -> JudgeRequest:
    """The request asked after an unreadable reply: the conversation so far, the reply, and what was wrong with it.

    A model at temperature 0 answers an identical request identically, so asking the same request again buys
    nothing; this one differs, and names the error. Its key differs too: the call cache keeps its reply apart.
    """
    shape = request.shape
    rule = (f' with exactly {shape.items} verdicts, items 1 to {shape.items}, each verdict "{shape.labels[0]}" or '
            f'"{shape.labels[1]}"' if shape is not None else "")
    fix = (f"Your reply could not be read: {reason}. Reply again with only the JSON object "
           f'{{"verdicts": [{{"item": <number>, "verdict": <word>, "evidence": <text>}}, ...]}}{rule}.')
    return replace(request, messages=(*request.messages, Message("assistant", reply[:4000]), Message("user", fix)),
                   template=None)


def _prompt(template: str, metric: str, sample: EvalSample, binding: str) -> tuple[str, tuple[str, ...]]:
    try:
        return _prompt_cached(template, metric, sample, binding)
    except TypeError:   # a sample built with a list of passages is not hashable: rendered each time
        prompt, items = build_prompt(template, metric, sample, binding)
        return prompt, tuple(items)


# The same sample is rendered by the same template for every seed of a noise band and every run of a history.
@lru_cache(maxsize=8192)
def _prompt_cached(template: str, metric: str, sample: EvalSample, binding: str) -> tuple[str, tuple[str, ...]]:
    prompt, items = build_prompt(template, metric, sample, binding)
    return prompt, tuple(items)


def score_sample(sample: EvalSample, instrument: Instrument, judge: Judge, *, seed: int | None = 0,
                 cache: CallCache | None = None, parse_attempts: int = 2, screen: bool = True,
                 repairs: Repairs | None = None, endpoint: str | None = None) -> SampleResult:
    """Judge one sample for one metric.

    Args:
        sample: the sample.
        instrument: metric, template and binding.
        judge: the judge.
        seed: the request seed (repeats of a noise band use different seeds).
        cache: a call cache consulted before calling and fed valid replies. A cache that also keeps
            unreadable replies for the job (`unreadable`/`put_unreadable`, as KnownCache does) answers an
            identical request that failed before with that failure, without a call.
        parse_attempts: requests made when replies cannot be read, before the sample is marked failed: the
            first, then repairs (`repair_request`: the unreadable reply and its error, never the identical
            request again).
        screen: exclude a degenerate sample (lib.core.degenerate) before any call.
            An ablation screens the unblanked sample itself and passes False
            for its blanked copies: blanking is the measurement.
        repairs: the job's allowance of repair requests (None: the cache's, else unlimited).
        endpoint: the judge's judge_endpoint, when the caller judges many samples (None: asked here). Asked once
            a job rather than once a sample: the protocol check behind it cost 8 of a demo build's 50 s of
            judging (cProfile, 20 runs).
    """
    spec = get_metric(instrument.metric)
    excluded = exclusion_reason(sample, instrument.metric) if screen else None
    if excluded:
        return SampleResult(sample.sample_id, EXCLUDED, reason=excluded)
    endpoint = judge_endpoint(judge) if endpoint is None else endpoint
    request, items = build_request(sample, instrument, judge.model, endpoint, seed)
    if request is None:
        return SampleResult(sample.sample_id, EXCLUDED,
                            reason=f"no {spec.item_kind}s to judge: {spec.items_from} is empty")
    use_cache = cache is not None and judge.cacheable
    remembered = getattr(cache, "unreadable", None) if use_cache else None
    repairs = repairs if repairs is not None else getattr(cache, "repairs", None)
    usage = Usage()
    calls = 0
    raw = ""
    reason = ""
    asked = 0
    for attempt in range(parse_attempts):
        if attempt:
            if repairs is not None and not repairs.take():
                reason += "; not asked again: the job's repairs are spent"
                break
            request = repair_request(request, raw, reason)
        asked += 1
        # An identical request in flight is waited for: its reply is then in the cache (lib.judging.flights).
        with FLIGHTS.hold(request.key if use_cache else None):
            reply: JudgeReply | None = cache.get(request.key) if use_cache else None  # type: ignore[union-attr]
            failed = remembered(request.key) if remembered is not None and reply is None else None
            cached = reply is not None or failed is not None
            if failed is not None:
                reply = failed
            elif reply is None:
                try:
                    reply = judge.complete(request)
                except JudgeError as exc:
                    return SampleResult(sample.sample_id, FAILED, reason=CALL_FAILED + exc.reason,
                                        raw=raw[:2000], usage=usage, calls=calls + 1)
                calls += 1
                usage = usage + reply.usage
            raw = reply.text
            try:
                verdicts = parse_verdicts(reply.text, items, spec.labels)
            except ValueError as exc:
                reason = str(exc)
                if remembered is not None and not cached:
                    cache.put_unreadable(request, reply)  # type: ignore[union-attr]
                continue
            if use_cache and not cached:
                cache.put(request, reply)  # type: ignore[union-attr]
        score = sample_score(spec, [v.label for v in verdicts])
        return SampleResult(sample.sample_id, OK, score, verdicts, raw=raw, usage=usage, calls=calls,
                            cached=cached and calls == 0, fingerprint=reply.fingerprint,
                            served_model=reply.served_model)
    after = f"after {asked} attempt{'s' if asked != 1 else ''}"
    return SampleResult(sample.sample_id, FAILED, reason=f"{reason} ({after})", raw=raw[:2000], usage=usage,
                        calls=calls)


def score_samples(samples: Sequence[EvalSample], instrument: Instrument, judge: Judge, *,
                  seed: int | None = 0, cache: CallCache | None = None,
                  progress: Callable[[SampleResult], None] | None = None,
                  concurrency: int | None = None, screen: bool = True) -> list[SampleResult]:
    """Judge every sample; results in the samples' order.

    Calls run `concurrency` at a time (default: the judge's own). `progress`
    is called once per finished sample, from the calling thread. `screen`: as
    for score_sample (False only for deliberately blanked copies).
    """
    width = max(1, concurrency if concurrency is not None else judge.concurrency)
    endpoint = judge_endpoint(judge)
    if cache is not None and judge.cacheable and len(samples) > 1:
        keys = [r.key for s in samples if (r := build_request(s, instrument, judge.model, endpoint, seed)[0])]
        cache = KnownCache(cache, keys, repairs=Repairs(repair_allowance(len(keys))))

    def one(s: EvalSample) -> SampleResult:
        return score_sample(s, instrument, judge, seed=seed, cache=cache, screen=screen, endpoint=endpoint)

    if width == 1 or len(samples) < 2:
        out: list[SampleResult] = []
        for s in samples:
            result = one(s)
            out.append(result)
            if progress:
                progress(result)
        return out
    with ThreadPoolExecutor(max_workers=width, thread_name_prefix="judge") as pool:
        results: list[SampleResult] = []
        for result in pool.map(one, samples):
            results.append(result)
            if progress:
                progress(result)
        return results
