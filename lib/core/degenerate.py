"""Samples a metric cannot meaningfully score, excluded with a reason before any judge call.

- No passages: `contexts` empty, or every passage blank. Faithfulness judges
  claims against the passages, context precision judges the passages, context
  recall judges the reference against the passages; with nothing there, any
  score is chance (a judge's random flip can mark a claim "supported by
  nothing"). Excluded from those three metrics, for every judge and scorer.
- A refusal ("I don't know", "I'm sorry, I cannot answer that", "I'm not
  sure") or a non-answer ("No idea.", "Unknown.", "None.", "N/A"), each read
  from a table below: the answer states no claim about the world, so
  faithfulness has nothing to check; a 0 would
  punish an honest refusal and a 1 would be chance. Excluded from
  faithfulness only. Answer relevance and answer correctness still judge it:
  a refusal does not address the question and does not state the reference's
  answer, and a low score there is what a user expects.
- An empty answer (or reference) has no items: excluded from every metric
  whose items it gives, for the built-in judge and an external scorer alike.
- An answer with no word that states anything ("...", "?", "It is.") has no
  claim for faithfulness to check: excluded from faithfulness, like a refusal.

An ablation screens the unblanked sample, never the blanked one: blanking
contexts is the measurement, not a degenerate input. Scores another tool
stored on such samples (no passages; faithfulness on a content-free answer)
are kept and flagged: at import, on the Run page and by `lint --db`
(store.chance_scores, chance_summary, chance_in_run).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from lib.core.metrics import METRIC_NAMES, get_metric
from lib.core.results import OK
from lib.core.samples import CONTEXTS, EvalSample

if TYPE_CHECKING:
    import pandas as pd

    from lib.core.records import RunRecord

# A refusal is a whole answer that declines or admits not knowing. Two tables, matched on the answer lowercased,
# curly apostrophes made straight, whitespace collapsed and "i'm" read as "i am":
# - REFUSALS: openings, after an optional apology, with at most a short tail and no second sentence ("I don't
#   know the answer to that."; an opening followed straight by a comma, "I'm not sure, but ...", is not one).
# - NON_ANSWERS: whole answers, trailing punctuation aside, that answer nothing ("No idea.", "Unknown.", "None.").
#   "None." can be a true answer to "how many ...?", but the claim is then in the question, which faithfulness
#   must never receive: on its own it states nothing to check against the passages.
APOLOGIES: tuple[str, ...] = ("sorry", "i am sorry", "i apologize", "i apologise", "unfortunately")
REFUSALS: tuple[str, ...] = (
    r"i (?:do not|don't|dont) know",
    r"i (?:cannot|can't|cant|can not|am unable to|am not able to) (?:answer|say|tell|help)",
    r"i am not (?:sure|certain)",
    r"i have no (?:idea|answer|information)",
    r"there is (?:not enough|no|insufficient) information",
    r"(?:the )?(?:context|passages?|documents?) (?:does|do) not (?:say|contain|mention|state)",
)
NON_ANSWERS: frozenset[str] = frozenset({
    "no idea", "not sure", "unsure", "unknown", "none", "n/a", "na", "null", "idk", "dunno", "no answer",
    "not known", "nothing", "no clue", "no comment", "don't know", "do not know", "cannot say", "can't say",
    "cannot answer", "can't answer", "no information", "not available",
})
_APOLOGY = r"(?:(?:" + "|".join(APOLOGIES) + r"),? (?:but )?)?"
REFUSAL = re.compile(r"^" + _APOLOGY + r"(?:" + "|".join(REFUSALS) + r")(?: [^.!?]{0,60})?[.!?]?$")
_APOLOGY_AT_START = re.compile(r"^" + _APOLOGY)
_I_AM = re.compile(r"\bi'm\b")
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


def _normalised(answer: str) -> str:
    return _I_AM.sub("i am", " ".join(answer.lower().replace("\u2019", "'").split()))


def is_refusal(answer: str) -> bool:
    """The whole answer is a refusal or a non-answer (a short 'I don't know', 'No idea.', 'None.' and no more)."""
    text = _normalised(answer)
    if not 0 < len(text.split()) <= MAX_REFUSAL_WORDS:
        return False
    bare = _APOLOGY_AT_START.sub("", text).rstrip(".!?\u2026 ")
    return bare in NON_ANSWERS or REFUSAL.match(text) is not None


# Every metric of every run and repeat screens the same answers again (a demo build, 90 runs: 40 µs an answer,
# half the offline judge's cost on a faithfulness judging): read each answer once.
@lru_cache(maxsize=16_384)
def content_free_reason(answer: str) -> str | None:
    """Why an answer states nothing for faithfulness to check ('refusal: ...', 'no claim: ...'), or None."""
    if is_refusal(answer):
        return "refusal: the answer states no claim for faithfulness to check"
    if not has_claim(answer):
        return "no claim: the answer has no word that states anything for faithfulness to check"
    return None


def exclusion_reason(sample: EvalSample, metric: str) -> str | None:
    """Why `metric` must not score this sample at all, or None when it may."""
    spec = get_metric(metric)
    if CONTEXTS in spec.receives and not has_passages(sample.contexts):
        return f"no passages: {metric} is judged over or against contexts, and this sample has none"
    if spec.items_from != CONTEXTS and is_blank(getattr(sample, spec.items_from)):
        return f"no {spec.item_kind}s to judge: {spec.items_from} is empty"
    if metric == "faithfulness":
        return content_free_reason(sample.answer)
    return None


PASSAGE_METRICS: tuple[str, ...] = tuple(m for m in METRIC_NAMES if CONTEXTS in get_metric(m).receives)


NO_PASSAGES = "no passages"
CONTENT_FREE = "content-free answer"
# A stored score's answer is read back to be checked only up to this length: a refusal is at most
# MAX_REFUSAL_WORDS words with a short tail, and an answer this long with no claim is not one a tool writes.
CONTENT_FREE_MAX_CHARS = 300


def _chance_words(reason: str, what: str, n: int, ones: int) -> str:
    """'35 faithfulness score(s) on content-free answers (...; 35 of them 1.0)' (`what`: the metric, or '')."""
    scores = f"{n} {what} score(s)" if what else f"{n} score(s)"
    if reason == CONTENT_FREE:
        return f"{scores} on content-free answers (a refusal, a non-answer or no claim; {ones} of them 1.0)"
    return f"{scores} on samples with no passages ({ones} of them 1.0)"


def _chance_why(reason: str) -> str:
    if reason == CONTENT_FREE:
        return "the answer states no claim to check, so a score there is chance, not support"
    return "a score there is chance, not support"


def chance_summary(frame: pd.DataFrame) -> list[str]:
    """One line per (run, metric, reason): how many stored scores a metric should never have given (on samples
    with no passages, on content-free answers: store.chance_scores), and how many read 1.0."""
    lines = []
    if "reason" not in frame.columns:
        frame = frame.assign(reason=NO_PASSAGES)
    for (run_id, metric, reason), part in frame.groupby(["run_id", "metric", "reason"], sort=True):
        ones = int((part["score"] >= 1.0).sum())
        lines.append(f"run {run_id}: {_chance_words(reason, metric, len(part), ones)}, e.g. "
                     f"{part['sample_id'].iloc[0]}: {_chance_why(reason)}")
    return lines


def chance_in_run(run: RunRecord) -> list[str]:
    """At import: one line per (metric, reason) for the run's scores a metric should never have given, as
    chance_summary says them for a stored run (no sample text, no sample id: the page renders these lines)."""
    lines = []
    for m in run.metrics:
        samples = {s.sample_id: s for s in run.samples.get(m.suite, ())}
        counts: dict[str, list[float]] = {}
        for r in m.results:
            s = samples.get(r.sample_id)
            if r.status != OK or r.score is None or s is None:
                continue
            if m.metric in PASSAGE_METRICS and not has_passages(s.contexts):
                counts.setdefault(NO_PASSAGES, []).append(r.score)
            elif m.metric == "faithfulness" and content_free_reason(s.answer) is not None:
                counts.setdefault(CONTENT_FREE, []).append(r.score)
        for reason, scores in sorted(counts.items()):
            ones = sum(x >= 1.0 for x in scores)
            lines.append(f"{m.metric}: {_chance_words(reason, '', len(scores), ones)}: {_chance_why(reason)}")
    return lines
