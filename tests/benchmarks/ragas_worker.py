"""Score samples with Ragas' faithfulness against an OpenAI-compatible server; print one JSON line.

Runs inside the separate Ragas environment (python -m venv; pip install ragas), never this
project's: it imports only the standard library, openai and ragas.

    python ragas_worker.py SAMPLES.jsonl BASE_URL MODEL CONCURRENCY
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import sys
import time

# Ragas posts usage telemetry from inside each call (a blocking request on the event loop); this machine
# talks to nothing but loopback, and a benchmark must not measure someone's analytics endpoint.
os.environ["RAGAS_DO_NOT_TRACK"] = "true"
os.environ["DO_NOT_TRACK"] = "1"


async def _main(path: str, base_url: str, model: str, concurrency: int) -> dict[str, object]:
    t_import = time.perf_counter()
    import ragas
    from openai import AsyncOpenAI
    from ragas.llms import llm_factory
    from ragas.metrics.collections import Faithfulness

    imported = time.perf_counter() - t_import
    with open(path, encoding="utf-8") as f:
        samples = [json.loads(line) for line in f]
    client = AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0, timeout=60)
    metric = Faithfulness(llm=llm_factory(model, client=client))
    gate = asyncio.Semaphore(concurrency)
    errors: dict[str, int] = {}

    async def one(s: dict) -> float | None:
        async with gate:
            try:
                result = await metric.ascore(user_input=s["question"], response=s["answer"],
                                             retrieved_contexts=s["contexts"])
            except Exception as exc:  # counted and reported, as our harness counts its failures
                key = f"{type(exc).__name__}: {str(exc)[:80]}"
                errors[key] = errors.get(key, 0) + 1
                return None
            return float(result.value)

    t0, cpu = time.perf_counter(), time.process_time()
    scores = await asyncio.gather(*(one(s) for s in samples))
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu
    ok = [x for x in scores if x is not None and not math.isnan(x)]
    return {"ragas": ragas.__version__, "seconds": seconds, "cpu_seconds": cpu, "import_seconds": imported,
            "n": len(samples),
            "scored": len(ok), "mean": sum(ok) / len(ok) if ok else None, "errors": errors}


if __name__ == "__main__":
    path, url, name, width = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    print(json.dumps(asyncio.run(_main(path, url, name, width))))
