"""Runs a small RAG task with the real Inspect AI against the tests' loopback server (run in Inspect's env).

    python run_inspect.py SPECS.json

SPECS: a list of {"rows": [...], "out": dir, "name": log stem, "grader": model or null (then the grader role or the
answering model grades), "role_grader": model or null, "answerer": model, "epochs": n, "format": "eval"|"json",
"template": a grading template or null, "status": "success" | "error", "ids": false to give Inspect samples
without ids, "second": a model for a second scorer (model_graded_qa) or null, "reducer": an epoch reducer or
null, "joined": true to also give the passages joined, as metadata contexts_text}.
Prints the log's path.
OPENAI_BASE_URL / OPENAI_API_KEY point Inspect's openai provider at the loopback server.
"""

import json
import shutil
import sys
from pathlib import Path

from inspect_ai import Epochs, Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import model_graded_fact, model_graded_qa
from inspect_ai.solver import generate


def run(spec: dict) -> Path:
    options = {"model": spec["grader"]} if spec.get("grader") else {}
    if spec.get("template"):
        options["template"] = spec["template"]
    scorers = [model_graded_fact(**options)]
    if spec.get("second"):
        scorers.append(model_graded_qa(model=spec["second"]))
    ids = spec.get("ids", True)
    task = Task(dataset=[Sample(id=r["id"] if ids else None, input=r["question"], target=r["reference"],
                                metadata={"contexts": r["contexts"],
                                          # passages pre-joined under a key of the user's own
                                          **({"contexts_text": "\n".join(r["contexts"])} if spec.get("joined")
                                             else {})}) for r in spec["rows"]],
                solver=generate(), scorer=scorers if len(scorers) > 1 else scorers[0], name="kettle_rag")
    epochs = Epochs(spec.get("epochs", 1), spec["reducer"]) if spec.get("reducer") else spec.get("epochs", 1)
    roles = {"grader": spec["role_grader"]} if spec.get("role_grader") else None
    out = Path(spec["out"])
    work = out / f"_{spec['name']}"
    [log] = eval(task, model=spec["answerer"], model_roles=roles, log_dir=str(work), log_format=spec["format"],
                 epochs=epochs, display="none", max_connections=4, fail_on_error=False)
    target = out / f"{spec['name']}.{spec['format']}"
    shutil.move(log.location, target)
    shutil.rmtree(work, ignore_errors=True)
    return target


for one in json.loads(Path(sys.argv[1]).read_text(encoding="utf-8")):   # one process: Inspect starts once
    print(run(one))
