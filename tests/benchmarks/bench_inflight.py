"""Model-judge calls in flight: an ablation's wall time against the ideal at 16 and 64 in flight, with client CPU.

    python tests/benchmarks/bench_inflight.py [--workdir /tmp/evaldrift-bench] [--runs 35]

The judge server (tests/benchmarks/judge_server.py) runs in its own process and
answers every call after 50 ms, so the ideal wall time of a job is
calls x 50 ms / in flight; what is left over is the client (its CPU per call on
one interpreter), the ramp of the adaptive pacer, and the server's own CPU on a
machine that may be shared. The floor rows measure the same server with bare
clients (no harness, no store; tests/benchmarks/inflight_floor.py): the best
ratio this machine allows a Python client, and the server's CPU per request.
Each width is measured on an endpoint the pacer has
already learnt (a first ablation on another run teaches it, as any earlier job
in the same process would); the cold first job is printed beside it.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED  # noqa: E402
from lib.diagnosis.ablation import AblationSpec, run_ablation  # noqa: E402
from lib.jobs._demo import build_demo, run_plans  # noqa: E402
from lib.judging.harness import Instrument, score_samples  # noqa: E402
from lib.judging.openai_judge import OpenAIJudge  # noqa: E402
from lib.store import Store  # noqa: E402
from tests.benchmarks.inflight_floor import CLIENTS, bodies, measure_client  # noqa: E402
from tests.benchmarks.judge_server import JudgeServer  # noqa: E402

MODEL = "evaldrift-bench-judge"
LATENCY = 0.05
WIDTHS = (16, 64)
TARGET = {64: 1.2}
LEAKY_RUN = 30
BLANKS = ("ground_truth", "question", "contexts")
FLOOR_CALLS = 1200   # about the ablation's calls


def demo_db(work: Path, n_runs: int, name: str) -> Path:
    """A fresh copy of the demo database (built once per work folder), with an empty call cache."""
    path = work / f"demo-{n_runs}.duckdb"
    if not path.exists():
        build_demo(path, n_runs=n_runs)
    copy = work / f"{name}-{n_runs}.duckdb"
    copy.unlink(missing_ok=True)
    shutil.copy(path, copy)
    return copy


def _ablate(store: Store, server: JudgeServer, run_id: str, width: int, blanks: tuple[str, ...]) -> dict:
    judge = OpenAIJudge(MODEL, base_url=server.base_url, concurrency=width, timeout=30, max_attempts=3)
    spec = AblationSpec(run_id, ("faithfulness",), blanks, repeats=1, judge=MODEL, endpoint=server.base_url,
                        seed=7000 + width, sequential=False)   # every sample: the calls are what is measured
    before, server_cpu = server.n_calls(), server.cpu()
    t, cpu = time.perf_counter(), time.process_time()
    result = run_ablation(store, spec, judge)
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    calls, server_cpu = server.n_calls() - before, server.cpu() - server_cpu
    judge.close()
    ideal = calls * LATENCY / width
    return {"calls": calls, "wall": wall, "ideal": ideal, "ratio": wall / ideal if calls else float("nan"),
            "cpu_ms": 1000 * cpu / calls if calls else float("nan"), "pacing": judge.pacing.sentence,
            "server_ms": 1000 * server_cpu / calls if calls else float("nan"),
            "verdict": result.summary if result else "stopped"}


def _harness(store: Store, server: JudgeServer, run_id: str, width: int) -> dict:
    """The harness alone (no ablation planning, storing or analysis): a run's samples judged under 3 seeds."""
    samples = store.samples(run_id)
    judge = OpenAIJudge(MODEL, base_url=server.base_url, concurrency=width, timeout=30, max_attempts=3)
    instrument = Instrument("faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)
    before = server.n_calls()
    t, cpu = time.perf_counter(), time.process_time()
    for seed in range(3):
        score_samples(samples, instrument, judge, seed=90_000 + 10 * width + seed, cache=store)
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    calls = server.n_calls() - before
    judge.close()
    ideal = calls * LATENCY / width
    return {"calls": calls, "wall": wall, "ideal": ideal, "ratio": wall / ideal, "cpu_ms": 1000 * cpu / calls}


def floor(store: Store, server: JudgeServer, run_id: str) -> list[tuple[str, float, str, str]]:
    """What the machine allows at each width: bare clients against the same server (tests/benchmarks/inflight_floor)."""
    work = bodies(store, run_id, MODEL, FLOOR_CALLS)
    out = []
    for width in WIDTHS:
        for name in CLIENTS:
            r = measure_client(server, name, work, width, LATENCY)
            out.append((f"floor: {name}, ratio to ideal at {width} in flight", r["ratio"], "none",
                        f"{r['wall']:.2f} s for {r['calls']} calls; client CPU {r['cpu_ms']:.2f} ms a call, "
                        f"server CPU {r['server_ms']:.2f} ms a call"))
    return out


def measure(db: Path) -> list[tuple[str, float, str, str]]:
    """(figure, value, target, note) for each width: cold first job, then the measured job."""
    plans = run_plans()
    out = []
    with JudgeServer(latency=LATENCY) as server, Store(db) as store:
        for width in WIDTHS:
            cold = _ablate(store, server, plans[LEAKY_RUN - 1 - WIDTHS.index(width)].run_id, width, BLANKS)
            warm = _ablate(store, server, plans[LEAKY_RUN].run_id, width, BLANKS)
            target = f"<= {TARGET[width]}x" if width in TARGET else "none"
            out.append((f"ratio to ideal at {width} in flight", warm["ratio"], target,
                        f"{warm['wall']:.2f} s for {warm['calls']} calls, ideal {warm['ideal']:.2f} s; "
                        f"cold first job {cold['ratio']:.2f}x; {warm['pacing']}"))
            out.append((f"client CPU per call at {width} in flight", warm["cpu_ms"], "none",
                        f"ms, one interpreter; wall = ideal needs at most {1000 * LATENCY / width:.2f} ms; "
                        f"the server's own CPU {warm['server_ms']:.2f} ms a call"))
            alone = _harness(store, server, plans[LEAKY_RUN].run_id, width)
            out.append((f"harness alone: ratio to ideal at {width} in flight", alone["ratio"], "none",
                        f"{alone['wall']:.2f} s for {alone['calls']} calls, ideal {alone['ideal']:.2f} s; "
                        f"client CPU {alone['cpu_ms']:.2f} ms a call"))
        out += floor(store, server, plans[LEAKY_RUN].run_id)
        if server.errors():
            out.append(("server errors", len(server.errors()), "0", "; ".join(server.errors())))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default="/tmp/evaldrift-bench")
    parser.add_argument("--runs", type=int, default=35, help="demo runs to build (at least 31)")
    args = parser.parse_args(argv)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    for name, value, target, note in measure(demo_db(work, max(args.runs, LEAKY_RUN + 1), 'inflight')):
        print(f"{name}: {value:.2f} (target {target}) [{note}]", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
