"""Every page's cached reads of the store, in one place.

Each loader is keyed by the database path and its data version (`ctx.version`),
so a write anywhere makes the next page load read afresh, and two pages asking
the same question share one cached answer (Overview and Trends read one trend).
Pages call these and never the store.
"""

from __future__ import annotations

from datetime import date

import pandas as pd
import streamlit as st

from lib.app import calibration, labelling, ui_history
from lib.app.ui import load_settings, open_store
from lib.core import degenerate
from lib.core.errors import EvaldriftError
from lib.core.records import CANARY, MAIN, RunHeader
from lib.core.samples import EvalSample
from lib.diagnosis import batch, cost, provenance, rejudge, sentinel, trends
from lib.diagnosis.ablation import AblationSpec, per_sample_deltas, recorded_judge
from lib.diagnosis.agreement import Corrected, Withheld
from lib.diagnosis.incidents import Incident, JumpEvidence, Standing, standing
from lib.diagnosis.incidents import jump_evidence as jump_evidence_of
from lib.diagnosis.incidents import load as load_incidents
from lib.diagnosis.trends import CanaryStatus, Jump
from lib.jobs import job_log
from lib.presentation import ablation_views, charts, judging_counts, review, sample_pages, trend_stack, views
from lib.presentation import trend_figures as trend_page
from lib.store.lake import is_lake
from lib.store.watch import OutboxRow


# -- the trend and what is read from it (Overview, Trends) -------------------------------------
@st.cache_data(show_spinner=False)
def history(db_path: str, version: str, suite: str = MAIN) -> pd.DataFrame:
    return open_store(db_path).metric_history(suite=suite)


@st.cache_data(show_spinner=False, ttl=10)
def sent_alerts(db_path: str, version: str) -> list[OutboxRow]:
    """What `python -m lib watch` sent (and owes): kept briefly, since a watcher in another process writes it."""
    from pathlib import Path

    from lib.jobs import watch

    return watch.sent_log(open_store(db_path), None if is_lake(db_path) else Path(db_path))


@st.cache_data(show_spinner=False)
def jumps(db_path: str, version: str) -> list[Jump]:
    return trends.find_jumps(open_store(db_path), history=history(db_path, version, MAIN))


@st.cache_data(show_spinner=False)
def recorded_changes(db_path: str, version: str) -> pd.DataFrame:
    """The recorded changes between consecutive runs, oldest first (trends.change_events): Trends' markers and the
    Review's changes, read once for both."""
    return trends.change_events(history(db_path, version, MAIN))


@st.cache_data(show_spinner=False)
def events(db_path: str, version: str) -> pd.DataFrame:
    """The recorded changes and the judge sentinels' drift nights (kind 'judge drift'), oldest first."""
    return sentinel.with_drift(recorded_changes(db_path, version), open_store(db_path))


@st.cache_data(show_spinner=False)
def trend_noise(db_path: str, version: str) -> dict[str, float]:
    return trends.trend_noise(history(db_path, version, MAIN))


@st.cache_data(show_spinner=False)
def series(db_path: str, version: str) -> list[rejudge.Series]:
    return rejudge.finished_series(open_store(db_path))


@st.cache_data(show_spinner=False, max_entries=32)
def trend_figures(db_path: str, version: str, series_version: str, shown: tuple[str, ...], first: date,
                  last: date) -> dict[str, dict]:
    """Trends' charts for the metrics `shown` and the runs between `first` and `last` (cached: building them is
    most of the page's server time); `series_version` is the re-judged series' version (ui_history.version)."""
    since, until = views.day_bounds(first, last)
    return trend_page.trend_figures(
        views.in_range(history(db_path, version, MAIN), since, until),
        views.in_range(events(db_path, version), since, until),
        views.in_range(views.jumps_frame(jumps(db_path, version)), since, until),
        trend_noise(db_path, version), series(db_path, series_version), shown, since, until)


@st.cache_data(show_spinner=False, max_entries=32)
def trend_chart(db_path: str, version: str, series_version: str, shown: tuple[str, ...], first: date,
                last: date) -> tuple[dict, list[str]]:
    """The Trends chart of the metrics `shown` and the metric of each trace (cached): one metric's figure, or
    several as one figure, a panel each (lib.presentation.trend_stack). Validated here, once
    (charts.validated): st.plotly_chart validated the cached dict again on every run of the page."""
    if len(shown) == 1:
        figure = trend_figures(db_path, version, series_version, shown, first, last)[shown[0]]
        metrics = list(shown) * len(figure["data"])
    else:   # one figure, a panel per metric on one time axis: faster to draw than a chart each, and changes line up
        figure, metrics = trend_stack.stack(trend_figures(db_path, version, series_version, shown, first, last))
    return charts.validated(figure), metrics


@st.cache_data(show_spinner=False)
def agreement_trend(db_path: str, version: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Trends' agreement with people: each segment's (a table), and each instrument change's sentence
    (columns metric, started_at, run_id, text)."""
    from lib.diagnosis.agreement import segments_frame, trend_agreement

    segs, changes = trend_agreement(open_store(db_path), history(db_path, version, MAIN))
    return segments_frame(segs), pd.DataFrame(
        [{"metric": c.metric, "started_at": c.started_at, "run_id": c.run_id, "text": c.sentence} for c in changes],
        columns=["metric", "started_at", "run_id", "text"])


@st.cache_data(show_spinner="Correcting each segment by people's labels...")
def corrected_segments(db_path: str, version: str) -> pd.DataFrame:
    """Trends' toggle: each labelled segment's metric by its judge and corrected by people's labels (text cells)."""
    from lib.diagnosis.agreement import corrected_by_segment, corrected_frame

    return corrected_frame(corrected_by_segment(open_store(db_path), history(db_path, version, MAIN)))


@st.cache_data(show_spinner=False)
def agreement_table(db_path: str, version: str, metric: str) -> pd.DataFrame:
    """The Labels page's agreement of each instrument with people on `metric` (text cells)."""
    from lib.diagnosis.agreement import agreement_by_instrument, agreements_frame

    return agreements_frame(agreement_by_instrument(open_store(db_path), MAIN, metric))


@st.cache_data(show_spinner=False)
def incidents(db_path: str, version: str):
    return ui_history.load_incidents(db_path, version)


@st.cache_data(show_spinner=False)
def incident_titles(db_path: str, version: str) -> list[Incident]:
    """Every incident with its title, jumps and state but no evidence (incidents.load without it: a fifth of the
    CPU on the demo): what the Ablation page starts at and names as a verdict's answer; `version` as incidents'."""
    return load_incidents(open_store(db_path), evidence=False)[0]


@st.cache_data(show_spinner=False)
def metric_cards(db_path: str, version: str, full_version: str = "") -> list[views.MetricCard]:
    """The Overview's card per metric (latest score, change within its instrument, noise, sparkline, and a score
    whose template reads a must-never-receive field marked); `full_version`: ui_history.version (series included)."""
    h = history(db_path, version, MAIN)
    return views.metric_cards(h, paired=open_store(db_path).paired_steps(views.card_steps(h), MAIN),
                              lint=lint(db_path, version), series=series(db_path, full_version or version))


@st.cache_data(show_spinner=False)
def standings(db_path: str, version: str, full_version: str) -> list[Standing]:
    """Per metric with an open incident: now, against the trusted baseline, and the re-judged word (the
    Overview's incident panel); `full_version` is ui_history.version (incident states and series included)."""
    found, series_ = incidents(db_path, full_version)
    return standing(history(db_path, version, MAIN), found, series_, lint=lint(db_path, version))


@st.cache_data(show_spinner=False)
def jump_evidence(db_path: str, version: str, full_version: str) -> dict[tuple[str, str], JumpEvidence]:
    """Each jump's evidence besides its size (lint, LEAK, re-judged), keyed by (metric, run id): the Overview reads
    a jump from it (incidents.reading); `full_version` is ui_history.version (re-judged series included). Built
    from the history, lint and finished series the Overview's cards have cached (what load_jump_evidence would
    read again: the series alone are a re-read of every stored re-judge)."""
    return jump_evidence_of(jumps(db_path, version), history=history(db_path, version, MAIN),
                            lint=lint(db_path, version), ablations=open_store(db_path).ablations(),
                            series=series(db_path, full_version))


# -- the standing checks (Overview, Canary) ------------------------------------------------------
@st.cache_data(show_spinner=False)
def canary(db_path: str, version: str) -> CanaryStatus:
    return trends.canary_status(open_store(db_path), history=history(db_path, version, CANARY))


@st.cache_data(show_spinner=False)
def canary_samples(db_path: str, version: str, run_id: str, columns: tuple[str, ...]) -> pd.DataFrame:
    return open_store(db_path).samples_frame(run_id, CANARY)[list(columns)]


@st.cache_data(show_spinner=False)
def lint(db_path: str, version: str) -> pd.DataFrame:
    return trends.lint_status(open_store(db_path))


# -- the weekly review (Review) ----------------------------------------------------------------------
@st.cache_data(show_spinner=False)
def review_bounds(db_path: str, version: str) -> tuple[date, date] | None:
    return review.default_range(open_store(db_path))


@st.cache_data(show_spinner=False)
def data_range(db_path: str, version: str) -> tuple[date, date] | None:
    return review.data_range(open_store(db_path))


@st.cache_data(show_spinner="Assembling the review...")
def weekly_review(db_path: str, version: str, full_version: str, start: date, end: date) -> review.Review:
    """The Review of a range, from the history, incidents, canary, lint and changes the other pages have read (cached):
    after an Overview, the incidents are not loaded again; `full_version` is ui_history.version."""
    return review.review(open_store(db_path), start, end, history=history(db_path, version, MAIN),
                         loaded=incidents(db_path, full_version), canary=canary(db_path, version),
                         lint=lint(db_path, version), events=recorded_changes(db_path, version))


# -- ablations (Ablation) -------------------------------------------------------------------------
@st.cache_data(show_spinner=False)
def run_ids(db_path: str, version: str) -> list[str]:
    return open_store(db_path).run_ids()


@st.cache_data(show_spinner=False)
def run_fields(db_path: str, version: str, run_id: str) -> tuple[str, ...]:
    return open_store(db_path).run_fields(run_id)


@st.cache_data(show_spinner=False)
def ablation_briefs(db_path: str, version: str, run_id: str) -> list[ablation_views.AblationBrief]:
    return ablation_views.ablation_briefs(open_store(db_path), run_id)


@st.cache_data(show_spinner=False)
def ablation_deltas(db_path: str, version: str, ablation_id: str, metric: str, arm: str) -> pd.DataFrame:
    return per_sample_deltas(open_store(db_path), ablation_id, metric, arm)


@st.cache_data(show_spinner=False)
def ablation_counts(db_path: str, version: str, ablation_id: str, total: int) -> judging_counts.JudgingCounts:
    return judging_counts.counts(open_store(db_path).ablation_results(ablation_id), total)


@st.cache_data(show_spinner=False)
def ablation_failures(db_path: str, version: str, ablation_id: str) -> pd.DataFrame:
    """An ablation's failed judgings: sample, arm, reason and what the judge wrote (truncated)."""
    return open_store(db_path).ablation_failures(ablation_id)


def gate_plan(db_path: str, request: calibration.GateRequest) -> calibration.GatePlan:
    """What gating a new judge will judge and cost (not cached: the call cache fills as gates run)."""
    return calibration.plan_gate(open_store(db_path), request, load_settings())


@st.cache_data(show_spinner=False, hash_funcs={AblationSpec: lambda s: s.ablation_id})
def ablation_cost(db_path: str, version: str, spec: AblationSpec, cacheable: bool) -> cost.AblationCost:
    return cost.estimate_ablation(open_store(db_path), spec, cacheable=cacheable)


@st.cache_data(show_spinner=False)
def own_judge(db_path: str, version: str, run_id: str, metrics: tuple[str, ...]) -> str | None:
    """The judge that recorded these metrics of the run (None: unattributed, or recorded by several)."""
    try:
        return recorded_judge(open_store(db_path), run_id, metrics)
    except EvaldriftError:
        return None


def ablation_record(db_path: str, ablation_id: str, *, any_copy: bool = False) -> dict[str, object] | None:
    """An ablation's stored row, read fresh (not cached): a progress poll must see every step. Only an ablation of
    the run's stored copy, unless `any_copy` (then `current` says whether it is one: Store.ablation)."""
    return open_store(db_path).ablation(ablation_id, any_copy=any_copy)


def batch_jobs_newest(db_path: str) -> list[batch.BatchJob]:
    """The latest batch jobs as their last poll stored them, read fresh (a poll from the CLI writes no run)."""
    return batch.newest(open_store(db_path))


def job_note(db_path: str, ablation_id: str) -> job_log.JobNote | None:
    """How an ablation's job ended (judge, output mode, pacing), read fresh."""
    return job_log.read(open_store(db_path), ablation_id)


# -- one run and two (Run, Compare) --------------------------------------------------------------------
@st.cache_data(show_spinner=False)
def runs(db_path: str, version: str) -> pd.DataFrame:
    return open_store(db_path).runs()


@st.cache_data(show_spinner=False)
def run_header(db_path: str, version: str, run_id: str) -> RunHeader:
    return open_store(db_path).run(run_id)


@st.cache_data(show_spinner=False)
def run_metrics(db_path: str, version: str, run_id: str) -> pd.DataFrame:
    return open_store(db_path).run_metrics(run_id, MAIN)


@st.cache_data(show_spinner=False)
def run_changes(db_path: str, version: str, run_id: str, baseline: str | None = None) -> trends.RunChanges:
    return trends.run_changes(open_store(db_path), run_id, baseline)


@st.cache_data(show_spinner=False)
def run_provenance(db_path: str, version: str, run_id: str, metric: str) -> pd.DataFrame:
    return provenance.provenance(open_store(db_path), run_id, metric)


@st.cache_data(show_spinner=False, max_entries=32)
def sample_page(db_path: str, version: str, run_id: str, metric: str, search: str,
                score_range: tuple[float, float], verdict: str | None, location: str | None,
                page: int) -> sample_pages.SamplePage:
    filters = sample_pages.SampleFilters(search, score_range, verdict, location)
    return sample_pages.sample_page(open_store(db_path), run_id, metric, filters, page=page)


@st.cache_data(show_spinner=False, max_entries=32)
def one_sample(db_path: str, version: str, run_id: str, metric: str,
               sample_id: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    return sample_pages.sample_rows(open_store(db_path), run_id, metric, [sample_id])


@st.cache_data(show_spinner=False)
def chance(db_path: str, version: str, run_id: str) -> list[str]:
    return degenerate.chance_summary(open_store(db_path).chance_scores(run_id))


@st.cache_data(show_spinner=False)
def sample_scores(db_path: str, version: str, run_id: str) -> pd.DataFrame:
    return open_store(db_path).sample_scores(run_id, MAIN)


def split_plan(db_path: str, metric: str, baseline: str, run_id: str) -> trends.SplitPlan:
    """The split's plan on this server's terms (InputError: it cannot run here, and why), read fresh."""
    return trends.plan_split(open_store(db_path), metric, baseline, run_id, load_settings())


@st.cache_data(show_spinner=False)
def split(db_path: str, version: str, metric: str, baseline: str, run_id: str) -> trends.Split:
    store = open_store(db_path)
    return trends.run_split(store, trends.plan_split(store, metric, baseline, run_id, load_settings()))


# -- the Labels page: what labelling does not change is keyed by the runs alone -----------------
def runs_version(version: str) -> str:
    """The runs' part of a data version (store.data_version: runs count, newest recording, copies; then
    ablations and labels): a loader keyed by it stays cached while people label."""
    return "|".join(version.split("|")[:3])


@st.cache_data(show_spinner=False, max_entries=16)
def label_order(db_path: str, runs_key: str, run_id: str, metric: str) -> labelling.LabelOrder:
    """A run's samples in the order to label them (judgings only: kept while people label)."""
    return labelling.label_order(_Opened(db_path), run_id, MAIN, metric)


@st.cache_data(show_spinner=False, max_entries=16)
def labellable(db_path: str, runs_key: str, run_id: str, metric: str) -> tuple[labelling.Labellable, ...]:
    """A run's samples with items to label, with their content keys (kept while people label)."""
    return labelling.labellable(_Opened(db_path), run_id, MAIN, metric)


@st.cache_data(show_spinner=False, max_entries=256)
def label_reach(db_path: str, runs_key: str, metric: str, sample: EvalSample) -> labelling.Reach:
    """The runs and instruments that judged the text a labeller sees of `sample` (kept while people label)."""
    return labelling.reach(_Opened(db_path), MAIN, metric, sample)


@st.cache_data(show_spinner=False)
def corrected_of_run(db_path: str, version: str, run_id: str, metric: str) -> Corrected | Withheld | None:
    """A run's metric by its judge and as the calibration set's labels correct it (None: under two labels;
    Withheld: the labels' draw supports no estimator, with the reason)."""
    from lib.diagnosis.agreement import corrected_of_run as corrected

    return corrected(open_store(db_path), MAIN, metric, run_id)


class _Opened:
    """The opened store of a path, as the context lib.app.labelling reads."""

    def __init__(self, db_path: str) -> None:
        self.store = open_store(db_path)
