"""How many samples the replay check needs: its own interval decides, not where an arm stopped.

The replay check (lib.diagnosis.ablation_analysis.replay_mismatch) reads the
paired interval of (re-judged baseline - stored score) per sample. A
sequential ablation stops each arm once its verdict is decided, and used to
stop the baseline with them (kept to at least REPLAY_MIN samples): the replay
then read whatever the arms left, and "reproduces" meant only "no mismatch
shown on those samples", however wide the interval. Now the baseline is judged
until the replay's own interval is decided:

- reproduced: the interval lies within the tolerance (the smallest effect worth
  naming, or the judge's repeat band when wider), so it rules out a mismatch;
- a mismatch: the interval excludes 0 with a mean beyond the tolerance;

each read at a look with at least `at_least` samples, or when every sample is
judged (then the check says what its interval could and could not rule out).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lib.diagnosis.ablation._analysis import replay_mismatch
from lib.diagnosis.ablation._epochs import replayed
from lib.diagnosis.stats import PairedDiff


def tolerance(min_effect: float, band: float | None) -> float:
    """The move a replay may show and still reproduce: the smallest effect worth naming, or the repeat band."""
    return max(min_effect, band or 0.0)


def within(d: PairedDiff, allowed: float) -> bool:
    """The replay's interval lies inside +-allowed: it rules out a mismatch."""
    return bool(d.n) and d.lo >= -allowed - 1e-9 and d.hi <= allowed + 1e-9


def replay_decided(deltas: Sequence[float], *, min_effect: float, band: float | None, total: int,
                   at_least: int) -> bool:
    """Whether the replay check has the samples it needs (then the baseline may stop with the arms).

    Args:
        deltas: per sample judged so far, re-judged baseline minus stored score.
        min_effect: the smallest effect worth naming.
        band: the judge's repeat band (None: not measured).
        total: the samples the ablation has (judging them all always decides).
        at_least: the fewest samples a decision is read on (sequential_run.REPLAY_MIN).
    """
    n = len(deltas)
    if n >= total:
        return True
    if n < at_least:
        return False
    mismatch, d = replay_mismatch(deltas, min_effect=min_effect, band=band, seed=n)
    return mismatch or within(d, tolerance(min_effect, band))


def replay_deltas(stored: Mapping[str, float], rerun: Mapping[str, Sequence[float]],
                  reduction: tuple[str, int] | None = None, *, repeats_exact: bool = False) -> list[float]:
    """Per sample scored both times (by id), the re-judged value minus the stored score: the mean of its judgings,
    or (a score the tool reduced over its epochs) the same reducer over as many judgings (lib.diagnosis.ablation.
    _epochs.replayed; a sample with fewer is left out)."""
    out = []
    for s in sorted(set(stored) & set(rerun)):
        value = replayed(rerun[s], reduction, repeats_exact=repeats_exact) if rerun[s] else None
        if value is not None:
            out.append(value - stored[s])
    return out


__all__ = ["replay_decided", "replay_deltas", "tolerance", "within"]
