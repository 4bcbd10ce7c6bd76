"""promptfoo's own assertions as an ablation's scorer: an imported promptfoo run, re-graded with a field blanked.

    python -m lib ablate RUN --metric faithfulness --blank ground_truth \\
        --scorer 'lib.judging.scorers.promptfoo_assertions:faithfulness@results.json'

The argument after `@` is the results file the run was imported from (`FILE#PROVIDER` when it holds several
providers' runs). Each sample the ablation hands over is that file's test of the same sample id (its first
repeat), re-run by `promptfoo eval` (the `promptfoo` on PATH) with the same assertion of the metric (type,
threshold, value, rubricPrompt) and the same grading options (the grader, from the test's `options`), and the
answer the run stored, given back unchanged by a provider that returns it (no answering model is called). A
blanked field is blanked where promptfoo reads it: the question's variable (`query`, `question`) and the prompt
text that held it, the passages' (`context`, `contexts`: an empty text or list), the reference's
(`ground_truth`, `reference`, `expected`, and the `value` of a `context-recall` or `factuality` assertion), the
answer the provider returns. Where promptfoo refuses a sample (it needs a query, say), its reason is passed on.
Grader calls are never cached (`--no-cache`) and the re-run is not written to promptfoo's own store
(`--no-write`). Each blank is proven by the prompts the grader was given (RECORDER_JS logs them): a blanked
field's text still in them (read under another variable) gives the sample no score, with the reason
"the blank did not reach the judge: FIELD's text is still in its prompt" (the ablation says so instead of a
verdict). The grader's credentials are this process's environment (OPENAI_API_KEY, OPENAI_BASE_URL, ...),
as for the run itself.

Not possible: a file whose grader was given as `--grader` (promptfoo keeps only the model's name, not its
provider): re-run it with the grader in the config's `defaultTest.options.provider`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from lib.core.errors import InputError
from lib.core.samples import EvalSample
from lib.intake.importers.base import FLOAT_TOLERANCE
from lib.intake.importers.promptfoo import ASSERTIONS, REFERENCE_ASSERTIONS, results_by_sample, sample_fields
from lib.judging.scorers.inspect_score_worker import not_reached

TIMEOUT = 3600.0
QUESTION_VARS = ("query", "question")
CONTEXT_VARS = ("context", "contexts")
REFERENCE_VARS = ("ground_truth", "reference", "expected")
ANSWER_VAR, PROMPT_VAR = "evaldrift_answer", "evaldrift_prompt"
# promptfoo's custom provider: the answer the run stored, never a new one
PROVIDER_JS = """module.exports = class StoredAnswer {
  id() { return 'evaldrift-stored-answer'; }
  async callApi(prompt, context) {
    return { output: String((context && context.vars && context.vars.evaldrift_answer) || '') };
  }
};
"""


# promptfoo's RAG assertions keep no grading prompt in their results (only llm-rubric's renderedGradingPrompt):
# each test's grader is wrapped by this provider, which writes every prompt promptfoo gives it (with the test's
# index) to a log, then hands the call to the grader as the test named it (loaded by promptfoo itself)
RECORDER_JS = """const fs = require('fs');
const { pathToFileURL } = require('url');
module.exports = class EvaldriftGraderRecorder {
  constructor(options) {
    this.config = (options && options.config) || {};
    const d = this.config.delegate;
    this.delegateId = typeof d === 'string' ? d : (d && d.id) || 'grader';
  }
  id() { return this.delegateId; }
  async grader() {
    if (!this.loaded) {
      const promptfoo = await import(pathToFileURL(this.config.promptfoo).href);
      const d = this.config.delegate;
      this.loaded = typeof d === 'string' ? promptfoo.loadApiProvider(d)
        : promptfoo.loadApiProvider(d.id, { options: d });
    }
    return this.loaded;
  }
  async callApi(prompt, context, options) {
    fs.appendFileSync(this.config.log, JSON.stringify({ test: this.config.test,
      prompt: typeof prompt === 'string' ? prompt : JSON.stringify(prompt) }) + '\\n');
    return (await this.grader()).callApi(prompt, context, options);
  }
};
"""


def _command() -> str:
    found = shutil.which("promptfoo")
    if found is None:
        raise InputError("promptfoo is not on PATH (npm install -g promptfoo, or put its node_modules/.bin on PATH)",
                         field="scorer")
    return found


def _test(result: dict, sample: EvalSample, kind: str) -> dict:
    """The result's test as it ran, with the sample's blanked fields blanked where promptfoo reads them."""
    case = result.get("testCase") or {}
    variables = dict(result.get("vars") or case.get("vars") or {})
    prompt = str((result.get("prompt") or {}).get("raw") or "")
    blanked = {"question": sample.question == "", "contexts": not sample.contexts,
               "ground_truth": sample.ground_truth == ""}
    for field, names in (("question", QUESTION_VARS), ("contexts", CONTEXT_VARS), ("ground_truth", REFERENCE_VARS)):
        for name in names:
            if blanked[field] and name in variables:
                if field == "question" and isinstance(variables[name], str) and variables[name]:
                    prompt = prompt.replace(variables[name], "")
                variables[name] = "" if isinstance(variables[name], str) else []
    asserts = []
    for a in case.get("assert") or []:
        if isinstance(a, dict) and a.get("type") == kind:
            asserts.append({**a, "value": ""} if blanked["ground_truth"] and kind in REFERENCE_ASSERTIONS else a)
    options = dict(case.get("options") or {})
    grader = options.get("provider")
    if isinstance(grader, dict) and "modelName" in grader and "id" not in grader:
        raise InputError(f"this file's grader was given as --grader, and promptfoo kept only its model name "
                         f"({grader['modelName']}), not its provider: put it in defaultTest.options.provider to "
                         f"re-run its assertions", field="scorer")
    return {"vars": {**variables, ANSWER_VAR: sample.answer, PROMPT_VAR: prompt}, "assert": asserts,
            "options": options}


def _score(result: dict, kind: str) -> tuple[float | None, str | None]:
    grading = result.get("gradingResult") or {}
    for part in grading.get("componentResults") or []:
        if (part.get("assertion") or {}).get("type") == kind and isinstance(part.get("score"), int | float):
            score = float(part["score"])
            if -FLOAT_TOLERANCE <= score <= 1 + FLOAT_TOLERANCE:
                return min(1.0, max(0.0, score)), None
            return None, f"promptfoo gave {score!r}"
    why = result.get("error") or grading.get("reason") or "no grading result"
    return None, " ".join(str(why).split())[:300]


def promptfoo_scores(metric: str, target: str, groups: Sequence[Sequence[EvalSample]]
                     ) -> list[tuple[list[float | None], list[str | None]]]:
    """Re-grade lists of samples with the file's own promptfoo assertion of `metric`, in one `promptfoo eval`:
    per list, (scores, promptfoo's reasons where it gave none).

    Raises:
        InputError: no such file, no assertion of that metric, promptfoo not found or failed as a whole.
    """
    kinds = {m: k for k, m in ASSERTIONS.items()}
    if metric not in kinds:
        raise InputError(f"no promptfoo assertion scores {metric!r}", field="scorer")
    kind = kinds[metric]
    path, _, provider = target.partition("#")
    if not Path(path).is_file():
        raise InputError(f"no promptfoo results file at {path} (give the file the run was imported from: "
                         f"promptfoo_assertions:{metric}@FILE)", field="scorer")
    _, by_id = results_by_sample(path, provider=provider or None)
    flat = [s for group in groups for s in group]
    present = [i for i, s in enumerate(flat) if s.sample_id in by_id]
    pairs: list[tuple[float | None, str | None]] = [(None, f"the file has no test of sample {s.sample_id}")
                                                    for s in flat]
    for i in present:
        pairs[i] = (None, "promptfoo returned no result for this sample")
    if present:
        tests = [_test(by_id[flat[i].sample_id], flat[i], kind) for i in present]
        if not any(t["assert"] for t in tests):
            raise InputError(f"the file's tests have no {kind} assertion", field="scorer")
        data, prompts = _run(tests)
        version = (data.get("metadata") or {}).get("promptfooVersion") or "?"
        for r in (data.get("results") or {}).get("results") or []:
            index = r.get("testIdx")
            if isinstance(index, int) and 0 <= index < len(present):
                sample = flat[present[index]]
                # a blank proven by the prompts the grader was given: a blanked field's text still there (a
                # rubricPrompt or contextTransform read it under another variable) is no ablation of that field
                missed = not_reached("\n".join(prompts.get(index, ())), sample_fields(by_id[sample.sample_id]),
                                     _fields(sample))
                if missed is not None:
                    pairs[present[index]] = (None, f"promptfoo {version}: {missed}")
                    continue
                score, why = _score(r, kind)
                pairs[present[index]] = (score, None if why is None else f"promptfoo {version}: {why}")
    out, at = [], 0
    for group in groups:
        part = pairs[at:at + len(group)]
        out.append(([p[0] for p in part], [p[1] for p in part]))
        at += len(group)
    return out


def _fields(sample: EvalSample) -> dict[str, object]:
    return {"question": sample.question, "answer": sample.answer, "contexts": list(sample.contexts),
            "ground_truth": sample.ground_truth}


def _library(command: str) -> Path | None:
    """promptfoo's own module (dist/src/index.js beside the CLI's entrypoint), which loads a grader as promptfoo
    does; None when this install is laid out otherwise (then the grader prompts are not recorded)."""
    index = Path(os.path.realpath(command)).parent / "index.js"
    return index if index.is_file() else None


def _recorded(test: dict, index: int, folder: Path, library: Path) -> dict:
    """The test with its graders (the test's `options.provider`, an assertion's own `provider`) wrapped by the
    recorder; the text grader only (an embedding model sees no prompt). A test with no grader of its own is
    graded by promptfoo's default, which cannot be wrapped: its prompts go unrecorded."""
    def recorder(provider: object) -> object:
        if not (isinstance(provider, str) and provider) and not (isinstance(provider, dict) and provider.get("id")):
            return provider
        return {"id": f"file://{folder / 'recorder.js'}",
                "config": {"delegate": provider, "test": index, "log": str(folder / "grader_prompts.jsonl"),
                           "promptfoo": str(library)}}

    def wrap(provider: object) -> object:
        if isinstance(provider, dict) and ("text" in provider or "embedding" in provider):
            return {**provider, "text": recorder(provider["text"])} if provider.get("text") else provider
        wrapped = recorder(provider)
        return provider if wrapped is provider else {"text": wrapped, "embedding": provider}
    options = dict(test["options"])
    if options.get("provider"):
        options["provider"] = wrap(options["provider"])
    asserts = [{**a, "provider": wrap(a["provider"])} if a.get("provider") else a for a in test["assert"]]
    return {**test, "options": options, "assert": asserts}


def _prompts(log: Path) -> dict[int, list[str]]:
    """Test index -> the prompts its grader was given (a chat prompt's messages as their text)."""
    out: dict[int, list[str]] = {}
    if not log.exists():
        return out
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        prompt = entry.get("prompt") or ""
        try:
            messages = json.loads(prompt)
        except ValueError:
            messages = None
        if isinstance(messages, list):
            prompt = "\n".join(str(m.get("content", "")) if isinstance(m, dict) else str(m) for m in messages)
        out.setdefault(int(entry.get("test", -1)), []).append(str(prompt))
    return out


def _run(tests: list[dict]) -> tuple[dict, dict[int, list[str]]]:
    """`promptfoo eval` on these tests, answered by the stored answers: its results file, and per test (by index)
    the prompts its grader was given."""
    command = _command()
    library = _library(command)
    with tempfile.TemporaryDirectory(prefix="evaldrift-promptfoo-") as work:
        folder = Path(work)
        (folder / "stored_answer.js").write_text(PROVIDER_JS, encoding="utf-8")
        if library is not None:
            (folder / "recorder.js").write_text(RECORDER_JS, encoding="utf-8")
            tests = [_recorded(t, i, folder, library) for i, t in enumerate(tests)]
        config = {"description": "evaldrift: the run's tests re-graded with a field blanked",
                  "prompts": ["{{" + PROMPT_VAR + "}}"],
                  "providers": [{"id": f"file://{folder / 'stored_answer.js'}", "label": "stored answer"}],
                  "tests": tests}
        (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
        out = folder / "out.json"
        env = {**os.environ, "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1",
               "PROMPTFOO_DISABLE_SHARING": "1", "NO_COLOR": "1"}
        try:
            proc = subprocess.run([command, "eval", "-c", str(folder / "config.json"), "-o", str(out),
                                   "--no-cache", "--no-write", "--no-table", "--no-progress-bar"],
                                  cwd=folder, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False)
        except OSError as exc:
            raise InputError(f"promptfoo cannot be run ({command}): {exc.strerror or exc}", field="scorer") from exc
        if not out.exists():   # promptfoo exits 100 when a test fails its threshold: the file is what counts
            last = ((proc.stderr or proc.stdout).strip().splitlines() or ["(no output)"])[-1]
            raise InputError(f"promptfoo eval failed: {last[:300]}", field="scorer")
        return json.loads(out.read_text(encoding="utf-8")), _prompts(folder / "grader_prompts.jsonl")


def _scorer(metric: str):
    def one(target: str, samples: Sequence[EvalSample]) -> list[float | str | None]:
        return many(target, [list(samples)])[0]

    def many(target: str, groups: list[list[EvalSample]]) -> list[list[float | str | None]]:
        return [[score if score is not None else reason for score, reason in zip(scores, reasons, strict=True)]
                for scores, reasons in promptfoo_scores(metric, target, groups)]

    one.many = many   # type: ignore[attr-defined]
    one.__name__ = one.__qualname__ = metric
    one.__doc__ = f"promptfoo's assertion of {metric}, re-run (its reason as text where it gave no score)."
    return one


# one scorer per metric, each re-running the file's assertion of it (`many`: several lists in one promptfoo run)
faithfulness = _scorer("faithfulness")            # context-faithfulness
answer_relevance = _scorer("answer_relevance")    # answer-relevance
context_precision = _scorer("context_precision")  # context-relevance
context_recall = _scorer("context_recall")        # context-recall
answer_correctness = _scorer("answer_correctness")  # factuality
