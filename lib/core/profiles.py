"""Wiring profiles: what another tool's metric gives its grader by design, beside our strict wiring table.

Our table says what a metric must never receive, and our own harness keeps to it. Some tools' documented
metrics give the grader more: Ragas' Faithfulness and ContextRecall, Inspect's `model_graded_fact`,
promptfoo's `context-faithfulness` and `factuality` and MLflow's RetrievalGroundedness, RetrievalSufficiency
and Correctness all put the question in the grader's prompt; DeepEval's Contextual Precision judges each
passage against the expected output (its Faithfulness and Contextual Recall keep to our table), and so do
Ragas' ContextPrecision and LLMContextPrecisionWithReference. For a run scored by such a tool, that field is
"received by design": neither required nor forbidden, so blanking it may move the score (SENSITIVE) or not
(INSENSITIVE) but is never called a LEAK. Every other must-never field stays forbidden everywhere:
`ground_truth` shown to a faithfulness grader is a leak in every profile.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass

from lib.core.metrics import EXPECT_SENSITIVE, INVARIANT, get_metric
from lib.core.samples import ANSWER, CONTEXTS, FIELDS, GROUND_TRUTH, QUESTION

STRICT = "evaldrift"   # our own harness: the wiring table as it is


@dataclass(frozen=True)
class ByDesign:
    """One tool metric's fields received by design, beyond what our metric receives.

    Attributes:
        tool: the scoring library ("ragas", "inspect_ai", "promptfoo", "deepeval", "mlflow").
        tool_metric: the tool's name for the metric.
        metric: our metric it scores.
        fields: the fields its grader is given by design that our table forbids.
        where: where the tool documents it (what a reader can check).
    """

    tool: str
    tool_metric: str
    metric: str
    fields: frozenset[str]
    where: str


PROFILES: tuple[ByDesign, ...] = (
    ByDesign("ragas", "faithfulness", "faithfulness", frozenset({QUESTION}),
             "Ragas Faithfulness: statements are generated from the question and the response"),
    ByDesign("ragas", "context_recall", "context_recall", frozenset({QUESTION}),
             "Ragas ContextRecall: its prompt shows the question beside context and reference"),
    ByDesign("ragas", "llm_context_precision_with_reference", "context_precision", frozenset({GROUND_TRUTH}),
             "Ragas LLMContextPrecisionWithReference: each retrieved chunk is judged useful against the reference"),
    ByDesign("ragas", "context_precision", "context_precision", frozenset({GROUND_TRUTH}),
             "Ragas ContextPrecision (LLMContextPrecisionWithReference by another name): judged against the "
             "reference"),
    ByDesign("inspect_ai", "model_graded_fact", "answer_correctness", frozenset({QUESTION}),
             "Inspect model_graded_fact: its template shows [Question], [Expert] and [Submission]"),
    ByDesign("inspect_ai", "model_graded_qa", "answer_correctness", frozenset({QUESTION}),
             "Inspect model_graded_qa: its template shows the question"),
    ByDesign("promptfoo", "context-faithfulness", "faithfulness", frozenset({QUESTION}),
             "promptfoo context-faithfulness: statements are made from the question and the answer"),
    ByDesign("promptfoo", "factuality", "answer_correctness", frozenset({QUESTION}),
             "promptfoo factuality: its prompt shows the question, the expert answer and the submission"),
    ByDesign("deepeval", "Contextual Precision", "context_precision", frozenset({GROUND_TRUTH}),
             "DeepEval ContextualPrecisionMetric: each node is judged useful in arriving at the expected output"),
    ByDesign("mlflow", "retrieval_groundedness", "faithfulness", frozenset({QUESTION}),
             "MLflow RetrievalGroundedness: its prompt shows the question beside the claim and the documents"),
    ByDesign("mlflow", "retrieval_sufficiency", "context_recall", frozenset({QUESTION}),
             "MLflow RetrievalSufficiency: its prompt shows the question beside the expected answer and documents"),
    ByDesign("mlflow", "correctness", "answer_correctness", frozenset({QUESTION}),
             "MLflow Correctness: its prompt shows the question beside the expected response and the response"),
)
# our adapters that run a tool's own metric
TOOL_OF_SCORER = {"lib.judging.scorers.ragas_metrics": "ragas", "lib.judging.scorers.inspect_scorer": "inspect_ai",
                  "lib.judging.scorers.promptfoo_assertions": "promptfoo"}


# the scorer that re-scores a run imported from each tool with the tool itself (FILE: the file it was imported from)
OWN_SCORERS = {"inspect_ai": "lib.judging.scorers.inspect_scorer:rescore@LOG.eval",
               "promptfoo": "lib.judging.scorers.promptfoo_assertions:{metric}@results.json",
               "ragas": "lib.judging.scorers.ragas_metrics:{metric}"}


def own_scorer(scorer: str | None, metric: str) -> str | None:
    """The `--scorer` that ablates a metric a tool scored (the stored scorer: "inspect_ai 0.3.285 ...") through that
    tool itself, with FILE to fill in; None for a score of ours."""
    tool = tool_of(scorer)
    return OWN_SCORERS[tool].format(metric=metric) if tool in OWN_SCORERS else None


def tool_of(scorer: str | None) -> str:
    """The profile's tool for a stored scorer ("ragas 0.4.3 faithfulness") or an ablation's scorer spec
    ("lib.judging.scorers.ragas_metrics:faithfulness"); STRICT for ours or an unknown one."""
    if not scorer:
        return STRICT
    module = scorer.split(":", 1)[0]
    if module in TOOL_OF_SCORER:
        return TOOL_OF_SCORER[module]
    first = scorer.split(" ", 1)[0]
    return first if any(p.tool == first for p in PROFILES) else STRICT


def by_design(tool: str, metric: str) -> frozenset[str]:
    """The fields `tool`'s scorer of our `metric` receives by design that our table forbids (empty: strict)."""
    out: set[str] = set()
    for p in PROFILES:
        if p.tool == tool and p.metric == metric:
            out |= p.fields
    return frozenset(out) & get_metric(metric).never


def expectation_for(metric: str, blanked: Sequence[str], tool: str = STRICT) -> str:
    """lib.core.metrics.expectation under a tool's profile: INVARIANT only when every blanked field is one the
    metric must never receive and the tool does not give it by design; else EXPECT_SENSITIVE."""
    forbidden = get_metric(metric).never - by_design(tool, metric)
    return INVARIANT if set(blanked) <= forbidden else EXPECT_SENSITIVE


def profile_lines(tool: str) -> list[str]:
    """The profile in words, one line per metric the tool scores with more than our table gives."""
    rows = [p for p in PROFILES if p.tool == tool]
    if not rows:
        return [f"{tool}: the strict wiring table (no field received by design)"]
    return [f"{p.metric} ({tool} {p.tool_metric}): receives {', '.join(sorted(p.fields))} by design "
            f"({p.where}); every other must-never field is still a leak" for p in rows]


# -- static evidence: what a tool's recorded grading instrument shows its grader ------------------------------------
INSPECT_RECORD = "Inspect AI scorer "   # how lib.intake.importers.inspect records a scorer's grading options
INSPECT_PLACES = {"question": QUESTION, "answer": ANSWER, "criterion": GROUND_TRUTH, "contexts": CONTEXTS,
                  "context": CONTEXTS}   # model_graded_* template variables (metadata ones by their key)
INSPECT_DEFAULT = frozenset({QUESTION, ANSWER, GROUND_TRUTH})   # model_graded_fact / _qa's own templates


PROMPTFOO_RECORD = "promptfoo assertion "   # how lib.intake.importers.promptfoo records an assertion's rubricPrompt
PROMPTFOO_VARIABLES = "\nits variables: "   # the record's last line: the fields the rubric's other variables carry
# what each RAG assertion's own prompts show the grader (promptfoo 0.121), and the variables a rubricPrompt can
# name: the test's vars as lib.intake.importers.promptfoo reads them, and promptfoo's own names for the grader's inputs
# (context-recall: context, groundTruth; context-faithfulness: question, answer, context, statements; context-relevance:
# context, query; answer-relevance: answer; factuality: input, ideal, completion): a rubric is given the test's vars
# and these over them, so these names always mean their field
PROMPTFOO_DEFAULT = {"context-faithfulness": frozenset({QUESTION, ANSWER, CONTEXTS}),
                     "answer-relevance": frozenset({QUESTION, ANSWER}),
                     "context-relevance": frozenset({QUESTION, CONTEXTS}),
                     "context-recall": frozenset({CONTEXTS, GROUND_TRUTH}),
                     "factuality": frozenset({QUESTION, ANSWER, GROUND_TRUTH})}
PROMPTFOO_PLACES = {"query": QUESTION, "question": QUESTION, "input": QUESTION, "answer": ANSWER,
                    "output": ANSWER, "completion": ANSWER, "statements": ANSWER, "context": CONTEXTS,
                    "contexts": CONTEXTS, "ground_truth": GROUND_TRUTH, "reference": GROUND_TRUTH,
                    "expected": GROUND_TRUTH, "ideal": GROUND_TRUTH, "groundTruth": GROUND_TRUTH}
NUNJUCKS_VARIABLE = re.compile(r"{{-?\s*([A-Za-z_][A-Za-z0-9_]*)")
NUNJUCKS_LOOP = re.compile(r"{%-?\s*for\s+[A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)?\s+in\s+"
                           r"([A-Za-z_][A-Za-z0-9_]*)")


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [t for v in value for t in _strings(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _strings(v)]
    return []


def rubric_variables(rubric: object) -> list[str]:
    """The variables a rubricPrompt (a text, or its steps and chat messages, any nesting) names, in order of first
    use: `{{ name }}` with any filter, and the list a `{% for x in name %}` loop walks."""
    names: list[str] = []
    for text in _strings(rubric):
        found = sorted([(m.start(), m.group(1)) for m in NUNJUCKS_VARIABLE.finditer(text)]
                       + [(m.start(), m.group(1)) for m in NUNJUCKS_LOOP.finditer(text)])
        names += [n for _, n in found if n not in names]
    return names


def promptfoo_variable_field(name: str, variables: dict, sample: dict) -> str | None:
    """The sample field whose text a rubric's variable shows the grader; None when it shows none.

    A name promptfoo gives the grader's input, or one the importer reads a sample from, is that field. Any other
    is the test's variable of that name, read by its value (`sample`: the result's fields as
    lib.intake.importers.promptfoo.sample_fields reads them): equal to the reference, the question or the answer;
    else holding a passage (the passages joined, or a list of them); else holding the reference, question or answer
    within more words. A variable the test does not define renders empty.
    """
    if name in PROMPTFOO_PLACES:
        return PROMPTFOO_PLACES[name]
    text = "\n".join(_strings(variables.get(name))).strip()   # a variable the test does not define: ""
    own = {f: str(sample.get(f) or "").strip() for f in (GROUND_TRUTH, QUESTION, ANSWER)}
    # equality first (a reference may be a passage's whole text, or the answer's), the reference before the others:
    # the field the most metrics must never receive
    for field, value in own.items():
        if text and text == value:
            return field
    if any(p.strip() and p.strip() in text for p in _strings(sample.get(CONTEXTS))):
        return CONTEXTS
    for field, value in own.items():
        if value and value in text:
            return field
    return None


def _promptfoo_fields(record: str) -> frozenset[str]:
    """The fields a promptfoo assertion shows its grader: its own prompts' fields, and every variable its
    rubricPrompt names: promptfoo's and the importer's names as their field, another by the field the record says
    the test's variable carries (a step given as null keeps promptfoo's own prompt)."""
    head, _, body = record.replace("{{", "{").replace("}}", "}").partition("\n")
    kind = head[len(PROMPTFOO_RECORD):].split(":", 1)[0]
    shown = set(PROMPTFOO_DEFAULT.get(kind, frozenset()))
    body, _, carried = body.partition(PROMPTFOO_VARIABLES)   # JSON keeps no raw newline inside a string
    try:
        rubric = json.loads(body)
        others = json.loads(carried) if carried else {}
    except ValueError:
        return frozenset(shown)
    places = {**{k: f for k, f in others.items() if f in FIELDS}, **PROMPTFOO_PLACES} \
        if isinstance(others, dict) else PROMPTFOO_PLACES
    shown |= {places[n] for n in rubric_variables(rubric) if n in places}
    return frozenset(shown)


def tool_fields_read(template: str | None) -> frozenset[str] | None:
    """The fields a tool's recorded grading instrument shows its grader (an Inspect scorer's template: `{question}`,
    `{answer}`, `{criterion}` the reference, `{contexts}` from the sample's metadata; Inspect's own template when
    none was given; a promptfoo assertion's own prompts and the variables its rubricPrompt names); None for a
    template of ours (lib.core.prompts reads those)."""
    if template and template.startswith(PROMPTFOO_RECORD):
        return _promptfoo_fields(template)
    if not template or not template.startswith(INSPECT_RECORD):
        return None
    text = template.replace("{{", "{").replace("}}", "}")   # the record doubles braces: it is never rendered
    try:
        options = json.loads(text.split("\n", 1)[1])
        grading = options.get("template") if isinstance(options, dict) else None
        if not isinstance(grading, str):
            return INSPECT_DEFAULT
        names = [name for _, name, _, _ in string.Formatter().parse(grading) if name]
    except (IndexError, ValueError):
        return INSPECT_DEFAULT
    # another metadata key the template reads, as the importer found what it holds (`{contexts_text}`: passages)
    keys = options.get("metadata_fields") if isinstance(options.get("metadata_fields"), dict) else {}
    places = {**{k: f for k, f in keys.items() if f in FIELDS}, **INSPECT_PLACES}
    return frozenset(places[n] for n in names if n in places)


def lint_under(read: frozenset[str], metric: str, tool: str = STRICT) -> tuple[list[str], list[str]]:
    """Static lint under a tool's profile: (the fields read, in FIELDS order, each received by design marked so;
    the must-never fields read that the tool does not give by design, which are findings)."""
    designed = by_design(tool, metric)
    never = get_metric(metric).never
    reads = [f"{f} (by design: {tool})" if f in designed else f for f in FIELDS if f in read]
    return reads, [f for f in FIELDS if f in read and f in never and f not in designed]
