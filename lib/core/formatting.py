"""Numbers as every page and sentence writes them, so a tile and a sentence about the same change agree."""

from __future__ import annotations


def signed(value: float, places: int = 3) -> str:
    """A change with its sign, rounded to `places`; a change that rounds to zero is "+0.000", never "-0.000"."""
    return f"{round(value, places) + 0.0:+.{places}f}"
