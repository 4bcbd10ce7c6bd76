"""An ablation's plan: its samples and instruments, the arms that need no call, and the repeats that can stop.

Two economies, both decided from what the ablation can see before or while
it judges, never guessed:

- An arm whose blanked prompts are byte-identical to the baseline's (the run's
  template and binding render none of the blanked fields) would ask the judge
  the same question again. It is not re-judged: `Plan.unchanged` names it,
  its judgings are counted as not re-judged, and its verdict says the prompt
  did not change (lib.diagnosis.ablation._verdicts, UNCHANGED) instead of presenting a noise-free
  equality as a measurement.
- A judge that answers the same request the same way every time (a model at
  temperature 0, whose seed changes nothing) makes repeats cost calls and
  measure nothing. The baseline's first samples (`probe_size`: a quarter of
  them, at least 3 and at most `PROBE`, so a 12-sample ablation probes 3) are
  judged in every repeat first; when every one of them gives identical
  verdicts in every repeat (`identical_repeats`), the rest of the ablation is
  judged once, and the verdict rests on the paired interval over samples.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import pandas as pd

from lib.core.errors import EvaldriftError, InputError, NotFoundError
from lib.core.prompts import build_prompt
from lib.core.results import EXCLUDED, FAILED, OK
from lib.core.samples import EvalSample, arm_fields, blank
from lib.diagnosis.ablation._arms import CONTROL, arm_sample, is_swap, partners, tested_fields
from lib.diagnosis.ablation._floor import floor_arm, same_prompts
from lib.diagnosis.ablation._sequential import seeded_order
from lib.judging.harness import Instrument

if TYPE_CHECKING:
    from lib.diagnosis.ablation._spec import AblationSpec
    from lib.store import Store

BASELINE = "none"
PROBE = 20          # the most samples whose baseline is judged in every repeat before repeats may stop
SMALL_PROBE = 3     # the fewest (a probe costs its size x (repeats - 1) calls more than one pass)
MIN_PROBED = 10     # judged (not excluded) probe samples needed to call the judge deterministic, at most


def probe_size(n: int) -> int:
    """The samples probed for identical repeats among n: a quarter, at least SMALL_PROBE, at most PROBE."""
    return min(PROBE, max(SMALL_PROBE, math.ceil(n / 4)))


def min_probed(probe: int) -> int:
    """Judged samples a probe of this size needs to call the judge deterministic: half, at most MIN_PROBED."""
    return min(MIN_PROBED, math.ceil(probe / 2))

Key = tuple[str, str, int, str]   # a stored result's key: (metric, arm, repeat, sample id)


class Unit(NamedTuple):
    """One judging of an ablation: a sample, in one arm of one metric, in one repeat."""

    metric: str
    arm: str
    rep: int
    sample: EvalSample


def as_wired_prompts(samples: Sequence[EvalSample], instrument: Instrument) -> list[object] | None:
    """Each sample's judge prompt (and items) as wired, or None when one cannot be built (a wiring error)."""
    try:
        return [build_prompt(instrument.template, instrument.metric, s, instrument.binding) for s in samples]
    except (EvaldriftError, ValueError):
        return None


def prompt_unchanged(samples: Sequence[EvalSample], instrument: Instrument, fields: Sequence[str] | str,
                     pairs: Mapping[str, EvalSample] | None = None, *,
                     before: Sequence[object] | None = None) -> bool:
    """True when blanking `fields` (or applying an arm, named by a string) leaves every sample's judge prompt
    (and items) byte-identical.

    A prompt that cannot be built (a wiring error) counts as changed: the
    judging path records that failure as it always did. `before`: the samples' prompts as wired
    (as_wired_prompts), built once for every arm of a metric rather than once an arm.
    """
    if before is None:
        before = as_wired_prompts(samples, instrument)
        if before is None:
            return False
    for s, wired in zip(samples, before, strict=True):
        try:
            changed = (arm_sample(s, instrument.metric, fields, pairs) if isinstance(fields, str)
                       else blank(s, fields))
            after = build_prompt(instrument.template, instrument.metric, changed, instrument.binding)
        except (EvaldriftError, ValueError):
            return False
        if wired != after:
            return False
    return bool(samples)


@dataclass(frozen=True)
class Plan:
    """What an ablation judges.

    Attributes:
        spec: the ablation.
        samples: the samples, in id order (the first `limit` when limited); a sequential ablation's in the
            order its seed fixes (lib.diagnosis.ablation._sequential.seeded_order), the order they are judged in.
        instruments: per metric, the run's template and binding.
        fields: the fields the run's samples came with.
        unchanged: the (metric, arm) cells whose prompts blanking leaves unchanged (never judged); the floor
            arm too, when its prompts are (then the floor is the baseline).
        floor_alias: per metric, a judged arm whose prompts equal the floor arm's in every sample (a template
            that renders no field but the metric's own two): the floor is read from it, never judged twice.
        pairs: each sample's swap partner (lib.diagnosis.ablation._arms.partners), when the spec swaps fields.
    """

    spec: AblationSpec
    samples: tuple[EvalSample, ...]
    instruments: dict[str, Instrument]
    fields: tuple[str, ...]
    unchanged: frozenset[tuple[str, str]]
    floor_alias: dict[str, str] = field(default_factory=dict)
    pairs: dict[str, EvalSample] = field(default_factory=dict)

    def arm_sample(self, sample: EvalSample, metric: str, arm: str) -> EvalSample:
        """What the judge is shown of the sample in this arm (blanked, swapped or perfectly supported)."""
        return arm_sample(sample, metric, arm, self.pairs)

    def arms_for(self, metric: str) -> tuple[str, ...]:
        """The baseline, the arms asked for and the metric's joint arm (unchanged ones included)."""
        return self.spec.arms_for(metric, self.fields)

    def judged_arms(self, metric: str) -> tuple[str, ...]:
        return tuple(a for a in self.arms_for(metric) if (metric, a) not in self.unchanged)

    def floor_arm(self, metric: str) -> str | None:
        """The arm that measures the judge's floor for the metric (lib.diagnosis.ablation_floor), or the judged
        arm that asks the same questions."""
        return self.floor_alias.get(metric) or floor_arm(metric, self.fields)

    def measured_arms(self, metric: str) -> tuple[str, ...]:
        """arms_for, and the floor arm when it is not one of them and some arm is judged (a null to read it),
        with the positive control beside it (lib.diagnosis.ablation._arms): every arm an ablation judges or reads."""
        floor, arms = self.floor_arm(metric), self.arms_for(metric)
        if floor is None or all((metric, a) in self.unchanged for a in arms[1:]):
            return arms
        return tuple(dict.fromkeys((*arms, floor, CONTROL)))

    def judged_control(self, metric: str) -> str | None:
        """The positive-control arm when the ablation judges it (beside a measured floor), else None."""
        return CONTROL if CONTROL in self.measured_arms(metric) else None

    def judged_floor(self, metric: str) -> str | None:
        """The floor arm when it is judged as an arm of its own (not a cell's arm, not unchanged), else None."""
        floor = self.floor_arm(metric)
        if floor is None or floor in self.arms_for(metric) or floor not in self.measured_arms(metric) \
                or (metric, floor) in self.unchanged:
            return None
        return floor

    @property
    def planned(self) -> int:
        """Every judging the spec asks for: metrics x arms (the floor arm too) x repeats x samples."""
        return sum(len(self.measured_arms(m)) for m in self.spec.metrics) * self.spec.repeats * len(self.samples)

    @property
    def not_rejudged(self) -> int:
        """Judgings of unchanged arms: answered by the baseline's prompt, never sent."""
        counted = [(m, a) for m, a in self.unchanged if a in self.measured_arms(m)]   # a floor left out: no count
        return len(counted) * self.spec.repeats * len(self.samples)

    @property
    def total(self) -> int:
        """Judgings to make when every repeat runs."""
        return self.planned - self.not_rejudged

    @property
    def probes(self) -> bool:
        """Repeats can stop: there are repeats, and samples beyond the probe to save them on."""
        n = len(self.samples)
        return self.spec.scorer is None and self.spec.repeats >= 2 and n > probe_size(n)

    @property
    def probe_ids(self) -> tuple[str, ...]:
        return tuple(s.sample_id for s in self.samples[:probe_size(len(self.samples))]) if self.probes else ()

    def units(self, done: set[Key]) -> list[Unit]:
        """The judgings left, the probe first (the baseline's first probe_size samples in every repeat)."""
        spec = self.spec
        probe = set(self.probe_ids)
        todo = [Unit(m, arm, rep, s) for m in spec.metrics for arm in self.measured_arms(m)
                if (m, arm) not in self.unchanged for rep in range(spec.repeats)
                for s in self.samples if (m, arm, rep, s.sample_id) not in done]
        first = [u for u in todo if u.arm == BASELINE and u.sample.sample_id in probe]
        return first + [u for u in todo if not (u.arm == BASELINE and u.sample.sample_id in probe)]

    def repeats_stopped(self, frame: pd.DataFrame) -> bool:
        """The probe's stored results show identical repeats: the rest is judged once."""
        return self.probes and identical_repeats(frame, self.spec.metrics, self.probe_ids, self.spec.repeats)


def plan(store: Store, spec: AblationSpec) -> Plan:
    """Read the run's samples and instruments, check the arms, and find the arms that need no call."""
    store.run(spec.run_id)
    samples = store.samples(spec.run_id, spec.suite)
    if not samples:
        raise NotFoundError(f"run {spec.run_id!r} has no samples in suite {spec.suite!r}")
    if spec.limit:
        samples = samples[: spec.limit]
    if spec.sequential:   # judged in an order fixed by the seed: each judged prefix is a random sample
        by_id = {s.sample_id: s for s in samples}
        samples = [by_id[i] for i in seeded_order(list(by_id), spec.seed)]
    had = store.run_fields(spec.run_id)
    for arm in spec.arms:
        missing = [f for f in tested_fields(arm) if f not in had]
        if missing:
            verb = "swap" if is_swap(arm) else "blank"
            raise InputError(f"run {spec.run_id!r} has no {missing[0]} to {verb} (its samples came with "
                             f"{', '.join(had)})", field=verb)
    pairs = partners(samples, spec.swap_seed or 0) if spec.swaps else {}
    if spec.swaps and not pairs:
        raise InputError(f"run {spec.run_id!r} has {len(samples)} sample(s) here: a swap needs two or more",
                         field="swap")
    instruments = {}
    for m in spec.metrics:
        inst = store.instrument(spec.run_id, m, spec.suite)
        if spec.scorer is None and (inst.template is None or inst.binding is None):
            raise InputError(f"run {spec.run_id!r} recorded no template or binding for {m!r} (unattributed "
                             f"scores); ablate it through its own harness with a scorer", field="metric")
        instruments[m] = Instrument(m, inst.template or "", inst.binding or "projected")
    unchanged: set[tuple[str, str]] = set()
    if spec.scorer is None:  # an external scorer's prompts are its own: nothing to compare
        for m in spec.metrics:
            floor = floor_arm(m, had)
            arms = dict.fromkeys((*spec.arms_for(m, had)[1:], *([floor] if floor else [])))
            wired = as_wired_prompts(samples, instruments[m])   # once a metric: every arm compares with it
            if wired is None:
                continue   # a prompt that cannot be built counts as changed in every arm
            unchanged.update((m, arm) for arm in arms if prompt_unchanged(
                samples, instruments[m], arm if is_swap(arm) else arm_fields(arm), pairs, before=wired))
    alias: dict[str, str] = {}
    for m in spec.metrics if spec.scorer is None else ():
        floor = floor_arm(m, had)
        cells = [a for a in spec.arms_for(m, had)[1:] if (m, a) not in unchanged and not is_swap(a)]
        if floor is None or floor in cells or (m, floor) in unchanged:
            continue
        same = next((a for a in cells if same_prompts(samples, instruments[m], arm_fields(floor), arm_fields(a))), None)
        if same is not None:
            alias[m] = same
    return Plan(spec, tuple(samples), instruments, had, frozenset(unchanged), alias, pairs)


def identical_repeats(frame: pd.DataFrame, metrics: Sequence[str], probe_ids: Sequence[str], repeats: int) -> bool:
    """True when the baseline's probe samples gave identical verdicts in every repeat, for every metric.

    Needs every probe judging stored, none failed (a failure says nothing
    about determinism), at least min_probed judged (not excluded) samples per
    metric, and per sample the same item labels and score in all `repeats`.
    """
    if repeats < 2:
        return False
    part = frame[(frame["arm"] == BASELINE) & frame["metric"].isin(list(metrics))
                 & frame["sample_id"].isin(list(probe_ids))]
    if len(part) < len(metrics) * len(probe_ids) * repeats or (part["status"] == FAILED).any():
        return False
    for _, rows in part.groupby("metric"):
        judged = 0
        for _, reps in rows.groupby("sample_id"):
            if (reps["status"] == EXCLUDED).all():
                continue
            if not (reps["status"] == OK).all():
                return False
            answers = {(float(r.score), tuple(bool(x["label"]) for x in json.loads(r.verdicts)))
                       for r in reps.itertuples(index=False)}
            if len(answers) != 1:
                return False
            judged += 1
        if judged < min_probed(len(probe_ids)):
            return False
    return True
