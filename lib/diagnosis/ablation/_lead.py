"""An ablation's headline as a page shows it: one sentence first, the caveats apart, said once.

The stored summary (lib.diagnosis.ablation._verdict_words.headline) runs the verdict, the replay check, how the
repeats and the sequential looks stopped and the offline judge's reach into one paragraph. Pages, the Review and
the Overview lead with one sentence (verdict, field, change, interval, n) and put the rest in small print. A
measured leak's sentence is said from its cell, to the cell sentences' three places (the summary rounds to two)
and with the other leaking arms named; any other verdict leads with the summary's first sentence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from lib.diagnosis.ablation import _verdicts as v
from lib.diagnosis.ablation._result import ArmVerdict
from lib.diagnosis.ablation._verdict_words import fields_words

# A sentence ends at a full stop followed by a space and a capital: decimals ("0.134"), model names
# ("gpt-4.1-mini") and "(Compare)." inside a sentence do not split it.
_SENTENCE_END = re.compile(r"(?<=\.)\s+(?=[A-Z])")


@dataclass(frozen=True)
class Headline:
    """An ablation's summary split for a page: the one sentence to read first, and its caveats."""

    lead: str
    caveats: tuple[str, ...] = ()

    @property
    def small_print(self) -> str:
        """The caveats in one paragraph ('' when there are none)."""
        return " ".join(self.caveats)


def sentences(text: str) -> list[str]:
    """`text` cut into sentences (see _SENTENCE_END); empty pieces dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def _arm_words(c: ArmVerdict) -> str:
    fields = c.arm.split("+")
    together = " together" if len(fields) > 1 else ""
    return f"{fields_words(fields)} {'is' if len(fields) == 1 else 'are'} blanked{together}"


def _signed(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def _leak_lead(top: ArmVerdict, others: Sequence[ArmVerdict], prefix: str) -> str:
    times = f", {top.ratio:.1f}x the judge repeat band" if top.ratio else ""
    text = (f"{prefix}wiring leak: {top.metric} moves {_signed(top.delta)} when {_arm_words(top)} "
            f"({top.interval_words} {_signed(top.lo)} to {_signed(top.hi)}, n={top.n} samples{times})")
    if others:   # named, never counted as "cells": the user reads arms and metrics, not a grid
        also = [("" if c.metric == top.metric else f"{c.metric} ") + f"{_signed(c.delta)} when {_arm_words(c)}"
                if c.why != v.STATIC else f"{c.metric}'s wiring renders {c.arm.replace('+', ' and ')}"
                for c in others]
        text += f"; also {fields_words(also)}"
    return text + "."


def split_headline(cells: Sequence[ArmVerdict], summary: str) -> Headline:
    """The lead sentence and the caveats of an ablation's stored `summary`.

    Args:
        cells: the ablation's verdicts (AblationResult.verdicts).
        summary: its stored summary (AblationResult.summary).

    Returns:
        A measured leak: the largest leaking move said from its cell, with the other leaking arms; otherwise the
        summary's first sentence. The caveats are the summary's other sentences, in order.
    """
    said = sentences(summary)
    if not said:
        return Headline("")
    first, rest = said[0], tuple(said[1:])
    # only blank arms ('ground_truth', 'question+ground_truth') are said here; an arm of another kind (a name with
    # a ':', e.g. a swap) leads with the summary's own words
    measured = sorted((c for c in cells if c.kind == v.LEAK and c.why == v.MEASURED and c.delta is not None
                       and ":" not in c.arm), key=lambda c: -abs(c.delta or 0.0))
    if not measured or "wiring leak:" not in first:
        return Headline(first, rest)
    prefix = first[:first.index("wiring leak:")]   # "With judge X, not the run's own judge (...): "
    others = [c for c in cells if c.kind == v.LEAK and c is not measured[0] and ":" not in c.arm]
    return Headline(_leak_lead(measured[0], others, prefix), rest)
