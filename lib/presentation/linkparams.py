"""Query parameters from a deep link, checked before a page uses them.

A URL is typed or pasted by anyone: every value is checked against what the
page can show, and a bad one gets a sentence for the page to show
(`st.warning`) and a fallback, never a traceback. Pure functions; the pages
and lib.app.ui call them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from lib.core.validate import EARLIEST, LATEST

FIRST_DAY = EARLIEST.date()
LAST_DAY = date(LATEST.year - 1, 12, 31)   # a run starts before LATEST (lib.core.validate)
MAX_SHOWN = 60                               # characters of a bad value quoted back


def quoted(value: str) -> str:
    """A bad value as a message quotes it: cut to MAX_SHOWN characters."""
    return repr(value if len(value) <= MAX_SHOWN else value[:MAX_SHOWN] + "...")


def date_range(start: str | None, end: str | None) -> tuple[tuple[date, date] | None, str | None]:
    """The Review page's `from`/`to` link parameters as a date range, or why they cannot be one.

    Returns:
        (range, None) for a good pair; (None, None) when neither is given;
        (None, sentence) for anything else (the page falls back to its default).
    """
    if start is None and end is None:
        return None, None
    if start is None or end is None:
        return None, "The link gives only one end of the date range; it needs both from and to."
    days = []
    for name, text in (("from", start), ("to", end)):
        try:
            day = date.fromisoformat(text)
        except ValueError:
            return None, f"The link's {name} {quoted(text)} is not a date (YYYY-MM-DD)."
        if not FIRST_DAY <= day <= LAST_DAY:
            return None, (f"The link's {name} {day.isoformat()} is outside the dates a run can have "
                          f"({FIRST_DAY.isoformat()} to {LAST_DAY.isoformat()}).")
        days.append(day)
    if days[0] > days[1]:
        return None, f"The link's from {days[0].isoformat()} is after its to {days[1].isoformat()}."
    return (days[0], days[1]), None


def unknown_choice(param: str, value: str | None, options: Sequence[str], fallback: str | None) -> str | None:
    """The sentence for a link value that is not among a picker's options, or None when it is fine."""
    if value is None or value in options:
        return None
    shown = f"; showing {quoted(fallback)} instead" if fallback is not None else ""
    return f"The link's {param} {quoted(value)} is not one this page can show{shown}."


def unknown_choices(param: str, values: Sequence[str], options: Sequence[str]) -> str | None:
    """As unknown_choice, for a comma-separated list parameter: names the values left out."""
    bad = [v for v in values if v not in options]
    if not bad:
        return None
    return f"The link's {param} names {', '.join(quoted(v) for v in bad)}, which this page cannot show; left out."
