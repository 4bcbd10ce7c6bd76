"""Calls only for distinct prompts: the demo's re-judged history and a repeated ablation, against a loopback model.

    python tests/benchmarks/bench_distinct.py [--workdir /tmp/evaldrift-bench] [--runs 35]

Faithfulness is re-judged over every run of the demo with the trusted
instrument and a model judge on a loopback server (64 in flight); the
distinct prompts are counted from the requests the judge would send (the
call cache's keys), and the calls from the server's own count. Then two
ablations of one unchanged run with the same judge: the second must ask
nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lib.core.prompts import build_prompt  # noqa: E402
from lib.diagnosis import cost, rejudge  # noqa: E402
from lib.diagnosis.ablation import AblationSpec, run_ablation  # noqa: E402
from lib.judging.openai_judge import OpenAIJudge  # noqa: E402
from lib.store import Store  # noqa: E402
from tests.benchmarks.bench_inflight import demo_db  # noqa: E402
from tests.benchmarks.judge_server import JudgeServer  # noqa: E402

MODEL = "evaldrift-bench-judge"
LATENCY = 0.005
WIDTH = 64


def distinct_prompts(store: Store, spec: rejudge.RejudgeSpec) -> tuple[int, int]:
    """(judgings that need a call, distinct requests among them), as the call cache keys them."""
    keys, judged = set(), 0
    for rid in spec.run_ids:
        for s in store.samples(rid, spec.suite):
            prompt, items = build_prompt(spec.template, spec.metric, s, spec.binding)
            if items:
                judged += 1
                keys.add(cost.judge_request(spec.judge, spec.endpoint, prompt, spec.seed).key)
    return judged, len(keys)


def measure(db: Path) -> list[tuple[str, float, str, str]]:
    out = []
    with JudgeServer(latency=LATENCY) as server, Store(db) as store:
        trusted = rejudge.trusted_instrument(store, "faithfulness")
        spec = rejudge.RejudgeSpec("faithfulness", tuple(store.run_ids()), trusted.template, trusted.binding,
                                   judge=MODEL, endpoint=server.base_url, label="bench")
        judged, distinct = distinct_prompts(store, spec)
        judge = OpenAIJudge(MODEL, base_url=server.base_url, concurrency=WIDTH, timeout=30, max_attempts=3)
        before = server.n_calls()
        rejudge.run_rejudge(store, spec, judge)
        calls = server.n_calls() - before
        out.append(("re-judged history: calls made / distinct prompts", calls / distinct, "1.00",
                    f"{calls} calls for {distinct} distinct prompts over {judged} judgings in "
                    f"{len(spec.run_ids)} runs"))
        run_id = spec.run_ids[-1]
        first = AblationSpec(run_id, ("faithfulness",), ("ground_truth",), repeats=1, judge=MODEL,
                             endpoint=server.base_url, sequential=False)
        again = AblationSpec(run_id, ("faithfulness",), ("ground_truth",), repeats=1, judge=MODEL,
                             endpoint=server.base_url, limit=10_000, sequential=False)   # another id, same requests
        before = server.n_calls()
        run_ablation(store, first, judge)
        first_calls = server.n_calls() - before
        before = server.n_calls()
        run_ablation(store, again, judge)
        repeat_calls = server.n_calls() - before
        out.append(("repeated ablation of an unchanged run: calls", repeat_calls, "0",
                    f"the first made {first_calls}"))
        judge.close()
        if server.errors():
            out.append(("server errors", len(server.errors()), "0", "; ".join(server.errors())))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default="/tmp/evaldrift-bench")
    parser.add_argument("--runs", type=int, default=35, help="demo runs to build")
    args = parser.parse_args(argv)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    for name, value, target, note in measure(demo_db(work, args.runs, "distinct")):
        print(f"{name}: {value:.2f} (target {target}) [{note}]", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
