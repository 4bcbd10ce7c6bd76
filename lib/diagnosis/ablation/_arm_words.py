"""The swap arms and the positive control in words: what was changed, what moved, and which way.

A swap cell is decided by the same rule as a blank cell (lib.diagnosis.ablation._verdicts.classify) and its
sentence is the blank cell's with the change named ("swapped for another sample's"), plus the sign of the move:
a judge that falls when the reference is another sample's was taking support from its own. The positive
control has sentences of its own (classify_control), and a cell at the floor says what the control showed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from lib.core.metrics import get_metric
from lib.diagnosis.ablation import _verdicts as v
from lib.diagnosis.ablation._arms import is_control, is_swap, tested_fields
from lib.diagnosis.ablation._verdicts import CellEvidence, ControlEvidence, Decision

SWAPPED = "swapped for another sample's"
_KEEP = "\x00"   # marks the floor's own "every field but X blanked" while a swap sentence is reworded


def fields_words(fields: Sequence[str]) -> str:
    """'ground_truth', 'question and ground_truth' (as lib.diagnosis.ablation._verdict_words says them)."""
    names = list(fields)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1] if names else ""


def _num(x: float | None, signed: bool = True) -> str:
    if x is None or math.isnan(x):
        return "n/a"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def verb(arm: str) -> str:
    """What an arm did to its fields: 'blanked', 'swapped for another sample's' or 'given perfect support'."""
    if is_swap(arm):
        return SWAPPED
    return "given perfect support" if is_control(arm) else "blanked"


def arm_label(arm: str) -> str:
    """An arm in a few words, for a list or a chart: 'ground_truth blanked', 'ground_truth swapped ...'."""
    if is_control(arm):
        return "perfect support (positive control)"
    return f"{' + '.join(tested_fields(arm))} {verb(arm)}"


def swap_words(sentence: str) -> str:
    """A blank cell's sentence reworded for a swap arm (the floor's 'every field but X blanked' kept)."""
    out = sentence.replace(" blanked, nothing left", _KEEP)
    for old, new in ((" is blanked", f" is {SWAPPED}"), (" are blanked", " are swapped for other samples'"),
                     ("blanking ", "swapping "), ("Blanking ", "Swapping "), (" blanked", " swapped")):
        out = out.replace(old, new)
    return out.replace(_KEEP, " blanked, nothing left")


def swap_sign(e: CellEvidence, d: Decision) -> str:
    """What the direction of a swap cell's move says ('' when there is none to read)."""
    if not (e.mean is not None and not math.isnan(e.mean)):
        return ""
    words, spec = fields_words(e.fields), get_metric(e.metric)
    if d.kind == v.LEAK and d.why == v.MEASURED:
        if e.mean < 0:
            return (f" Its move has a sign: with another sample's {words} the score falls, so this sample's own "
                    f"{words} was lending its {spec.item_kind}s support (a leak that flatters).")
        return (f" Its move has a sign: with another sample's {words} the score rises: the judge takes support "
                f"from whatever {words} it is shown.")
    if d.kind == v.INSENSITIVE and d.why == v.NULL:
        return f" Given another sample's {words}, the judge scores as before: it ignores the {words} it is shown."
    return ""


def _move(e: ControlEvidence) -> str:
    return f"{_num(e.mean)} (95% CI {_num(e.lo)} to {_num(e.hi)})"


def control_sentence(e: ControlEvidence, d: Decision, *, noise: str, failures: str = "") -> str:
    """The positive control's sentence: its floor, its level with perfect support, and what the change shows
    (`noise`: how the move stands against the judge's repeat band, lib.diagnosis.ablation._verdict_words)."""
    spec = get_metric(e.metric)
    what = f"its {spec.item_kind}s given perfect support ({spec.positive_control}, every other field blanked)"
    levels = (f"{e.metric} gives {_num(e.floor, False)} with nothing to check the {spec.item_kind}s against and "
              f"{_num(e.supported, False)} with {what}")
    n = f"n={e.n} samples"
    head = "(positive control)"
    table = {
        (v.SENSITIVE, v.ROSE): f"SENSITIVE {head}: {levels}: it rises {_move(e)}, {noise}, {n}, as a judge that "
                               f"reads its inputs does.",
        (v.INSENSITIVE, v.IGNORES_INPUTS): f"INSENSITIVE {head}: the judge does not read its inputs: {levels}; it "
                                           f"moves {_move(e)}, {n}, and the interval rules out a rise of "
                                           f"{e.rule_out:.2f}.",
        (v.INCONCLUSIVE, v.FAILURES): f"INCONCLUSIVE {head}: {e.n_failed} of {e.n_units} judgings of the "
                                      f"positive control failed{f' ({failures})' if failures else ''}; too few "
                                      f"scores to say whether perfect support raises {e.metric}.",
        (v.INCONCLUSIVE, v.TOO_FEW): f"INCONCLUSIVE {head}: only {e.n} samples scored both with nothing to check "
                                     f"against and with perfect support; a rise that clears {e.min_effect:.2f} is "
                                     f"decided at any n, but 'does not read its inputs' needs at least "
                                     f"{v.MIN_PAIRED}.",
        (v.INCONCLUSIVE, v.WITHIN_NOISE): f"INCONCLUSIVE {head}: {levels}: it rises {_move(e)}, {n}: beyond its "
                                          f"interval but within {noise}.",
        (v.INCONCLUSIVE, v.SMALL_RISE): f"INCONCLUSIVE {head}: {levels}: it rises {_move(e)}, {n}: a rise (the "
                                        f"interval excludes zero), smaller than the {e.min_effect:.2f} worth naming.",
        (v.INCONCLUSIVE, v.WIDE): f"INCONCLUSIVE {head}: {levels}: it moves {_move(e)}, {n}; a rise of up to "
                                  f"{_num(e.hi, False)} cannot be ruled out, and none beyond {e.min_effect:.2f} is "
                                  f"established.",
    }
    return table[(d.kind, d.why)]


def ignores_inputs_sentence(metric: str, fields: Sequence[str], baseline: float | None, c: ControlEvidence) -> str:
    """A received field's cell with no room to fall, once the positive control shows the judge ignores its inputs."""
    spec = get_metric(metric)
    return (f"INSENSITIVE: the judge does not read its inputs: {metric} is at {_num(baseline, False)}, no higher "
            f"than its floor ({_num(c.floor, False)}, with nothing to check the {spec.item_kind}s against), so "
            f"blanking {fields_words(fields)} cannot lower it; and with perfect support ({spec.positive_control}) "
            f"it gives {_num(c.supported, False)}, {_num(c.mean)} from the floor (95% CI {_num(c.lo)} to "
            f"{_num(c.hi)}, n={c.n}): the score does not depend on what it is shown.")


def floor_control_note(d: Decision, control: Decision | None) -> str:
    """What a cell left at its floor adds once the positive control is read ('' otherwise)."""
    if d.why != v.FLOOR or control is None:
        return ""
    if control.kind == v.SENSITIVE:
        return (" The positive control rises (the judge reads its inputs): the score sits at the judge's floor, "
                "so there is no room to fall.")
    if control.kind == v.INSENSITIVE:
        return " The positive control does not rise: the judge does not read its inputs (see its row)."
    return ""


def insensitive_headline(metric: str, arm: str, n: int) -> str:
    """The headline for an INSENSITIVE cell of a swap arm or the positive control."""
    if is_control(arm):
        spec = get_metric(metric)
        return (f"the judge does not read its inputs: {metric} does not rise when its {spec.item_kind}s get "
                f"perfect support ({spec.positive_control}; n={n} samples).")
    fields = tested_fields(arm)
    return (f"miswired: {metric} does not move when {fields_words(fields)}, its own input, "
            f"{'is' if len(fields) == 1 else 'are'} {SWAPPED} (n={n} samples).")


__all__ = ["SWAPPED", "arm_label", "control_sentence", "floor_control_note", "ignores_inputs_sentence",
           "insensitive_headline", "swap_sign", "swap_words", "verb"]
