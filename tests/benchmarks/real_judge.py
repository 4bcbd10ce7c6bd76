"""A real model judge on evaldrift's own prompts: the leak, the verdicts and what they cost (issue 11).

Hand-run, never CI: it calls whatever OpenAI-compatible server you name (a
hosted API, vLLM, Ollama, LM Studio, or the llama.cpp judge that
../shared/realjudge/build.sh builds on this machine).

    python tests/benchmarks/real_judge.py --base-url http://127.0.0.1:8077/v1 \\
        --model qwen2.5-coder-1.5b-instruct --samples 3

The samples are the demo's samples whose answers hold a claim that only the
reference states (so a leaky template can lend it support). The same samples
are recorded twice, scored by the model: once with the demo's leaky
faithfulness template (the reference rendered, replay binding) and once with
the fixed one (projected binding). Each run is then ablated with the same
model (blank ground_truth, --repeats repeats, the README's default 3, which stop once the first samples
repeat identically). Printed per run: the score, the ablation's cost estimate (an upper bound), its verdicts,
judge calls, failures by reason, the output mode and concurrency reached, and wall time. Issue 26's run:
`--samples 12 --timeout 60`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lib.core.prompts import PROJECTED, REPLAY  # noqa: E402
from lib.core.records import MAIN, MetricRecord, RunRecord  # noqa: E402
from lib.core.results import aggregate  # noqa: E402
from lib.diagnosis.ablation import AblationSpec, run_ablation  # noqa: E402
from lib.diagnosis.cost import estimate_ablation  # noqa: E402
from lib.jobs._demo import FIXED_FAITHFULNESS, LEAKY_FAITHFULNESS, demo_samples  # noqa: E402
from lib.judging import OfflineJudge, OpenAIJudge  # noqa: E402
from lib.judging.harness import Instrument, score_samples  # noqa: E402
from lib.store import Store  # noqa: E402

RUNS = (("leaky", LEAKY_FAITHFULNESS, REPLAY), ("fixed", FIXED_FAITHFULNESS, PROJECTED))


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--api-key", default="local")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3, help="ablation repeats (stop early when deterministic)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds for one call (a CPU model is slow)")
    args = parser.parse_args(argv)
    samples = leak_prone(args.samples)
    print(f"{len(samples)} demo samples with a claim only the reference states; judge {args.model} at "
          f"{args.base_url}")
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "real.duckdb") as store:
        for k, (name, template, binding) in enumerate(RUNS):
            judge = OpenAIJudge(args.model, base_url=args.base_url, api_key=args.api_key, timeout=args.timeout,
                                concurrency=1)
            t0 = time.perf_counter()
            results = score_samples(samples, Instrument("faithfulness", template, binding), judge, cache=store)
            scored = time.perf_counter() - t0
            agg = aggregate(results)
            store.record_run(RunRecord(name, datetime(2026, 12, 1 + k), {}, {MAIN: samples},
                                       [MetricRecord("faithfulness", results, args.model, template, binding,
                                                     output_mode=judge.output_mode)]))
            print(f"\n== {name} template ({binding} binding)")
            print(f"score {agg.score if agg.score is None else round(agg.score, 3)} (n={agg.n}, failed "
                  f"{agg.n_failed}); {sum(r.calls for r in results)} calls in {scored:.0f} s; output mode "
                  f"{judge.output_mode}; failures: {dict(Counter(r.reason for r in results if r.reason)) or 'none'}")
            for r in results:
                print(f"  {r.sample_id}: {r.score} " + " ".join(f"[{v.label}]" for v in r.verdicts))
            t0 = time.perf_counter()
            spec = AblationSpec(name, ("faithfulness",), ("ground_truth",), repeats=args.repeats, judge=args.model,
                                endpoint=args.base_url)
            estimate = estimate_ablation(store, spec, cacheable=True)
            print(f"ablation estimate: {estimate.sentence}")
            result = run_ablation(store, spec, judge)
            took = time.perf_counter() - t0
            assert result is not None
            print(f"ablation, blank ground_truth: {result.summary}")
            for v in result.verdicts:
                print(f"  {v.arm}: {v.sentence}")
            print(f"  {result.accounting}; failures {result.failures or 'none'}; {took:.0f} s; "
                  f"pacing {judge.pacing}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
