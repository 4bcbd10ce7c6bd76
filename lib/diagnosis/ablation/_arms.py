"""The arms that change a field instead of blanking it: the swap arms and the positive control.

A blank arm removes a field; two more kinds of arm change what the judge is shown and keep the samples paired:

- **A swap arm** (`swap:ground_truth`) gives every sample another sample's value of the field: the run's samples
  in id order, paired by a derangement seeded by the spec's `swap_seed` (derived from the run id unless given, and
  recorded in the spec), so no sample keeps its own and the pairing is the same on every machine. Blanking shows a
  field reaches the judge; swapping shows the judge uses it, and which way: a faithfulness judge that falls when
  only the reference is another sample's was taking support from the reference (a leak that flatters); an
  answer_correctness judge that does not move when its reference is swapped ignores it (INSENSITIVE).
- **The positive control** (`support`, one per metric) gives the items perfect support: every field but the items'
  own blanked, as in the floor arm (lib.diagnosis.ablation._floor), and the field they are judged against set to
  the items' own text (the wiring table's `positive_control`: for faithfulness, passages that state the answer's
  own claims). A judge that reads its inputs rises above its floor; one that does not (a constant scorer) stays,
  and its verdict says so (lib.diagnosis.ablation._verdicts.classify_control).
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from collections.abc import Mapping, Sequence
from typing import Any

from lib.core.errors import InputError
from lib.core.metrics import get_metric
from lib.core.samples import BLANKABLE, CONTEXTS, EvalSample, arm_fields, arm_name, blank

SWAP = "swap:"        # a swap arm's name: this prefix and the fields swapped, joined by '+'
CONTROL = "support"   # the positive-control arm: the items given perfect support
SWAPPABLE = ("ground_truth", "question")   # the fields a swap arm may exchange between samples


def swap_arm(fields: Sequence[str]) -> str:
    """The swap arm's name for these fields ('swap:ground_truth'; 'swap:question+ground_truth')."""
    return SWAP + arm_name(fields)


def is_swap(arm: str) -> bool:
    return arm.startswith(SWAP)


def is_control(arm: str) -> bool:
    return arm == CONTROL


def tested_fields(arm: str) -> tuple[str, ...]:
    """The fields an arm tests: blanked, or swapped ('swap:ground_truth' -> ('ground_truth',))."""
    return arm_fields(arm[len(SWAP):]) if is_swap(arm) else arm_fields(arm)


def blanked_fields(arm: str) -> tuple[str, ...]:
    """The fields an arm empties (a swap or the control empties none the items come from: nothing excluded)."""
    return () if is_swap(arm) or is_control(arm) else arm_fields(arm)


def parse_swap(text: str) -> str:
    """A swap arm from what a user typed ('ground_truth', 'question+ground_truth' or 'swap:ground_truth').

    Raises:
        InputError: a field that cannot be swapped (only ground_truth and question are).
    """
    body = text[len(SWAP):] if is_swap(text) else text
    try:
        fields = arm_fields(body)
    except KeyError as exc:
        raise InputError(f"{exc.args[0]}; swappable: {', '.join(SWAPPABLE)}", field="swap") from None
    bad = [f for f in fields if f not in SWAPPABLE]
    if not fields or bad:
        raise InputError(f"cannot swap {bad[0] if bad else 'nothing'}; swappable: {', '.join(SWAPPABLE)}",
                         field="swap")
    return swap_arm(fields)


def swap_seed(run_id: str) -> int:
    """The default seed of a run's swap pairing: from its id, so the same run pairs the same way everywhere."""
    return int(hashlib.sha256(run_id.encode()).hexdigest()[:8], 16)


def derangement(ids: Sequence[str], seed: int) -> dict[str, str]:
    """Each id's partner: the ids in id order shuffled by `seed`, each paired with the next in one cycle.

    One cycle through every id (Sattolo's form), so no id is its own partner and each is some other's
    partner exactly once. Fewer than two ids have no derangement (an empty pairing).
    """
    order = sorted(ids)
    if len(order) < 2:
        return {}
    random.Random(seed).shuffle(order)
    return {a: order[(i + 1) % len(order)] for i, a in enumerate(order)}


def partners(samples: Sequence[EvalSample], seed: int) -> dict[str, EvalSample]:
    """Each sample's swap partner (another sample), by the seeded derangement of their ids."""
    by_id = {s.sample_id: s for s in samples}
    return {a: by_id[b] for a, b in derangement(list(by_id), seed).items()}


def _text(sample: EvalSample, field: str) -> str:
    value = sample.field(field)
    return " ".join(value) if isinstance(value, tuple) else value


def supported(sample: EvalSample, metric: str) -> EvalSample:
    """The positive control of a sample: every field but the items' own blanked, and the field the items are
    judged against set to the items' own text (the wiring table's `positive_control`)."""
    spec = get_metric(metric)
    out = blank(sample, [f for f in BLANKABLE if f != spec.items_from])
    value: Any = _text(sample, spec.control_from)
    if spec.against == CONTEXTS:
        source = sample.field(spec.control_from)
        value = tuple(p for p in source if p.strip()) if isinstance(source, tuple) else (str(value),)
    return _replace(out, spec.against, value)


def _replace(sample: EvalSample, field: str, value: Any) -> EvalSample:
    return dataclasses.replace(sample, **{field: value})


def swapped(sample: EvalSample, fields: Sequence[str], partner: EvalSample) -> EvalSample:
    """The sample with `fields` taken from its partner."""
    out = sample
    for f in fields:
        out = _replace(out, f, partner.field(f))
    return out


def arm_sample(sample: EvalSample, metric: str, arm: str, pairs: Mapping[str, EvalSample] | None = None
               ) -> EvalSample:
    """What the judge is shown of `sample` in an arm: blanked, swapped with its partner, or perfectly supported.

    Raises:
        InputError: a swap arm with no partner for the sample (fewer than two samples).
    """
    if is_control(arm):
        return supported(sample, metric)
    if is_swap(arm):
        partner = (pairs or {}).get(sample.sample_id)
        if partner is None:
            raise InputError(f"sample {sample.sample_id!r} has no swap partner: a swap needs two samples or more",
                             field="swap")
        return swapped(sample, tested_fields(arm), partner)
    return blank(sample, arm_fields(arm))


__all__ = ["CONTROL", "SWAP", "SWAPPABLE", "arm_sample", "blanked_fields", "derangement", "is_control", "is_swap",
           "parse_swap", "partners", "supported", "swap_arm", "swap_seed", "swapped", "tested_fields"]
