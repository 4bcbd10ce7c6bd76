"""promptfoo results (`promptfoo eval -o results.json`) -> one run.

Each result is one test case: its variables give the question (`query`, or
`question`), the passages (`context`: a string or a list; or `contexts`) and the
reference (`ground_truth`, `reference` or `expected`; else the value of a
`context-recall` or `factuality` assertion, which is the reference there); the
provider's output is the answer. Each model-graded assertion of a RAG metric
becomes that metric's score for the sample:

| promptfoo assertion | our metric |
|---|---|
| `context-faithfulness` | faithfulness |
| `answer-relevance` | answer_relevance |
| `context-relevance` | context_precision |
| `context-recall` | context_recall |
| `factuality` | answer_correctness |

A sample's id is a hash of its question and reference (promptfoo's `testIdx` is
a position, and `--repeat` gives each repeat its own): a reordered file pairs
the same samples, and the rows of one test repeated are repeats of one sample.
A result promptfoo could not grade (an error, no grading result) is not scored.

The grader is the assertion's `provider`, else the test's `options.provider`,
else the suite's `defaultTest.options.provider` (`--grader` is stored there as
`{"modelName": ...}`); a provider is a string, `{id}`, `{modelName}` or
`{text: {...}, embedding: {...}}` (the text grader is the grader; the embedding
model is kept in the notes). The promptfoo version is `metadata.promptfooVersion`.
A file with several providers (or prompts) is several runs: it is refused unless
one is chosen (`provider=`), never averaged into one.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from lib.core.errors import InputError
from lib.core.profiles import (
    PROMPTFOO_PLACES,
    PROMPTFOO_RECORD,
    PROMPTFOO_VARIABLES,
    promptfoo_variable_field,
    rubric_variables,
)
from lib.core.samples import FIELDS
from lib.intake.importers import shapes
from lib.intake.importers.base import Imported, content_id, parse_time

ASSERTIONS = {"context-faithfulness": "faithfulness", "answer-relevance": "answer_relevance",
              "context-relevance": "context_precision", "context-recall": "context_recall",
              "factuality": "answer_correctness"}
REFERENCE_ASSERTIONS = ("context-recall", "factuality")


def _provider_name(provider: object) -> str | None:
    """A provider's name in any of the forms promptfoo stores (the text grader of a {text, embedding} pair)."""
    if isinstance(provider, str):
        return provider or None
    if isinstance(provider, dict):
        if "text" in provider or "embedding" in provider:
            return _provider_name(provider.get("text"))
        return provider.get("id") or provider.get("modelName") or provider.get("label") or None
    return None


def _embedding_name(provider: object) -> str | None:
    return _provider_name(provider.get("embedding")) if isinstance(provider, dict) else None


def _prompt_key(result: dict) -> str:
    prompt = result.get("prompt") or {}
    return str(result.get("promptId") or prompt.get("label") or prompt.get("raw") or "")


def target_of(result: dict, several_prompts: bool) -> str:
    """The provider (and prompt, when the file has several) a result belongs to: one run each.

    (`promptIdx` numbers promptfoo's prompt x provider columns, so two providers of one prompt differ in it.)
    """
    name = _provider_name(result.get("provider")) or "provider"
    if not several_prompts:
        return name
    prompt = result.get("prompt") or {}
    return f"{name} prompt {str(prompt.get('label') or _prompt_key(result))[:40]}"


@dataclass
class _Seen:
    """What reading the results found beyond the rows: per metric, its graders, where they were read, and its
    assertion (the first one seen: its rubricPrompt is the metric's template); the assertion types not read."""

    graders: dict[str, Counter] = field(default_factory=dict)
    places: dict[str, Counter] = field(default_factory=dict)
    assertions: dict[str, dict] = field(default_factory=dict)
    not_read: Counter = field(default_factory=Counter)
    shown: list[tuple[dict, dict]] = field(default_factory=list)   # per result: its test's vars, its sample

    def grader(self, metric: str, name: str, place: str) -> None:
        self.graders.setdefault(metric, Counter())[name] += 1
        self.places.setdefault(metric, Counter())[place] += 1


def _row(r: dict, seen: _Seen, sources: dict[str, str], default_grader: str | None) -> dict:
    test = r.get("testCase") or {}
    vars_ = r.get("vars") or test.get("vars") or {}
    question = vars_.get("query", vars_.get("question"))
    row: dict[str, object] = {"question": question, "answer": (r.get("response") or {}).get("output")}
    context = vars_.get("context", vars_.get("contexts"))
    if context is not None:
        row["contexts"] = [context] if isinstance(context, str) else context
    reference = vars_.get("ground_truth", vars_.get("reference", vars_.get("expected")))
    test_grader = _provider_name((test.get("options") or {}).get("provider"))
    for part in (r.get("gradingResult") or {}).get("componentResults") or []:
        assertion = part.get("assertion") or {}
        kind = str(assertion.get("type") or "")
        if kind in REFERENCE_ASSERTIONS and reference is None:
            reference = assertion.get("value")
        metric = ASSERTIONS.get(kind)
        if metric is None:
            seen.not_read[kind or "(no type)"] += 1
            continue
        sources[metric] = kind
        seen.assertions.setdefault(metric, assertion)
        row[metric] = part.get("score")
        own = _provider_name(assertion.get("provider"))
        if own:
            seen.grader(metric, own, "the assertion's provider")
        elif test_grader and test_grader != default_grader:   # promptfoo copies the default into every test
            seen.grader(metric, test_grader, "the test's options.provider")
        elif default_grader:
            seen.grader(metric, default_grader, "defaultTest.options.provider")
    if reference is not None:
        row["ground_truth"] = reference
    row["id"] = content_id(question, reference)
    seen.shown.append((vars_, {k: row[k] for k in ("question", "answer", "contexts", "ground_truth") if k in row}))
    return row


def targets(path: str | Path) -> list[str]:
    """The providers (and prompts) a results file holds: each is one run."""
    results, _data = _results(path)
    several_prompts = len({_prompt_key(r) for r in results}) > 1
    return sorted({target_of(r, several_prompts) for r in results})


def _results(path: str | Path) -> tuple[list[dict], dict]:
    source = str(path)
    data = shapes.strict_json(shapes.read_bytes(path), source=source, what="promptfoo results file")
    if not isinstance(data, dict):
        raise InputError("not a promptfoo results file (not a JSON object)", source=source)
    summary = data.get("results")
    if not isinstance(summary, dict):
        summary = {}
    results = summary.get("results")
    if not isinstance(results, list) or not results:
        raise InputError("not a promptfoo results file with results (results.results is missing or empty)",
                         source=source)
    shapes.check(data, shapes.PROMPTFOO_FILE, source=source, row=None, path="")
    for row, result in enumerate(results, start=1):
        shapes.check(result, shapes.PROMPTFOO_RESULT, source=source, row=row, path="results.results")
    return results, data


def read_promptfoo(path: str | Path, *, provider: str | None = None) -> Imported:
    """Read a promptfoo results.json (one provider's results: `provider` chooses when it has several)."""
    source = str(path)
    results, data = _results(path)
    several_prompts = len({_prompt_key(r) for r in results}) > 1
    names = sorted({target_of(r, several_prompts) for r in results})
    if provider is None and len(names) > 1:
        raise InputError(f"this file holds {len(names)} runs ({', '.join(names)}): import each as its own run "
                         f"with --provider (one of them); they are never averaged into one", field="provider",
                         source=source)
    if provider is not None:
        if provider not in names:
            raise InputError(f"no results for provider {provider!r}; the file has: {', '.join(names)}",
                             field="provider", source=source)
        results = [r for r in results if target_of(r, several_prompts) == provider]
    config = data.get("config") or {}
    default_provider = ((config.get("defaultTest") or {}).get("options") or {}).get("provider")
    seen = _Seen()
    sources: dict[str, str] = {}
    frame = pd.DataFrame([_row(r, seen, sources, _provider_name(default_provider)) for r in results], dtype=object)
    frame.index = pd.RangeIndex(1, len(frame) + 1, name="row")
    # each metric's grader (an assertion may name its own); one that varies within a metric is named whole
    graders = {m: ", ".join(sorted(c)) for m, c in seen.graders.items() if c}
    grader_sources = {m: ", ".join(p for p, _ in c.most_common()) for m, c in seen.places.items()}
    named = sorted(set(graders.values()))
    grader = named[0] if len(named) == 1 else (", ".join(named) or None)
    version = (data.get("metadata") or {}).get("promptfooVersion")
    notes: dict[str, object] = {"sample_ids": "hash of question and reference", "provider": names[0]
                                if provider is None else provider}
    ungraded = sum(1 for r in results if not (r.get("gradingResult") or {}).get("componentResults"))
    if ungraded:
        notes["ungraded_results"] = ungraded
    if _embedding_name(default_provider):
        notes["embedding_model"] = _embedding_name(default_provider)
    places = Counter(p for c in seen.places.values() for p in c.elements())
    place = ", ".join(p for p, _ in places.most_common()) or None
    warnings = []
    if seen.not_read:
        notes["assertions_not_read"] = dict(seen.not_read)
        warnings.append("assertions not read (no metric of ours): " + ", ".join(sorted(seen.not_read)))
    return Imported(frame, "promptfoo", version, sources, grader, parse_time((data.get("results") or {}).get(
        "timestamp")), grader_source=place, notes=notes, warnings=tuple(warnings), graders=graders,
        grader_sources=grader_sources, templates={
            m: rubric_record(sources[m], a, rubric_variable_fields(a.get("rubricPrompt"), seen.shown))
            for m, a in seen.assertions.items()})


def rubric_record(kind: str, assertion: dict, carried: dict[str, str] | None = None) -> str:
    """The text stored as a metric's template: the assertion's `rubricPrompt` (null: promptfoo's own prompt for
    that step), so a changed rubric is a prompt marker and lint reads what it shows the grader; then, when the
    rubric reads variables of the test's own, the field each carries (`carried`, rubric_variable_fields). Braces
    doubled: it is a record, never rendered by us."""
    rubric = assertion.get("rubricPrompt")
    text = (f"{PROMPTFOO_RECORD}{kind}: its rubricPrompt (null: promptfoo's own prompt)\n"
            + json.dumps(rubric, sort_keys=True, indent=1, default=str))
    if carried:
        text += PROMPTFOO_VARIABLES + json.dumps(carried, sort_keys=True)
    return text.replace("{", "{{").replace("}", "}}")


def rubric_variable_fields(rubric: object, shown: list[tuple[dict, dict]]) -> dict[str, str]:
    """The rubric's variables that are none of promptfoo's or the importer's names -> the field whose text the
    test's variable of that name carries, as most results that define it show (lib.core.profiles
    promptfoo_variable_field; a tie goes to the first field in FIELDS order), or "unknown".

    Args:
        rubric: the assertion's rubricPrompt.
        shown: per result, (its test's vars, its sample's fields as sample_fields reads them).
    """
    out: dict[str, str] = {}
    for name in rubric_variables(rubric):
        if name in PROMPTFOO_PLACES:
            continue
        votes = Counter(promptfoo_variable_field(name, variables, sample) or "unknown"
                        for variables, sample in shown if name in variables)
        if votes:   # a variable no test defines renders empty: it shows nothing
            out[name] = min(votes, key=lambda f: (-votes[f], FIELDS.index(f) if f in FIELDS else len(FIELDS)))
    return out


def sample_fields(result: dict) -> dict[str, object]:
    """A result's sample as read_promptfoo reads it: question, answer, contexts (a list), ground_truth (those the
    result has)."""
    seen = _Seen()
    _row(result, seen, {}, None)
    return seen.shown[0][1]


def results_by_sample(path: str | Path, *, provider: str | None = None) -> tuple[dict, dict[str, dict]]:
    """The file's data and, per sample id (as read_promptfoo gives it), the first result of that sample (its first
    repeat) of `provider`'s run: what a re-run of the same tests starts from."""
    results, data = _results(path)
    several_prompts = len({_prompt_key(r) for r in results}) > 1
    names = sorted({target_of(r, several_prompts) for r in results})
    if provider is None and len(names) > 1:
        raise InputError(f"this file holds {len(names)} runs ({', '.join(names)}): name the run's provider "
                         f"(FILE#PROVIDER)", field="provider", source=str(path))
    out: dict[str, dict] = {}
    for r in results:
        if provider is None or target_of(r, several_prompts) == provider:
            out.setdefault(str(_row(r, _Seen(), {}, None)["id"]), r)
    return data, out
