"""How the offline judge reads a prompt: which text is an item, which is material, and what each is called.

A model reads every character of a prompt. The offline judge has to tell the
text it judges (the items) and the text it may find support in (the rendered
fields) from the template's own instructions, which are not evidence. It
does so by what the template says: given the template a message was rendered
from (lib.core.prompts), the literal text between placeholders is the template's,
and whatever stands where a placeholder stood is that field, wherever the
template puts it (under a heading, inside a sentence, on a line of its own)
and whatever the field holds (blank lines, lines that look like headings).
`{sample}` is split into its four fields the way lib.core.prompts renders it.

A field is named by its placeholder, by the heading line above it in the
template and by the label before it on its own line ("Reference: {x}"), so an
instruction naming a section ("ignore the REFERENCE ANSWER section") finds it.

Without a template (a prompt from elsewhere, or one that is not a rendering of
the template given), headings are all there is: material is what stands under
a heading line, up to the next blank line, except that passages ("PASSAGE n:")
run on, blank lines and all, to the next heading, passage or item.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from functools import lru_cache

from lib.core.samples import ANSWER, CONTEXTS, FIELDS

ITEMS = "items"
SAMPLE = "sample"
_HEADING = re.compile(r"^([A-Za-z][A-Za-z _]{2,}):\s*$")
_ITEM_LINE = re.compile(r"^ITEM (\d+): (.*)$")
_ITEM_START = re.compile(r"^ITEM (\d+): ", re.MULTILINE)
_PASSAGE_START = re.compile(r"^PASSAGE \d+: ", re.MULTILINE)
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
_LABEL = re.compile(r"([A-Za-z][A-Za-z _]*?)\s*[:=\-]*\s*$")


@dataclass(frozen=True)
class Field:
    """One stretch of rendered text the judge may read as evidence.

    Attributes:
        field: the sample field it holds (question, answer, contexts, ground_truth), or "" when unknown.
        names: what the prompt calls it, upper case (its heading, its label, its placeholder).
        units: its text cut where a reader would stop a sentence: passages, paragraphs, joined lines.
    """

    field: str
    names: frozenset[str]
    units: tuple[str, ...]

    @property
    def judged(self) -> bool:
        """The answer under judgement: never evidence for its own claims."""
        return self.field == ANSWER if self.field else bool(self.names & JUDGED_SECTIONS)


JUDGED_SECTIONS = frozenset({"ANSWER", "RESPONSE", "GENERATED ANSWER"})


@dataclass(frozen=True)
class Reading:
    """A prompt as read: its items (number, text) and the fields that are material."""

    items: tuple[tuple[int, str], ...]
    fields: tuple[Field, ...]
    by_template: bool


def _name(text: str) -> str:
    return " ".join(text.replace("_", " ").split()).upper()


def _paragraph_lines(text: str) -> list[str]:
    """A paragraph's lines, a line that starts in lower case joined to the one before (a wrapped sentence)."""
    out: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if out and line[0].islower():
            out[-1] = f"{out[-1]} {line}"
        else:
            out.append(line)
    return out


def units_of(text: str, field: str = "") -> tuple[str, ...]:
    """The text of a field cut into reading units: each passage, each paragraph, each (joined) line."""
    parts = _PASSAGE_START.split(text) if field in (CONTEXTS, "") else [text]
    units: list[str] = []
    for part in parts:
        for paragraph in _PARAGRAPH.split(part):
            units.extend(_paragraph_lines(paragraph))
    if field == CONTEXTS and units == ["(no passages)"]:
        return ()
    return tuple(units)


def items_of(text: str) -> tuple[tuple[int, str], ...]:
    """The numbered items of an {items} field; an item runs on to the next ITEM line, blank lines and all."""
    starts = list(_ITEM_START.finditer(text))
    out = []
    for m, nxt in zip(starts, [*starts[1:], None], strict=True):
        body = text[m.end(): nxt.start() if nxt else len(text)]
        out.append((int(m.group(1)), " ".join(body.split())))
    return tuple(out)


@dataclass(frozen=True)
class _Slot:
    name: str               # the placeholder
    names: frozenset[str]   # its heading, label and placeholder, upper case


@lru_cache(maxsize=512)
def _pattern(template: str) -> tuple[re.Pattern[str], tuple[_Slot, ...]] | None:
    """A regex matching exactly the renderings of `template`, one group per placeholder, and the slots."""
    parts: list[str] = []
    slots: list[_Slot] = []
    seen: dict[str, int] = {}
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:
        return None
    for literal, name, _, _ in parsed:
        parts.append(re.escape(literal))
        if name is None:
            continue
        if name in seen:  # the same value again: a back-reference, not a second field
            parts.append(f"(?P=f{seen[name]})")
            continue
        seen[name] = len(slots)
        parts.append(f"(?P<f{len(slots)}>.*?)")
        slots.append(_Slot(name, _slot_names(literal, name)))
    return re.compile("".join(parts), re.DOTALL), tuple(slots)


def _slot_names(literal: str, name: str) -> frozenset[str]:
    """A placeholder's names: itself, the label before it on its line, else the heading line above it."""
    names = {_name(name)}
    before = literal.rsplit("\n", 1)
    tail = before[-1]
    if tail.strip():
        label = _LABEL.search(tail.strip())
        if label and label.group(1).strip():
            names.add(_name(label.group(1)))
    elif len(before) == 2:
        lines = [x for x in before[0].splitlines() if x.strip()]
        heading = _HEADING.match(lines[-1].strip()) if lines else None
        if heading:
            names.add(_name(heading.group(1)))
    return frozenset(names)


def _sample_fields(text: str, names: frozenset[str]) -> list[Field] | None:
    """The four fields of a rendered {sample} (lib.core.prompts: "name:" then the value, in FIELDS order)."""
    pattern = "".join(("" if i == 0 else "\n") + re.escape(f"{f}:") + f"\n(?P<{f}>.*?)" for i, f in enumerate(FIELDS))
    m = re.fullmatch(pattern, text, re.DOTALL)
    if not m:
        return None
    return [Field(f, names | {_name(f)}, units_of(m.group(f), f)) for f in FIELDS]


def read_by_template(text: str, template: str) -> Reading | None:
    """Read a message rendered from `template`; None when it is not a rendering of it."""
    compiled = _pattern(template)
    if compiled is None:
        return None
    pattern, slots = compiled
    m = pattern.fullmatch(text)
    if not m:
        return None
    items: tuple[tuple[int, str], ...] = ()
    fields: list[Field] = []
    for i, slot in enumerate(slots):
        value = m.group(f"f{i}")
        if slot.name == ITEMS:
            items = items_of(value)
        elif slot.name == SAMPLE:
            fields.extend(_sample_fields(value, slot.names) or [Field("", slot.names, units_of(value))])
        else:
            fields.append(Field(slot.name if slot.name in FIELDS else "", slot.names, units_of(value, slot.name)))
    return Reading(items, tuple(fields), True)


def read_by_headings(prompt: str) -> Reading:
    """Read a prompt with no template: headed sections are material, ITEM lines are items."""
    items: list[tuple[int, str]] = []
    fields: list[Field] = []
    section = ""
    lines: list[str] = []
    passages = False

    def close() -> None:
        if section and lines:
            fields.append(Field("", frozenset({section}), units_of("\n".join(lines))))
        lines.clear()

    for raw in prompt.splitlines():
        line = raw.strip()
        item = _ITEM_LINE.match(line)
        heading = _HEADING.match(line)
        if item or heading or (not line and not passages):
            close()
            section = heading.group(1).strip().upper() if heading else ""
            passages = False
            if item:
                items.append((int(item.group(1)), item.group(2)))
            continue
        passages = passages or bool(_PASSAGE_START.match(line))
        if section:
            lines.append(raw)
    close()
    return Reading(tuple(items), tuple(fields), False)


def read(messages: tuple[str, ...], template: str | None) -> Reading:
    """Read a request's messages: by the template when one of them renders it, else by headings."""
    if template:
        for text in reversed(messages):
            reading = read_by_template(text, template)
            if reading is not None:
                return reading
    return read_by_headings("\n\n".join(messages))
