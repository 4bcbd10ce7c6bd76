"""Scores the kettle rows with the real DeepEval `evaluate()` against the loopback server (run in DeepEval's env).

    python run_deepeval.py SPEC.json

SPEC: {"out": folder, "runs": [{"name": ..., "rows": [...], "model": grader model, "answers": "good" | "bad"}]}.
DeepEval writes each test run itself, as `DEEPEVAL_RESULTS_FOLDER/test_run_<YYYYMMDD_HHMMSS>.json` (the caller
sets it to `out`); this prints each file's path after "WROTE ". OPENAI_BASE_URL / OPENAI_API_KEY point DeepEval's
OpenAI model at the server.
"""

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")

from deepeval import evaluate
from deepeval.evaluate.configs import AsyncConfig, DisplayConfig
from deepeval.metrics import ContextualRecallMetric, FaithfulnessMetric
from deepeval.models import OpenAIModel
from deepeval.test_case import LLMTestCase

spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
out = Path(spec["out"])


def run(one: dict) -> Path:
    before = set(out.glob("test_run_*.json"))
    # a model name OpenAI does not list: DeepEval wants its token prices given
    grader = OpenAIModel(model=one["model"], base_url=os.environ["OPENAI_BASE_URL"], cost_per_input_token=0.0,
                         cost_per_output_token=0.0)
    cases = [LLMTestCase(input=r["question"], actual_output=r[one.get("answers", "good")],
                         expected_output=r["reference"], retrieval_context=r["contexts"]) for r in one["rows"]]
    evaluate(cases, metrics=[FaithfulnessMetric(model=grader, include_reason=False),
                             ContextualRecallMetric(model=grader, include_reason=False)],
             async_config=AsyncConfig(run_async=False),
             display_config=DisplayConfig(show_indicator=False, print_results=False))
    [written] = set(out.glob("test_run_*.json")) - before
    return written


for each in spec["runs"]:   # one process: DeepEval starts once
    print("WROTE", run(each), flush=True)
