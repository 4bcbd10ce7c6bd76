"""Scores the kettle rows with the real MLflow `mlflow.genai.evaluate()` against the loopback server (run in
MLflow's env), into a local tracking store.

    python run_mlflow.py SPECS.json

SPECS: {"store": path of the SQLite store, "runs": [{"name": run name, "rows": [...], "model": grader model,
"answers": "good" | "bad"}, ...]}. Each evaluation is one MLflow run in the experiment "kettle-rag"; its traces
carry the question, the retrieved passages (a RETRIEVER span), the answer and the judges' assessments. Prints
each run's id after "RUN ". OPENAI_API_BASE / OPENAI_API_KEY point MLflow's OpenAI judges at the server.
"""

import json
import sys
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")

import mlflow  # noqa: E402
from mlflow.entities import Document, SpanType  # noqa: E402
from mlflow.genai.scorers import Correctness, RelevanceToQuery, RetrievalGroundedness  # noqa: E402

spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
mlflow.set_tracking_uri(f"sqlite:///{spec['store']}")
mlflow.set_experiment("kettle-rag")


def run(one: dict) -> str:
    by_question = {r["question"]: r for r in one["rows"]}

    @mlflow.trace(span_type=SpanType.RETRIEVER)
    def retrieve(question: str) -> list[Document]:
        return [Document(page_content=p) for p in by_question[question]["contexts"]]

    @mlflow.trace
    def rag(question: str) -> str:
        retrieve(question)
        return by_question[question][one.get("answers", "good")]

    data = [{"inputs": {"question": r["question"]}, "expectations": {"expected_response": r["reference"]}}
            for r in one["rows"]]
    model = f"openai:/{one['model']}"
    with mlflow.start_run(run_name=one["name"]) as active:
        mlflow.genai.evaluate(data=data, predict_fn=rag, scorers=[
            RetrievalGroundedness(model=model), Correctness(model=model), RelevanceToQuery(model=model)])
    return active.info.run_id


for each in spec["runs"]:
    print("RUN", run(each), flush=True)
