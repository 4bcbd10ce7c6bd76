"""Markdown for people: exports that read well pasted as plain text, and the plain text itself.

`report.md_escape` escapes every mark that could start markup; that is right
for text Streamlit renders, but an exported finding pasted into a chat that
shows plain text then reads `-\\>` and `ground\\_truth`. `md_text` escapes only
what a CommonMark/GFM renderer would read as markup in an inline value (the
value is untrusted: it still cannot open a link, an image, an HTML tag, code,
emphasis or a table cell, nor start a block), and `plain_text` turns such
Markdown back into plain text by dropping those escapes outside code fences.
Pure functions.
"""

from __future__ import annotations

import re
from string import punctuation as PUNCTUATION  # ASCII punctuation: what a backslash can escape

_ALWAYS = frozenset("`*[<|~$")  # code, emphasis, links and images (a ] alone opens none), tags, cells, strike, math
_ESCAPE = re.compile(rf"\\([{re.escape(PUNCTUATION)}])")
_ENTITY = re.compile(r"&(#[0-9]{1,7};|#[xX][0-9a-fA-F]{1,6};|[A-Za-z][A-Za-z0-9]{1,31};)")
_BLOCK_START = re.compile(r"^(#{1,6}(?=\s|$)|[-+=](?=[\s\-+=]|$)|>|\d{1,9}(?=[.)](?:\s|$)))")
_FENCE = re.compile(r"^(`{3,}|~{3,})")


def _needs_escape(text: str, i: int) -> bool:
    ch = text[i]
    if ch in _ALWAYS:
        return True
    if ch == "\\":   # a backslash escapes only punctuation; at the end, whatever follows the value
        return i + 1 == len(text) or text[i + 1] in PUNCTUATION
    if ch == "_":    # an underscore inside a word (ground_truth) never opens emphasis
        return not (0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum())
    if ch == "&":    # only a character reference (&amp; &#38;) would be decoded
        return _ENTITY.match(text, i) is not None
    return False


def md_text(value: object) -> str:
    """An untrusted value as inline Markdown that renders as itself, escaping only what would be misread.

    Line breaks are flattened to spaces. Always escaped: backticks, `*`, `[`, `<`, `|`, `~` and `$`.
    Escaped where they would count: `_` at a word's edge, `&` starting a character reference, a backslash
    before punctuation, and a block marker (`#`, `-`, `+`, `>`, `1.`) at the start of the value.
    """
    text = " ".join(str(value).split())
    out = [f"\\{ch}" if _needs_escape(text, i) else ch for i, ch in enumerate(text)]
    start = _BLOCK_START.match(text)
    if start and not out[0].startswith("\\"):
        at = start.end() if start.group(0)[0].isdigit() else 0   # "1." -> "1\.", "#" -> "\#"
        out[at] = "\\" + out[at]
    return "".join(out)


def plain_text(markdown: str) -> str:
    """Markdown as plain text for a chat or a ticket: the backslash escapes dropped, code fences kept as written.

    The inverse of md_text for the values in it: `plain_text(md_text(x))` is x with its whitespace flattened.
    """
    out: list[str] = []
    fence: str | None = None
    for line in markdown.splitlines(keepends=True):
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and line.rstrip("\r\n") == fence:
            fence = None
        elif fence is None:
            line = _ESCAPE.sub(r"\1", line)
        out.append(line)
    return "".join(out)


_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_TABLE_RULE = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_MARKUP = re.compile(r"(?<!\\)[*`]")   # emphasis and code marks we write (values escape theirs)
_LINE_ITALIC = re.compile(r"^_(.*[^\\])_$")   # a whole line in italics ("_Nothing moved._")


def _inline(text: str) -> str:
    return _ESCAPE.sub(r"\1", _MARKUP.sub("", _LINE_ITALIC.sub(r"\1", text.strip())))


def markdown_text(markdown: str) -> str:
    """This project's Markdown (a review, a run report) as plain text for a chat, a ticket or an email.

    Headings become lines underlined with = or -, table rows become one line each
    ("- column: value; ..."), emphasis and code marks are dropped, bullets stay
    "- ", code blocks keep their lines without the fences, and the backslash
    escapes of stored values are removed (plain_text), so what remains is the text as a reader would type it.
    """
    out: list[str] = []
    header: list[str] | None = None
    fence: str | None = None
    for raw in markdown.splitlines():
        m = _FENCE.match(raw)
        if fence is None and m:
            fence = m.group(1)
            continue
        if fence is not None:
            if raw.strip() == fence:
                fence = None
            else:
                out.append(raw)
            continue
        line = raw.rstrip()
        if line.startswith("|") and line.endswith("|") and len(line) > 1:
            if _TABLE_RULE.match(line):
                continue
            cells = [_inline(c) for c in _CELL_SPLIT.split(line[1:-1])]
            if header is None:
                header = cells
                continue
            out.append("- " + "; ".join(f"{h}: {c}" for h, c in zip(header, cells, strict=False) if c))
            continue
        header = None
        h = _HEADING.match(line)
        if h:
            title = _inline(h.group(2))
            out.append(title)
            if len(h.group(1)) <= 2:
                out.append(("=" if len(h.group(1)) == 1 else "-") * len(title))
            continue
        out.append(_inline(line) if not line.startswith("- ") else "- " + _inline(line[2:]))
    return "\n".join(out).rstrip() + "\n"
