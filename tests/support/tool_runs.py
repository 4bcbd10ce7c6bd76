"""Runs made by the real tools in the test run: Inspect AI, promptfoo, Ragas, against the loopback judge.

Each tool lives in its own environment (a venv under /tmp, or promptfoo from npm), built by .ci/run and
found here through EVALDRIFT_<TOOL>_PYTHON / EVALDRIFT_PROMPTFOO_DIR. Off CI a missing environment skips the
tests that need it; under CI=true it fails them (as the browser tests do), so a green run always ran them.

One loopback OpenAI-compatible server answers every tool:
- an answering model, `answerer-good` or `answerer-bad`: the row's good or bad answer to the question asked;
- Inspect's `model_graded_fact` graders: `grader-strict` grades C only a good answer, `grader-lenient` C always;
- everything else (Ragas' prompts, ours) as tests/benchmarks/judge_server.py's offline decision.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

ROWS: list[dict] = [
    {"id": "kettle-1", "question": "What is the warranty on the X200 kettle?",
     "contexts": ["The X200 kettle has a warranty of 2 years.", "Warranty claims need the receipt."],
     "reference": "The X200 kettle has a warranty of 2 years.",
     "good": "The X200 kettle has a warranty of 2 years.", "bad": "The X200 kettle has a warranty of 5 years."},
    {"id": "kettle-2", "question": "Does the X200 kettle switch off by itself?",
     "contexts": ["The X200 switches off automatically when the water boils."],
     "reference": "The X200 switches off automatically when the water boils.",
     "good": "The X200 switches off automatically when the water boils.",
     "bad": "The X200 must be switched off by hand."},
    {"id": "kettle-3", "question": "How much water does the X200 hold?",
     "contexts": ["The X200 holds 1.7 litres of water."], "reference": "The X200 holds 1.7 litres of water.",
     "good": "The X200 holds 1.7 litres of water.", "bad": "The X200 holds 3 litres of water."},
    {"id": "kettle-4", "question": "What colour is the X200 kettle?",
     "contexts": ["The X200 kettle comes in steel grey."], "reference": "The X200 kettle comes in steel grey.",
     "good": "The X200 kettle comes in steel grey.", "bad": "The X200 kettle comes in bright red."},
]
BY_QUESTION = {r["question"]: r for r in ROWS}
# eight more, for ablations (a decision needs more than four pairs): the passages state the fact in two of them
LEAK_ROWS: list[dict] = [
    {"id": f"toaster-{i}", "question": f"How many slots does the T{i}00 toaster have?",
     "contexts": [f"The T{i}00 toaster has {i + 1} slots." if i <= 2 else f"The T{i}00 toaster has a crumb tray."],
     "reference": f"The T{i}00 toaster has {i + 1} slots.", "good": f"The T{i}00 toaster has {i + 1} slots.",
     "bad": f"The T{i}00 toaster has {i + 9} slots."} for i in range(1, 9)]
ANSWERED = {**BY_QUESTION, **{r["question"]: r for r in LEAK_ROWS}}
# a faithfulness check written as Inspect's model_graded_fact template: the passages against the submission; the
# leaky one also shows the reference ({criterion}), which a faithfulness grader must never see
FAITH_TEMPLATE = """Is every claim of the submission stated by the passages?
[BEGIN DATA]
***
[Passages]: {contexts}
***{reference}
[Submission]: {answer}
***
[END DATA]
{instructions}"""
FAITH_CLEAN = FAITH_TEMPLATE.replace("{reference}", "")
FAITH_LEAKY = FAITH_TEMPLATE.replace("{reference}", "\n[Reference]: {criterion}\n***")


def _prompt(body: dict) -> str:
    parts = []
    for m in body.get("messages") or []:
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
        parts.append(str(content or ""))
    return "\n\n".join(parts)


def _row_in(prompt: str) -> dict | None:
    return next((r for q, r in ANSWERED.items() if q in prompt), None)


_FLIPS: dict[str, int] = {}
_FLIP_LOCK = threading.Lock()


def respond(body: dict) -> str:
    """The loopback judge's reply to one chat request of any of the tools."""
    model = str(body.get("model", ""))
    prompt = _prompt(body)
    row = _row_in(prompt)
    if model.startswith("answerer"):
        return (row or ROWS[0])["bad" if model.endswith("bad") else "good"]
    if model.endswith("grader-flip"):   # grades one prompt C, then I, then C...: two epochs of a sample disagree
        with _FLIP_LOCK:
            seen = _FLIPS[prompt] = _FLIPS.get(prompt, 0) + 1
        return "Graded.\nGRADE: " + ("C" if seen % 2 else "I")
    submission = re.search(r"\[Submission\]: (.*?)\n\*\*\*", prompt, re.S)
    if submission is not None:                      # Inspect's model_graded_fact template
        if model.endswith("reader"):                # reads the whole prompt: C when anything else in it states it
            rest = prompt.replace(submission.group(0), "")
            return "Read the data.\nGRADE: " + ("C" if submission.group(1).strip() in rest else "I")
        if model.endswith("lenient"):
            return "The submission answers the question.\nGRADE: C"
        good = row is not None and submission.group(1).strip() == row["good"]
        return "Compared with the expert answer.\nGRADE: " + ("C" if good else "I")
    from tests.benchmarks.judge_server import respond as offline

    return offline(body)


# The tool paths .ci/run exports (every `export EVALDRIFT_...` there: tests/test_ci.py), as they were when the
# tests started. The autouse _clean_environment fixture (tests/conftest.py) removes every EVALDRIFT_ variable
# from each test's environment, so lib never takes one for an operator's setting; a path read from the
# environment during a test was therefore always the /tmp default, whatever CI had built and exported.
# tests/conftest.py imports this module before any test runs.
CI_PATHS = ("EVALDRIFT_RAGAS_PYTHON", "EVALDRIFT_INSPECT_PYTHON", "EVALDRIFT_PROMPTFOO_DIR",
            "EVALDRIFT_DEEPEVAL_PYTHON", "EVALDRIFT_MLFLOW_PYTHON", "EVALDRIFT_LAKE_PYTHON")
EXPORTED = {name: os.environ[name] for name in CI_PATHS if os.environ.get(name)}


def tool_path(variable: str, default: str) -> str:
    """Where a tool's environment is: the path CI exported in `variable` when the tests started, else `default`."""
    return EXPORTED.get(variable, default)


def tool_env(variable: str, default: str) -> Path:
    """A tool's environment (python or folder): skip off CI when it is missing, fail under CI=true."""
    path = Path(tool_path(variable, default))
    if not path.exists():
        message = f"no environment at {path} ({variable}; .ci/run builds it)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


INSPECT_PYTHON = ("EVALDRIFT_INSPECT_PYTHON", "/tmp/inspect-venv/bin/python")
LAKE_PYTHON = ("EVALDRIFT_LAKE_PYTHON", "/tmp/lake-venv/bin/python")   # the team store's (tests/test_lake.py)
TOOLS = Path(__file__).parent / "tools"


def inspect_spec(name: str, *, grader: str | None = None, role_grader: str | None = None,
                 answerer: str = "openai-api/loop/answerer-good", epochs: int = 1, fmt: str = "eval",
                 template: str | None = None, rows: list[dict] | None = None, ids: bool = True,
                 second: str | None = None, reducer: str | None = None, joined: bool = False) -> dict:
    """One Inspect run of the kettle task (models through Inspect's openai-api provider: openai-api/loop/...).

    `ids=False`: samples without ids (Inspect numbers them by position); `second`: the grader of a second scorer,
    model_graded_qa; `reducer`: Inspect's epoch reducer (`--epochs-reducer`); `joined`: the passages also joined
    into one text under metadata `contexts_text` (as users who pre-join passages write)."""
    return {"rows": rows or ROWS, "name": name, "grader": grader, "role_grader": role_grader,
            "answerer": answerer, "epochs": epochs, "format": fmt, "template": template, "ids": ids,
            "second": second, "reducer": reducer, "joined": joined}


def run_inspect(python: Path, base_url: str, out: Path, specs: list[dict]) -> dict[str, Path]:
    """Run the real Inspect on each spec in one process; name -> the log it wrote (out/<name>.<format>)."""
    spec_path = out / "inspect-specs.json"
    spec_path.write_text(json.dumps([{**s, "out": str(out)} for s in specs]), encoding="utf-8")
    # Inspect's provider for any OpenAI-compatible server (chat completions): openai-api/loop/<model>
    env = {**os.environ, "LOOP_BASE_URL": base_url, "LOOP_API_KEY": "sk-loopback", "INSPECT_DISPLAY": "none"}
    proc = subprocess.run([str(python), str(TOOLS / "run_inspect.py"), str(spec_path)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    paths = [Path(line) for line in proc.stdout.strip().splitlines()[-len(specs):]]
    return {s["name"]: p for s, p in zip(specs, paths, strict=True)}


# -- promptfoo ---------------------------------------------------------------------------------------------------
PROMPTFOO_DIR = ("EVALDRIFT_PROMPTFOO_DIR", "/tmp/promptfoo-npm")
PF_QUESTION = "Generate question for the given answer."
PF_STATEMENTS = "create one or more statements from each sentence in the given answer"
PF_NLI = "Prompt: Natural language inference"
PF_RECALL = "classify if the sentence can be attributed to the given context or not"


def _sentences(text: str) -> list[str]:
    return [s.strip() + "." for s in text.replace("\n", " ").split(".") if s.strip()]


def _after(prompt: str, marker: str) -> str:
    return prompt[prompt.rindex(marker) + len(marker):] if marker in prompt else ""


def respond_promptfoo(body: dict) -> str | None:
    """promptfoo's RAG graders (its Ragas-derived prompts), or None for any other prompt."""
    model = str(body.get("model", ""))
    prompt = _prompt(body)
    lenient = model.endswith("lenient")
    if PF_QUESTION in prompt:
        answer = _after(prompt, "Answer:").split("Question:")[0].strip()
        row = next((r for r in ROWS if answer in (r["good"], r["bad"])), None)
        return row["question"] if row else "What is this about?"
    if PF_STATEMENTS in prompt:
        return "\n".join(_sentences(_after(prompt, "answer:").split("statements:")[0]))
    if PF_NLI in prompt:
        context = _after(prompt, "context:\n").split("statements:\n")[0]
        statements = [s for s in _after(prompt, "statements:\n").split("Answer:")[0].splitlines() if s.strip()]
        words = ["Yes" if lenient or s.strip() in context else "No" for s in statements]
        return "Final verdict for each statement in order: " + " ".join(w + "." for w in words)
    if PF_RECALL in prompt:
        context = _after(prompt, "context:").split("answer:")[0]
        lines = [f"{i}. {s} So {'[Attributed]' if lenient or s in context else '[Not Attributed]'}"
                 for i, s in enumerate(_sentences(_after(prompt, "answer:").split("classification:")[0]), 1)]
        return "\n".join(lines)
    return None


@dataclass(frozen=True)
class PromptfooRun:
    """One results.json the real promptfoo wrote."""

    path: Path
    version: str


def run_promptfoo(folder: Path, base_url: str, out: Path, *, name: str, providers: tuple[str, ...] = (
        "openai:chat:answerer-good",), grader: str | None = None, grader_flag: str | None = None,
        embedding: str | None = None, repeat: int = 1, rows: list[dict] | None = None,
        order: list[int] | None = None, relevance: bool = True, faithfulness: dict | None = None,
        extra: tuple[dict, ...] = (), recall: dict | None = None, passages_var: str | None = None,
        copies: dict[str, str] | None = None) -> PromptfooRun:
    """Run the real promptfoo on the kettle tests; results are written to out/<name>.json.

    The grader is named in the config's defaultTest.options.provider (`grader`, a provider id; with
    `embedding`, as {text, embedding}), or on the command line (`grader_flag`: --grader). `faithfulness`: more
    of the context-faithfulness assertion (a rubricPrompt, its own provider); `extra`: more assertions per test;
    `recall`: more of the context-recall assertion; `passages_var`: the passages also given under this variable;
    `copies`: more variables, each a copy of one of the test's (new name -> the variable copied).
    """
    rows = rows or ROWS
    tests = []
    for i in order or range(len(rows)):
        r = rows[i]
        # promptfoo expands a list var into one test per item: its users give the passages as one text
        variables = {"query": r["question"], "context": "\n".join(r["contexts"]), "ground_truth": r["reference"]}
        if passages_var:
            variables[passages_var] = variables["context"]
        variables.update({new: variables[old] for new, old in (copies or {}).items()})
        tests.append({"vars": variables,
                      "assert": [{"type": "context-faithfulness", "threshold": 0.5, **(faithfulness or {})},
                                 {"type": "context-recall", "value": r["reference"], "threshold": 0.5,
                                  **(recall or {})}]
                      + ([{"type": "answer-relevance", "threshold": 0.5}] if relevance else []) + list(extra)})
    config: dict = {"description": "kettle rag", "prompts": ["{{query}}"], "providers": list(providers),
                    "tests": tests}
    if grader is not None:
        provider = {"text": {"id": grader}, "embedding": {"id": embedding}} if embedding else grader
        config["defaultTest"] = {"options": {"provider": provider}}
    config_path = out / f"{name}.config.json"
    config_path.write_text(json.dumps(config), encoding="utf-8")
    result = out / f"{name}.json"
    home = out / f"_{name}_home"
    env = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-loopback",
           "PROMPTFOO_CONFIG_DIR": str(home), "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1",
           "PROMPTFOO_DISABLE_REMOTE_GENERATION": "1", "PROMPTFOO_DISABLE_SHARING": "1", "NO_COLOR": "1",
           "PROMPTFOO_SELF_HOSTED": "1", "PROMPTFOO_DISABLE_REDTEAM_REMOTE_GENERATION": "1"}
    cmd = [str(folder / "node_modules" / ".bin" / "promptfoo"), "eval", "-c", str(config_path), "-o", str(result),
           "--no-cache", "--no-table", "--no-progress-bar", "--max-concurrency", "4"]
    if repeat > 1:
        cmd += ["--repeat", str(repeat)]
    if grader_flag:
        cmd += ["--grader", grader_flag]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=out)
    assert result.exists(), (proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:])
    version = json.loads(result.read_text(encoding="utf-8")).get("metadata", {}).get("promptfooVersion", "")
    return PromptfooRun(result, version)


# promptfoo's context-faithfulness with its documented rubricPrompt option: the second (NLI) prompt given the
# reference beside the passages, a faithfulness grader shown what it must never see
LEAKY_NLI = (PF_NLI + "\nSay for each statement whether the context supports it (Yes/No), then end with: Final verdict"
             " for each statement in order.\ncontext:\n{{context}}\n{{ground_truth}}\nstatements:\n"
             '{{statements|join("\\n")}}\nAnswer:')


# promptfoo's context-recall with a rubricPrompt that reads the passages under another variable (`passages`, as
# users who keep their own copy write): blanking `context` does not reach this grader (tests/test_blank_reach.py)
RECALL_PASSAGES = (PF_RECALL + "; think in steps.\ncontext:{{passages}}\nanswer:{{groundTruth}}\nclassification:\n")

# LEAKY_NLI with the reference read under a variable of the test's own (`answer_key`, a copy of `ground_truth`): only
# the variable's value says it is the reference (tests/test_promptfoo_lint.py)
KEYED_NLI = LEAKY_NLI.replace("{{ground_truth}}", "{{answer_key}}")


def respond_all(body: dict) -> str:
    """The loopback judge for every tool in these tests."""
    return respond_promptfoo(body) or respond(body)


# -- Ragas -------------------------------------------------------------------------------------------------------
RAGAS_PYTHON = ("EVALDRIFT_RAGAS_PYTHON", "/tmp/ragas-venv/bin/python")


def run_ragas(python: Path, base_url: str, out: Path, *, name: str, model: str = "judge-model",
              answers: str = "good", rows: list[dict] | None = None) -> Path:
    """Run the real Ragas evaluate() on the kettle rows; the CSV is written to out/<name>.csv."""
    target = out / f"{name}.csv"
    spec_path = out / f"{name}.spec.json"
    spec_path.write_text(json.dumps({"rows": rows or ROWS, "out": str(target), "model": model, "answers": answers}),
                         encoding="utf-8")
    env = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-loopback"}
    proc = subprocess.run([str(python), str(TOOLS / "run_ragas.py"), str(spec_path)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and target.exists(), proc.stderr[-3000:]
    return target


# -- the outputs, built once per test session (tests/conftest.py's fixtures call these) --------------------------
INSPECT_RUNS = [   # three runs of one task; the grader switches at the third; the first repeats each sample twice
    inspect_spec("insp-1", grader="openai-api/loop/grader-strict", epochs=2),
    inspect_spec("insp-2", role_grader="openai-api/loop/grader-strict"),
    inspect_spec("insp-3", grader="openai-api/loop/grader-lenient", answerer="openai-api/loop/answerer-bad"),
    # for ablations through Inspect's own scorer (tests/test_tool_ablations.py): model_graded_fact as shipped, and
    # a faithfulness check written as its template, with and without the reference shown to the grader
    inspect_spec("insp-fact", grader="openai-api/loop/grader-strict", rows=LEAK_ROWS),
    inspect_spec("insp-faith", grader="openai-api/loop/grader-reader", rows=LEAK_ROWS, template=FAITH_CLEAN),
    inspect_spec("insp-faith-leaky", grader="openai-api/loop/grader-reader", rows=LEAK_ROWS, template=FAITH_LEAKY),
    # samples without ids, two scorers with their own graders, two epochs reduced by max: the second run has the
    # samples in reverse order (tests/test_inspect_options.py)
    *(inspect_spec(name, grader="openai-api/loop/grader-strict", rows=rows, ids=False, epochs=2, reducer="max",
                   second="openai-api/loop/grader-flip")
      for name, rows in (("insp-multi", ROWS), ("insp-multi-rev", list(reversed(ROWS))))),
    # a faithfulness template that reads the passages pre-joined under another metadata key: blanking `contexts`
    # does not reach this grader (tests/test_blank_reach.py)
    inspect_spec("insp-joined", grader="openai-api/loop/grader-reader", rows=LEAK_ROWS, joined=True,
                 template=FAITH_CLEAN.replace("{contexts}", "{contexts_text}")),
]


def build_inspect(python: Path, base_url: str, out: Path) -> dict[str, Path]:
    return run_inspect(python, base_url, out, INSPECT_RUNS)


def build_promptfoo(folder: Path, base_url: str, out: Path) -> dict[str, Path]:
    """pf-a: grader as {text, embedding} in defaultTest; pf-b: pf-a's tests in reverse order; pf-two: two providers,
    --repeat 2 and --grader on the command line (answer-relevance needs an embedding model: left out there)."""
    grader, embedding = "openai:chat:grader-strict", "openai:embedding:embedder"
    runs = {"pf-a": run_promptfoo(folder, base_url, out, name="pf-a", grader=grader, embedding=embedding),
            "pf-b": run_promptfoo(folder, base_url, out, name="pf-b", grader=grader, embedding=embedding,
                                  order=list(reversed(range(len(ROWS))))),
            "pf-two": run_promptfoo(folder, base_url, out, name="pf-two", grader_flag="openai:chat:grader-lenient",
                                    providers=("openai:chat:answerer-good", "openai:chat:answerer-bad"), repeat=2,
                                    relevance=False),
            # for ablations through promptfoo's own assertions (tests/test_tool_ablations.py); its recall rubric
            # reads the passages as `passages`, where a blank of `context` does not reach (tests/test_blank_reach.py)
            "pf-faith-leaky": run_promptfoo(folder, base_url, out, name="pf-faith-leaky", grader=grader,
                                            rows=LEAK_ROWS, relevance=False,
                                            faithfulness={"rubricPrompt": [None, LEAKY_NLI]},
                                            recall={"rubricPrompt": RECALL_PASSAGES}, passages_var="passages"),
            # the faithfulness assertion names its own grader (the suite's grades recall), and an assertion type
            # that is no metric of ours (tests/test_promptfoo_options.py); its rubric shows that grader the
            # reference as `answer_key` (tests/test_promptfoo_lint.py; the lenient grader's verdicts do not move)
            "pf-own": run_promptfoo(folder, base_url, out, name="pf-own", grader=grader, relevance=False,
                                    faithfulness={"provider": "openai:chat:grader-lenient",
                                                  "rubricPrompt": [None, KEYED_NLI]},
                                    copies={"answer_key": "ground_truth"},
                                    extra=({"type": "icontains", "value": "X200"},))}
    return {name: run.path for name, run in runs.items()}


def build_ragas(python: Path, base_url: str, out: Path) -> dict[str, Path]:
    return {"ragas-good": run_ragas(python, base_url, out, name="ragas-good")}


# -- what a tool's files depend on: the key they are cached under (tests/conftest.py _once_per_run) ---------------
def _module_file(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    return next((f for f in (base.with_suffix(".py"), base / "__init__.py") if f.is_file()), None)


@functools.cache
def _sources() -> tuple[Path, ...]:
    """The files that make the tools' runs: these modules, the tools' scripts, and every module of this project
    they import (followed through lib/ and tests/, imports inside functions included): the loopback judge's
    answers come from lib's offline judge."""
    seen: set[Path] = set()
    todo = [Path(__file__).resolve(), Path(__file__).with_name("more_tools.py").resolve(), *TOOLS.glob("*.py")]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            for name in names:
                parts = name.split(".")
                if parts[0] in ("lib", "tests"):
                    todo += [f for i in range(1, len(parts) + 1) if (f := _module_file(".".join(parts[:i])))]
    return tuple(sorted(seen))


def _environment(env: Path) -> bytes:
    """What is installed in a tool's environment: a venv's Python and every distribution's name and version, or
    promptfoo's npm lock and the node that runs it."""
    if env.is_dir():   # promptfoo's npm folder
        node = shutil.which("node") or ""
        found = Path(node).resolve() if node else None
        return b"\0".join([(env / "node_modules" / ".package-lock.json").read_bytes(), str(found).encode(),
                           str(found.stat().st_size if found else 0).encode()])
    venv = env.parent.parent
    installed = sorted(p.name for p in venv.glob("lib/python*/site-packages/*.dist-info"))
    return b"\0".join([(venv / "pyvenv.cfg").read_bytes(), *(name.encode() for name in installed)])


def build_key(env: Path) -> str:
    """The key a tool's files are cached under across test runs: the same sources and the same environment make
    the same files (the tools run once per machine and version of these, as the demo database is built once per
    version of lib/)."""
    digest = hashlib.sha256(str(env).encode() + b"\0" + _environment(env))
    for path in _sources():
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]
