"""What every page's frames share: the pages' paths and the metrics in registry order."""

from __future__ import annotations

from collections.abc import Sequence

from lib.core.metrics import METRIC_NAMES

PAGE_ABLATION = "pages/ablation.py"
PAGE_COMPARE = "pages/compare.py"
PAGE_RUN = "pages/run.py"
PAGE_TRENDS = "pages/trends.py"

PROVENANCE_LOCATIONS = ("contexts", "ground_truth", "question", "nowhere")
SPARK_RUNS = 30


def ordered_metrics(names: Sequence[str]) -> list[str]:
    """Metric names in registry order, unknown names (if any) after, alphabetically."""
    known = [m for m in METRIC_NAMES if m in set(names)]
    return known + sorted(set(names) - set(known))


GRID_HEADER = 35   # px: a data grid's header row (Streamlit's default row height)
GRID_BORDER = 3    # px: its frame


def grid_height(rows: int, *, row_height: int, most: int) -> int:
    """A data grid's height in px for `rows` rows of `row_height`: its content, at most `most` (then it scrolls).

    A fixed height taller than the rows draws empty rows under them: Compare's two flipped verdicts showed two
    empty rows at 360 px (issue 46)."""
    return min(most, GRID_HEADER + max(rows, 1) * row_height + GRID_BORDER)
