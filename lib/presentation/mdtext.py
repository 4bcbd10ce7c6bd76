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
