"""Judging: the demo build, harness throughput, ablations (model judge and offline), the call cache, Ragas."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from lib.core.metrics import METRIC_NAMES
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.results import aggregate
from lib.diagnosis.ablation import AblationSpec, run_ablation
from lib.jobs._demo import build_demo, run_plans
from lib.judging import OfflineJudge
from lib.judging.harness import Instrument, score_samples
from lib.judging.openai_judge import OpenAIJudge
from lib.store import Store
from tests.benchmarks.judge_server import JudgeServer
from tests.benchmarks.report import Figure, Report

MODEL = "evaldrift-bench-judge"
LATENCY = 0.05
CONCURRENCY = 16
LEAKY_RUN = 30            # the demo's harness-refactor run (faithfulness reads ground_truth)
RAGAS_PYTHON = Path(os.environ.get("EVALDRIFT_RAGAS_PYTHON", "/tmp/ragas-venv/bin/python"))
WORKER = Path(__file__).with_name("ragas_worker.py")


def demo(report: Report, work: Path, n_runs: int) -> Path:
    """Build the demo (issue 2's benchmark): seconds and judged samples per second."""
    path = work / f"demo-{n_runs}.duckdb"
    t = build_demo(path, n_runs=n_runs)
    report.add(Figure(f"demo_build_s@{n_runs}", f"demo build, {n_runs} runs, offline judge", t["seconds"], "s",
                      note=f"{t['judged']:,.0f} samples judged on {os.cpu_count()} cores"))
    report.add(Figure("demo_samples_per_s", "demo build: judged samples per second", t["per_second"], "samples/s",
                      note="worker processes score runs, this process records them"))
    with Store(path) as store:
        samples = store.samples(store.run_ids()[0])
    judge = OfflineJudge(noise=0.03)
    t0 = time.perf_counter()
    n = 0
    for metric in METRIC_NAMES:
        score_samples(samples, Instrument(metric, DEFAULT_TEMPLATES[metric], PROJECTED), judge, seed=12345)
        n += len(samples)
    secs = time.perf_counter() - t0
    report.add(Figure("harness_samples_per_s", "harness, one process: samples judged per second (offline)",
                      n / secs, "samples/s", note=f"{n:,} judgings, 5 metrics x {len(samples)} samples, cold caches"))
    return path


def model_ablation(report: Report, demo_path: Path) -> None:
    """The OpenAI-compatible judge against the loopback server: wall/ideal, 0 calls on repeat, the call cache."""
    run_id = run_plans()[LEAKY_RUN].run_id
    with JudgeServer(latency=LATENCY) as server, Store(demo_path) as store:
        judge = OpenAIJudge(MODEL, base_url=server.base_url, concurrency=CONCURRENCY, timeout=30, max_attempts=3)
        spec = AblationSpec(run_id, ("faithfulness",), ("ground_truth",), repeats=1, judge=MODEL,
                            endpoint=server.base_url)
        before = server.n_calls()
        t, cpu = time.perf_counter(), time.process_time()
        result = run_ablation(store, spec, judge)
        wall, cpu = time.perf_counter() - t, time.process_time() - cpu
        calls = server.n_calls() - before
        ideal = calls * LATENCY / CONCURRENCY
        report.add(Figure("ablation_wall_over_ideal", f"model-judge ablation: wall / ideal ({calls} calls)",
                          wall / ideal, "x", "<= 1.5x", wall / ideal <= 1.5,
                          f"{wall:.2f} s against {calls} x {LATENCY} s / {CONCURRENCY} = {ideal:.2f} s; "
                          f"400 samples x 2 arms, empty answers need no call"))
        budget = f"{1000 * LATENCY / CONCURRENCY:.1f} ms a call ({LATENCY * 1000:.0f} ms / {CONCURRENCY})"
        report.add(Figure("ablation_client_cpu_ms", "model-judge ablation: client CPU per call", 1000 * cpu / calls,
                          "ms", note=f"this process, one interpreter; wall = ideal needs at most {budget}"))
        report.note(f"verdict: {result.summary}" if result else "ablation stopped")

        before = server.n_calls()
        t = time.perf_counter()
        again = run_ablation(store, spec, judge)
        repeat_calls = server.n_calls() - before
        same = again is not None and result is not None and again.summary == result.summary
        report.add(Figure("ablation_repeat_calls", "the identical ablation again: judge calls", repeat_calls, "calls",
                          "0", repeat_calls == 0, f"answered from the store in {1000 * (time.perf_counter() - t):.0f} "
                                                  f"ms{'' if same else '; RESULT DIFFERS'}"))

        limited = AblationSpec(run_id, ("faithfulness",), ("ground_truth",), repeats=1, judge=MODEL,
                               endpoint=server.base_url, limit=400)
        before = server.n_calls()
        t = time.perf_counter()
        cached = run_ablation(store, limited, judge)
        cache_calls = server.n_calls() - before
        report.add(Figure("ablation_cache_calls", "a new ablation (limit=400) over the same requests: judge calls",
                          cache_calls, "calls", "0", cache_calls == 0,
                          f"{cached.cached if cached else 0} of {calls} answers from the call cache, "
                          f"{time.perf_counter() - t:.2f} s"))
        if server.errors():
            report.note(f"server errors: {server.errors()}")


def offline_ablation(report: Report, demo_path: Path) -> None:
    """400 samples x 3 repeats x both arms with the offline judge."""
    run_id = run_plans()[LEAKY_RUN].run_id
    with Store(demo_path) as store:
        spec = AblationSpec(run_id, ("faithfulness",), ("ground_truth",), repeats=3, seed=4242)
        t = time.perf_counter()
        result = run_ablation(store, spec, OfflineJudge(noise=0.03))
        secs = time.perf_counter() - t
    report.add(Figure("offline_ablation_s", "offline ablation: 400 samples x 3 repeats x 2 arms", secs, "s", "< 2 s",
                      secs < 2.0, f"{2 * 3 * 400:,} judgings stored and analysed"))
    if result:
        report.note(f"verdict: {result.summary}")


def ragas(report: Report, work: Path, demo_path: Path) -> None:
    """Ragas' faithfulness and ours on the same 400 samples, the same server: calls per sample, wall time."""
    if not RAGAS_PYTHON.exists():
        report.note(f"Ragas: no environment at {RAGAS_PYTHON} (python -m venv /tmp/ragas-venv && "
                    "/tmp/ragas-venv/bin/pip install ragas); comparison skipped")
        return
    run_id = run_plans()[LEAKY_RUN].run_id
    with Store(demo_path) as store:
        samples = store.samples(run_id)
    data = work / "ragas-samples.jsonl"
    data.write_text("".join(json.dumps({"question": s.question, "answer": s.answer, "contexts": list(s.contexts)})
                            + "\n" for s in samples))
    with JudgeServer(latency=LATENCY) as server:
        judge = OpenAIJudge(MODEL, base_url=server.base_url, concurrency=CONCURRENCY, timeout=30, max_attempts=3)
        before = server.n_calls()
        t = time.perf_counter()
        ours = score_samples(samples, Instrument("faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED), judge)
        our_wall = time.perf_counter() - t
        our_calls = server.n_calls() - before
        before = server.n_calls()
        env = {**os.environ, "RAGAS_DO_NOT_TRACK": "true", "DO_NOT_TRACK": "1"}  # no telemetry off this machine
        t = time.perf_counter()
        proc = subprocess.run([str(RAGAS_PYTHON), str(WORKER), str(data), server.base_url, MODEL, str(CONCURRENCY)],
                              capture_output=True, text=True, timeout=1800, check=False, env=env)
        ragas_process = time.perf_counter() - t
        ragas_calls = server.n_calls() - before
        server_errors = server.errors()
    if proc.returncode != 0:
        report.note(f"Ragas did not run: {proc.stderr.strip().splitlines()[-1] if proc.stderr else proc.returncode}")
        return
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    n = len(samples)
    our_mean = aggregate(ours).score
    report.add(Figure("ragas_calls_ratio", "judge calls per sample, Ragas faithfulness / ours",
                      (ragas_calls / n) / (our_calls / n), "x",
                      note=f"Ragas {ragas_calls / n:.2f} a sample ({ragas_calls} calls), ours {our_calls / n:.2f} "
                           f"({our_calls}); Ragas {out['ragas']}"))
    report.add(Figure("ragas_wall_ratio", "wall time for the 400 samples, Ragas / ours", out["seconds"] / our_wall,
                      "x", note=f"Ragas {out['seconds']:.2f} s ({out['cpu_seconds']:.2f} s CPU), ours "
                                f"{our_wall:.2f} s, both {CONCURRENCY} in flight, {LATENCY * 1000:.0f} ms a call"))
    report.add(Figure("ragas_process_s", "Ragas worker process, start to finish (imports included)", ragas_process,
                      "s", note=f"importing ragas alone {out['import_seconds']:.1f} s"))
    report.note(f"faithfulness read by both on run {run_id} (a leaky run, but both read only answer and contexts "
                f"here): Ragas {out['mean'] if out['mean'] is None else round(out['mean'], 3)} over "
                f"{out['scored']} samples, ours {our_mean:.3f} over {sum(r.status == 'ok' for r in ours)}; "
                f"Ragas errors: {out['errors'] or 'none'}")
    if server_errors:
        report.note(f"server errors: {server_errors}")
