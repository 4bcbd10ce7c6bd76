"""Runs made by the real DeepEval and MLflow in the test run, against the loopback judge (beside tool_runs.py).

Each tool lives in its own environment (a venv under /tmp), built by .ci/run from tests/<tool>-requirements.txt
and found here through EVALDRIFT_DEEPEVAL_PYTHON / EVALDRIFT_MLFLOW_PYTHON (tool_runs.tool_env: skipped off CI
when missing, failed under CI=true). Graders: `grader-strict` says yes only to what the passages (or the
reference) say word for word, `grader-lenient` says yes to everything; any other prompt goes to
tool_runs.respond_all.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
from pathlib import Path

from tests.support.tool_runs import ROWS, TOOLS, _prompt, _sentences, respond_all

DEEPEVAL_PYTHON = ("EVALDRIFT_DEEPEVAL_PYTHON", "/tmp/deepeval-venv/bin/python")
MLFLOW_PYTHON = ("EVALDRIFT_MLFLOW_PYTHON", "/tmp/mlflow-venv/bin/python")


def _between(prompt: str, start: str, end: str) -> str:
    if start not in prompt:
        return ""
    rest = prompt[prompt.rindex(start) + len(start):]
    return rest.split(end)[0] if end in rest else rest


def _items(text: str) -> list[str]:
    """A list DeepEval printed into its prompt (a Python or JSON list of strings)."""
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return [line.strip() for line in text.splitlines() if line.strip()]
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def respond_deepeval(body: dict) -> str | None:
    """DeepEval's Faithfulness and Contextual Recall prompts (4.3.1), or None for any other prompt."""
    prompt = _prompt(body)
    lenient = str(body.get("model", "")).endswith("lenient")
    if 'with the "truths" key' in prompt:
        return json.dumps({"truths": _sentences(_between(prompt, "Text:\n", "\n\nJSON:"))})
    if 'with the "claims" key' in prompt:
        return json.dumps({"claims": _sentences(_between(prompt, "AI Output:\n", "\n\nJSON:"))})
    if "whether EACH claim contradicts any facts in the retrieval context" in prompt:
        truths = _between(prompt, "Retrieval Contexts:\n", "\n\nClaims:")
        claims = _items(_between(prompt, "Claims:\n", "\n\nJSON:"))
        return json.dumps({"verdicts": [{"verdict": "yes" if lenient or c in truths else "no",
                                         "reason": "checked against the context"} for c in claims]})
    if "can be attributed to the nodes of retrieval contexts" in prompt:
        expected = _between(prompt, "Expected Output:\n", "\n\nRetrieval Context:")
        nodes = _between(prompt, "Retrieval Context:\n", "\n\nJSON:")
        return json.dumps({"verdicts": [{"verdict": "yes" if lenient or s in nodes else "no",
                                         "reason": "checked against the nodes"} for s in _sentences(expected)]})
    return None


def respond_mlflow(body: dict) -> str | None:
    """MLflow's built-in judges (3.17): RetrievalGroundedness, Correctness, RelevanceToQuery; else None."""
    prompt = _prompt(body)
    if '"result": "yes|no"' not in prompt:
        return None
    lenient = str(body.get("model", "")).endswith("lenient")
    claim = re.search(r"<claim>(.*?)</claim>", prompt, re.S)
    if claim is not None:   # groundedness (the <answer> in the claim against the passages), sufficiency and
        # correctness (the reference as the claim, against the passages or "question - answer")
        said = re.search(r"<answer>(.*?)</answer>", claim.group(1), re.S)
        document = " ".join(re.findall(r"<document>(.*?)</document>", prompt, re.S))
        ok = all(s in document for s in _sentences((said or claim).group(1)))
    else:                   # relevance to the query: an answer about what was asked
        ok = True
    return json.dumps({"rationale": "Let's think step by step: compared word for word.",
                       "result": "yes" if lenient or ok else "no"})


def respond_more(body: dict) -> str:
    """The loopback judge for DeepEval, MLflow and every tool of tool_runs."""
    return respond_deepeval(body) or respond_mlflow(body) or respond_all(body)


# -- DeepEval ----------------------------------------------------------------------------------------------------
def deepeval_spec(name: str, *, model: str = "grader-strict", answers: str = "good",
                  order: list[int] | None = None) -> dict:
    rows = [ROWS[i] for i in order] if order else ROWS
    return {"name": name, "rows": rows, "model": model, "answers": answers}


DEEPEVAL_RUNS = [   # three runs of one suite; the grader switches at the third; the second lists the cases reversed,
    deepeval_spec("de-1"),   # with the second case given twice (a repeat of one sample)
    deepeval_spec("de-2", order=[*reversed(range(len(ROWS))), 1]),
    deepeval_spec("de-3", model="grader-lenient", answers="bad"),
]


def run_deepeval(python: Path, base_url: str, out: Path, specs: list[dict]) -> dict[str, Path]:
    """Run the real DeepEval on each spec in one process; name -> the test run file DeepEval wrote (in out)."""
    spec_path = out / "deepeval-specs.json"
    spec_path.write_text(json.dumps({"out": str(out), "runs": specs}), encoding="utf-8")
    env = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-loopback",
           "DEEPEVAL_RESULTS_FOLDER": str(out), "DEEPEVAL_TELEMETRY_OPT_OUT": "YES", "NO_COLOR": "1"}
    proc = subprocess.run([str(python), str(TOOLS / "run_deepeval.py"), str(spec_path)], env=env, cwd=out,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    paths = [Path(line.removeprefix("WROTE ")) for line in proc.stdout.splitlines() if line.startswith("WROTE ")]
    assert len(paths) == len(specs), proc.stdout[-2000:]
    return {s["name"]: p for s, p in zip(specs, paths, strict=True)}


def build_deepeval(python: Path, base_url: str, out: Path) -> dict[str, Path]:
    return run_deepeval(python, base_url, out, DEEPEVAL_RUNS)


# -- MLflow ------------------------------------------------------------------------------------------------------
MLFLOW_RUNS = [   # three evaluations in one store; the grader switches at the third; the second is reordered, with
    {"name": "ml-1", "rows": ROWS, "model": "grader-strict", "answers": "good"},   # the second question asked twice
    {"name": "ml-2", "rows": [*reversed(ROWS), ROWS[1]], "model": "grader-strict", "answers": "good"},
    {"name": "ml-3", "rows": ROWS, "model": "grader-lenient", "answers": "bad"},
]


def run_mlflow(python: Path, base_url: str, out: Path, specs: list[dict]) -> tuple[Path, dict[str, str]]:
    """Run the real mlflow.genai.evaluate on each spec in one process, into out/mlflow.db (SQLite tracking
    store); the store and name -> the MLflow run id."""
    store = out / "mlflow.db"
    spec_path = out / "mlflow-specs.json"
    spec_path.write_text(json.dumps({"store": str(store), "runs": specs}), encoding="utf-8")
    env = {**os.environ, "OPENAI_API_BASE": base_url, "OPENAI_API_KEY": "sk-loopback",
           "MLFLOW_ENABLE_TELEMETRY": "false", "DO_NOT_TRACK": "1", "NO_COLOR": "1"}
    proc = subprocess.run([str(python), str(TOOLS / "run_mlflow.py"), str(spec_path)], env=env, cwd=out,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ids = [line.removeprefix("RUN ").strip() for line in proc.stdout.splitlines() if line.startswith("RUN ")]
    assert len(ids) == len(specs), proc.stdout[-2000:]
    return store, {s["name"]: i for s, i in zip(specs, ids, strict=True)}


def build_mlflow(python: Path, base_url: str, out: Path) -> tuple[Path, dict[str, str]]:
    return run_mlflow(python, base_url, out, MLFLOW_RUNS)
