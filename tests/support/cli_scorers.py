"""Tiny external scorers (`module:function`) for the CLI tests of `ablate --scorer`."""

from __future__ import annotations

from collections.abc import Sequence

from lib.core.samples import EvalSample


def mostly_failing(samples: Sequence[EvalSample]) -> list[float | None]:
    """A harness that fails on three samples in four: None is failed, never 0."""
    return [0.5 if i % 4 == 0 else None for i, _ in enumerate(samples)]


def reads_reference(samples: Sequence[EvalSample]) -> list[float | None]:
    """A faithfulness harness with a leak in code: it credits any answer whose sample has a reference."""
    return [1.0 if s.ground_truth else 0.5 for s in samples]
