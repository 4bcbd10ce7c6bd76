"""The Run page's sample table a page at a time, filtered in SQL (issue 9 item 12).

A run of a few thousand samples is shown whole, every filter applied to the
whole table (`views.sample_table`, `views.filter_samples`). A larger run is
never loaded whole: the search, score-range and verdict filters run in SQL
over the run and return matching sample ids in id order; only the ids of
the page asked for get their texts, scores, verdicts and evidence locations
read and built into rows. The evidence-location filter needs each verdict's
evidence traced, so on a paged run it applies to the page's rows (the page
says so). Search text and every filter value are bound parameters, never SQL.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from lib.core.metrics import get_metric
from lib.core.records import MAIN
from lib.diagnosis import provenance
from lib.presentation import views
from lib.store import Store

WHOLE_RUN_MAX = 5_000   # a run up to this many samples is shown whole
PAGE_ROWS = 500


@dataclass(frozen=True)
class SampleFilters:
    search: str = ""
    score_range: tuple[float, float] = (0.0, 1.0)
    verdict: str | None = None     # a verdict word of the metric: samples with at least one such verdict
    location: str | None = None    # samples with a positive verdict evidenced there


@dataclass(frozen=True)
class SamplePage:
    """The rows to show and where they sit in the run.

    Attributes:
        rows: views.sample_table rows that pass the filters (the page's, when paged).
        scores: the sample scores of the rows' samples (all metrics), for the sample viewer.
        provenance: provenance.provenance rows of the rows' samples, for the sample viewer.
        total: samples in the run.
        matched: samples passing the filters (on a paged run, before the location filter).
        page, pages: this page's number (from 1) and how many there are (1 when not paged).
        paged: False when the whole run is in memory.
    """

    rows: pd.DataFrame
    scores: pd.DataFrame
    provenance: pd.DataFrame
    total: int
    matched: int
    page: int
    pages: int
    paged: bool


def run_size(store: Store, run_id: str, suite: str = MAIN) -> int:
    return store.sample_count(run_id, suite)


def sample_page(store: Store, run_id: str, metric: str, filters: SampleFilters = SampleFilters(), *,
                page: int = 1, suite: str = MAIN) -> SamplePage:
    """The sample rows of `run_id` for `metric` that pass `filters`: all of them, or page `page` of them."""
    total = run_size(store, run_id, suite)
    if total <= WHOLE_RUN_MAX:
        scores = store.sample_scores(run_id, suite)
        prov = provenance.provenance(store, run_id, metric, suite=suite)
        table = views.sample_table(store.samples_frame(run_id, suite), scores, prov, metric)
        rows = _filter(table, metric, filters)
        return SamplePage(rows, scores, prov, total, len(rows), 1, 1, False)
    ids = filtered_ids(store, run_id, metric, filters, suite=suite)
    pages = max(1, math.ceil(len(ids) / PAGE_ROWS))
    page = min(max(1, page), pages)
    table, scores, prov = sample_rows(store, run_id, metric, ids[(page - 1) * PAGE_ROWS: page * PAGE_ROWS],
                                      suite=suite)
    rows = _filter(table, metric, SampleFilters(location=filters.location)) if filters.location else table
    return SamplePage(rows.reset_index(drop=True), scores, prov, total, len(ids), page, pages, True)


def sample_rows(store: Store, run_id: str, metric: str, ids: list[str], *,
                suite: str = MAIN) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """views.sample_table rows of just these samples, with their scores and provenance rows."""
    scores = _scores_of(store, run_id, suite, ids)
    prov = _provenance_of(store, run_id, metric, suite, ids)
    return views.sample_table(_samples_of(store, run_id, suite, ids), scores, prov, metric), scores, prov


def _filter(table: pd.DataFrame, metric: str, f: SampleFilters) -> pd.DataFrame:
    return views.filter_samples(table, metric, search=f.search, score_range=f.score_range, verdict=f.verdict,
                                location=f.location).reset_index(drop=True)


def filtered_ids(store: Store, run_id: str, metric: str, f: SampleFilters, *, suite: str = MAIN) -> list[str]:
    """Ids (in id order) of the samples passing the search, score-range and verdict filters, as filter_samples
    would pass them: the search in any one text (passages joined by blank lines), case-insensitive."""
    pos, neg = get_metric(metric).labels
    lo, hi = f.score_range
    label = True if f.verdict == pos else False if f.verdict == neg else None
    return store.filtered_sample_ids(run_id, metric, suite, needle=f.search.strip().lower(),
                                     score_range=None if (lo, hi) == (0.0, 1.0) else (lo, hi), label=label)


def _samples_of(store: Store, run_id: str, suite: str, ids: list[str]) -> pd.DataFrame:
    return store.samples_frame(run_id, suite, ids)


def _scores_of(store: Store, run_id: str, suite: str, ids: list[str]) -> pd.DataFrame:
    return store.sample_scores(run_id, suite, sample_ids=ids)


def _provenance_of(store: Store, run_id: str, metric: str, suite: str, ids: list[str]) -> pd.DataFrame:
    return provenance.provenance(store, run_id, metric, suite=suite, sample_ids=ids)


__all__ = ["PAGE_ROWS", "WHOLE_RUN_MAX", "SampleFilters", "SamplePage", "filtered_ids", "run_size", "sample_page",
           "sample_rows"]
