"""The frames the Overview, Trends, Run and Compare pages show, built from store frames: one module per page.

Pure functions: store frames and diagnosis values in, frames and small values out, no Streamlit and no
queries, so a test gets every number a page shows. Sample text passes through untouched (the pages show it
as text)."""

from __future__ import annotations

from lib.presentation.views.common import (
    PAGE_ABLATION,
    PAGE_COMPARE,
    PAGE_RUN,
    PAGE_TRENDS,
    PROVENANCE_LOCATIONS,
    SPARK_RUNS,
    grid_height,
    ordered_metrics,
)
from lib.presentation.views.compare import (
    aligned_verdicts,
    change_rows,
    config_rows,
    flip_rows,
    flip_summary,
    flipped_verdicts,
    metric_sides,
    paired_deltas,
    paired_summary,
    previous_in,
    signed,
    split_cells,
)
from lib.presentation.views.overview import (
    HistorySummary,
    LintSummary,
    MetricCard,
    SuspectAction,
    card_steps,
    history_summary,
    lint_findings,
    lint_summary,
    metric_cards,
    recent_jumps,
    run_labels,
    sparkline_spec,
    suspect_actions,
    unattributed,
)
from lib.presentation.views.run import (
    NOT_RECORDED,
    EvidenceSummary,
    evidence_summary,
    filter_samples,
    location_column,
    metric_display,
    metric_table,
    other_scores,
    sample_list,
    sample_status,
    sample_table,
    verdict_list,
    verdict_records,
)
from lib.presentation.views.trends import (
    ALL_METRICS,
    day_bounds,
    events_for,
    events_table,
    in_range,
    jumps_frame,
    run_days,
)

__all__ = ["ALL_METRICS", "NOT_RECORDED", "PAGE_ABLATION", "PAGE_COMPARE", "PAGE_RUN", "PAGE_TRENDS",
           "PROVENANCE_LOCATIONS", "SPARK_RUNS", "EvidenceSummary", "HistorySummary", "LintSummary", "MetricCard",
           "SuspectAction", "aligned_verdicts", "card_steps", "change_rows", "config_rows", "day_bounds", "events_for",
           "events_table", "evidence_summary", "filter_samples", "flip_rows", "flip_summary", "flipped_verdicts",
           "grid_height", "history_summary", "in_range", "jumps_frame", "lint_findings", "lint_summary",
           "location_column",
           "metric_cards", "metric_display", "metric_sides", "metric_table", "ordered_metrics", "other_scores",
           "paired_deltas", "paired_summary", "previous_in", "recent_jumps", "run_days", "run_labels", "sample_list",
           "sample_status", "sample_table", "signed", "sparkline_spec", "split_cells", "suspect_actions",
           "unattributed", "verdict_list", "verdict_records"]
