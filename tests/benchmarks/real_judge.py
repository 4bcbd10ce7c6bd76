"""A real model judge on evaldrift's own prompts: the leak, the verdicts and what they cost (issues 11, 26).

Hand-run, never CI: it calls whatever OpenAI-compatible server the README's
variables name (a hosted API, vLLM, Ollama, LM Studio, or the llama.cpp judge
that ../shared/realjudge/build.sh builds on this machine), with the README's
defaults for everything else (EVALDRIFT_JUDGE_CONCURRENCY 8 as the pacer's
ceiling, EVALDRIFT_JUDGE_TIMEOUT 60, the breaker's limits):

    OPENAI_BASE_URL=http://127.0.0.1:8077/v1 OPENAI_API_KEY=local \\
    EVALDRIFT_JUDGE_MODEL=qwen2.5-coder-1.5b-instruct python tests/benchmarks/real_judge.py --samples 12

(OPENAI_API_KEY defaults to "local" and EVALDRIFT_JUDGE_MODEL to the model above
here.) The samples are the demo's samples whose answers are correct but hold a
claim that only the reference states (so a leaky template can lend it support).
The same samples are recorded twice, scored by the model: once with the demo's
leaky faithfulness template (the reference rendered, replay binding: the
planted leak) and once with the fixed one (projected binding). Each run is then
ablated as `python -m lib ablate` does it (blank ground_truth, --repeats
repeats, the README's default 3, which stop once the first samples repeat
identically; under the breaker and deadline the settings name). Printed per
phase: the requests sent (refusals and repairs included) against the
ablation's cost estimate (an upper bound), the verdicts, the structured form
used, the concurrency reached and the median call, wall time, and the load
average of the machine (sampled every 10 s) while it ran. `--runs leaky` runs the
planted leak alone (the fixed run's ablation still re-judges its baseline for the
replay check: about 18 more calls).

A busy machine makes a call take minutes (measured at load 28-34: 5.3 min with
the server's --n_threads 1, far longer with 2); the first calls then time out
at the 60 s default and say to raise EVALDRIFT_JUDGE_TIMEOUT.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lib.cli.diagnosing import format_ablation  # noqa: E402
from lib.core import settings as settings_mod  # noqa: E402
from lib.core.prompts import PROJECTED, REPLAY  # noqa: E402
from lib.core.records import MAIN, MetricRecord, RunRecord  # noqa: E402
from lib.core.results import aggregate  # noqa: E402
from lib.diagnosis.ablation import AblationSpec  # noqa: E402
from lib.diagnosis.cost import estimate_ablation  # noqa: E402
from lib.jobs import run_guarded  # noqa: E402
from lib.jobs._demo import FIXED_FAITHFULNESS, LEAKY_FAITHFULNESS, demo_samples  # noqa: E402
from lib.judging import OfflineJudge  # noqa: E402
from lib.judging.breaker import Limits  # noqa: E402
from lib.judging.build import settings_judge  # noqa: E402
from lib.judging.harness import Instrument, score_samples  # noqa: E402
from lib.store import Store  # noqa: E402

RUNS = (("leaky", LEAKY_FAITHFULNESS, REPLAY), ("fixed", FIXED_FAITHFULNESS, PROJECTED))
DEFAULTS = {"OPENAI_API_KEY": "local", "EVALDRIFT_JUDGE_MODEL": "qwen2.5-coder-1.5b-instruct"}


def leak_prone(n: int) -> list:
    """The first n demo samples the offline judge scores higher with the leaky template than the fixed one."""
    offline = OfflineJudge()
    picked = []
    for s in (d.sample for d in demo_samples()[0]):
        leaky = score_samples([s], Instrument("faithfulness", LEAKY_FAITHFULNESS, REPLAY), offline)[0].score
        fixed = score_samples([s], Instrument("faithfulness", FIXED_FAITHFULNESS, PROJECTED), offline)[0].score
        if leaky is not None and fixed is not None and leaky > fixed:
            picked.append(s)
        if len(picked) == n:
            return picked
    return picked


class Load:
    """The machine's 1-minute load average, sampled every `every` seconds while a phase runs."""

    def __init__(self, every: float = 10.0) -> None:
        self.every = every
        self.samples: list[float] = []

    @contextmanager
    def watch(self) -> Iterator[Load]:
        self.samples = [os.getloadavg()[0]]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(self.every):
                self.samples.append(os.getloadavg()[0])

        t = threading.Thread(target=sample, daemon=True)
        t.start()
        try:
            yield self
        finally:
            done.set()
            t.join()
            self.samples.append(os.getloadavg()[0])

    @property
    def sentence(self) -> str:
        xs = self.samples
        return f"load average {min(xs):.1f}-{max(xs):.1f} (mean {sum(xs) / len(xs):.1f}, {len(xs)} samples)"


def phase(name: str, t0: float, requests: int, load: Load, judge) -> None:
    mode = judge.output_mode or "none (no call answered)"
    print(f"  {name}: {requests} requests sent in {time.perf_counter() - t0:.0f} s; form used {mode}; "
          f"{judge.pacing.sentence}; {load.sentence}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3, help="ablation repeats (stop early when deterministic)")
    parser.add_argument("--runs", default="leaky,fixed", help="which runs, of leaky and fixed (default both)")
    args = parser.parse_args(argv)
    env = {**DEFAULTS, **{k: v for k, v in os.environ.items() if v}}
    conf = settings_mod.load(env)
    if not conf.base_url:
        parser.error("set OPENAI_BASE_URL to the judge server's /v1 URL")
    model = conf.judge_model
    samples = leak_prone(args.samples)
    print(f"{len(samples)} demo samples with a claim only the reference states; judge {model} at {conf.endpoint}; "
          f"ceiling {conf.judge_concurrency} in flight, timeout {conf.judge_timeout:g} s; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    wanted = set(args.runs.split(","))
    load = Load()
    total = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "real.duckdb") as store:
        for k, (name, template, binding) in enumerate(RUNS):
            if name not in wanted:
                continue
            print(f"\n== {name} template ({binding} binding)", flush=True)
            judge = settings_judge(conf)
            t0 = time.perf_counter()
            with load.watch():
                results = score_samples(samples, Instrument("faithfulness", template, binding), judge, cache=store,
                                        progress=lambda r: print(f"  scored {r.sample_id}: {r.score} "
                                                                 + " ".join(f"[{v.label}]" for v in r.verdicts)
                                                                 + (f" {r.reason}" if r.reason else ""),
                                                                 flush=True))
            agg = aggregate(results)
            store.record_run(RunRecord(name, datetime(2026, 12, 1 + k), {}, {MAIN: samples},
                                       [MetricRecord("faithfulness", results, model, template, binding,
                                                     output_mode=judge.output_mode)]))
            print(f"score {agg.score if agg.score is None else round(agg.score, 3)} (n={agg.n}, failed "
                  f"{agg.n_failed}); failures: {dict(Counter(r.reason for r in results if r.reason)) or 'none'}")
            phase("scoring", t0, judge.attempts, load, judge)
            judge = settings_judge(conf)   # a job's own judge, as the CLI and the page make one
            spec = AblationSpec(name, ("faithfulness",), ("ground_truth",), repeats=args.repeats, judge=model,
                                endpoint=conf.endpoint)
            estimate = estimate_ablation(store, spec, cacheable=True)
            print(f"ablation estimate: {estimate.sentence}", flush=True)
            t0 = time.perf_counter()
            with load.watch():
                outcome = run_guarded(store, spec, judge, limits=Limits.from_settings(conf),
                                      progress=lambda d, n, t0=t0: print(f"  ablating: {d}/{n} at "
                                                                  f"{time.perf_counter() - t0:.0f} s", flush=True))
            if outcome.result is None:
                print(f"ablation stopped: {outcome.stopped}")
            else:
                print(format_ablation(outcome.result))
            within = "within" if judge.attempts <= estimate.calls else "OVER"
            print(f"  requests {judge.attempts} against the estimate's at most {estimate.calls}: {within} it")
            phase("ablation", t0, judge.attempts, load, judge)
    print(f"\nwall time {time.perf_counter() - total:.0f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
