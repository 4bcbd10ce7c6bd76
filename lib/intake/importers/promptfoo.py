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

The grader is the assertion's `provider`, else the test's or the suite's
default (`options.provider`). The promptfoo version is `metadata.promptfooVersion`
when the file has it. A file with several prompts or providers gives each
(test, prompt, provider) its own sample id.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd

from lib.core.errors import InputError
from lib.intake.importers import shapes
from lib.intake.importers.base import Imported, parse_time

ASSERTIONS = {"context-faithfulness": "faithfulness", "answer-relevance": "answer_relevance",
              "context-relevance": "context_precision", "context-recall": "context_recall",
              "factuality": "answer_correctness"}
REFERENCE_ASSERTIONS = ("context-recall", "factuality")


def _provider_name(provider: object) -> str | None:
    if isinstance(provider, str):
        return provider
    if isinstance(provider, dict):
        return provider.get("id") or provider.get("label")
    return None


def _row(r: dict, multi: bool, graders: Counter, sources: dict[str, str], default_grader: str | None) -> dict:
    test = r.get("testCase") or {}
    vars_ = r.get("vars") or test.get("vars") or {}
    sid = f"test-{r.get('testIdx')}"
    if multi:
        sid += f"-prompt-{r.get('promptIdx')}-{_provider_name(r.get('provider')) or 'provider'}"
    row: dict[str, object] = {"id": sid, "question": vars_.get("query", vars_.get("question")),
                              "answer": (r.get("response") or {}).get("output")}
    context = vars_.get("context", vars_.get("contexts"))
    if context is not None:
        row["contexts"] = [context] if isinstance(context, str) else context
    reference = vars_.get("ground_truth", vars_.get("reference", vars_.get("expected")))
    test_grader = _provider_name((test.get("options") or {}).get("provider")) or default_grader
    for part in (r.get("gradingResult") or {}).get("componentResults") or []:
        assertion = part.get("assertion") or {}
        kind = str(assertion.get("type") or "")
        if kind in REFERENCE_ASSERTIONS and reference is None:
            reference = assertion.get("value")
        metric = ASSERTIONS.get(kind)
        if metric is None:
            continue
        sources[metric] = kind
        row[metric] = part.get("score")
        graders[_provider_name(assertion.get("provider")) or test_grader] += 1
    if reference is not None:
        row["ground_truth"] = reference
    return row


def read_promptfoo(path: str | Path) -> Imported:
    """Read a promptfoo results.json."""
    source = str(path)
    data = shapes.strict_json(shapes.read_bytes(path), source=source, what="promptfoo results file")
    summary = data.get("results") if isinstance(data, dict) else None
    if not isinstance(summary, dict):
        summary = {}
    results = summary.get("results")
    if not isinstance(results, list) or not results:
        raise InputError("not a promptfoo results file with results (results.results is missing or empty)",
                         source=source)
    shapes.check(data, shapes.PROMPTFOO_FILE, source=source, row=None, path="")
    for row, result in enumerate(results, start=1):
        shapes.check(result, shapes.PROMPTFOO_RESULT, source=source, row=row, path="results.results")
    config = data.get("config") or {}
    default_grader = _provider_name(((config.get("defaultTest") or {}).get("options") or {}).get("provider"))
    multi = len({(r.get("promptIdx"), _provider_name(r.get("provider"))) for r in results}) > 1
    graders: Counter = Counter()
    sources: dict[str, str] = {}
    frame = pd.DataFrame([_row(r, multi, graders, sources, default_grader) for r in results], dtype=object)
    frame.index = pd.RangeIndex(1, len(frame) + 1, name="row")
    named = [g for g in graders if g]
    grader = named[0] if len(named) == 1 else (", ".join(sorted(named)) or None)
    version = (data.get("metadata") or {}).get("promptfooVersion")
    return Imported(frame, "promptfoo", version, sources, grader, parse_time(summary.get("timestamp")))
