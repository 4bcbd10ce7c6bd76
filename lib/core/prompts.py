"""Judge prompt templates: the fields a template reads, its hash, lint, rendering.

A template is plain text with named placeholders. `{items}` is the numbered
list of the items the metric judges (claims, passages or statements, read from
the metric's `items_from` artifact); `{question}`, `{answer}`, `{contexts}` and
`{ground_truth}` interpolate one artifact; `{sample}` interpolates the whole
sample and so reads all four. Literal braces are written `{{` and `}}`.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import string
from dataclasses import dataclass

from lib.core.errors import InputError, LintError, WiringError
from lib.core.metrics import METRICS, MetricSpec, get_metric, items_of
from lib.core.samples import CONTEXTS, FIELDS, EvalSample

ITEMS = "items"
WHOLE_SAMPLE = "sample"
PLACEHOLDERS: tuple[str, ...] = (ITEMS, *FIELDS, WHOLE_SAMPLE)
SYSTEM_MESSAGE = "You are a careful evaluation judge. Reply with JSON only."

PROJECTED = "projected"
REPLAY = "replay"
BINDINGS: tuple[str, ...] = (PROJECTED, REPLAY)


def prompt_hash(template: str) -> str:
    """A stable short content hash of a template (12 hex characters of SHA-256)."""
    return hashlib.sha256(template.encode("utf-8")).hexdigest()[:12]


def placeholders(template: str, *, source: str | None = None) -> list[str]:
    """The placeholder names a template uses, in order of first use.

    A template takes field names only: `{contexts}`, never `{contexts:>1500000000}` (a format spec would pad a
    prompt to any size), `{answer!r}` (a conversion), `{contexts[0]}` or `{sample.answer}` (indexing, attribute).

    Args:
        template: the template text.
        source: what names the template in an error (a file, a run and metric); default its prompt hash.

    Raises:
        InputError: one line naming the template and the placeholder that is not a known field name, or the
            brace that is not closed (literal braces are written `{{` and `}}`).
    """
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:   # "Single '}' encountered in format string" and the like
        raise InputError(f"{exc}: write a literal brace as {{{{ or }}}}", field="template",
                         source=source or f"template {prompt_hash(template)}") from None
    seen: list[str] = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if spec or conversion or name not in PLACEHOLDERS:
            shown = _cut("{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}")
            what = (f"unknown placeholder {shown}" if not spec and not conversion and name.isidentifier() else
                    f"placeholder {shown} is not a bare field name (no format spec, conversion, index or attribute)")
            raise InputError(f"{what}; a template takes field names only; known: {', '.join(PLACEHOLDERS)}",
                             field="template", source=source or f"template {prompt_hash(template)}")
        if name not in seen:
            seen.append(name)
    return seen


@functools.lru_cache(maxsize=256)
def _rendered_names(template: str) -> tuple[str, ...]:
    """`placeholders` of a template, parsed once: `render` fills one template for every sample and repeat of a
    run or an ablation (a template that raises is not kept, and raises again as it did)."""
    return tuple(placeholders(template))


def _cut(text: str, limit: int = 80) -> str:
    """A placeholder as the error shows it: a long one is cut (the message stays one short line)."""
    return text if len(text) <= limit else text[:limit] + "...}"


def fields_read(template: str, metric: str) -> frozenset[str]:
    """The sample artifacts a template puts in front of the judge."""
    spec = get_metric(metric)
    read: set[str] = set()
    for name in placeholders(template):
        if name == ITEMS:
            read.add(spec.items_from)
        elif name == WHOLE_SAMPLE:
            read.update(FIELDS)
        else:
            read.add(name)
    return frozenset(read)


def fields_rendered(template: str, metric: str, binding: str) -> frozenset[str]:
    """The artifacts a run's wiring actually puts in front of the judge (the static evidence).

    A replayed template renders every field it names (against the whole
    sample); a projected one renders only what the metric's typed view holds.
    """
    read = fields_read(template, metric)
    return read if binding == REPLAY else read & get_metric(metric).receives


@dataclass(frozen=True)
class LintFinding:
    """One must-never-receive field that a template reads."""

    metric: str
    field: str
    prompt_hash: str

    @property
    def message(self) -> str:
        return str(LintError(self.metric, self.field, self.prompt_hash))


def lint(template: str, metric: str) -> list[LintFinding]:
    """Every field the template reads that its metric must never receive."""
    spec = get_metric(metric)
    h = prompt_hash(template)
    read = fields_read(template, metric)
    return [LintFinding(metric, f, h) for f in FIELDS if f in read and f in spec.never]


def check(template: str, metric: str) -> None:
    """Raise LintError for the first must-never-receive field the template reads."""
    findings = lint(template, metric)
    if findings:
        f = findings[0]
        raise LintError(f.metric, f.field, f.prompt_hash)


def _format_passages(passages: tuple[str, ...]) -> str:
    if not passages:
        return "(no passages)"
    return "\n".join(f"PASSAGE {i}: {p}" for i, p in enumerate(passages, start=1))


def _format_value(name: str, value: object) -> str:
    if name == CONTEXTS:
        return _format_passages(tuple(value))  # type: ignore[arg-type]
    text = " ".join(str(value).split())
    return text if text else "(empty)"


def _format_sample(sample: EvalSample) -> str:
    return "\n".join(f"{name}:\n{_format_value(name, sample.field(name))}" for name in FIELDS)


def render(template: str, spec: MetricSpec, source: object, items: list[str]) -> str:
    """Fill a template from `source`: a metric's typed input, or a whole sample.

    With a typed input (projected binding) a placeholder for a field the input
    lacks raises WiringError naming the metric and the field: our own harness
    cannot leak. With a whole EvalSample (replay binding) every placeholder
    resolves, exactly as the historical harness that used the template did.
    """
    values: dict[str, str] = {ITEMS: "\n".join(f"ITEM {i}: {t}" for i, t in enumerate(items, start=1))}
    for name in _rendered_names(template):
        if name == ITEMS:
            continue
        if name == WHOLE_SAMPLE:
            if not isinstance(source, EvalSample):
                raise WiringError(spec.name, WHOLE_SAMPLE)
            values[name] = _format_sample(source)
            continue
        if not hasattr(source, name):
            raise WiringError(spec.name, name)
        values[name] = _format_value(name, getattr(source, name))
    return template.format(**values)


def build_prompt(template: str, metric: str, sample: EvalSample, binding: str) -> tuple[str, list[str]]:
    """Render the judge prompt for one sample; return (prompt text, items judged).

    Args:
        template: the template text.
        metric: the metric name.
        sample: the whole sample.
        binding: PROJECTED (render from the metric's typed input) or REPLAY
            (render against the whole sample, as a historical harness did).
    """
    spec = get_metric(metric)
    if binding == PROJECTED:
        source: object = spec.project(sample)
    elif binding == REPLAY:
        source = sample
    else:
        raise ValueError(f"unknown binding {binding!r}; use {' or '.join(BINDINGS)}")
    items = items_of(spec, source)
    return render(template, spec, source, items), items


def template_diff(old: str, new: str, *, old_name: str = "before", new_name: str = "after") -> str:
    """A unified diff of two templates ('' when equal)."""
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=old_name, tofile=new_name))


def output_rule(metric: str) -> str:
    """The output rule the default templates end with (template text: literal braces doubled)."""
    return _output_rule(get_metric(metric))


def _output_rule(spec: MetricSpec) -> str:
    # No example list: a small model copies an example's length (one verdict for four items), so the rule
    # names the object's keys and says "every item" without showing or suggesting any count.
    pos, neg = spec.labels
    return (
        'Return only a JSON object whose "verdicts" list holds an object for every item above, each with '
        '"item" (the item\'s number), "verdict" and "evidence".\n'
        f'Verdict words: "{pos}" or "{neg}". Evidence: the sentence that decided it, copied exactly, or "".'
    )


DEFAULT_TEMPLATES: dict[str, str] = {
    "faithfulness": (
        "Decide whether each claim of an answer is supported by the retrieved passages.\n"
        "A claim is supported only if a passage states it.\n\n"
        "CONTEXT:\n{contexts}\n\nCLAIMS:\n{items}\n\n" + _output_rule(METRICS["faithfulness"])
    ),
    "answer_relevance": (
        "Decide whether each claim of an answer addresses the question.\n\n"
        "QUESTION:\n{question}\n\nCLAIMS:\n{items}\n\n" + _output_rule(METRICS["answer_relevance"])
    ),
    "context_precision": (
        "Decide whether each retrieved passage is relevant to the question.\n\n"
        "QUESTION:\n{question}\n\nPASSAGES:\n{items}\n\n" + _output_rule(METRICS["context_precision"])
    ),
    "context_recall": (
        "Decide whether each statement of the reference answer is supported by the retrieved passages.\n\n"
        "CONTEXT:\n{contexts}\n\nSTATEMENTS:\n{items}\n\n" + _output_rule(METRICS["context_recall"])
    ),
    "answer_correctness": (
        "Decide whether each claim of an answer is supported by the reference answer.\n\n"
        "REFERENCE ANSWER:\n{ground_truth}\n\nCLAIMS:\n{items}\n\n" + _output_rule(METRICS["answer_correctness"])
    ),
}
for _metric, _template in DEFAULT_TEMPLATES.items():
    check(_template, _metric)
