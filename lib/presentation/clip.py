"""Texts cut to what a page can send: a sample larger than Streamlit's message limit never leaves the server.

Streamlit sends a page's elements over one websocket whose messages are
limited (`server.maxMessageSize`, 200 MB by default); a page that tries to
send more fails with MessageSizeError. A run recorded before the field cap
(EVALDRIFT_MAX_FIELD_CHARS), or under a raised one, can hold a text far
larger. So a page shows each text cut to SHOW_CHARS characters, with a note
saying how much is shown, and offers the whole text as a download (served
over HTTP, outside the message limit); a table cell is cut to LIST_CHARS.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

SHOW_CHARS = 20_000    # one text in a sample viewer: a page of these stays far below the message limit
LIST_CHARS = 1_000     # one cell of a table
CUT_MARK = " …"


@dataclass(frozen=True)
class Clipped:
    """A text as shown: the part shown and the whole length."""

    shown: str
    length: int

    @property
    def cut(self) -> bool:
        return len(self.shown) < self.length

    @property
    def note(self) -> str:
        """What was left out, in words ('' when nothing was)."""
        if not self.cut:
            return ""
        return (f"showing the first {len(self.shown):,} of {self.length:,} characters; "
                "download the whole text below")


def clip(text: str, limit: int = SHOW_CHARS) -> Clipped:
    """The first `limit` characters of a text, and its whole length."""
    return Clipped(text[:limit], len(text))


def clip_passages(passages: Sequence[str], limit: int = SHOW_CHARS) -> tuple[list[Clipped], int]:
    """Passages as shown within one budget of characters for them all; returns them and how many were left out."""
    shown: list[Clipped] = []
    left = limit
    for passage in passages:
        if left <= 0:
            break
        part = clip(passage, left)
        shown.append(part)
        left -= len(part.shown)
    return shown, len(passages) - len(shown)


def clip_cells(values: Iterable[object], limit: int = LIST_CHARS) -> list[object]:
    """Table cells with every text longer than `limit` cut, marked with ' …' (other values as they are)."""
    return [v[:limit] + CUT_MARK if isinstance(v, str) and len(v) > limit else v for v in values]
