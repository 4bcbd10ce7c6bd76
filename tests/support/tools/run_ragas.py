"""Scores the kettle rows with the real Ragas `evaluate()` against the loopback server (run in Ragas' env).

    python run_ragas.py SPEC.json

SPEC: {"rows": [...], "out": path.csv, "model": grader model, "answers": "good" | "bad"}. Writes
`EvaluationResult.to_pandas().to_csv()`, as Ragas' docs show. OPENAI_BASE_URL / OPENAI_API_KEY point at the server.
"""

import json
import os
import sys
import warnings
from pathlib import Path

os.environ["RAGAS_DO_NOT_TRACK"] = "true"
os.environ["DO_NOT_TRACK"] = "1"
warnings.filterwarnings("ignore")

from langchain_openai import ChatOpenAI  # noqa: E402
from ragas import EvaluationDataset, evaluate  # noqa: E402
from ragas.llms import LangchainLLMWrapper  # noqa: E402
from ragas.metrics import FactualCorrectness, Faithfulness, LLMContextRecall  # noqa: E402
from ragas.run_config import RunConfig  # noqa: E402

spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
data = EvaluationDataset.from_list([{"user_input": r["question"], "retrieved_contexts": r["contexts"],
                                     "response": r[spec.get("answers", "good")], "reference": r["reference"]}
                                    for r in spec["rows"]])
llm = LangchainLLMWrapper(ChatOpenAI(model=spec["model"], temperature=0, max_retries=1))
result = evaluate(data, metrics=[Faithfulness(), LLMContextRecall(), FactualCorrectness(mode="f1")], llm=llm,
                  run_config=RunConfig(max_workers=4, max_retries=1, timeout=60), show_progress=False,
                  raise_exceptions=False)
result.to_pandas().to_csv(spec["out"], index=False)
print(spec["out"])
