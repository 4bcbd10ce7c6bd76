"""Verdicts in words: each sentence says what was measured, on which samples, and nothing more.

An ablation measures how much a score depends on a field for these samples
with this judge; it does not read code. So a null reads "no dependence
measured on these N samples; the interval rules out a move of X", never
"does not read"; a wiring that renders a forbidden field says so beside the
numbers; a ratio to the noise band is printed only when the band is not zero.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lib.core.endpoints import OFFLINE_PREFIX
from lib.core.metrics import get_metric
from lib.diagnosis.ablation import _arm_words as arm_words
from lib.diagnosis.ablation import _sequential as sequential
from lib.diagnosis.ablation import _verdicts as v
from lib.diagnosis.ablation._arms import CONTROL, is_control, is_swap, tested_fields
from lib.diagnosis.ablation._verdicts import CellEvidence, Decision

if TYPE_CHECKING:
    from lib.diagnosis.ablation._result import ArmVerdict, ReplayCheck


def fields_words(fields: Sequence[str]) -> str:
    """'ground_truth', 'question and ground_truth', 'a, b and c'."""
    names = list(fields)
    if not names:
        return ""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _is(fields: Sequence[str]) -> str:
    return "is" if len(fields) == 1 else "are"


def _num(x: float | None, signed: bool = True) -> str:
    if x is None or math.isnan(x):
        return "n/a"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def noise_words(noise: float | None, mean: float | None, repeats: int, probe: int = 0) -> str:
    """How the move stands against the judge's repeat noise, with no ratio to a zero band.

    `probe` > 0: repeats stopped after the first `probe` samples repeated identically (the rest judged once).
    """
    if probe:
        return (f"repeats stopped (the judge gave identical verdicts in all {repeats} repeats of the first {probe} "
                f"samples, so the rest were judged once; the interval over samples decides)")
    if noise is None:
        return "judge repeat band not measured (1 repeat)"
    if noise == 0:
        return f"repeats identical (judge repeat band 0 over {repeats} repeats; the interval decides)"
    ratio = abs(mean) / noise if mean is not None and not math.isnan(mean) else math.nan
    times = f"{ratio:.1f}x " if not math.isnan(ratio) else ""
    return f"{times}the judge repeat band (±{noise:.3f}, {repeats} repeats)"


def ratio(noise: float | None, mean: float | None) -> float | None:
    """|move| / noise band, only when the band was measured and is not zero."""
    if not noise or mean is None or math.isnan(mean):
        return None
    return abs(mean) / noise


def _move(e: CellEvidence) -> str:
    kind = "CS" if e.sequence else "CI"
    what = ", a confidence sequence: valid at whichever look judging stopped" if e.sequence else ""
    return (f"{e.metric} moves {_num(e.mean)} (95% {kind} {_num(e.lo)} to {_num(e.hi)}{what}) when "
            f"{fields_words(e.fields)} {_is(e.fields)} blanked")


def _shows(e: CellEvidence) -> str:
    """What the interval shows: that it holds 0 and how far it reaches, or the move it shows ('' with none).

    A move is said as its interval's two ends (a fall of 0.015 to 0.042), and whether both lie beyond the smallest
    effect worth naming: the mean alone can be past it while the interval is not.
    """
    if e.lo is None or e.hi is None or math.isnan(e.lo) or math.isnan(e.hi):
        return ""
    it = "the CS" if e.sequence else "the interval"
    if not e.excludes_zero:
        return f"{it} holds 0 and allows a move of up to {_num(e.far, False)}"
    side, near, far = ("fall", -e.hi, -e.lo) if e.hi < 0 else ("rise", e.lo, e.hi)
    beyond = "wholly beyond" if e.beyond_effect else "not wholly beyond"
    return f"{it} excludes 0: a {side} of {near:.3f} to {far:.3f}, {beyond} the {e.min_effect:.2f} worth naming"


def _rules_out(e: CellEvidence) -> str:
    """What a null rules out, and by which interval (a received field's may show a small rise, never a fall)."""
    it = "the CS" if e.sequence else "the interval"
    held = f"{it} holds 0 and rules out" if not e.excludes_zero else f"{_shows(e)}; {it} rules out"
    if e.sequence:
        return (f"{held} a move of {_num(e.far, False)} (a 95% confidence sequence: valid at whichever look judging "
                f"stopped)")
    return f"{held} a move of {_num(e.far, False)}"


def stop_words(reason: str, judged: int, total: int) -> str:
    """Why a sequential ablation stopped judging an arm, and on how many of the samples."""
    if reason == sequential.EXHAUSTED:
        return f"Judged on all {total} samples: no earlier look decided it."
    return f"Judging stopped after {judged} of {total} samples (seeded order): {reason}."


def _static_note(e: CellEvidence) -> str:
    if e.renders is None:
        return (" The scorer is external code that was not read: this says what these samples show, not what "
                "the code reads.")
    shown = [f for f in e.fields if f in e.renders]
    if not shown:
        return f" The run's wiring does not render {fields_words(e.fields)}."
    return f" The run's wiring renders {fields_words(shown)}."


def _measured(e: CellEvidence) -> str:
    """', moves -0.300 (95% CI ...)' when anything was measured, else ''."""
    if e.mean is None or math.isnan(e.mean):
        return ""
    return f" (it moves {_num(e.mean)}, 95% CI {_num(e.lo)} to {_num(e.hi)}: {_shows(e)})"


def _static_measured(e: CellEvidence, failures: str) -> str:
    """What was measured beside a static LEAK: the move, the failures, too few samples, or nothing."""
    parts = []
    if e.mean is not None and not math.isnan(e.mean) and not e.excludes_zero:
        parts.append(f"no effect measured on these {e.n} samples ({_move(e)[len(e.metric) + 1:]}: {_shows(e)})")
    elif e.mean is not None and not math.isnan(e.mean):
        parts.append(f"measured beside it on {e.n} samples: {_move(e)[len(e.metric) + 1:]}, and {_shows(e)}")
    else:
        parts.append("nothing measured beside it")
    if e.n_units and e.n_failed / e.n_units > v.MAX_FAILED_SHARE:
        parts.append(f"{e.n_failed} of {e.n_units} judgings failed{f' ({failures})' if failures else ''}")
    elif 0 < e.n < v.MIN_PAIRED:
        parts.append(f"only {e.n} samples")
    return "; ".join(parts)


def _floor_words(e: CellEvidence) -> str:
    """', only 0.001 above this judge's floor (0.034: ...)' when the ablation measured the floor, else ''."""
    if e.floor is None or math.isnan(e.floor):
        return ""
    spec = get_metric(e.metric)
    return (f", only {_num(max(e.headroom or 0.0, 0.0), False)} above this judge's floor ({_num(e.floor, False)}: "
            f"its score with every field but {spec.items_from} blanked, nothing left to check the {spec.item_kind}s "
            f"against, measured in this ablation)")


def _floor_need(e: CellEvidence) -> str:
    """Why the room above the floor leaves a null undecided: none at all, less than a null must rule out, or an
    interval that reaches beyond half of it. Says the room, never a fall the interval contradicts."""
    room = max(e.headroom or 0.0, 0.0)
    if e.null_bound < 0.0005:
        return (f"is already at {_num(e.baseline, False)}{_floor_words(e)}: blanking {fields_words(e.fields)} cannot "
                f"lower it at all: the judge gives as much with nothing to check against")
    if room < e.rule_out:
        return (f"is already at {_num(e.baseline, False)}{_floor_words(e)}: with {room:.3f} of room to fall, less "
                f"than the {e.rule_out:.3f} a null must rule out, no null can be told from a score with nowhere to go")
    it = "the CS" if e.sequence else "the interval"
    return (f"is at {_num(e.baseline, False)}{_floor_words(e)}: a null must rule out a fall of {e.null_bound:.3f} "
            f"(half the {room:.3f} of room above the floor), and {it} does not")


def sentence(e: CellEvidence, d: Decision, *, repeats: int, failures: str = "", probe: int = 0) -> str:
    """The one sentence a user reads for a cell (`probe`: as for noise_words)."""
    if d.why == v.UNCHANGED:
        return _unchanged_sentence(e, d)
    words, spec = fields_words(e.fields), get_metric(e.metric)
    n = f"n={e.n} samples"
    noise = noise_words(e.noise, e.mean, repeats, probe)
    forbidden = fields_words(e.rendered_forbidden) if e.rendered_forbidden else ""
    received = fields_words([f for f in e.fields if f in spec.receives]) or words
    rendered = (f" The run's wiring renders {forbidden}, which {e.metric} must never receive: not cleared."
                if forbidden else "")
    pronoun = "it" if len(e.fields) == 1 else "them"
    wired = f" The run's wiring renders {forbidden}." if forbidden else ""
    shows = _shows(e)
    at_any_n = ("a dependence the interval shows is decided at any n" if e.expected == v.INVARIANT else
                f"a move that clears {e.min_effect:.2f} is decided at any n")
    wide = (f"{shows}, beyond the {e.null_bound:.3f} a null must rule out: no dependence is shown, and none is ruled "
            f"out" if not e.excludes_zero else
            f"{shows}; it allows a move of up to {_num(e.far, False)}, beyond the {e.null_bound:.3f} a null must rule "
            f"out")
    table = {
        (v.SENSITIVE, v.NOTHING_TO_JUDGE): f"SENSITIVE: blanking {words} leaves {e.metric} nothing to judge (its "
                                           f"{spec.item_kind}s come from {spec.items_from}), as it should.",
        (v.INCONCLUSIVE, v.FAILURES): f"INCONCLUSIVE: {e.n_failed} of {e.n_units} judgings of {e.metric} failed"
                                      f"{f' ({failures})' if failures else ''}; too few scores to say whether "
                                      f"blanking {words} moves it.{rendered}",
        (v.INCONCLUSIVE, v.TOO_FEW): f"INCONCLUSIVE: only {e.n} samples scored in both arms of {e.metric} with "
                                     f"{words} blanked{_measured(e)}; {at_any_n}, but a null needs at least "
                                     f"{v.MIN_PAIRED}.{rendered}",
        (v.INCONCLUSIVE, v.SMALL_FALL): f"INCONCLUSIVE: {_move(e)}, {noise}, {n}: {shows}; {e.metric} receives "
                                        f"{received}, and a fall is not a sign that it ignores {pronoun}.",
        (v.LEAK, v.MEASURED): f"LEAK: {_move(e)}, {noise}, {n}: {shows}. A correctly wired {e.metric} judge never "
                              f"sees {words}; on these samples this one depends on {pronoun}.{wired}",
        (v.LEAK, v.BELOW_EFFECT): f"LEAK: {_move(e)}, {noise}, {n}: {shows}, but a correctly wired {e.metric} judge "
                                  f"never sees {words}, so any dependence on {pronoun} is a leak: on these samples "
                                  f"this one depends on {pronoun}, by about {abs(e.mean or 0.0):.3f}.{wired}",
        (v.SENSITIVE, v.MEASURED): f"SENSITIVE: {_move(e)}, {noise}, {n}: {shows}, as it should: {e.metric} "
                                   f"receives {received}.",
        (v.LEAK, v.STATIC): f"LEAK: the run's wiring renders {forbidden}, which {e.metric} must never receive; "
                            f"{_static_measured(e, failures)}. A wiring that renders it is not cleared by a small "
                            f"move: another field can supply the same support.",
        (v.REPLAY_MISMATCH, v.REPLAY): f"REPLAY MISMATCH: {_move(e)}, {n} ({shows}), but re-judging the "
                                       f"unblanked run does not reproduce its stored {e.metric} score, so this "
                                       f"ablation measured another instrument and cannot clear the run.",
        (v.INCONCLUSIVE, v.WITHIN_NOISE): f"INCONCLUSIVE: {_move(e)}, {n}: {shows}, but its mean is {noise}, "
                                          f"within it: a move re-judging the same outputs makes on its own is not a "
                                          f"measured dependence, and not a null either.",
        (v.INCONCLUSIVE, v.FLOOR): f"INCONCLUSIVE: {e.metric} {_floor_need(e)} ({_move(e)[len(e.metric) + 1:]}, {n}; "
                                   f"{shows}).",
        (v.CLEAN, v.NULL): f"CLEAN: no dependence of {e.metric} on {words} measured on these {e.n} samples: "
                           f"{_move(e)[len(e.metric) + 1:]} ({noise}); {_rules_out(e)}.{_static_note(e)}",
        (v.INSENSITIVE, v.NULL): f"INSENSITIVE: {_move(e)}, {noise}, {n}; {_rules_out(e)} although {e.metric} "
                                 f"receives {received}: on these samples it does not depend on its own input.",
        (v.INCONCLUSIVE, v.WIDE): f"INCONCLUSIVE: {_move(e)}, {n}; {wide}.",
    }
    return table[(d.kind, d.why)]


def _unchanged_sentence(e: CellEvidence, d: Decision) -> str:
    """An arm whose prompts blanking left byte-identical: not re-judged, so nothing here was measured."""
    words = fields_words(e.fields)
    it = "it" if len(e.fields) == 1 else "them"
    same = (f"blanking {it} leaves all {e.unchanged} prompts byte-identical to the baseline's (prompt unchanged: "
            f"not re-judged)")
    table = {
        v.CLEAN: f"CLEAN: the run's wiring does not render {words}, so {same}: the judge is never shown {it}. Nothing "
                 f"was measured here; this is what the template says, as lint does.",
        v.REPLAY_MISMATCH: f"REPLAY MISMATCH: the run's wiring does not render {words}, so {same}; but re-judging "
                           f"the unblanked run does not reproduce its stored {e.metric} score, so the stored "
                           f"template may not be what produced it, and this cannot clear the run.",
        v.INSENSITIVE: f"INSENSITIVE: the run's wiring does not render {words}, which {e.metric} receives, so {same}: "
                       f"the score cannot depend on {it}.",
        v.INCONCLUSIVE: f"INCONCLUSIVE: the run's wiring renders {fields_words(e.rendered_forbidden)}, which "
                        f"{e.metric} must never receive, yet {same}: {words} {_is(e.fields)} empty in every sample, so "
                        f"there is nothing to measure; not cleared.",
    }
    return table[d.kind]


# Measured by tests/benchmarks/bench_offline_reach.py on the public sets in /work/shared/data: HaluEval QA, 1,456
# answers scored, AUC 0.953 (95% CI 0.944 to 0.962); no long-form set with expert claim labels there to measure.
OFFLINE_REACH = (" The offline judge decided this: a lexical stand-in that sees word overlap, not meaning. It "
                 "separates HaluEval's right from hallucinated short answers (AUC 0.95), but a fluent wrong claim "
                 "that reuses the passage's words, or a right one in other words, is beyond it, and it is untested "
                 "on long-form answers. It shows what the wiring renders; its CLEAN is not a model judge's CLEAN.")


def reach_note(judge: str | None, on_demo: bool) -> str:
    """OFFLINE_REACH when the offline judge decided an ablation on data other than the demo, else ''."""
    return OFFLINE_REACH if judge is not None and judge.startswith(OFFLINE_PREFIX) and not on_demo else ""


def judge_note(judge: str | None, recorded: dict[str, str | None]) -> str:
    """Names the judge when it is not the one that recorded the run ('' when it is, or for a scorer)."""
    if judge is None:
        return ""
    others = {m: j for m, j in recorded.items() if j != judge}
    if not others:
        return ""
    own = ", ".join(f"{j or 'unrecorded'} for {m}" for m, j in others.items())
    return f"judge {judge}, not the run's own judge ({own})"


def _leak_headline(c: ArmVerdict, more: int) -> str:
    fields = list(tested_fields(c.arm))   # a swap arm's too ('swap:ground_truth')
    extra = f" ({more} more leaking cell(s))" if more else ""
    if c.why == v.STATIC:
        forbidden = [f for f in fields if c.renders and f in c.renders]
        return (f"wiring leak: {c.metric}'s wiring renders {fields_words(forbidden)}, which it must never receive "
                f"(no effect measured on these {c.n} samples){extra}.")
    times = f", {c.ratio:.1f}x the judge repeat band" if c.ratio else ""
    together = " together" if len(fields) > 1 else ""
    small = (f": a small leak, its interval not wholly beyond the {c.min_effect or v.MIN_EFFECT:.2f} worth naming, "
             f"but a leak" if c.why == v.BELOW_EFFECT else "")
    return (f"wiring leak: {c.metric} moves {_size(c.delta or 0.0)} when {fields_words(fields)} {_is(fields)} "
            f"{arm_words.verb(c.arm)}{together} ({c.interval_words} {_num(c.lo)} to {_num(c.hi)}, n={c.n}{times})"
            f"{small}{extra}.")


def _size(x: float) -> str:
    """A move in the headline: two places, three below 0.05 (a small leak must not read as -0.03 or -0.00)."""
    return f"{x:+.2f}" if abs(x) >= 0.05 else f"{x:+.3f}"


def repeats_words(repeats: int, probe: int) -> str:
    """What an ablation whose repeats stopped says about it ('' when they did not)."""
    if not probe:
        return ""
    return (f" Repeats stopped: the judge gave identical verdicts in all {repeats} repeats of the first {probe} "
            f"samples, so the rest were judged once and the verdicts rest on the paired interval over samples.")


def sequential_words(cells: Sequence[ArmVerdict], total: int) -> str:
    """What a sequential ablation says about its arms: how many a look decided, how many were judged in full."""
    judged = [c for c in cells if c.stop]
    early = [c for c in judged if c.stop != sequential.EXHAUSTED]
    if not judged:
        return ""
    rest = f", the rest judged on all {total} samples" if len(early) < len(judged) else ""
    return (f" Judged sequentially (seeded order, a look every {sequential.CHUNK} samples): {len(early)} of "
            f"{len(judged)} measured arms stopped once decided by a 95% confidence sequence{rest}.")


def _unchanged_words(cells: Sequence[ArmVerdict]) -> str:
    same = [c for c in cells if c.why == v.UNCHANGED]
    if not same:
        return ""
    which = fields_words(list(dict.fromkeys(f"{c.metric} with {' and '.join(tested_fields(c.arm))} "
                                            f"{arm_words.verb(c.arm)}" for c in same)))
    return f" Not re-judged (prompt unchanged, nothing measured): {which}."


def headline(cells: Sequence[ArmVerdict], replay: Sequence[ReplayCheck], note: str = "", *, repeats: int = 0,
             probe: int = 0) -> str:
    """The ablation's one-line summary: the worst finding first; never a claim about a jump between runs.

    `probe` > 0: the repeats stopped after that many samples repeated identically (said at the end).
    """
    return _headline(cells, replay, note) + _unchanged_words(cells) + repeats_words(repeats, probe)


def _headline(cells: Sequence[ArmVerdict], replay: Sequence[ReplayCheck], note: str) -> str:
    prefix = f"With {note}: " if note else ""
    mismatched = [r.metric for r in replay if r.mismatch]
    unreplayed = [r.metric for r in replay if r.mismatch and r.rerun is None]   # too few judgings to reduce
    not_reproduced = (f" Re-judging {fields_words(mismatched)} does not reproduce the stored score, so nothing "
                      f"here can clear the run." if mismatched else "")
    if unreplayed and len(unreplayed) == len(mismatched):
        not_reproduced = (f" The stored score of {fields_words(unreplayed)} is reduced over epochs this ablation "
                          f"did not repeat (see the replay check), so nothing here can clear the run.")
    leaks = sorted((c for c in cells if c.kind == v.LEAK), key=lambda c: (c.why == v.STATIC, -abs(c.delta or 0)))
    if leaks:
        return prefix + _leak_headline(leaks[0], len(leaks) - 1) + not_reproduced
    # the positive control's finding first: it says why a cell at the judge's floor does not move
    insensitive = sorted((c for c in cells if c.kind == v.INSENSITIVE), key=lambda c: c.arm != CONTROL)
    if insensitive:
        c = insensitive[0]
        if is_control(c.arm) or is_swap(c.arm):
            return prefix + arm_words.insensitive_headline(c.metric, c.arm, c.n) + not_reproduced
        fields = c.arm.split("+")
        if c.why == v.UNCHANGED:
            return (prefix + f"miswired: {c.metric}'s wiring does not render {fields_words(fields)}, its own "
                    f"input, so blanking it changes no prompt." + not_reproduced)
        return (prefix + f"miswired: {c.metric} does not move when {fields_words(fields)}, its own input, "
                f"{_is(fields)} blanked (n={c.n} samples)." + not_reproduced)
    if mismatched and len(unreplayed) == len(mismatched):
        return (prefix + f"not replayed: the stored score of {fields_words(unreplayed)} is reduced over more epochs "
                f"than this ablation judged each sample, so it cannot be reproduced and this ablation cannot clear "
                f"the run (see the replay check).")
    if mismatched:
        return (prefix + f"not reproduced: re-judging {fields_words(mismatched)} does not reproduce the stored "
                f"score, so this ablation measured another instrument and cannot clear the run (see the replay "
                f"check).")
    if any(c.kind in (v.INCONCLUSIVE, v.REPLAY_MISMATCH) for c in cells):
        return prefix + "inconclusive: some cells could not be decided; see each sentence for why."
    measured = [c for c in cells if c.why != v.UNCHANGED]
    if cells and not measured:
        return prefix + ("not re-judged: the run's wiring renders none of the fields blanked, so every prompt is "
                         "unchanged and nothing was measured; the templates, not a measurement, say the judge is "
                         "never shown them. Whether a jump between two runs came from the instrument or the outputs "
                         "is the split of that jump (Compare).")
    cells = measured
    nulls = [c for c in cells if c.expected == v.INVARIANT]
    if nulls:
        ends = [abs(x) for c in nulls for x in (c.lo, c.hi) if x is not None and not math.isnan(x)]
        far = f" and rules out a move of {max(ends):.3f}" if ends else ""
        return (prefix + f"no dependence measured: on these {_n_words(nulls)} samples no metric tested depends on "
                f"a field it must never receive, blanked alone or together: every interval holds 0{far}. This "
                f"describes the run's wiring on these samples; whether a jump between two runs came from the "
                f"instrument or the outputs is the split of that jump (Compare).")
    return (prefix + f"as expected: every metric tested moves when its own inputs are blanked (n={_n_words(cells)} "
            f"samples).")


def _n_words(cells: Sequence[ArmVerdict]) -> str:
    """The samples the cells measured: '200', or '20 to 200' when they differ (cells that judged none left out)."""
    ns = [c.n for c in cells if c.n > 0]
    if not ns:
        return "0"
    return f"{min(ns)}" if min(ns) == max(ns) else f"{min(ns)} to {max(ns)}"


NOT_REACHED = re.compile(r"the blank did not reach the judge: (\w+)'s text is still in its prompt")


def not_reached(reasons: Counter) -> str | None:
    """The sentence for a cell whose blank a tool's grader prompts prove did not reach the judge (the re-scorer's
    reason, lib.judging.scorers.inspect_score_worker), instead of a verdict; None when no sample says so."""
    fields: Counter = Counter()
    for reason, n in reasons.items():
        match = NOT_REACHED.search(str(reason))
        if match:
            fields[match.group(1)] += n
    if not fields:
        return None
    field, n = fields.most_common(1)[0]
    return (f"NO VERDICT: the blank did not reach the judge: {field}'s text is still in its prompt ({n} of the "
            f"tool's grader prompts show it; another key of the sample carries it): nothing was measured of "
            f"blanking it.")
