"""What an importer hands on: one table in our column names, and the instrument the file records."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import pandas as pd


@dataclass(frozen=True)
class Imported:
    """Another tool's run as a table for lib.intake.ingest.run_from_frame.

    Attributes:
        frame: one row per sample: id, question, answer, contexts, ground_truth (those the file has) and one
            column per metric, named as our metric; its index is the row number errors name.
        tool: the scoring library ("ragas", "inspect_ai", "promptfoo").
        version: its version, when the file records it (or the user gave it).
        sources: our metric -> the name the tool gave the score (a Ragas column, an Inspect scorer, a
            promptfoo assertion type).
        judge_model: the grader model the file names, if any.
        started_at: when the file says the run happened.
    """

    frame: pd.DataFrame
    tool: str
    version: str | None
    sources: dict[str, str] = field(default_factory=dict)
    judge_model: str | None = None
    started_at: datetime | None = None


def parse_time(text: object) -> datetime | None:
    """An ISO time from a file, as naive UTC (how runs are stored), or None."""
    if not isinstance(text, str) or not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    from datetime import UTC

    return value.astimezone(UTC).replace(tzinfo=None, microsecond=0) if value.tzinfo else value
