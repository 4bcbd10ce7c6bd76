"""Score samples with a Ragas metric; runs inside the Ragas environment, never imports evaldrift.

    python ragas_worker.py METRIC MODEL CONCURRENCY < samples.jsonl

Reads one JSON object per line (question, answer, contexts, ground_truth),
calls the OpenAI-compatible server at OPENAI_BASE_URL (key OPENAI_API_KEY,
both from the environment, never from arguments), and prints one JSON object:
{"ragas": version, "scores": [float or null, ...], "reasons": [null or why, ...], "errors": {reason: count}}.
A sample Ragas could not score is null, never 0, with Ragas' reason beside it.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import sys

# Ragas posts usage telemetry from inside each call; nothing here may talk to anything but the judge server.
os.environ["RAGAS_DO_NOT_TRACK"] = "true"
os.environ["DO_NOT_TRACK"] = "1"

# our metric -> (Ragas class in ragas.metrics.collections, how a sample's fields become its ascore arguments)
METRICS = {
    "faithfulness": ("Faithfulness", {"user_input": "question", "response": "answer",
                                      "retrieved_contexts": "contexts"}),
    "context_recall": ("ContextRecall", {"user_input": "question", "retrieved_contexts": "contexts",
                                         "reference": "ground_truth"}),
}


async def _score(metric: str, model: str, concurrency: int, samples: list[dict]) -> dict[str, object]:
    import ragas
    import ragas.metrics.collections as collections
    from openai import AsyncOpenAI
    from ragas.llms import llm_factory

    class_name, arguments = METRICS[metric]
    client = AsyncOpenAI(base_url=os.environ.get("OPENAI_BASE_URL") or None,
                         api_key=os.environ.get("OPENAI_API_KEY") or "not-needed", max_retries=2, timeout=120)
    scorer = getattr(collections, class_name)(llm=llm_factory(model, client=client))
    gate = asyncio.Semaphore(concurrency)
    errors: dict[str, int] = {}

    async def one(sample: dict) -> tuple[float | None, str | None]:
        async with gate:
            try:
                result = await scorer.ascore(**{arg: sample[field] for arg, field in arguments.items()})
            except Exception as exc:  # Ragas raises many kinds: each is a failed sample, counted
                key = f"{type(exc).__name__}: {' '.join(str(exc).split())[:120]}"
                errors[key] = errors.get(key, 0) + 1
                return None, key
            value = float(result.value) if result.value is not None else math.nan
            return (value, None) if math.isfinite(value) else (None, "Ragas gave no score (NaN)")

    pairs = await asyncio.gather(*(one(s) for s in samples))
    return {"ragas": ragas.__version__, "scores": [p[0] for p in pairs], "reasons": [p[1] for p in pairs],
            "errors": errors}


def main() -> None:
    metric, model, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3])
    samples = [json.loads(line) for line in sys.stdin if line.strip()]
    print(json.dumps(asyncio.run(_score(metric, model, concurrency, samples))), flush=True)
    sys.stderr.flush()
    # the answer is out: end without tearing down the interpreter, whose heap (Ragas, langchain, the openai SDK)
    # costs about 0.1 CPU s to collect on the way out of every call, and nothing of it needs a goodbye
    os._exit(0)


if __name__ == "__main__":
    main()
