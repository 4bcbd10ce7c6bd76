"""Run one ablation in a process of its own, reporting progress on stdout (the kill-and-resume test).

Usage (from the repository root):
    python -m tests.support.ablate_child DB RUN_ID [--sleep SECONDS]

Prints `started <ablation_id>`, then `progress <done> <total>` after
every stored batch, then `finished <summary>`; each line is flushed at once, so
the parent can read how far the store has got without opening the database
(DuckDB lets one process hold the file). `--sleep` slows each judge call so the
parent can kill the run midway.
"""

from __future__ import annotations

import argparse
import sys
import time

from lib.core.calls import JudgeReply, JudgeRequest
from lib.diagnosis.ablation import AblationSpec, run_ablation
from lib.judging import OfflineJudge
from lib.judging.offline import STAND_IN_NOISE
from lib.store import Store


def resume_spec(run_id: str) -> AblationSpec:
    """The spec the child runs and the test repeats uninterrupted."""
    # every sample judged: the kill test checks the stored results are exactly a prefix of the plan's units
    return AblationSpec(run_id, ("faithfulness",), ("ground_truth", "contexts"), repeats=3, limit=200,
                        sequential=False)


def make_judge() -> OfflineJudge:
    return OfflineJudge(noise=STAND_IN_NOISE)


class SlowJudge:
    """The same judge, sleeping before each call (the answers do not change)."""

    concurrency = 1
    cacheable = False

    def __init__(self, inner: OfflineJudge, sleep: float) -> None:
        self._inner = inner
        self.model = inner.model
        self._sleep = sleep

    def complete(self, request: JudgeRequest) -> JudgeReply:
        time.sleep(self._sleep)
        return self._inner.complete(request)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("run_id")
    parser.add_argument("--sleep", type=float, default=0.0)
    args = parser.parse_args(argv)
    spec = resume_spec(args.run_id)

    def report(done: int, total: int) -> None:
        print(f"progress {done} {total}", flush=True)

    with Store(args.db) as store:
        print(f"started {spec.ablation_id}", flush=True)
        result = run_ablation(store, spec, SlowJudge(make_judge(), args.sleep), progress=report)
    print(f"finished {result.summary if result else 'stopped'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
