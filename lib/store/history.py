"""The SQL for re-judged series and incidents: tables beside the recorded history, never over it.

A re-judged series is a metric's history scored again with one chosen
instrument; its scores live in their own tables keyed by series id, so a
recorded score is never overwritten. Incidents (a jump, a canary alarm, a
lint finding) carry a state the team sets; every change of state is kept with
its time, user and note, so the record survives restarts and every session of
the dashboard reads the same one.

The tables are made by lib.store.schema's migrations, as every table is. Every
statement takes parameters; no sample text or note is ever put into SQL text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pandas as pd

from lib.core.results import SampleResult, aggregate
from lib.store import Store
from lib.store.base import _now, merge, retried, values


def _df(store: Store, sql: str, params: Sequence[object] = ()) -> pd.DataFrame:
    return store._df(sql, params)


def _rows(store: Store, sql: str, params: Sequence[object] = ()) -> list[tuple]:
    return store._rows(sql, params)


# -- re-judged series ---------------------------------------------------------------------
_SERIES_COLS = ("series_id", "metric", "suite", "spec", "judge_model", "prompt_hash", "binding", "label", "status",
                "total", "done", "created_at", "updated_at")
_PROMPT = ("prompt_hash", "metric", "template")
_SERIES_RUN = ("series_id", "run_id", "score", "n", "n_failed", "n_excluded", "calls", "cached")


@retried("starting a re-judged series")
def start_series(store: Store, series_id: str, *, metric: str, suite: str, spec: dict[str, object],
                 judge_model: str, prompt_hash: str, binding: str, label: str, total: int) -> None:
    """Create the series row if absent; a resumed series keeps its row and progress."""
    with store.transaction() as cur:
        merge(cur, "rejudges", values(_SERIES_COLS), _SERIES_COLS, ("series_id",), replace=False,
              params=[series_id, metric, suite, json.dumps(spec, sort_keys=True), judge_model, prompt_hash, binding,
                      label, "running", total, 0, _now(), _now()])
        cur.execute("UPDATE rejudges SET status = 'running', updated_at = ? WHERE series_id = ? AND status <> 'done'",
                    [_now(), series_id])


@retried("a series' template")
def add_series_prompt(store: Store, prompt_hash: str, metric: str, template: str) -> None:
    """Keep a series' template by its hash, as a recorded run's is (an existing hash is left as it is)."""
    with store.transaction() as cur:
        merge(cur, "prompts", values(_PROMPT), _PROMPT, ("prompt_hash",), replace=False,
              params=[prompt_hash, metric, template])


def series(store: Store, series_id: str) -> dict[str, Any] | None:
    """One series' header (spec as a dict), or None."""
    rows = _rows(store, f"SELECT {', '.join(_SERIES_COLS)} FROM rejudges WHERE series_id = ?", [series_id])
    if not rows:
        return None
    d = dict(zip(_SERIES_COLS, rows[0], strict=True))
    d["spec"] = json.loads(str(d["spec"]))
    return d


def series_list(store: Store, metric: str | None = None) -> pd.DataFrame:
    """Every re-judged series (newest first), optionally of one metric."""
    sql = f"SELECT {', '.join(c for c in _SERIES_COLS if c != 'spec')} FROM rejudges"
    params: list[object] = []
    if metric is not None:
        sql += " WHERE metric = ?"
        params.append(metric)
    return _df(store, sql + " ORDER BY created_at DESC, series_id", params)


def series_done_runs(store: Store, series_id: str) -> set[str]:
    return {r[0] for r in _rows(store, "SELECT run_id FROM rejudge_runs WHERE series_id = ?", [series_id])}


@retried("storing a re-judged run")
def add_series_run(store: Store, series_id: str, run_id: str, results: Sequence[SampleResult]) -> None:
    """Store one run's re-judged samples and its aggregate, and advance progress: all or nothing."""
    agg = aggregate(results)
    frame = pd.DataFrame(
        [(series_id, run_id, r.sample_id, r.status, r.score, r.reason, r.verdicts_json(), r.calls, r.cached)
         for r in results],
        columns=["series_id", "run_id", "sample_id", "status", "score", "reason", "verdicts", "calls", "cached"])
    calls, cached = sum(r.calls for r in results), sum(bool(r.cached) for r in results)
    with store._write_lock:  # judge replies held by the call cache go in the same commit
        store.flush_cache()
        with store.transaction() as cur:
            cur.execute("DELETE FROM rejudge_scores WHERE series_id = ? AND run_id = ?", [series_id, run_id])
            if not frame.empty:
                cur.register("_rj", frame)
                try:
                    cur.execute("INSERT INTO rejudge_scores SELECT * FROM _rj")
                finally:
                    cur.unregister("_rj")
            merge(cur, "rejudge_runs", values(_SERIES_RUN), _SERIES_RUN, ("series_id", "run_id"), replace=True,
                  params=[series_id, run_id, agg.score, agg.n, agg.n_failed, agg.n_excluded, calls, cached])
            cur.execute("""UPDATE rejudges SET updated_at = ?, done = (SELECT count(*) FROM rejudge_scores
                           WHERE series_id = ?) WHERE series_id = ?""", [_now(), series_id, series_id])


@retried("finishing a series")
def finish_series(store: Store, series_id: str, status: str) -> None:
    with store.transaction() as cur:
        cur.execute("UPDATE rejudges SET status = ?, updated_at = ? WHERE series_id = ?",
                    [status, _now(), series_id])


def series_history(store: Store, series_id: str) -> pd.DataFrame:
    """A series' per-run scores shaped like Store.metric_history (plus series_id, calls, cached)."""
    return _df(store, """
        SELECT r.run_id, r.started_at, r.label, r.pipeline, s.metric, x.score, x.n, x.n_failed, x.n_excluded,
               s.judge_model, s.prompt_hash, s.binding, s.series_id, x.calls, x.cached
        FROM rejudge_runs x JOIN rejudges s USING (series_id) JOIN runs r USING (run_id)
        WHERE x.series_id = ? ORDER BY r.started_at, r.run_id""", [series_id])


def sample_counts(store: Store, run_ids: Sequence[str], suite: str) -> dict[str, int]:
    """Samples per run (the work a re-judge of those runs holds)."""
    rows = _rows(store, """SELECT run_id, count(*) FROM samples WHERE suite = ?
                           AND run_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY run_id""", [suite, list(run_ids)])
    return {r[0]: int(r[1]) for r in rows}


def cached_keys(store: Store, keys: Sequence[str]) -> set[str]:
    """Which of these call-cache keys already hold a reply."""
    store.flush_cache()
    if not keys:
        return set()
    rows = _rows(store, "SELECT key FROM judge_cache WHERE key IN (SELECT unnest(?::VARCHAR[]))", [list(keys)])
    return {r[0] for r in rows}


def recorded_usage(store: Store, model: str, limit: int) -> list[tuple[str, int]]:
    """The newest `limit` cached calls of a judge model that recorded prompt tokens: (request JSON, tokens)."""
    store.flush_cache()
    rows = _rows(store, "SELECT request, prompt_tokens FROM judge_cache WHERE model = ? AND prompt_tokens > 0 "
                        "ORDER BY created_at DESC LIMIT ?", [model, limit])
    return [(str(r[0]), int(r[1])) for r in rows]


# -- incidents ----------------------------------------------------------------------------
@retried("an incident's state")
def add_incident_state(store: Store, incident_id: str, state: str, note: str, user: str) -> None:
    """Append a state change (never overwrite: the log is the record)."""
    with store.transaction() as cur:
        store._numbering(cur)
        seq = cur.execute("SELECT coalesce(max(seq), 0) + 1 FROM incident_states WHERE incident_id = ?",
                          [incident_id]).fetchall()[0][0]
        cur.execute("INSERT INTO incident_states VALUES (?, ?, ?, ?, ?, ?)",
                    [incident_id, seq, state, note, user, _now()])


def incident_states(store: Store) -> pd.DataFrame:
    """Every recorded state change: incident_id, seq, state, note, user_name, set_at (oldest first per incident)."""
    return _df(store, "SELECT incident_id, seq, state, note, user_name, set_at FROM incident_states "
                      "ORDER BY incident_id, seq")


def version(store: Store) -> str:
    """Changes whenever a series or an incident state is written (a cache key for page loaders)."""
    row = _rows(store, """SELECT (SELECT count(*) FROM rejudges), (SELECT max(updated_at) FROM rejudges),
                                 (SELECT sum(done) FROM rejudges), (SELECT count(*) FROM incident_states)""")[0]
    return "|".join(str(x) for x in row)


def series_paired_steps(store: Store, series_id: str, steps: Sequence[tuple[str, str]]) -> pd.DataFrame:
    """Per (earlier run, later run) of a re-judged series: the per-sample change, paired by sample id.

    Columns: prev_run_id, run_id, n (samples ok in both), mean and sd of (later - earlier), as Store.paired_steps
    gives them for the stored series (summed here in a fixed order); a step with no pair is absent.
    """
    cols = ["prev_run_id", "run_id", "n", "mean", "sd"]
    if not steps:
        return pd.DataFrame(columns=cols)
    prevs, runs = (list(x) for x in zip(*steps, strict=True))
    diffs = _df(store, """
        WITH p AS (SELECT unnest(?::VARCHAR[]) AS prev_run_id, unnest(?::VARCHAR[]) AS run_id)
        SELECT p.prev_run_id, p.run_id, b.score - a.score AS diff
        FROM p
        JOIN rejudge_scores a ON a.series_id = ? AND a.run_id = p.prev_run_id
        JOIN rejudge_scores b ON b.series_id = ? AND b.run_id = p.run_id AND b.sample_id = a.sample_id
        WHERE a.status = 'ok' AND b.status = 'ok' AND a.score IS NOT NULL AND b.score IS NOT NULL
          AND NOT isnan(a.score) AND NOT isnan(b.score)
        ORDER BY p.prev_run_id, p.run_id, a.sample_id""", [prevs, runs, series_id, series_id])
    if diffs.empty:
        return pd.DataFrame(columns=cols)
    out = diffs.groupby(["prev_run_id", "run_id"], sort=False)["diff"].agg(n="count", mean="mean", sd="std")
    out = out.reset_index()
    out["sd"] = out["sd"].fillna(0.0)
    return out[cols]


def mean_sample_scores(store: Store, run_ids: Sequence[str], suite: str, metric: str) -> pd.DataFrame:
    """Each sample's mean scored value of `metric` over the runs `run_ids` (failed and unscored left out):
    sample_id, score, runs (how many of the runs scored it)."""
    return _df(store, """SELECT sample_id, avg(score) AS score, count(*) AS runs FROM sample_scores
                         WHERE list_contains(?, run_id) AND suite = ? AND metric = ? AND status = 'ok'
                               AND score IS NOT NULL
                         GROUP BY sample_id ORDER BY sample_id""", [list(run_ids), suite, metric])


def labelled_metrics(store: Store, suite: str) -> set[str]:
    """The metrics a suite's current labels label (a label is superseded, never removed: any row counts)."""
    return {r[0] for r in _rows(store, "SELECT DISTINCT metric FROM labels WHERE suite = ?", [suite])}
