"""Samples a metric cannot meaningfully score, excluded with a reason before any judge call.

- No passages: `contexts` empty, or every passage blank. Faithfulness judges
  claims against the passages, context precision judges the passages, context
  recall judges the reference against the passages; with nothing there, any
  score is chance (a judge's random flip can mark a claim "supported by
  nothing"). Excluded from those three metrics, for every judge and scorer.
- A refusal ("I don't know", "I cannot answer that"): the answer states no
  claim about the world, so faithfulness has nothing to check; a 0 would
  punish an honest refusal and a 1 would be chance. Excluded from
  faithfulness only. Answer relevance and answer correctness still judge it:
  a refusal does not address the question and does not state the reference's
  answer, and a low score there is what a user expects.
- An empty answer (or reference) has no items: excluded from every metric
  whose items it gives, for the built-in judge and an external scorer alike.
- An answer with no word that states anything ("...", "?", "It is.") has no
  claim for faithfulness to check: excluded from faithfulness, like a refusal.

An ablation screens the unblanked sample, never the blanked one: blanking
contexts is the measurement, not a degenerate input.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lib.core.metrics import METRIC_NAMES, get_metric
from lib.core.samples import CONTEXTS, EvalSample

if TYPE_CHECKING:
    import pandas as pd

REFUSAL = re.compile(
    r"^(?:sorry,? )?(?:i (?:do not|don't|dont) know|i (?:cannot|can't|can not) (?:answer|say|tell|help)"
    r"|i (?:am|'m) not sure|i have no (?:idea|answer|information)|there is not enough information"
    r"|(?:the )?(?:context|passages?|documents?) (?:does|do) not (?:say|contain|mention|state))"
    r"(?: [^.!?]{0,60})?[.!?]?$")
MAX_REFUSAL_WORDS = 14


# What "blank" means, in Python and in SQL alike (store.scores_without_passages trims these): every character
# str.isspace() calls whitespace. DuckDB's trim() with no characters strips spaces only.
WHITESPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
              "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


def is_blank(text: str) -> bool:
    """No character but WHITESPACE."""
    return not text.strip(WHITESPACE)


def has_passages(contexts: tuple[str, ...] | list[str]) -> bool:
    """At least one passage with text in it."""
    return any(not is_blank(p) for p in contexts)


# Words that state nothing on their own (the offline judge's stop words too: lib.judging.offline).
FUNCTION_WORDS = frozenset(
    """a an the and or but if of to in on at by for with from as is are was were be been being it its
    this that these those there their they them we our you your he she his her not no yes do does did
    can could may might will would shall should must than then so such into onto over under about per
    each every any all some more most less also only just very which who whom whose what when where why
    how has have had up out off via one""".split()
)
_TOKEN = re.compile(r"[^\W\d_][\w\-']*|\d+")


def has_claim(answer: str) -> bool:
    """At least one word that could carry a claim: a number, or a word of three or more letters that is not a
    function word. "...", "?", "It is." and "Yes." have none."""
    return any(t[0].isdigit() or (len(t) > 2 and t.lower() not in FUNCTION_WORDS) for t in _TOKEN.findall(answer))


def is_refusal(answer: str) -> bool:
    """The whole answer is a refusal (a short 'I don't know' and no more)."""
    text = " ".join(answer.lower().replace("\u2019", "'").split())
    return 0 < len(text.split()) <= MAX_REFUSAL_WORDS and REFUSAL.match(text) is not None


def exclusion_reason(sample: EvalSample, metric: str) -> str | None:
    """Why `metric` must not score this sample at all, or None when it may."""
    spec = get_metric(metric)
    if CONTEXTS in spec.receives and not has_passages(sample.contexts):
        return f"no passages: {metric} is judged over or against contexts, and this sample has none"
    if spec.items_from != CONTEXTS and is_blank(getattr(sample, spec.items_from)):
        return f"no {spec.item_kind}s to judge: {spec.items_from} is empty"
    if metric == "faithfulness" and is_refusal(sample.answer):
        return "refusal: the answer states no claim for faithfulness to check"
    if metric == "faithfulness" and not has_claim(sample.answer):
        return "no claim: the answer has no word that states anything for faithfulness to check"
    return None


PASSAGE_METRICS: tuple[str, ...] = tuple(m for m in METRIC_NAMES if CONTEXTS in get_metric(m).receives)


def chance_summary(frame: pd.DataFrame) -> list[str]:
    """One line per (run, metric): how many scores on samples with no passages, and how many read 1.0."""
    lines = []
    for (run_id, metric), part in frame.groupby(["run_id", "metric"], sort=True):
        ones = int((part["score"] >= 1.0).sum())
        lines.append(f"run {run_id}: {len(part)} {metric} score(s) on samples with no passages ({ones} of them "
                     f"1.0), e.g. {part['sample_id'].iloc[0]}: a score there is chance, not support")
    return lines
