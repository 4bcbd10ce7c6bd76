"""The eval sample: four artifacts, and blanking one of them."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lib.core.errors import UnknownNameError

QUESTION = "question"
ANSWER = "answer"
CONTEXTS = "contexts"
GROUND_TRUTH = "ground_truth"
FIELDS: tuple[str, ...] = (QUESTION, ANSWER, CONTEXTS, GROUND_TRUTH)
BLANKABLE: tuple[str, ...] = (GROUND_TRUTH, QUESTION, CONTEXTS, ANSWER)


@dataclass(frozen=True)
class EvalSample:
    """One eval sample.

    Attributes:
        sample_id: stable id, unique within a run and suite.
        question: what the user asked.
        answer: what the pipeline generated.
        contexts: the retrieved passages, in rank order.
        ground_truth: the human-written reference answer.
    """

    sample_id: str
    question: str
    answer: str
    contexts: tuple[str, ...]
    ground_truth: str

    def field(self, name: str) -> str | tuple[str, ...]:
        """Return one artifact by name."""
        if name not in FIELDS:
            raise UnknownNameError(f"unknown field {name!r}; fields are {', '.join(FIELDS)}")
        return getattr(self, name)


def blank(sample: EvalSample, fields: Iterable[str]) -> EvalSample:
    """Return the sample with the named artifacts emptied ("" or no passages)."""
    changes: dict[str, Any] = {}
    for name in fields:
        if name not in FIELDS:
            raise UnknownNameError(f"unknown field {name!r}; blankable fields are {', '.join(FIELDS)}")
        changes[name] = () if name == CONTEXTS else ""
    return dataclasses.replace(sample, **changes)


def arm_name(fields: Iterable[str]) -> str:
    """Canonical name of an ablation arm: 'none' or the blanked fields joined by '+'."""
    names = sorted(set(fields), key=FIELDS.index)
    return "+".join(names) if names else "none"


def arm_fields(arm: str) -> tuple[str, ...]:
    """Inverse of arm_name."""
    if arm == "none":
        return ()
    names = tuple(arm.split("+"))
    for n in names:
        if n not in FIELDS:
            raise UnknownNameError(f"unknown field {n!r} in arm {arm!r}")
    return names
