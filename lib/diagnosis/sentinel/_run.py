"""Pin a probe set, judge it again night by night, and say whether the judge behind the name moved.

A pin fixes four things: the probes (a seeded sample of the current instrument's run, or the suite's calibration
set), the instrument (judge name, endpoint, template, binding: the newest run's, lib.diagnosis.agreement), the
baseline verdicts (each probe judged once), and m0, the bound on the judge's own repeat disagreement with them
(REPEATS more judgings of every probe at pin time). A night judges the same prompts again and records its
disagreement D with the baseline; lib.diagnosis.sentinel._eprocess decides.

How a night enters the call cache key: every call's key is (model, endpoint, messages, temperature, seed)
(lib.core.calls), and a night's seed is `night_seed(pin, night)`, a hash of the pin and the night's key. The
messages are identical every night; the seed is not, so no night is answered from the cache by the baseline's
or another night's reply, while the same night run again (a resume after a failure) is answered by its own
replies and costs nothing. The fresh seed also makes each night an independent draw of a judge that samples
(temperature > 0, or a server that honours the seed), which the test's validity needs; at temperature 0 it
changes nothing a model says.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from lib.core.errors import InputError
from lib.core.records import MAIN
from lib.core.results import OK, SampleResult
from lib.core.samples import EvalSample
from lib.diagnosis.agreement import calibration_samples, current_instrument
from lib.diagnosis.sentinel._eprocess import ALPHA, Look, e_process, first_drift, null_bound
from lib.judging.base import Judge, judge_endpoint
from lib.judging.harness import Instrument, build_request, score_samples
from lib.store import Store
from lib.store import sentinel as ss

PROBES = 100          # default probes a pin holds
REPEATS = 3           # default pin-time repeats (the bound m0 reads REPEATS x probes observations)
MAX_FAILED = 0.2      # a night with more of its probes failed is recorded but not counted (run it again)
FROM_RUN, FROM_LABELS = "run", "labels"
SOURCES = (FROM_RUN, FROM_LABELS)
DRIFT = "judge drift"


def _seed(pin_id: str, what: str) -> int:
    return int(hashlib.sha256(f"evaldrift-sentinel:{pin_id}:{what}".encode()).hexdigest()[:8], 16) & 0x7FFFFFFF


def night_seed(pin_id: str, night: str) -> int:
    """The request seed of a night (in every call's cache key): one per pin and night key."""
    return _seed(pin_id, f"night:{night}")


def pin_seed(pin_id: str, k: int) -> int:
    """The request seed of the pin's baseline (k = 0) and of its k-th repeat: never a night's."""
    return _seed(pin_id, f"pin:{k}")


def disagreement(baseline: Sequence[bool], now: Sequence[bool]) -> float:
    """The share of a probe's items whose verdict differs from the pinned one (an item only one side has counts
    as a disagreement)."""
    longest = max(len(baseline), len(now))
    if longest == 0:
        return 0.0
    differ = sum(a != b for a, b in zip(baseline, now, strict=False)) + abs(len(baseline) - len(now))
    return differ / longest


def _labels(result: SampleResult) -> list[bool]:
    return [bool(v.label) for v in result.verdicts]


def _sample_json(s: EvalSample) -> dict[str, object]:
    return {"sample_id": s.sample_id, "question": s.question, "answer": s.answer, "contexts": list(s.contexts),
            "ground_truth": s.ground_truth}


def _sample(d: dict) -> EvalSample:
    return EvalSample(str(d["sample_id"]), str(d["question"]), str(d["answer"]), tuple(d["contexts"]),
                      str(d["ground_truth"]))


@dataclass(frozen=True)
class Pin:
    """A pin, read back: its row, probes and baseline verdicts."""

    row: ss.PinRow
    probes: tuple[EvalSample, ...]
    baseline: dict[str, list[bool]]

    @property
    def instrument(self) -> Instrument:
        return Instrument(self.row.metric, self.row.template, self.row.binding)

    @classmethod
    def of(cls, row: ss.PinRow) -> Pin:
        return cls(row, tuple(_sample(d) for d in json.loads(row.probes)), json.loads(row.baseline))


def _check_judge(judge: Judge, model: str, endpoint: str) -> None:
    if judge.model != model or judge_endpoint(judge) != endpoint:
        raise InputError(f"the sentinel is pinned to judge {model!r} at {endpoint or 'its endpoint'}: judge it with "
                         f"that judge (got {judge.model!r})", field="judge")


def probe_samples(store: Store, metric: str, *, suite: str = MAIN, source: str = FROM_RUN, size: int = PROBES,
                  name: str = "sentinel") -> tuple[list[EvalSample], str]:
    """The probes to pin and where they came from, in words.

    FROM_RUN: a seeded sample (by `name`) of `size` samples of the current instrument's run. FROM_LABELS: the
    suite's calibration set (every labelled sample, `size` ignored).

    Raises:
        InputError: an unknown source, no run with an instrument, or no labels.
    """
    if source == FROM_LABELS:
        version = store.calibration_version(suite)
        samples, _ = calibration_samples(store, suite, metric, version)
        return samples, f"calibration set v{version} of suite {suite!r}"
    if source != FROM_RUN:
        raise InputError(f"unknown probe source {source!r}; one of: {', '.join(SOURCES)}", field="source")
    run_id = current_instrument(store, metric, suite).run_id
    samples = store.samples(run_id, suite)
    chosen = random.Random(f"evaldrift-sentinel-probes:{name}").sample(samples, min(size, len(samples)))
    return sorted(chosen, key=lambda s: s.sample_id), f"{len(chosen)} of run {run_id}'s samples (seeded by {name!r})"


def _served(results: Sequence[SampleResult]) -> str | None:
    said = Counter(r.served_model for r in results if r.served_model)
    return said.most_common(1)[0][0] if said else None


def pin(store: Store, judge: Judge, metric: str, *, name: str = "sentinel", suite: str = MAIN,
        source: str = FROM_RUN, size: int = PROBES, repeats: int = REPEATS, at: datetime | None = None) -> Pin:
    """Pin a probe set with the current instrument: judge it once (the baseline) and `repeats` more times (the
    judge's own repeat disagreement, bounded as m0). Costs (1 + repeats) x probes calls, once.

    `judge` must be the current instrument's judge (its model and endpoint). A probe the baseline could not score
    (failed, or excluded before any call) is left out of the pin.

    Raises:
        InputError: no probes, a judge other than the instrument's, repeats below 1, or no probe scored.
    """
    if repeats < 1:
        raise InputError("a pin needs at least 1 repeat: the judge's own repeat disagreement is what a night is "
                         "tested against", field="repeats")
    inst = current_instrument(store, metric, suite)
    endpoint = judge_endpoint(judge)
    _check_judge(judge, inst.judge_model, endpoint)
    samples, said = probe_samples(store, metric, suite=suite, source=source, size=size, name=name)
    when = at or ss.now()
    pin_id = "pin-" + hashlib.sha256(f"{name}:{when.isoformat()}:{metric}:{suite}".encode()).hexdigest()[:12]
    instrument = Instrument(metric, inst.template, inst.binding)
    first = score_samples(samples, instrument, judge, seed=pin_seed(pin_id, 0), cache=store)
    kept = [(s, r) for s, r in zip(samples, first, strict=True) if r.status == OK and r.verdicts]
    if not kept:
        raise InputError(f"no probe of {said} was scored by {judge.model} for {metric}: nothing to pin",
                         field="probes")
    probes = [s for s, _ in kept]
    baseline = {s.sample_id: _labels(r) for s, r in kept}
    calls = sum(r.calls for r in first)
    shares: list[float] = []
    for k in range(1, repeats + 1):
        again = score_samples(probes, instrument, judge, seed=pin_seed(pin_id, k), cache=store)
        calls += sum(r.calls for r in again)
        shares += [disagreement(baseline[r.sample_id], _labels(r)) for r in again if r.status == OK]
    store.flush_cache()
    row = ss.PinRow(pin_id=pin_id, name=name, suite=suite, metric=metric, judge_model=judge.model, endpoint=endpoint,
                    template=inst.template, binding=inst.binding, source=said,
                    probes=json.dumps([_sample_json(s) for s in probes], ensure_ascii=False),
                    baseline=json.dumps(baseline), repeats=repeats,
                    repeat_share=sum(shares) / len(shares) if shares else 0.0, null_share=null_bound(shares),
                    served_model=_served(first), calls=calls, pinned_at=when)
    ss.add_pin(store, row)
    return Pin.of(row)


def current_pin(store: Store, name: str | None = None) -> Pin:
    """The latest pin (of `name`).

    Raises:
        InputError: none.
    """
    found = ss.pins(store, name)
    if not found:
        which = f" named {name!r}" if name else ""
        raise InputError(f"no sentinel{which} is pinned: pin one first (python -m lib sentinel pin)", field="name")
    return Pin.of(found[-1])


def night_probes(p: Pin, night: str, budget: int | None) -> list[EvalSample]:
    """The probes a night judges: all, or a subset of `budget` drawn with the night's seed (a fresh uniform draw
    each night keeps E[D] the pinned judge's repeat disagreement, so the test stays valid)."""
    probes = list(p.probes)
    if budget is None or budget >= len(probes):
        return probes
    if budget < 1:
        raise InputError("a night's budget is at least 1 call", field="budget")
    chosen = random.Random(night_seed(p.row.pin_id, night)).sample(probes, budget)
    return sorted(chosen, key=lambda s: s.sample_id)


def night_calls(store: Store, judge: Judge, p: Pin, night: str, budget: int | None = None) -> tuple[int, int]:
    """What a night will cost before any call: (calls, judgings the call cache already holds)."""
    probes = night_probes(p, night, budget)
    if not judge.cacheable:
        return len(probes), 0
    seed, endpoint = night_seed(p.row.pin_id, night), judge_endpoint(judge)
    keys = [r.key for s in probes if (r := build_request(s, p.instrument, judge.model, endpoint, seed)[0])]
    held = len(store.replies(keys))   # the replies the call cache holds for them
    return len(keys) - held, held


def run_night(store: Store, judge: Judge, *, name: str | None = None, night: str | None = None,
              budget: int | None = None, at: datetime | None = None) -> Status:
    """Judge the pinned probes again for one night, record it, and return the sentinel's status.

    Args:
        name: the sentinel (default: the latest pinned).
        night: the night's key (default: `at`'s date, YYYY-MM-DD). The same night run again is answered by the
            call cache and replaces its record.
        budget: the most calls the night may make (default: every probe).
        at: when (default: now); where the night sits on Trends.

    Raises:
        InputError: no pin, or a judge other than the pinned one.
    """
    p = current_pin(store, name)
    _check_judge(judge, p.row.judge_model, p.row.endpoint)
    when = at or ss.now()
    key = night or f"{when:%Y-%m-%d}"
    seed = night_seed(p.row.pin_id, key)
    probes = night_probes(p, key, budget)
    results = score_samples(probes, p.instrument, judge, seed=seed, cache=store)
    store.flush_cache()
    detail = {r.sample_id: disagreement(p.baseline[r.sample_id], _labels(r)) for r in results if r.status == OK}
    failed = sum(r.status != OK for r in results)
    counted = bool(detail) and failed <= MAX_FAILED * len(results)
    ss.put_night(store, ss.NightRow(
        pin_id=p.row.pin_id, night=key, seed=seed, judged=len(results), failed=failed,
        calls=sum(r.calls for r in results), cached=sum(r.cached for r in results),
        disagreement=sum(detail.values()) / len(detail) if counted else None, detail=json.dumps(detail),
        served_model=_served(results), judged_at=when))
    return status(store, p.row.name)


@dataclass(frozen=True)
class Status:
    """A sentinel's state: its pin, its nights, the e-process over the counted ones, and the drift night if any."""

    pin: ss.PinRow
    nights: tuple[ss.NightRow, ...]
    looks: tuple[Look, ...]

    @property
    def drift(self) -> Look | None:
        return first_drift(self.looks)

    @property
    def n_probes(self) -> int:
        return len(json.loads(self.pin.baseline))

    @property
    def last(self) -> ss.NightRow | None:
        return self.nights[-1] if self.nights else None

    def night(self, key: str) -> ss.NightRow | None:
        return next((n for n in self.nights if n.night == key), None)

    @property
    def sentence(self) -> str:
        p = self.pin
        head = (f"sentinel {p.name!r}: {self.n_probes} probes of {p.metric} ({p.source}), judge {p.judge_model}, "
                f"pinned {p.pinned_at:%Y-%m-%d}; its own repeat disagreement {p.repeat_share:.1%} "
                f"(at most {p.null_share:.1%}, from {p.repeats} repeats)")
        counted = [n for n in self.nights if n.disagreement is not None]
        if not self.looks:
            return head + f"; no night counted yet ({len(self.nights)} recorded)."
        last = self.looks[-1]
        d = self.drift
        if d is not None:
            night = next(n for n in self.nights if n.night == d.night)
            return (head + f". JUDGE DRIFT on night {d.night}: the judge changed, the system did not: it disagrees "
                    f"with its pinned verdicts on {d.disagreement:.1%} of items, beyond its own repeat disagreement "
                    f"(e-value {d.e_value:.0f} >= {1 / ALPHA:.0f}); served {night.served_model or 'not said'} "
                    f"(pinned: {p.served_model or 'not said'}).")
        return (head + f". No drift after {len(counted)} night(s): last night {last.night} disagreed on "
                f"{last.disagreement:.1%} of items (e-value {last.e_value:.2f}; drift is called at "
                f"{1 / ALPHA:.0f}).")


def status(store: Store, name: str | None = None) -> Status:
    """The latest pin's (of `name`) nights and test.

    Raises:
        InputError: no pin.
    """
    p = current_pin(store, name)
    rows = tuple(ss.nights(store, p.row.pin_id))
    counted = [(n.night, float(n.disagreement)) for n in rows if n.disagreement is not None]
    n = len(json.loads(p.row.baseline))
    return Status(p.row, rows, tuple(e_process(counted, p.row.null_share, n)))


def statuses(store: Store) -> list[Status]:
    """Every sentinel's latest pin, with its nights and test."""
    names = dict.fromkeys(r.name for r in ss.pins(store))
    return [status(store, n) for n in names]
