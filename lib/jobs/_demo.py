"""The demo history: a seeded product-documentation eval, really run through the harness.

About 400 samples over a synthetic documentation corpus. Each answer mixes
claims the passages state, correct claims only the reference holds, and wrong
claims, in proportions near the source study (about 0.78 passage-supported,
0.71 reference-supported). About 90 nightly runs are then scored with the
offline judge, each with its own judge seed (run-to-run noise), through these
events:

| run | event | what it does to the numbers |
|---|---|---|
| 18 | judge model offline-lexical-v1 -> v2 | a marker; nothing moves beyond noise |
| 30 | harness refactor: the faithfulness template renders ground_truth | faithfulness leaps toward 0.94 |
| 45 | "ignore the reference" instruction added to that template | a few points back, the leak stays |
| 58 | retriever regression (embedding model swap) | context recall falls; true faithfulness falls, masked by the leak |
| 75 | leak fixed: template renders answer and contexts only | faithfulness drops to its true, regressed level |

A pinned canary set of 12 samples, whose answers hold correct facts that only
the reference states, is scored for faithfulness on every run.

People's labels ship with it (`demo_labels`): every claim of 150 of the samples
labelled for faithfulness from what was planted (a claim is supported exactly
when a passage states it), for the sample as first retrieved and, where the
regressed retriever changed its passages, as regressed. So agreement with
people, the leak's bias and the judge change's effect show on first start.
"""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import random
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from lib.core.endpoints import DEMO_GENERATOR, OFFLINE
from lib.core.errors import StoreError
from lib.core.labels import BINARY, Label, content_key, label_items
from lib.core.metrics import METRIC_NAMES, METRICS
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED, REPLAY, output_rule
from lib.core.records import CANARY, MAIN, MetricRecord, RunRecord
from lib.core.samples import EvalSample
from lib.diagnosis.incidents import rejudge_open_episodes
from lib.judging import OfflineJudge
from lib.judging.harness import Instrument, score_samples
from lib.judging.offline import STAND_IN_NOISE
from lib.store import PreparedRun, Store, prepare_run

FEATURES = [
    "audit log exports", "single sign-on sessions", "webhook deliveries", "backup snapshots",
    "usage reports", "invoice emails", "search indexes", "mobile push notifications", "sandbox workspaces",
    "billing alerts", "password resets", "team invitations", "scheduled dashboards", "data warehouse syncs",
    "file attachments", "comment threads", "calendar integrations", "access tokens", "status page incidents",
    "workflow automations", "spreadsheet imports", "video recordings", "chat transcripts", "license keys",
    "firewall rules", "storage buckets", "deployment pipelines", "feature flags", "support tickets",
    "survey responses", "translation memories", "print queues", "kiosk terminals", "loyalty points",
    "shipping labels", "vendor contracts", "expense receipts", "payroll batches", "inventory counts",
    "sensor readings",
]
# Attribute sentences; {f} is the feature (capitalised at the start), {v} the value.
ATTRIBUTES: list[tuple[str, list[Any]]] = [
    ("are retained for {v} days", [30, 60, 90, 180, 365]),
    ("are delivered daily at {v} UTC", ["01:00", "02:00", "03:30", "04:00", "06:00"]),
    ("allow at most {v} requests per minute", [60, 100, 300, 600, 1200]),
    ("use {v}-bit encryption keys", [128, 192, 256]),
    ("cost {v} dollars per seat each month", [2, 4, 5, 8, 12]),
    ("expire after {v} minutes of inactivity", [15, 30, 45, 60, 120]),
    ("keep {v} previous versions", [3, 5, 10, 20]),
    ("retry failed attempts {v} times", [2, 3, 5, 8]),
    ("accept files up to {v} megabytes", [10, 25, 50, 100, 250]),
    ("are replicated across {v} regions", [2, 3, 4, 6]),
    ("raise an alert after {v} consecutive failures", [3, 5, 10]),
    ("refresh their index every {v} hours", [1, 2, 6, 12, 24]),
]
FILLER = [
    "Administrators can change this in the settings page.",
    "This behaviour is documented in the platform guide.",
    "Owners receive a summary by email.",
    "The setting applies to every workspace on the plan.",
]
N_SAMPLES = 400
N_RUNS = 90
N_CANARY = 12
FIRST_RUN = datetime(2026, 9, 3, 2, 0)
N_LABELLED = 150
LABELLER = "demo: planted truth"


EVENTS = {18: "judge model change", 30: "harness refactor", 45: "ignore-the-reference instruction",
          58: "retriever regression", 75: "leak fixed"}



def _rule_of_its_time(metric: str) -> str:
    """The output rule the demo's history was judged with, before structured outputs: its one-item example is
    what a small model copies (lib.core.prompts words today's rule without one). Kept so the seeded history, its
    prompt hashes and its figures stay what they were."""
    pos, neg = METRICS[metric].labels
    return ("Return only JSON, one verdict per item, in order:\n"
            '{{"verdicts": [{{"item": 1, "verdict": "' + pos + '", "evidence": "..."}}]}}\n'
            f'Verdict words: "{pos}" or "{neg}". Evidence: the sentence that decided it, copied exactly, or "".')


DEMO_TEMPLATES: dict[str, str] = {m: t.replace(output_rule(m), _rule_of_its_time(m))
                                  for m, t in DEFAULT_TEMPLATES.items()}
LEAKY_FAITHFULNESS = DEMO_TEMPLATES["faithfulness"].replace(
    "CLAIMS:\n{items}", "REFERENCE ANSWER:\n{ground_truth}\n\nCLAIMS:\n{items}")
INSTRUCTED_FAITHFULNESS = LEAKY_FAITHFULNESS.replace(
    "A claim is supported only if a passage states it.\n",
    "A claim is supported only if a passage states it.\n"
    "Judge support using the CONTEXT section only. Ignore the REFERENCE ANSWER section.\n")
FIXED_FAITHFULNESS = DEMO_TEMPLATES["faithfulness"].replace(
    "A claim is supported only if a passage states it.\n",
    "A claim is supported only if one of the passages states it; the judge sees no other text.\n")


@dataclass(frozen=True)
class DemoSample:
    """A demo sample with the passage regression-prone facts live in."""

    sample: EvalSample
    regressed: EvalSample


def _fact(feature: str, attr: int, value: object) -> str:
    pattern = ATTRIBUTES[attr][0]
    sentence = f"{feature} {pattern.format(v=value)}."
    return sentence[0].upper() + sentence[1:]


def _wrong(rng: random.Random, attr: int, value: object) -> object:
    options = [v for v in ATTRIBUTES[attr][1] if v != value]
    return rng.choice(options)


def _passage(rng: random.Random, facts: list[str]) -> str:
    body = list(facts) + rng.sample(FILLER, k=1)
    rng.shuffle(body)
    return " ".join(body)


def _make_sample(rng: random.Random, idx: int, *, canary: bool = False) -> DemoSample:
    feature = FEATURES[idx % len(FEATURES)]
    other = FEATURES[(idx * 7 + 3) % len(FEATURES)]
    if other == feature:
        other = FEATURES[(idx + 1) % len(FEATURES)]
    attrs = rng.sample(range(len(ATTRIBUTES)), k=10)
    values = {a: rng.choice(ATTRIBUTES[a][1]) for a in attrs}
    n_claims = rng.choice([4, 4, 5, 5, 5, 6])
    if canary:
        cats = ["both"] + ["ref"] * 3
    else:
        cats = rng.choices(["both", "ctx", "ref", "none"], weights=[0.57, 0.23, 0.15, 0.05], k=n_claims)
    claims, ctx_facts, ref_facts = [], [], []
    for a, cat in zip(attrs, cats, strict=False):
        true = _fact(feature, a, values[a])
        if cat == "none":
            claims.append(_fact(feature, a, _wrong(rng, a, values[a])))
            continue
        claims.append(true)
        if cat in ("both", "ctx"):
            ctx_facts.append(true)
        if cat in ("both", "ref"):
            ref_facts.append(true)
    spare = attrs[len(cats):]
    # The reference states one more passage-backed fact the answer left out (recall's denominator).
    extra = _fact(feature, spare[0], values[spare[0]])
    ctx_facts.append(extra)
    ref_facts.append(extra)
    off_topic = [_fact(other, a, rng.choice(ATTRIBUTES[a][1])) for a in spare[1:3]]
    distractor = _passage(rng, off_topic)
    rng.shuffle(ctx_facts)
    half = max(1, len(ctx_facts) // 2)
    p1, p2 = _passage(rng, ctx_facts[:half]), _passage(rng, ctx_facts[half:] or [FILLER[0]])
    contexts = [p1, p2, distractor] if rng.random() < 0.6 else [p1, distractor, p2]
    if not canary and rng.random() < 0.08:
        claims.append(off_topic[0])  # stated by a passage, but not about the question
    rng.shuffle(claims)
    sid = f"{'canary' if canary else 'doc'}-{idx:04d}"
    question = f"How do {feature} work?"
    answer = "" if (not canary and idx % 197 == 13) else " ".join(claims)
    sample = EvalSample(sid, question, answer, tuple(contexts), " ".join(ref_facts))
    # The regressed retriever loses the second supporting passage for about 30% of questions.
    if rng.random() < 0.3:
        other2 = FEATURES[(idx * 11 + 5) % len(FEATURES)]
        junk = _passage(rng, [_fact(other2, spare[3], rng.choice(ATTRIBUTES[spare[3]][1]))])
        regressed = replace(sample, contexts=(junk, *(c for c in contexts if c != p2)))
    else:
        regressed = sample
    return DemoSample(sample, regressed)


def demo_samples(seed: int = 7) -> tuple[list[DemoSample], list[EvalSample]]:
    """The demo eval set (with its regressed retrieval) and the canary set."""
    rng = random.Random(seed)
    main = [_make_sample(rng, i) for i in range(N_SAMPLES)]
    canary_rng = random.Random(seed + 1)
    canary = [_make_sample(canary_rng, 1000 + i, canary=True).sample for i in range(N_CANARY)]
    return main, canary


@dataclass(frozen=True)
class RunPlan:
    index: int
    run_id: str
    started_at: datetime
    judge_model: str
    faithfulness_template: str
    faithfulness_binding: str
    regressed: bool
    label: str

    @property
    def pipeline(self) -> dict[str, object]:
        return {
            "retriever": {"embedding_model": "e5-small-v2-int8" if self.regressed else "e5-base-v2",
                          "top_k": 3, "index": "docs-2026-08"},
            "generator": {"model": DEMO_GENERATOR, "prompt": "rag-answer-v7", "temperature": 0.2},
        }


def run_plans(n_runs: int = N_RUNS) -> list[RunPlan]:
    """The nightly runs and the state of the instrument and pipeline at each."""
    plans = []
    for i in range(n_runs):
        if i < 30:
            template, binding = DEMO_TEMPLATES["faithfulness"], PROJECTED
        elif i < 45:
            template, binding = LEAKY_FAITHFULNESS, REPLAY
        elif i < 75:
            template, binding = INSTRUCTED_FAITHFULNESS, REPLAY
        else:
            template, binding = FIXED_FAITHFULNESS, PROJECTED
        started = FIRST_RUN + timedelta(days=i, minutes=(i * 37) % 50)
        plans.append(RunPlan(i, f"nightly-{started:%Y%m%d}", started,
                             "offline-lexical-v1" if i < 18 else "offline-lexical-v2",
                             template, binding, i >= 58, EVENTS.get(i, "")))
    return plans


def score_run(plan: RunPlan, samples: list[EvalSample], canary: list[EvalSample]) -> RunRecord:
    """Score one nightly run for real with the offline judge (seeded by the run)."""
    judge = OfflineJudge(plan.judge_model, noise=STAND_IN_NOISE)
    metrics = []
    for metric in METRIC_NAMES:
        if metric == "faithfulness":
            template, binding = plan.faithfulness_template, plan.faithfulness_binding
        else:
            template, binding = DEMO_TEMPLATES[metric], PROJECTED
        inst = Instrument(metric, template, binding)
        results = score_samples(samples, inst, judge, seed=plan.index)
        metrics.append(MetricRecord(metric, results, judge.model, template, binding, MAIN, judge.model))
        if metric == "faithfulness":
            canary_results = score_samples(canary, inst, judge, seed=plan.index)
            metrics.append(MetricRecord(metric, canary_results, judge.model, template, binding, CANARY,
                                        judge.model))
    return RunRecord(plan.run_id, plan.started_at, plan.pipeline, {MAIN: samples, CANARY: canary}, metrics,
                     plan.label)


def _score_plan(args: tuple[RunPlan, int]) -> RunRecord:
    plan, seed = args
    main, canary = _cached_samples(seed)
    return score_run(plan, [d.regressed if plan.regressed else d.sample for d in main], canary)


def _prepare_plan(args: tuple[RunPlan, int]) -> PreparedRun:
    """A worker's whole share of one run: judged, checked and laid out as rows (the owner of the file only writes)."""
    return prepare_run(_score_plan(args))


_SAMPLES: dict[int, tuple[list[DemoSample], list[EvalSample]]] = {}


def _cached_samples(seed: int) -> tuple[list[DemoSample], list[EvalSample]]:
    if seed not in _SAMPLES:
        _SAMPLES[seed] = demo_samples(seed)
    return _SAMPLES[seed]


def demo_labels(main: list[DemoSample], seed: int = 7) -> list[Label]:
    """Faithfulness labels of every claim of N_LABELLED samples, from what the demo planted.

    A claim is supported exactly when one of the passages states it: the demo builds passages from the very
    sentences its supported claims are, so "the claim's sentence is in a passage" is the planted truth, not a
    judge's reading. A sample whose passages the regressed retriever changed is labelled in both versions.
    """
    rng = random.Random(seed + 2)   # its own generator: the samples and runs stay what they were
    chosen = sorted(rng.sample([d for d in main if d.sample.answer], k=N_LABELLED), key=lambda d: d.sample.sample_id)
    when = FIRST_RUN - timedelta(days=1)
    out = []
    for d in chosen:
        for version in dict.fromkeys([d.sample, d.regressed]):
            passages = " ".join(version.contexts)
            for k, claim in enumerate(label_items("faithfulness", version), start=1):
                out.append(Label(suite=MAIN, sample_id=version.sample_id, metric="faithfulness", item=k, kind=BINARY,
                                 value=1.0 if claim in passages else 0.0, content=content_key("faithfulness", version),
                                 labeller=LABELLER, labelled_at=when, source="demo"))
    return out


def build_demo(path: str | Path, *, n_runs: int = N_RUNS, seed: int = 7, workers: int | None = None,
               progress: Callable[[int, int], None] | None = None, start_method: str = "spawn",
               rejudge_progress: Callable[[int, int], None] | None = None) -> dict[str, float]:
    """Build the demo database at `path`, judging runs on every core.

    The runs are judged, checked and laid out in `workers` processes (default:
    one a core, up to 4), each taking a block of consecutive runs: this one,
    and worker processes (spawned by default, so this is safe from a threaded
    server; "fork" from a process of one thread skips each worker's imports).
    This process writes them WRITE_EVERY runs a transaction; the file
    appears whole or not at all. `progress(done, total)` is called once before
    any run is judged and after each run is judged (the last after every run is
    written).
    Then every open episode that crosses an instrument change is re-judged
    with its trusted instrument by the demo's own free judge (lib.diagnosis.
    episodes), so the Overview opens with what one instrument says about it;
    `rejudge_progress(runs done, runs to re-judge)` follows that.
    Returns timings: seconds, runs, judged samples, samples per second.
    """
    with building(path, wait=False):
        return _build(Path(path), n_runs=n_runs, seed=seed, workers=workers, progress=progress,
                      start_method=start_method, rejudge_progress=rejudge_progress)


@contextmanager
def building(path: str | Path, *, wait: bool) -> Iterator[None]:
    """Hold the right to build the demo at `path` (a lock file beside it, `<path>.building.lock`).

    Two builds into one path shared one `<path>.building` file and ended in a DuckDB TransactionException;
    now the second says so in one line (`wait=False`, the CLI) or waits for the first (`wait=True`).

    Raises:
        StoreError: `wait` is False and another process is building the demo at `path`.
    """
    lock = Path(f"{path}.building.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            raise StoreError(f"another process is building the demo database at {path} now: wait for it to "
                             f"finish, or build into another path") from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# Runs written per transaction: each commit of one run cost its own fixed share (about 25 ms of the 65 ms a run
# took to write, 90 runs one by one 5.7 CPU s, in transactions of 30 runs 4.1 s, measured 6 December 2026), and
# a batch this size holds some 40 MB of laid-out rows at most.
WRITE_EVERY = 20


def _blocks(plans: list[RunPlan], width: int) -> list[list[RunPlan]]:
    """`width` blocks of consecutive runs, as even as they divide."""
    n = len(plans)
    return [plans[k * n // width:(k + 1) * n // width] for k in range(width) if k * n // width < (k + 1) * n // width]


@contextmanager
def _judging(plans: list[RunPlan], seed: int, width: int, start_method: str) -> Iterator[Iterator[PreparedRun]]:
    """The runs, judged and laid out (prepare_run), as they finish: `width` blocks of consecutive runs, the last
    judged in this process and each other in a worker process of its own (`width` 1: all in this process).

    Consecutive runs share their judge, templates and retrieval, so a process's caches (rendered prompts, the
    offline judge's decisions, parsed replies) serve its whole block; runs dealt to whichever worker was free
    had both workers judge nearly every distinct prompt of the history, cold. This process takes the last block
    rather than waiting on its workers: one worker fewer to start, and the re-judge that follows (the trusted
    instrument is the last runs' template, by the last runs' judge) finds its prompts and decisions made. The
    pools start before the caller opens its file: a forked worker holds no copy of the connection.
    """
    blocks = _blocks(plans, width)
    *theirs, ours = blocks
    ctx = multiprocessing.get_context(start_method)
    pools = [ProcessPoolExecutor(max_workers=1, mp_context=ctx) for _ in theirs]
    try:
        futures = [pool.submit(_prepare_plan, (p, seed)) for pool, block in zip(pools, theirs, strict=True)
                   for p in block]
        yield _ours_then_theirs(ours, seed, futures)
    finally:
        for pool in pools:
            pool.shutdown(cancel_futures=True)


def _ours_then_theirs(ours: list[RunPlan], seed: int, futures: list[Future[PreparedRun]]) -> Iterator[PreparedRun]:
    """This process's runs as it judges them, each followed by the workers' runs finished meanwhile; then the
    workers' others as they finish."""
    pending = set(futures)
    for plan in ours:
        yield _prepare_plan((plan, seed))
        finished = [f for f in futures if f in pending and f.done()]
        pending.difference_update(finished)
        yield from (f.result() for f in finished)
    yield from (f.result() for f in as_completed(pending))


def _build(path: Path, *, n_runs: int, seed: int, workers: int | None, progress: Callable[[int, int], None] | None,
           start_method: str, rejudge_progress: Callable[[int, int], None] | None) -> dict[str, float]:
    t0 = time.perf_counter()
    main, canary = _cached_samples(seed)
    plans = run_plans(n_runs)
    judged = n_runs * (len(METRIC_NAMES) * len(main) + len(canary))
    tmp = Path(f"{path}.building")
    tmp.unlink(missing_ok=True)
    width = max(1, min(workers if workers is not None else min(4, os.cpu_count() or 1), len(plans)))
    if progress:
        progress(0, len(plans))
    with _judging(plans, seed, width, start_method) as runs, Store(tmp) as store:
        waiting: list[PreparedRun] = []
        for done, run in enumerate(runs, start=1):
            waiting.append(run)
            if len(waiting) == WRITE_EVERY or done == len(plans):
                store.record_prepared(waiting)
                waiting = []
            if progress:
                progress(done, len(plans))
    with Store(tmp) as store:
        store.add_labels(demo_labels(main, seed))
        judge = OfflineJudge(plans[-1].judge_model, noise=STAND_IN_NOISE)
        rejudge_open_episodes(store, judge, endpoint=OFFLINE, progress=rejudge_progress)
    Path(tmp).replace(path)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "runs": len(plans), "judged": judged, "per_second": judged / seconds}


def ensure_demo(path: str | Path) -> bool:
    """Build the demo at `path` if it does not exist; True if it was built (False: it was there, or another
    process built it while this one waited)."""
    if Path(path).exists():
        return False
    with building(path, wait=True):
        if Path(path).exists():
            return False
        _build(Path(path), n_runs=N_RUNS, seed=7, workers=None, progress=None, start_method="spawn",
               rejudge_progress=None)
    return True
