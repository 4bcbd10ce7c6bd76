"""The batch path end to end: the demo's re-judged history sent as one Batch API job to the loopback server.

    python tests/benchmarks/bench_batch.py [--workdir /tmp/evaldrift-bench] [--runs 35]

Faithfulness over every demo run with the trusted instrument: submit (the
distinct requests the call cache lacks, uploaded as JSONL), poll until the
batch ends, collect into the call cache, then finish the re-judge with the
live judge, which must ask nothing. The same history re-judged live is the
reference: the two series must be equal.
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

from lib.diagnosis import batch as bt  # noqa: E402
from lib.diagnosis import rejudge  # noqa: E402
from lib.judging.openai_judge import OpenAIJudge  # noqa: E402
from lib.store import Store  # noqa: E402
from tests.benchmarks.bench_distinct import distinct_prompts  # noqa: E402
from tests.benchmarks.bench_inflight import demo_db  # noqa: E402
from tests.benchmarks.judge_server import JudgeServer  # noqa: E402

MODEL = "evaldrift-bench-judge"


def _spec(store: Store, base_url: str) -> rejudge.RejudgeSpec:
    trusted = rejudge.trusted_instrument(store, "faithfulness")
    return rejudge.RejudgeSpec("faithfulness", tuple(store.run_ids()), trusted.template, trusted.binding,
                               judge=MODEL, endpoint=base_url, label="bench")


def measure(db: Path) -> list[tuple[str, float, str, str]]:
    live_db = db.with_name(db.stem + "-live.duckdb")
    shutil.copy(db, live_db)
    with JudgeServer(latency=0.005) as server:
        with Store(db) as store:
            spec = _spec(store, server.base_url)
            judged, distinct = distinct_prompts(store, spec)
            client = bt.client_for(server.base_url, "not-needed")
            t = time.perf_counter()
            job = bt.submit(store, client, kind=bt.REJUDGE, spec=spec)
            assert job is not None
            polls = 0
            while not job.collected:
                time.sleep(0.2)
                job = bt.poll(store, client, job.batch_id)
                polls += 1
            before = server.n_calls()
            judge = OpenAIJudge(MODEL, base_url=server.base_url, concurrency=16, timeout=30)
            series = bt.finish(store, job.batch_id, judge)
            wall = time.perf_counter() - t
            live_calls = server.n_calls() - before
            judge.close()
        with Store(live_db) as store:
            judge = OpenAIJudge(MODEL, base_url=server.base_url, concurrency=16, timeout=30)
            reference = rejudge.run_rejudge(store, _spec(store, server.base_url), judge)
            judge.close()
    same = (series is not None and reference is not None
            and series["score"].round(12).tolist() == reference["score"].round(12).tolist())   # type: ignore[index]
    return [
        ("batch path: requests sent / distinct prompts", job.total / distinct, "1.00",
         f"{job.total} lines for {distinct} distinct prompts over {judged} judgings; {job.replies} replies "
         f"collected, {job.faults} faults"),
        ("batch path: live calls when the job finishes", live_calls, "0",
         f"submit, {polls} polls, collect and finish in {wall:.1f} s; series "
         f"{'equal to' if same else 'DIFFERS FROM'} the live re-judge's"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default="/tmp/evaldrift-bench")
    parser.add_argument("--runs", type=int, default=35, help="demo runs to build")
    args = parser.parse_args(argv)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    for name, value, target, note in measure(demo_db(work, args.runs, "batch")):
        print(f"{name}: {value:.2f} (target {target}) [{note}]", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
