"""Strict JSON reading for files from outside: every way a parse can go wrong is a ValueError.

Python's json module accepts things a hand-over file must not carry, and
fails on others with errors that are not ValueError:
- an object with a key given twice keeps the last value, silently;
- a number with thousands of digits raises ValueError (int conversion limit)
  or, once converted, OverflowError wherever it meets a float;
- nesting thousands deep raises RecursionError.
`loads` refuses a doubled key and deep nesting with a `JsonProblem`, and
reads an integer of more than MAX_DIGITS digits as a `HugeNumber`, which is
neither a number nor text, so the field check that meets it refuses it by
name (row and field) instead of a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_DIGITS = 30  # longer integers are no score, count or id anyone writes on purpose


class JsonProblem(ValueError):
    """The text is not JSON this project accepts. `.field` names the key at fault, when known."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise JsonProblem(f"key {key!r} appears twice in one object (which value is meant is not ours to guess)",
                              field=key)
        out[key] = value
    return out


@dataclass(frozen=True)
class HugeNumber:
    """An integer too long to be a value anyone means; every field check refuses it."""

    digits: int

    def __repr__(self) -> str:
        return f"an integer of {self.digits} digits"


def _bounded_int(text: str) -> int | HugeNumber:
    digits = len(text.lstrip("-"))
    return HugeNumber(digits) if digits > MAX_DIGITS else int(text)


def loads(text: str | bytes, *, parse_constant: Callable[[str], object] | None = None) -> object:
    """Parse JSON text, refusing duplicated keys and deep nesting; huge integers become HugeNumber.

    Raises:
        JsonProblem: one of the three above.
        json.JSONDecodeError: the text is not JSON (a ValueError too).
    """
    try:
        options: dict[str, Any] = {"parse_constant": parse_constant} if parse_constant else {}
        return json.loads(text, object_pairs_hook=_unique_keys, parse_int=_bounded_int, **options)
    except RecursionError:
        raise JsonProblem("nested too deeply to be a record") from None
