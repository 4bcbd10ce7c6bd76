"""Ablations: re-judge a run's samples with one artifact blanked, paired, with a noise band.

An ablation holds everything still (samples, order, judge, the run's own
template and binding) and changes one thing: the value of the blanked
artifact, in every sample. The unblanked baseline is re-judged alongside, k
times, for the judge's noise band; the blanked arm is repeated the same way.
Per-sample results are stored as they complete, so a killed ablation resumes
where it stopped, and a finished one is answered from the store.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field

import numpy as np

from lib.endpoints import normalise
from lib.errors import InputError, NotFoundError
from lib.harness import EXCLUDED, FAILED, OK, Instrument, SampleResult, score_sample
from lib.judges.base import Judge
from lib.metrics import get_metric
from lib.records import MAIN
from lib.samples import BLANKABLE, EvalSample, arm_fields, arm_name, blank
from lib.stats import flips, mde, noise_band, paired_bootstrap, run_noise_sd
from lib.store import Store

LEAK = "LEAK"
CLEAN = "CLEAN"
SENSITIVE = "SENSITIVE"
INSENSITIVE = "INSENSITIVE"
INCONCLUSIVE = "INCONCLUSIVE"
REPLAY_MISMATCH = "REPLAY MISMATCH"
AS_EXPECTED = frozenset({CLEAN, SENSITIVE})

MAX_FAILED_SHARE = 0.2   # more failures than this and an arm says nothing
MIN_PAIRED = 20          # fewer paired samples and an arm says nothing
RULE_OUT = 0.05          # CLEAN must rule out a move this large (the CI's far end)
BATCH = 200              # results per stored batch (a kill loses at most this many per arm)

Scorer = Callable[[Sequence[EvalSample]], Sequence[float | None]]


@dataclass(frozen=True)
class AblationSpec:
    """What to ablate.

    Attributes:
        run_id: the run whose samples and instruments are re-judged.
        metrics: metrics to test.
        blanks: arms, each a field or fields joined by '+' ("ground_truth", "ground_truth+contexts").
        repeats: re-judgings of each arm (the noise band needs 2 or more).
        judge: the judge model (offline-lexical-* or a model on an OpenAI-compatible server).
        endpoint: where that judge lives ("offline" or the server URL); part of the identity.
        suite: the sample suite ("main" or "canary").
        seed: first judge seed; repeat r uses seed + r.
        limit: only the first `limit` samples (by id), for a quick look.
        scorer: an external harness as "module:function" instead of the judge.
    """

    run_id: str
    metrics: tuple[str, ...]
    blanks: tuple[str, ...]
    repeats: int = 3
    judge: str = "offline-lexical-v2"
    endpoint: str = "offline"
    suite: str = MAIN
    seed: int = 1000
    limit: int | None = None
    scorer: str | None = None

    def __post_init__(self) -> None:
        if not self.metrics:
            raise InputError("choose at least one metric", field="metric")
        for m in self.metrics:
            try:
                get_metric(m)
            except KeyError as exc:
                raise InputError(str(exc.args[0]), field="metric") from None
        if not self.blanks:
            raise InputError("choose at least one field to blank", field="blank")
        for b in self.blanks:
            try:
                fields = arm_fields(b)
            except KeyError as exc:
                raise InputError(f"{exc.args[0]}; blankable: {', '.join(BLANKABLE)}", field="blank") from None
            if not fields:
                raise InputError("'none' is the baseline, not an arm", field="blank")
        if not 1 <= self.repeats <= 20:
            raise InputError("repeats must be between 1 and 20", field="repeats")
        if self.limit is not None and self.limit < 1:
            raise InputError("limit must be positive", field="limit")
        object.__setattr__(self, "blanks", tuple(dict.fromkeys(arm_name(arm_fields(b)) for b in self.blanks)))
        # The endpoint is identity and stored text: one spelling per server, never with credentials.
        object.__setattr__(self, "endpoint", normalise(self.endpoint))

    @property
    def arms(self) -> tuple[str, ...]:
        return ("none", *self.blanks)

    @property
    def ablation_id(self) -> str:
        blob = json.dumps(asdict(self), sort_keys=True)
        return "abl-" + hashlib.sha256(blob.encode()).hexdigest()[:12]

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> AblationSpec:
        d = dict(d)
        try:
            d["metrics"] = tuple(d["metrics"])  # type: ignore[arg-type]
            d["blanks"] = tuple(d["blanks"])  # type: ignore[arg-type]
            return cls(**d)  # type: ignore[arg-type]
        except (KeyError, TypeError) as exc:  # a stored spec is data from a file: refuse it plainly
            raise InputError(f"not an ablation spec ({exc})", field="spec") from None


def matrix_spec(run_id: str, metrics: Sequence[str], **kw: object) -> AblationSpec:
    """Every metric x each of ground_truth, question, contexts blanked alone."""
    return AblationSpec(run_id, tuple(metrics), ("ground_truth", "question", "contexts"), **kw)  # type: ignore[arg-type]


def four_readings_spec(run_id: str, **kw: object) -> AblationSpec:
    """Faithfulness as wired, without the reference, without the passages, without both."""
    return AblationSpec(run_id, ("faithfulness",), ("ground_truth", "contexts", "ground_truth+contexts"),
                        **kw)  # type: ignore[arg-type]


def load_scorer(target: str) -> Scorer:
    """Import an external scorer given as 'module:function'."""
    module, _, name = target.partition(":")
    if not module or not name:
        raise InputError(f"scorer must be 'module:function', got {target!r}", field="scorer")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"cannot load scorer {target!r}: {exc}", field="scorer") from None
    if not callable(fn):
        raise InputError(f"scorer {target!r} is not callable", field="scorer")
    return fn


# -- running ------------------------------------------------------------------------
@dataclass
class _Plan:
    spec: AblationSpec
    samples: list[EvalSample]
    instruments: dict[str, Instrument]
    total: int


def _plan(store: Store, spec: AblationSpec) -> _Plan:
    store.run(spec.run_id)
    samples = store.samples(spec.run_id, spec.suite)
    if not samples:
        raise NotFoundError(f"run {spec.run_id!r} has no samples in suite {spec.suite!r}")
    if spec.limit:
        samples = samples[: spec.limit]
    had = store.run_fields(spec.run_id)
    for arm in spec.arms:
        missing = [f for f in arm_fields(arm) if f not in had]
        if missing:
            raise InputError(f"run {spec.run_id!r} has no {missing[0]} to blank (its samples came with "
                             f"{', '.join(had)})", field="blank")
    instruments = {}
    for m in spec.metrics:
        inst = store.instrument(spec.run_id, m, spec.suite)
        if spec.scorer is None and (inst["template"] is None or inst["binding"] is None):
            raise InputError(f"run {spec.run_id!r} recorded no template or binding for {m!r} (unattributed "
                             f"scores); ablate it through its own harness with a scorer", field="metric")
        instruments[m] = Instrument(m, inst["template"] or "", inst["binding"] or "projected")
    total = len(spec.metrics) * len(spec.arms) * spec.repeats * len(samples)
    return _Plan(spec, samples, instruments, total)


def run_ablation(store: Store, spec: AblationSpec, judge: Judge | None, *,
                 progress: Callable[[int, int], None] | None = None,
                 should_stop: Callable[[], bool] | None = None) -> AblationResult | None:
    """Run (or resume, or look up) an ablation and return its result.

    Args:
        store: the run store (results are written to it as they complete).
        spec: what to ablate.
        judge: the judge (None when spec.scorer drives an external harness).
        progress: called with (done, total) after each stored batch.
        should_stop: polled between samples; when it returns True the work
            stops with everything finished so far stored, and None is returned.

    Returns:
        The analysed result, or None if stopped early.
    """
    aid = spec.ablation_id
    existing = store.ablation(aid)
    if existing and existing["status"] == "done" and existing["result"]:
        if progress:
            progress(int(existing["total"]), int(existing["total"]))
        return AblationResult.from_dict(existing["result"])  # type: ignore[arg-type]
    plan = _plan(store, spec)
    # Refuse bad input before the ablation row exists, so it never shows as a stalled ablation.
    scorer = load_scorer(spec.scorer) if spec.scorer is not None else None
    if scorer is None and judge is None:
        raise InputError("an ablation needs a judge or a scorer", field="judge")
    store.start_ablation(aid, spec.run_id, spec.suite, spec.to_dict(), spec.judge, plan.total)
    done = store.ablation_done_keys(aid)
    if scorer is not None:
        stopped = _run_scorer(store, plan, scorer, done, progress, should_stop)
    else:
        stopped = _run_judge(store, plan, judge, done, progress, should_stop)  # type: ignore[arg-type]
    if stopped:
        return None
    result = analyse(store, spec)
    store.finish_ablation(aid, "done", result.to_dict())
    return result


def _run_judge(store: Store, plan: _Plan, judge: Judge, done: set, progress, should_stop) -> bool:
    spec = plan.spec
    units = [(m, arm, rep, s) for m in spec.metrics for arm in spec.arms for rep in range(spec.repeats)
             for s in plan.samples if (m, arm, rep, s.sample_id) not in done]
    blanked: dict[tuple[str, str], EvalSample] = {}
    buffer: dict[tuple[str, str, int], list[SampleResult]] = defaultdict(list)
    count = len(done)
    last_flush = time.monotonic()

    def flush() -> None:
        nonlocal last_flush
        for (m, arm, rep), results in list(buffer.items()):
            store.add_ablation_results(spec.ablation_id, m, arm, rep, results)
        buffer.clear()
        last_flush = time.monotonic()
        if progress:
            progress(count, plan.total)

    def work(unit: tuple[str, str, int, EvalSample]) -> tuple[tuple[str, str, int], SampleResult]:
        m, arm, rep, s = unit
        key = (arm, s.sample_id)
        if key not in blanked:
            blanked[key] = blank(s, arm_fields(arm))
        cache = store if judge.cacheable else None
        return (m, arm, rep), score_sample(blanked[key], plan.instruments[m], judge, seed=spec.seed + rep,
                                           cache=cache)

    def collect(key: tuple[str, str, int], r: SampleResult) -> None:
        nonlocal count
        buffer[key].append(r)
        count += 1
        if sum(map(len, buffer.values())) >= BATCH or time.monotonic() - last_flush > 1.0:
            flush()

    width = max(1, getattr(judge, "concurrency", 1))
    if width == 1:
        for unit in units:
            if should_stop and should_stop():
                flush()
                return True
            collect(*work(unit))
    else:
        with ThreadPoolExecutor(max_workers=width, thread_name_prefix="ablation-judge") as pool:
            futures = [pool.submit(work, u) for u in units]
            for fut in as_completed(futures):
                collect(*fut.result())
                if should_stop and should_stop():
                    for f in futures:
                        f.cancel()
                    flush()
                    return True
    flush()
    return False


def _run_scorer(store: Store, plan: _Plan, scorer: Scorer, done: set, progress, should_stop) -> bool:
    spec = plan.spec
    count = len(done)
    chunk = 50
    for m in spec.metrics:
        for arm in spec.arms:
            for rep in range(spec.repeats):
                todo = [s for s in plan.samples if (m, arm, rep, s.sample_id) not in done]
                for i in range(0, len(todo), chunk):
                    if should_stop and should_stop():
                        return True
                    part = [blank(s, arm_fields(arm)) for s in todo[i:i + chunk]]
                    scores = list(scorer(part))
                    if len(scores) != len(part):
                        raise InputError(f"scorer returned {len(scores)} scores for {len(part)} samples",
                                         field="scorer")
                    results = []
                    for s, v in zip(part, scores, strict=True):
                        if v is None or (isinstance(v, float) and math.isnan(v)):
                            results.append(SampleResult(s.sample_id, FAILED, reason="scorer returned no score"))
                        elif not 0.0 <= float(v) <= 1.0:
                            results.append(SampleResult(s.sample_id, FAILED, reason=f"scorer returned {v!r}"))
                        else:
                            results.append(SampleResult(s.sample_id, OK, float(v)))
                    store.add_ablation_results(spec.ablation_id, m, arm, rep, results)
                    count += len(results)
                    if progress:
                        progress(count, plan.total)
    return False


# -- analysis -----------------------------------------------------------------------
@dataclass(frozen=True)
class ArmVerdict:
    """The verdict on one (metric, blanked field(s)) cell."""

    metric: str
    arm: str
    kind: str
    expected: str
    baseline: float | None
    ablated: float | None
    delta: float | None
    lo: float | None
    hi: float | None
    noise: float | None
    ratio: float | None
    n: int
    n_failed: int
    n_units: int
    flips_to_positive: int
    flips_to_negative: int
    flips_p: float | None
    mde: float | None
    sentence: str

    @property
    def as_expected(self) -> bool:
        return self.kind in AS_EXPECTED


@dataclass(frozen=True)
class ReplayCheck:
    """Does today's re-judged baseline reproduce the stored score?"""

    metric: str
    stored: float | None
    rerun: float | None
    delta: float | None
    noise: float | None
    mismatch: bool
    sentence: str


@dataclass(frozen=True)
class FourReadings:
    """Faithfulness under four wirings, and what they say together."""

    as_wired: float
    without_reference: float
    without_contexts: float
    without_both: float | None
    leak: float
    independence: float
    independence_gap: float
    noise: float | None
    sentence: str


@dataclass(frozen=True)
class AblationResult:
    ablation_id: str
    spec: dict[str, object]
    verdicts: list[ArmVerdict]
    replay: list[ReplayCheck]
    four: FourReadings | None
    summary: str
    calls: int
    cached: int
    failures: dict[str, int] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """0 all as the wiring table expects, 1 a LEAK or INSENSITIVE, 3 INCONCLUSIVE."""
        kinds = {v.kind for v in self.verdicts}
        if kinds & {LEAK, INSENSITIVE}:
            return 1
        if INCONCLUSIVE in kinds:
            return 3
        return 0

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> AblationResult:
        return cls(
            ablation_id=d["ablation_id"], spec=d["spec"],  # type: ignore[arg-type]
            verdicts=[ArmVerdict(**v) for v in d["verdicts"]],  # type: ignore[union-attr]
            replay=[ReplayCheck(**r) for r in d["replay"]],  # type: ignore[union-attr]
            four=FourReadings(**d["four"]) if d.get("four") else None,  # type: ignore[arg-type]
            summary=d["summary"], calls=d["calls"], cached=d["cached"],  # type: ignore[arg-type]
            failures=d.get("failures", {}),  # type: ignore[arg-type]
        )


def _fmt(x: float | None, signed: bool = True) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def _fields_words(arm: str) -> str:
    return " and ".join(arm_fields(arm))


@dataclass
class _Arm:
    scores: dict[str, list[float]]          # sample -> ok scores over repeats
    labels: dict[str, list[list[bool]]]     # sample -> per repeat item labels
    failed: int
    excluded: int
    units: int
    reasons: Counter


def _collect(frame) -> dict[tuple[str, str], _Arm]:
    arms: dict[tuple[str, str], _Arm] = {}
    for (metric, arm), part in frame.groupby(["metric", "arm"], sort=False):
        a = _Arm(defaultdict(list), defaultdict(list), 0, 0, len(part), Counter())
        for row in part.itertuples(index=False):
            if row.status == OK:
                a.scores[row.sample_id].append(float(row.score))
                a.labels[row.sample_id].append([bool(v["label"]) for v in json.loads(row.verdicts)])
            elif row.status == FAILED:
                a.failed += 1
                a.reasons[row.reason.split(" (after")[0]] += 1
            elif row.status == EXCLUDED:
                a.excluded += 1
        arms[(metric, arm)] = a
    return arms


def _majority(per_rep: list[list[bool]]) -> list[bool] | None:
    lengths = {len(x) for x in per_rep}
    if len(lengths) != 1:
        return None
    return [sum(col) * 2 > len(col) for col in zip(*per_rep, strict=True)]


def analyse(store: Store, spec: AblationSpec) -> AblationResult:
    """Classify every (metric, arm) of a finished ablation against the wiring table."""
    frame = store.ablation_results(spec.ablation_id)
    arms = _collect(frame)
    verdicts: list[ArmVerdict] = []
    replay: list[ReplayCheck] = []
    failures: Counter = Counter()
    for a in arms.values():
        failures.update(a.reasons)
    for m in spec.metrics:
        mspec = get_metric(m)
        base = arms.get((m, "none"))
        if base is None:
            continue
        sd = run_noise_sd(list(base.scores.values())) if spec.repeats >= 2 else math.nan
        band = noise_band(sd) if not math.isnan(sd) else None
        replay.append(_replay_check(store, spec, m, base, sd, band))
        for arm in spec.blanks:
            abl = arms.get((m, arm))
            if abl is None:
                continue
            verdicts.append(_classify(mspec, arm, base, abl, band, spec.repeats))
    four = _four_readings(verdicts, replay)
    calls = int(frame["calls"].sum()) if len(frame) else 0
    cached = int(frame["cached"].sum()) if len(frame) else 0
    return AblationResult(spec.ablation_id, spec.to_dict(), verdicts, replay, four,
                          _summary(verdicts, replay), calls, cached, dict(failures))


def _classify(mspec, arm: str, base: _Arm, abl: _Arm, band: float | None, repeats: int) -> ArmVerdict:
    fields = set(arm_fields(arm))
    expected = "invariant" if fields <= mspec.never else "sensitive"
    words = _fields_words(arm)
    common = sorted(set(base.scores) & set(abl.scores))
    a = [float(np.mean(base.scores[s])) for s in common]
    b = [float(np.mean(abl.scores[s])) for s in common]
    n_failed = base.failed + abl.failed
    n_units = base.units + abl.units
    base_mean = float(np.mean([np.mean(v) for v in base.scores.values()])) if base.scores else None

    def verdict(kind: str, sentence: str, pd=None, ablated=None, fl=None, md=None) -> ArmVerdict:
        ratio = (abs(pd.mean) / band) if (pd is not None and band) else None
        return ArmVerdict(mspec.name, arm, kind, expected, base_mean, ablated,
                          pd.mean if pd else None, pd.lo if pd else None, pd.hi if pd else None, band, ratio,
                          len(common), n_failed, n_units, fl.to_positive if fl else 0,
                          fl.to_negative if fl else 0, fl.p_value if fl else None, md, sentence)

    if mspec.items_from in fields and not abl.scores and abl.excluded:
        return verdict(SENSITIVE, f"SENSITIVE: blanking {words} leaves {mspec.name} nothing to judge "
                                  f"(its {mspec.item_kind}s come from {mspec.items_from}), as it should.")
    if n_units and n_failed / n_units > MAX_FAILED_SHARE:
        top = ", ".join(f"{k} ({v})" for k, v in (base.reasons + abl.reasons).most_common(2))
        return verdict(INCONCLUSIVE, f"INCONCLUSIVE: {n_failed} of {n_units} judgings of {mspec.name} failed "
                                     f"({top}); too few scores to say whether blanking {words} moves it.")
    if len(common) < MIN_PAIRED:
        return verdict(INCONCLUSIVE, f"INCONCLUSIVE: only {len(common)} samples scored in both arms of "
                                     f"{mspec.name} with {words} blanked; at least {MIN_PAIRED} are needed.")
    pd = paired_bootstrap(a, b, seed=len(common))
    ablated = float(np.mean(b))
    deltas = np.asarray(b) - np.asarray(a)
    md = mde(float(np.std(deltas, ddof=1)), len(common)) if len(common) > 1 else None
    fl = _item_flips(base, abl, common)
    beyond = pd.excludes_zero and abs(pd.mean) > (band or 0.0)
    noise_words = (f"the judge repeat band (±{band:.3f}, {repeats} repeats)" if band is not None
                   else "a judge repeat band (not measured: 1 repeat)")
    ratio_words = f"{abs(pd.mean) / band:.0f}x {noise_words}" if band else f"beyond its CI, against {noise_words}"
    move = f"moves {_fmt(pd.mean)} (95% CI {_fmt(pd.lo)} to {_fmt(pd.hi)})"
    tail = f"n={len(common)} samples"
    far = max(abs(pd.lo), abs(pd.hi))
    if expected == "invariant":
        if beyond:
            return verdict(LEAK, f"LEAK: {mspec.name} {move} when {words} is blanked, {ratio_words}, {tail}. "
                                 f"A correctly wired {mspec.name} judge never sees {words}; this one depends on it.",
                           pd, ablated, fl, md)
        if far <= RULE_OUT:
            return verdict(CLEAN, f"CLEAN: {mspec.name} {move} when {words} is blanked, within {noise_words}, "
                                  f"{tail}: it does not read {words}.", pd, ablated, fl, md)
        return verdict(INCONCLUSIVE, f"INCONCLUSIVE: {mspec.name} {move} when {words} is blanked, {tail}; "
                                     f"a move of up to {far:.3f} cannot be ruled out.", pd, ablated, fl, md)
    if beyond:
        return verdict(SENSITIVE, f"SENSITIVE: {mspec.name} {move} when {words} is blanked, {ratio_words}, "
                                  f"{tail}, as it should: {mspec.against} is what it judges against.",
                       pd, ablated, fl, md)
    if far <= RULE_OUT:
        return verdict(INSENSITIVE, f"INSENSITIVE: {mspec.name} {move} when {words} is blanked, within "
                                    f"{noise_words}, {tail}, although it is defined over {words}: the metric "
                                    f"ignores its own input.", pd, ablated, fl, md)
    return verdict(INCONCLUSIVE, f"INCONCLUSIVE: {mspec.name} {move} when {words} is blanked, {tail}; neither "
                                 f"a clear move nor a clear null.", pd, ablated, fl, md)


def _item_flips(base: _Arm, abl: _Arm, common: list[str]):
    before: list[bool] = []
    after: list[bool] = []
    for s in common:
        x, y = _majority(base.labels.get(s, [])), _majority(abl.labels.get(s, []))
        if x is not None and y is not None and len(x) == len(y):
            before.extend(x)
            after.extend(y)
    return flips(before, after)


def _replay_check(store: Store, spec: AblationSpec, metric: str, base: _Arm, sd: float,
                  band: float | None) -> ReplayCheck:
    stored_frame = store.sample_scores(spec.run_id, spec.suite, metric)
    stored = {r.sample_id: float(r.score) for r in stored_frame.itertuples(index=False) if r.status == OK}
    common = sorted(set(stored) & set(base.scores))
    if not common:
        return ReplayCheck(metric, None, None, None, band, False,
                           f"{metric}: no stored per-sample scores to compare the re-run with.")
    s_mean = float(np.mean([stored[s] for s in common]))
    r_mean = float(np.mean([np.mean(base.scores[s]) for s in common]))
    delta = r_mean - s_mean
    k = spec.repeats
    allowed = max(3 * (sd if not math.isnan(sd) else 0.0) * math.sqrt(1 + 1 / k), 0.02)
    mismatch = abs(delta) > allowed
    if mismatch:
        sentence = (f"REPLAY MISMATCH: {metric} re-judged reads {r_mean:.3f} against the stored {s_mean:.3f} "
                    f"({_fmt(delta)}, allowed ±{allowed:.3f}): today's judge or template is not what produced "
                    f"that score; compare the arms with each other, not with the history.")
    else:
        sentence = (f"{metric} re-judged reads {r_mean:.3f} against the stored {s_mean:.3f} ({_fmt(delta)}): the "
                    f"run's score reproduces.")
    return ReplayCheck(metric, s_mean, r_mean, delta, band, mismatch, sentence)


def _four_readings(verdicts: list[ArmVerdict], replay: list[ReplayCheck]) -> FourReadings | None:
    by_arm = {v.arm: v for v in verdicts if v.metric == "faithfulness"}
    gt, ctx = by_arm.get("ground_truth"), by_arm.get("contexts")
    if gt is None or ctx is None or gt.baseline is None or gt.ablated is None or ctx.ablated is None:
        return None
    both = by_arm.get("contexts+ground_truth")
    wired, a, b = gt.baseline, gt.ablated, ctx.ablated
    ind = 1 - (1 - a) * (1 - b)
    noise = gt.noise
    leak = wired - a
    noise_txt = f" (judge repeat band ±{noise:.3f})" if noise else ""
    sentence = (f"Faithfulness reads {wired:.2f} as wired, {a:.2f} with ground_truth blanked and {b:.2f} with "
                f"contexts blanked{noise_txt}. The reference adds {leak:+.2f}; alone it supports {b:.2f} of claims. "
                f"If passages and reference were independent channels of support, together they would give "
                f"1-(1-{a:.2f})(1-{b:.2f}) = {ind:.3f}, against {wired:.3f} as wired.")
    return FourReadings(wired, a, b, both.ablated if both else None, leak, ind, wired - ind, noise, sentence)


def _summary(verdicts: list[ArmVerdict], replay: list[ReplayCheck]) -> str:
    leaks = sorted((v for v in verdicts if v.kind == LEAK), key=lambda v: -abs(v.delta or 0))
    if leaks:
        v = leaks[0]
        ratio = f", {v.ratio:.0f}x the judge repeat band" if v.ratio else ""
        more = f" ({len(leaks) - 1} more leaking cell(s))" if len(leaks) > 1 else ""
        return (f"wiring leak: {v.metric} moves {abs(v.delta or 0):.2f} when {_fields_words(v.arm)} is blanked"
                f"{ratio}{more}.")
    insens = [v for v in verdicts if v.kind == INSENSITIVE]
    if insens:
        v = insens[0]
        return f"miswired: {v.metric} does not move when {_fields_words(v.arm)}, its own input, is blanked."
    if any(v.kind == INCONCLUSIVE for v in verdicts):
        return "inconclusive: some cells could not be decided; see each sentence for why."
    invariant = [v for v in verdicts if v.expected == "invariant"]
    note = " (the re-judged baseline does not reproduce the stored score; see the replay check)" if any(
        r.mismatch for r in replay) else ""
    if invariant:
        return ("invariant: every metric tested is blind to the fields it must never receive, so a jump in "
                f"these metrics is in the pipeline, not the wiring{note}.")
    return f"as expected: every metric moves when its own inputs are blanked{note}."


def per_sample_deltas(store: Store, ablation_id: str, metric: str, arm: str):
    """Per-sample baseline, ablated score and delta (means over repeats), biggest moves first."""
    frame = store.ablation_results(ablation_id)
    part = frame[(frame["metric"] == metric) & (frame["status"] == OK)]
    means = part.groupby(["arm", "sample_id"])["score"].mean().unstack(0)
    if "none" not in means or arm not in means:
        return means.iloc[0:0]
    out = means[["none", arm]].dropna().rename(columns={"none": "baseline", arm: "ablated"})
    out["delta"] = out["ablated"] - out["baseline"]
    return out.reindex(out["delta"].abs().sort_values(ascending=False).index).reset_index()
