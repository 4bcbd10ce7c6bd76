"""A scorer's `many` form: several lists of samples (an ablation's arms and repeats) scored in one call."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from lib.core.samples import EvalSample

T = TypeVar("T")


def in_one_call(score: Callable[[list[EvalSample]], list[T]],
                groups: Sequence[Sequence[EvalSample]]) -> list[list[T]]:
    """`score` over every group's samples at once (one start of a tool's worker), split back into the groups."""
    flat = score([s for group in groups for s in group])
    out, at = [], 0
    for group in groups:
        out.append(flat[at:at + len(group)])
        at += len(group)
    return out
