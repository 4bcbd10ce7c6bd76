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
