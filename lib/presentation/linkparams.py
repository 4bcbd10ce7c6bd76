"""Query parameters from a deep link: which exist, and checking them before a page uses them.

`PARAMS` is every parameter a page reads from or writes to its URL, with
what it means; lib.app.ui refuses a name not in it, so a page cannot grow a link
parameter the table (and the deep-link table of pages/README.md) does not list.
A URL is typed or pasted by anyone: every value is checked against what the
page can show, and a bad one gets a sentence naming the parameter for the
page to show (`st.warning`) and a fallback, never a traceback. Pure functions;
the pages and lib.app.ui call them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from lib.core.validate import EARLIEST, LATEST

FIRST_DAY = EARLIEST.date()
LAST_DAY = date(LATEST.year - 1, 12, 31)   # a run starts before LATEST (lib.core.validate)
MAX_SHOWN = 60                               # characters of a bad value quoted back
MAX_SEARCH = 200                             # characters of a search a link may carry
SCORE_STEP = 0.05                            # the Run page's score slider moves in these steps
_PAGE = re.compile(r"[0-9]{1,9}")            # ASCII digits only (int() takes other scripts' digits too)


@dataclass(frozen=True)
class LinkParam:
    """One deep-link parameter: its name, the pages that read it, and what its value says."""

    name: str
    pages: tuple[str, ...]
    means: str


PARAMS: dict[str, LinkParam] = {p.name: p for p in (
    LinkParam("run", ("Run", "Compare", "Ablation"), "the run shown (a run id; Ablation also takes latest)"),
    LinkParam("metric", ("Run", "Trends", "Compare", "Ablation"),
              "the metric shown (Ablation: comma-separated metrics to re-judge; Trends: absent for all)"),
    LinkParam("view", ("Run",), "the sample in the sample viewer (a sample id)"),
    LinkParam("q", ("Run",), f"the sample search: words in any text or the sample id (up to {MAX_SEARCH} characters)"),
    LinkParam("score", ("Run",), "the score range of the samples listed, LO-HI between 0 and 1 (e.g. 0.00-0.50)"),
    LinkParam("verdict", ("Run",), "only samples with this verdict word (e.g. unsupported)"),
    LinkParam("found", ("Run",), "only samples with evidence found in this artifact (contexts, ground_truth, "
                                 "question or nowhere)"),
    LinkParam("page", ("Run",), "the page of a large run's sample table, which is read a page at a time (1 for the "
                                "first; absent: the first)"),
    LinkParam("from", ("Trends", "Review"), "the first day of the date range (YYYY-MM-DD)"),
    LinkParam("to", ("Trends", "Review"), "the last day of the date range (YYYY-MM-DD)"),
    LinkParam("run_b", ("Compare",), "the baseline run (a run id; absent: the run before)"),
    LinkParam("split", ("Compare",), "1: show the split into instrument and outputs (an offline judge's split runs "
                                     "by itself; a paid one waits for its button)"),
    LinkParam("ablation", ("Ablation",), "the ablation shown (an ablation id)"),
    LinkParam("blank", ("Ablation",), "comma-separated fields to blank"),
    LinkParam("swap", ("Ablation",), "comma-separated fields to swap with another sample's (ground_truth, question)"),
    LinkParam("asof", ("every page",), "a team store read as it stood at this day's end (YYYY-MM-DD; absent: now); "
                                       "read-only meanwhile"),
)}


def registered(name: str) -> LinkParam:
    """The parameter `name` from PARAMS.

    Raises:
        KeyError: a page reads or writes a parameter PARAMS does not list (a programming error).
    """
    try:
        return PARAMS[name]
    except KeyError:
        raise KeyError(f"link parameter {name!r} is not in linkparams.PARAMS; add it there") from None


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


def as_of_day(text: str | None, *, team_store: bool, today: date) -> tuple[date | None, str | None]:
    """The `asof` link parameter as the day a team store is read as of, or why it cannot be one (the page reads
    the store as it stands now). It carries a date only, never a store: the store is the sidebar's choice.

    Returns:
        (day, None) for a good date on a team store; (None, None) when none is given; (None, sentence) otherwise.
    """
    if text is None:
        return None, None
    if not team_store:
        return None, "The link's asof needs a team store: this database is a DuckDB file, which keeps only its present."
    now = "showing the history as it is now"
    try:   # fromisoformat also takes 20261031 and 2026-W44-6: a link spells the date out
        day = date.fromisoformat(text) if len(text) == len("YYYY-MM-DD") else None
    except ValueError:
        day = None
    if day is None:
        return None, f"The link's asof {quoted(text)} is not a date (YYYY-MM-DD); {now}."
    if day < FIRST_DAY:
        return None, f"The link's asof {day.isoformat()} is before {FIRST_DAY.isoformat()}; {now}."
    if day > today:
        return None, f"The link's asof {day.isoformat()} is after today; {now}."
    return day, None


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


def search(text: str | None) -> tuple[str | None, str | None]:
    """The Run page's `q`: the search a link carries, or why it cannot be used (too long)."""
    if text is None:
        return None, None
    if len(text) > MAX_SEARCH:
        return None, f"The link's q is {len(text):,} characters long; a search is at most {MAX_SEARCH}."
    return text, None


def score_text(lo: float, hi: float) -> str | None:
    """A score range as the `score` parameter writes it; None for the whole 0-1 range (the default)."""
    return None if (lo, hi) == (0.0, 1.0) else f"{lo:.2f}-{hi:.2f}"


def score_range(text: str | None) -> tuple[tuple[float, float] | None, str | None]:
    """The Run page's `score` (LO-HI, each between 0 and 1) on the slider's steps, or why it is not a range."""
    if text is None:
        return None, None
    parts = text.split("-")
    try:
        lo, hi = float(parts[0]), float(parts[-1])
        ok = len(parts) == 2 and math.isfinite(lo) and math.isfinite(hi)
    except ValueError:
        ok = False
    if not ok:
        return None, f"The link's score {quoted(text)} is not a range LO-HI such as 0.00-0.50."
    if not (0.0 <= lo <= 1.0 and 0.0 <= hi <= 1.0):
        return None, f"The link's score {quoted(text)} goes outside 0 to 1."
    if lo > hi:
        return None, f"The link's score {quoted(text)} starts above its end."
    return (_snap(lo), _snap(hi)), None


def page_number(text: str | None) -> tuple[int | None, str | None]:
    """The Run page's `page` (a whole number from 1), or why it is not one."""
    if text is None:
        return None, None
    if not _PAGE.fullmatch(text) or int(text) < 1:
        return None, f"The link's page {quoted(text)} is not a page number (1, 2, 3 ...)."
    return int(text), None


def page_text(page: int) -> str | None:
    """A page number as the `page` parameter writes it; None for the first page (the default)."""
    return None if page <= 1 else str(page)


def past_last_page(asked: int, pages: int) -> str | None:
    """The sentence for a linked page past the last one (the page shows the last), or None when it is there."""
    if asked <= pages:
        return None
    return f"The link's page {asked:,} is past the last page of these samples ({pages:,}); showing page {pages:,}."


def _snap(x: float) -> float:
    """x on the score slider's nearest step."""
    return round(round(x / SCORE_STEP) * SCORE_STEP, 2)


def day_span(start: str | None, end: str | None, days: Sequence[date]) -> tuple[tuple[date, date] | None, str | None]:
    """Trends' `from`/`to` as the first and last run day inside them (the range picker stops at run days).

    Returns:
        (range, None) when the link's dates hold at least one run day; (None, None) when neither is given;
        (None, sentence) otherwise (the page shows every run).
    """
    picked, problem = date_range(start, end)
    if picked is None:
        return None, problem
    inside = [d for d in days if picked[0] <= d <= picked[1]]
    if not inside:
        return None, (f"No run started between the link's from {picked[0].isoformat()} and to "
                      f"{picked[1].isoformat()}.")
    return (inside[0], inside[-1]), None


def flag(param: str, text: str | None) -> tuple[bool, str | None]:
    """A parameter that is on when it is 1 (Compare's split): (on, None), or (False, why) for another value."""
    if text is None or text == "1":
        return text == "1", None
    return False, f"The link's {param} {quoted(text)} is not 1, the one value it takes; left out."
