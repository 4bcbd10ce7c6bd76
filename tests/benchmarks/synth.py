"""A synthetic run history at any size, generated with numpy and written in bulk.

The demo's 400 samples and 12 canaries (real text) are scored on every run by
draws, not by a judge: each (run, metric, sample) gets Binomial(items, p)
positive verdicts, where p is the metric's level at that run (with the demo's
events placed at the same fractions of the history: judge change, ground-truth
leak, ignore-the-reference instruction, retriever regression, fix) plus a
fixed per-sample offset. Verdict records list the sample's items with the
first k labelled positive: with their real text and evidence ("full", about
830 bytes a row, what a judge leaves) or numbered, without text ("compact",
about 300 bytes). So the tables hold what a real history holds, at 2,000 runs
x 400 samples x 5 metrics = 4 million sample scores, without judging 4
million samples.

The same runs can be produced as RunRecords, to compare Store.record_run with
Store.record_runs_bulk on identical rows.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from pathlib import Path

import numpy as np
import pyarrow as pa

from lib.core.metrics import METRIC_NAMES, get_metric, items_of
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED, REPLAY, prompt_hash
from lib.core.records import CANARY, MAIN, MetricRecord, RunRecord
from lib.core.results import EXCLUDED, FAILED, OK, SampleResult, Verdict
from lib.core.samples import EvalSample
from lib.jobs._demo import FIXED_FAITHFULNESS, INSTRUCTED_FAITHFULNESS, LEAKY_FAITHFULNESS, demo_samples
from lib.store import RunBatch, Store

FIRST = datetime(2021, 1, 4, 2, 0)
BASE = {"faithfulness": 0.78, "answer_relevance": 0.90, "context_precision": 0.80, "context_recall": 0.85,
        "answer_correctness": 0.71}
FAILURE_RATE = 0.001
RUN_JITTER = 0.004        # run-level judge noise (sd) on top of the binomial draws
SAMPLE_SPREAD = 0.10      # sd of the fixed per-sample offsets
FAILED_REASON = "judge reply is not JSON (after 3 attempts)"
CHUNK = 200               # runs per generated batch


def _clip(x: np.ndarray) -> np.ndarray:
    return np.clip(x, 0.01, 0.99)


@dataclass(frozen=True)
class Phase:
    """The instrument and pipeline at one run."""

    judge_model: str
    faithfulness_template: str
    faithfulness_binding: str
    regressed: bool
    label: str


class History:
    """A synthetic history of `n_runs` nightly runs (deterministic for a seed).

    Args:
        n_runs: nightly runs.
        seed: numpy seed.
        verdicts: 'compact' (numbered items, no text) or 'full' (the items' text and evidence).
        samples: keep only the demo's first `samples` main samples (None: all 400), for a benchmark whose
            question is about runs, not samples (tests/benchmarks/bench_lake.py).
    """

    def __init__(self, n_runs: int, *, seed: int = 0, verdicts: str = "compact", samples: int | None = None) -> None:
        if verdicts not in ("compact", "full"):
            raise ValueError("verdicts: 'compact' or 'full'")
        self.n_runs = n_runs
        self.seed = seed
        self.full = verdicts == "full"
        main, canary = demo_samples()
        self.main = [d.sample for d in main][:samples]
        self.main_regressed = [d.regressed for d in main][:samples]
        self.canary = canary
        self.n_samples = len(self.main)
        e = {k: round(f * n_runs) for k, f in
             {"judge": 0.2, "leak": 1 / 3, "instruct": 0.5, "regress": 0.645, "fix": 0.833}.items()}
        self.events = e
        self.run_ids = [f"nightly-{FIRST + timedelta(days=i):%Y%m%d}" for i in range(n_runs)]
        self.started = [FIRST + timedelta(days=i, minutes=(i * 37) % 50) for i in range(n_runs)]

    # -- the plan ---------------------------------------------------------------------
    def phase(self, i: int) -> Phase:
        e = self.events
        if i < e["leak"]:
            template, binding = DEFAULT_TEMPLATES["faithfulness"], PROJECTED
        elif i < e["instruct"]:
            template, binding = LEAKY_FAITHFULNESS, REPLAY
        elif i < e["fix"]:
            template, binding = INSTRUCTED_FAITHFULNESS, REPLAY
        else:
            template, binding = FIXED_FAITHFULNESS, PROJECTED
        labels = {e["judge"]: "judge model change", e["leak"]: "harness refactor",
                  e["instruct"]: "ignore-the-reference instruction", e["regress"]: "retriever regression",
                  e["fix"]: "leak fixed"}
        return Phase("offline-lexical-v1" if i < e["judge"] else "offline-lexical-v2", template, binding,
                     i >= e["regress"], labels.get(i, ""))

    def levels(self) -> np.ndarray:
        """p[run, metric]: each metric's level at each run, with the events."""
        rng = np.random.default_rng(self.seed)
        p = np.tile([BASE[m] for m in METRIC_NAMES], (self.n_runs, 1)).astype(float)
        col = {m: j for j, m in enumerate(METRIC_NAMES)}
        e = self.events
        i = np.arange(self.n_runs)
        regressed = i >= e["regress"]
        true_faith = np.where(regressed, 0.70, BASE["faithfulness"])
        leaky = 1 - (1 - true_faith) * (1 - 0.71)                     # the reference as a second channel
        faith = np.where(i < e["leak"], true_faith, np.where(i < e["instruct"], leaky, leaky - 0.03))
        p[:, col["faithfulness"]] = np.where(i < e["fix"], faith, true_faith)
        p[regressed, col["context_recall"]] -= 0.12
        p[regressed, col["context_precision"]] -= 0.08
        return p + rng.normal(0, RUN_JITTER, p.shape)

    def canary_levels(self) -> np.ndarray:
        e = self.events
        i = np.arange(self.n_runs)
        return np.where((i >= e["leak"]) & (i < e["fix"]), np.where(i < e["instruct"], 0.92, 0.86), 0.25)

    @cached_property
    def _items(self) -> dict[tuple[str, str], list[tuple[int, list[str]]]]:
        """(suite, metric) -> per sample: (n items, items) of the real text (of the unregressed sample)."""
        out: dict[tuple[str, str], list[tuple[int, list[str]]]] = {}
        for suite, samples, metrics in ((MAIN, self.main, METRIC_NAMES), (CANARY, self.canary, ("faithfulness",))):
            for m in metrics:
                spec = get_metric(m)
                rows = []
                for s in samples:
                    items = items_of(spec, spec.project(s))
                    rows.append((len(items), items))
                out[(suite, m)] = rows
        return out

    @cached_property
    def _pool(self) -> tuple[list[str], dict[tuple[str, str], np.ndarray], int]:
        """Every verdict record text; offsets[(suite, metric)][sample] + k is the record with k positives."""
        pool: list[str] = []
        offsets: dict[tuple[str, str], np.ndarray] = {}
        for (suite, m), rows in self._items.items():
            offs = np.zeros(len(rows), dtype=np.int64)
            for n, (count, items) in enumerate(rows):
                offs[n] = len(pool)
                for k in range(count + 1):
                    pool.append(SampleResult("", OK, verdicts=self._verdicts(m, items, k)).verdicts_json())
            offsets[(suite, m)] = offs
        empty = len(pool)
        pool.append("[]")
        return pool, offsets, empty

    def _verdicts(self, metric: str, items: list[str], k: int) -> tuple[Verdict, ...]:
        """The verdict records with the first k items positive (the same text in both write paths)."""
        pos, neg = get_metric(metric).labels
        return tuple(Verdict(t if self.full else str(j + 1), j < k, pos if j < k else neg,
                             t if self.full and j < k else "") for j, t in enumerate(items))

    def templates(self) -> dict[str, str]:
        """prompt_hash -> (metric, template) of every template the history uses."""
        out = {prompt_hash(t): ("faithfulness", t) for t in (LEAKY_FAITHFULNESS, INSTRUCTED_FAITHFULNESS,
                                                             FIXED_FAITHFULNESS)}
        out.update({prompt_hash(t): (m, t) for m, t in DEFAULT_TEMPLATES.items()})
        return out  # type: ignore[return-value]

    def pipeline(self, regressed: bool) -> str:
        return json.dumps({
            "retriever": {"embedding_model": "e5-small-v2-int8" if regressed else "e5-base-v2", "top_k": 3,
                          "index": "docs-2026-08"},
            "generator": {"model": "gen-model-a", "prompt": "rag-answer-v7", "temperature": 0.2},
        }, sort_keys=True)

    # -- draws --------------------------------------------------------------------------
    def draws(self, lo: int, hi: int) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(suite, metric) -> (positives, items, failed) arrays of shape (runs lo..hi, samples)."""
        rng = np.random.default_rng([self.seed, lo])
        spread = np.random.default_rng([self.seed, 10**6])
        p = self.levels()[lo:hi]
        canary_p = self.canary_levels()[lo:hi]
        out = {}
        for j, m in enumerate(METRIC_NAMES):
            counts = np.array([c for c, _ in self._items[(MAIN, m)]])
            offset = spread.normal(0, SAMPLE_SPREAD, self.n_samples)
            prob = _clip(p[:, j, None] + offset[None, :])
            out[(MAIN, m)] = (rng.binomial(counts[None, :], prob), np.broadcast_to(counts, prob.shape),
                              rng.random(prob.shape) < FAILURE_RATE)
        counts = np.array([c for c, _ in self._items[(CANARY, "faithfulness")]])
        prob = _clip(np.broadcast_to(canary_p[:, None], (hi - lo, len(counts))))
        out[(CANARY, "faithfulness")] = (rng.binomial(counts[None, :], prob), np.broadcast_to(counts, prob.shape),
                                         np.zeros(prob.shape, dtype=bool))
        return out

    # -- as column frames ---------------------------------------------------------------
    def batch(self, lo: int, hi: int) -> RunBatch:
        """Runs lo..hi as Arrow tables (dictionary-encoded text: the texts repeat across runs)."""
        pool, offsets, empty = self._pool
        pool_arr = pa.array(pool)
        runs_idx = np.arange(lo, hi)
        r = hi - lo
        run_dict = pa.array(self.run_ids[lo:hi])
        phases = [self.phase(i) for i in runs_idx]

        def dict_col(indices: np.ndarray, values: pa.Array) -> pa.DictionaryArray:
            return pa.DictionaryArray.from_arrays(pa.array(indices.astype(np.int32)), values)

        runs = pa.table({
            "run_id": run_dict,
            "started_at": pa.array(self.started[lo:hi], pa.timestamp("us")),
            "label": pa.array([ph.label for ph in phases]),
            "pipeline": pa.array([self.pipeline(ph.regressed) for ph in phases]),
        })
        # samples: main (regressed contexts after the regression) then canary, per run
        texts = self.main + self.main_regressed + self.canary
        n, c = self.n_samples, len(self.canary)
        regressed = np.array([ph.regressed for ph in phases])
        idx = np.concatenate([np.arange(n)[None, :] + n * regressed[:, None],
                              np.broadcast_to(2 * n + np.arange(c), (r, c))], axis=1).ravel()
        contexts = pa.array([list(s.contexts) for s in texts], pa.list_(pa.string())).take(pa.array(idx))
        suite_idx = np.tile(np.r_[np.zeros(n), np.ones(c)], r)
        samples = pa.table({
            "run_id": dict_col(np.repeat(np.arange(r), n + c), run_dict),
            "suite": dict_col(suite_idx, pa.array([MAIN, CANARY])),
            "sample_id": dict_col(idx, pa.array([s.sample_id for s in texts])),
            "question": dict_col(idx, pa.array([s.question for s in texts])),
            "answer": dict_col(idx, pa.array([s.answer for s in texts])),
            "contexts": contexts,
            "ground_truth": dict_col(idx, pa.array([s.ground_truth for s in texts])),
        })
        # sample scores
        parts = []
        status_values = pa.array([OK, FAILED, EXCLUDED])
        reason_values = pa.array(["", FAILED_REASON, "no items to judge: the artifact they come from is empty"])
        metric_values = pa.array(list(METRIC_NAMES))
        for (suite, m), (positives, counts, failed) in self.draws(lo, hi).items():
            excluded = counts == 0
            failed = failed & ~excluded
            ok = ~(excluded | failed)
            status = np.where(excluded, 2, np.where(failed, 1, 0))
            score = np.divide(positives, counts, out=np.zeros(positives.shape), where=counts > 0)
            verdict = np.where(ok, offsets[(suite, m)][None, :] + positives, empty)
            ids = self.main if suite == MAIN else self.canary
            k = len(ids)
            parts.append(pa.table({
                "run_id": dict_col(np.repeat(np.arange(r), k), run_dict),
                "suite": dict_col(np.zeros(r * k), pa.array([suite])),
                "metric": dict_col(np.full(r * k, METRIC_NAMES.index(m)), metric_values),
                "sample_id": dict_col(np.tile(np.arange(k), r), pa.array([s.sample_id for s in ids])),
                "status": dict_col(status.ravel(), status_values),
                "score": pa.array(score.ravel(), mask=~ok.ravel()),
                "reason": dict_col(status.ravel(), reason_values),
                "verdicts": dict_col(verdict.ravel(), pool_arr),
            }))
        scores = pa.concat_tables(parts)
        inst_rows = []
        for i, ph in zip(runs_idx, phases, strict=True):
            for m in METRIC_NAMES:
                t, b = (ph.faithfulness_template, ph.faithfulness_binding) if m == "faithfulness" else (
                    DEFAULT_TEMPLATES[m], PROJECTED)
                inst_rows.append((self.run_ids[i], MAIN, m, ph.judge_model, prompt_hash(t), b, ph.judge_model))
            inst_rows.append((self.run_ids[i], CANARY, "faithfulness", ph.judge_model,
                              prompt_hash(ph.faithfulness_template), ph.faithfulness_binding, ph.judge_model))
        cols = ["run_id", "suite", "metric", "judge_model", "prompt_hash", "binding", "fingerprint"]
        instruments = pa.table({c: [row[j] for row in inst_rows] for j, c in enumerate(cols)})
        t = self.templates()
        prompts = pa.table({"prompt_hash": list(t), "metric": [v[0] for v in t.values()],
                            "template": [v[1] for v in t.values()]})
        return RunBatch(runs, samples, scores, instruments, prompts)

    def batches(self, chunk: int = CHUNK) -> Iterator[RunBatch]:
        for lo in range(0, self.n_runs, chunk):
            yield self.batch(lo, min(self.n_runs, lo + chunk))

    # -- as RunRecords (for the record_run path) ------------------------------------------
    def records(self, lo: int, hi: int, *, run_ids: list[str] | None = None) -> list[RunRecord]:
        """Runs lo..hi as RunRecords with exactly the rows `batch(lo, hi)` holds."""
        draws = self.draws(lo, hi)
        out = []
        for k, i in enumerate(range(lo, hi)):
            ph = self.phase(i)
            main = self.main_regressed if ph.regressed else self.main
            metrics = []
            for (suite, m), (positives, _, failed) in draws.items():
                samples: list[EvalSample] = main if suite == MAIN else self.canary
                results = []
                for n, s in enumerate(samples):
                    count, items = self._items[(suite, m)][n]
                    if count == 0:
                        results.append(SampleResult(s.sample_id, EXCLUDED,
                                                    reason="no items to judge: the artifact they come from is empty"))
                    elif failed[k, n]:
                        results.append(SampleResult(s.sample_id, FAILED, reason=FAILED_REASON))
                    else:
                        q = int(positives[k, n])
                        results.append(SampleResult(s.sample_id, OK, q / count, self._verdicts(m, items, q)))
                t, b = (ph.faithfulness_template, ph.faithfulness_binding) if m == "faithfulness" else (
                    DEFAULT_TEMPLATES[m], PROJECTED)
                metrics.append(MetricRecord(m, results, ph.judge_model, t, b, suite, ph.judge_model))
            rid = run_ids[k] if run_ids else self.run_ids[i]
            out.append(RunRecord(rid, self.started[i], json.loads(self.pipeline(ph.regressed)),
                                 {MAIN: main, CANARY: self.canary}, metrics, ph.label))
        return out


@dataclass(frozen=True)
class Built:
    """A built synthetic store and what it took."""

    path: Path
    runs: int
    score_rows: int
    sample_rows: int
    seconds: float
    generate_seconds: float

    @property
    def rows_per_second(self) -> float:
        return self.score_rows / self.seconds


def build(path: Path, n_runs: int, *, seed: int = 0, chunk: int = CHUNK, verdicts: str = "compact") -> Built:
    """Build a synthetic store at `path` (replaced) with record_runs_bulk, in one transaction."""
    for p in (path, Path(f"{path}.wal")):
        p.unlink(missing_ok=True)
    history = History(n_runs, seed=seed, verdicts=verdicts)
    _ = history._pool  # the verdict texts are part of generating, timed below
    gen = 0.0
    t0 = time.perf_counter()

    def timed() -> Iterator[RunBatch]:
        nonlocal gen
        for lo in range(0, n_runs, chunk):
            t = time.perf_counter()
            b = history.batch(lo, min(n_runs, lo + chunk))
            gen += time.perf_counter() - t
            yield b

    with Store(path) as store:
        store.record_runs_bulk(timed())
        counts = store.counts()
    seconds = time.perf_counter() - t0
    return Built(path, counts["runs"], counts["sample_scores"], counts["samples"], seconds, gen)
