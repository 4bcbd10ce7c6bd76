"""A deterministic offline judge: lexical entailment over the whole prompt.

It is a stand-in for a model judge, and honest about it. What it shares with a
model is the property this project is about: it reads every rendered field of
the prompt. Whatever the template interpolates is material it may find support
in, so a template that interpolates the reference leaks with this judge exactly
as it does with a model, however the template words it.

Rules:
- material: every field the template rendered, wherever the template puts it
  (lib.judging.reading: the request names its template, and the literal text
  between placeholders is the template's instructions, not evidence). A field
  is read whole: passages, paragraphs, blank lines and all. With no template,
  the text under headings ("CONTEXT:") is material.
- support: an item is supported by a sentence holding at least `support_share`
  of the item's content words, every number and time the item states, and
  every name it states (a capitalised word). An item that is only a number, a
  year or a date ("2006", "722,664") is supported by a sentence stating it.
  Citation markers ("[3]") are not part of what an item states.
- relevance: an item is relevant to a sentence sharing at least
  `relevance_share` of the smaller of their two content-word sets.
- the answer field (or a section headed ANSWER or RESPONSE) is the text under
  judgement, not evidence for its own claims.
- instructions: if the prompt asks to ignore a section (e.g. "Ignore the
  REFERENCE ANSWER section"), support found only in a field of that name is
  dropped for a fixed share `heed` of items, chosen by a hash of the item. A
  model partly obeys such an instruction; this models that as a parameter,
  it does not derive it.
- noise: with `noise` > 0 each verdict flips with that probability, seeded by
  (request seed, whole prompt, item): a stand-in for a model's run-to-run
  variation. An identical prompt at the same seed gets identical verdicts; any
  change to the prompt redraws the noise, as it would for a model.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache

from lib.core.calls import JudgeReply, JudgeRequest, Usage
from lib.core.degenerate import FUNCTION_WORDS
from lib.core.endpoints import OFFLINE_MODEL
from lib.core.metrics import split_sentences
from lib.judging.reading import Reading, read

STOPWORDS = FUNCTION_WORDS   # one list: a word the degenerate screen reads as stating nothing
_WORD = re.compile(r"[A-Za-z][A-Za-z\-']*|\d{1,3}(?:,\d{3})+(?:\.\d+)?%?|\d+(?::\d+)?(?:\.\d+)?%?")
_NUMBER = re.compile(r"^\d")
_CITATION = re.compile(r"\[\s*\d+(?:\s*[,;\-\u2013]\s*\d+)*\s*\]")
_GLUED = re.compile(r"(?<=[a-z0-9)\]\"\u201d'])([.!?])(?=[A-Z][a-z])")  # "century.First": two sentences
_LABELS = re.compile(r'[Vv]erdict words: "(\w+)" or "(\w+)"')
_IGNORE = re.compile(r"ignore the ([A-Z][A-Z _]+?) section", re.IGNORECASE)

VARIANTS: dict[str, dict[str, float]] = {
    "offline-lexical-v1": {"support_share": 0.75, "relevance_share": 0.5},
    "offline-lexical-v2": {"support_share": 0.7, "relevance_share": 0.5},
}
DEFAULT_MODEL = OFFLINE_MODEL
STAND_IN_NOISE = 0.03   # the stand-in for a model's run-to-run variation, where repeats are measured


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


@dataclass(frozen=True)
class _Terms:
    words: frozenset[str]     # content words, stemmed, lower case
    numbers: frozenset[str]   # numbers and times, thousands separators dropped
    names: frozenset[str]     # the content words written with a capital (names, titles, places)


@lru_cache(maxsize=200_000)
def _terms(text: str) -> _Terms:
    """The content words, numbers and names of a text; citation markers ("[3]") are not part of it."""
    words: set[str] = set()
    numbers: set[str] = set()
    names: set[str] = set()
    for tok in _WORD.findall(_CITATION.sub(" ", text)):
        if _NUMBER.match(tok):
            numbers.add(tok.replace(",", ""))
            continue
        low = tok.lower()
        if low in STOPWORDS or (len(low) <= 2 and not (len(tok) == 2 and tok.isupper())):  # "TV", "FX" count
            continue
        words.add(_stem(low))
        if tok[0].isupper():
            names.add(_stem(low))
    return _Terms(frozenset(words), frozenset(numbers), frozenset(names))


@dataclass(frozen=True)
class _Sentence:
    text: str
    names: frozenset[str]   # the field's names (its heading, label, placeholder)
    terms: _Terms


def _unit(seed: object, *parts: str) -> float:
    h = hashlib.blake2b(repr((seed, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2**64


class OfflineJudge:
    """The embedded, deterministic judge (no network).

    Args:
        model: one of VARIANTS (they differ in thresholds, as two model
            versions would).
        noise: verdict flip probability per item and call seed.
        heed: share of items for which an instruction to ignore a section works.
    """

    cacheable = False
    concurrency = 1
    endpoint = "offline"

    def __init__(self, model: str = DEFAULT_MODEL, *, noise: float = 0.0, heed: float = 0.2) -> None:
        if model not in VARIANTS:
            raise ValueError(f"unknown offline judge {model!r}; known: {', '.join(VARIANTS)}")
        self.model = model
        self.noise = noise
        self.heed = heed
        self._support_share = VARIANTS[model]["support_share"]
        self._relevance_share = VARIANTS[model]["relevance_share"]

    def complete(self, request: JudgeRequest) -> JudgeReply:
        decision = _decide_cached(tuple(m.content for m in request.messages), getattr(request, "template", None),
                                  self._support_share, self._relevance_share, self.heed)
        flipped = _flipped(request.seed, decision, self.noise) if self.noise else ()
        if not flipped:
            return JudgeReply(text=decision.text, usage=decision.usage, fingerprint=self.model)
        out = list(decision.plain)
        for k in flipped:
            out[k] = decision.flipped[k]
        text = _REPLY_HEAD + ", ".join(out) + _REPLY_TAIL
        usage = Usage(decision.usage.prompt_tokens, len(text.split()))
        return JudgeReply(text=text, usage=usage, fingerprint=self.model)


# json.dumps({"verdicts": [v1, v2]}) is exactly this head, each verdict's own json.dumps joined by ", ", and this
# tail: a reply with flipped verdicts is assembled from each verdict's text, made once a prompt.
_REPLY_HEAD, _REPLY_TAIL = '{"verdicts": [', "]}"


@dataclass(frozen=True)
class _Decision:
    """What the judge decides for one prompt before any noise: verdicts, the reply text, and the prompt's salt."""

    verdicts: tuple[tuple[int, str, bool, str, str, str], ...]   # item number, item, label, evidence, two words
    text: str
    usage: Usage
    salt: str   # a hash of the whole prompt: any change to the prompt redraws the noise
    plain: tuple[str, ...]     # each verdict as the reply writes it (json.dumps of its object)
    flipped: tuple[str, ...]   # each verdict flipped: the other word, and no evidence
    tails: tuple[bytes, ...]   # each item's end of the text its noise draw hashes


def _flipped(seed: object, decision: _Decision, noise: float) -> list[int]:
    """The positions of the verdicts that flip at this seed: those with _unit(seed, salt, item, str(n)) < noise,
    with the hash of the shared head of the hashed text computed once per call (the same bytes _unit hashes, so
    the same draws), and each draw's 8 bytes compared with the first that do not fall below `noise`."""
    head = hashlib.blake2b(f"({seed!r}, ({decision.salt!r}, ".encode(), digest_size=8)
    below = _below(noise)
    out = []
    for k, tail in enumerate(decision.tails):
        h = head.copy()
        h.update(tail)
        if h.digest() < below:
            out.append(k)
    return out


@lru_cache(maxsize=64)
def _below(noise: float) -> bytes:
    """The big-endian bytes b such that a draw's digest d has int(d) / 2**64 < noise exactly when d < b.

    int(d) / 2**64 rounds, so the least x whose quotient is not below `noise` is searched for, not computed
    from noise * 2**64 (the two differ by one rounding at the edge). Nine bytes when every draw is below.
    """
    lo, hi = 0, 2**64   # the least x with x / 2**64 >= noise is in [lo, hi] (hi: none of the draws is)
    while lo < hi:
        mid = (lo + hi) // 2
        if mid / 2**64 >= noise:
            hi = mid
        else:
            lo = mid + 1
    return lo.to_bytes(8, "big") if lo < 2**64 else b"\xff" * 8 + b"\x00"


@lru_cache(maxsize=100_000)
def _sentences(unit: str) -> tuple[tuple[str, _Terms], ...]:
    """A reading unit's sentences with their terms (a passage recurs over runs, arms and metrics)."""
    out = []
    for sent in split_sentences(_GLUED.sub(r"\1 ", unit)):
        terms = _terms(sent)
        if terms.words or terms.numbers:
            out.append((sent, terms))
    return tuple(out)


def _material(reading: Reading) -> list[_Sentence]:
    """Every sentence of every field that may be evidence (the answer under judgement is not)."""
    return [_Sentence(sent, field.names, terms)
            for field in reading.fields if not field.judged
            for unit in field.units for sent, terms in _sentences(unit)]


def _supports(item: _Terms, s: _Terms, support_share: float) -> float | None:
    """The share of the item's content words a sentence holds, when it supports the item; else None."""
    if not item.numbers <= s.numbers or not item.names <= s.words:
        return None
    if not item.words:  # only a number, a year, a date: stated verbatim is supported
        return 1.0 if item.numbers else None
    share = len(item.words & s.words) / len(item.words)
    return share if share >= support_share else None


def _relevant(item: _Terms, s: _Terms, relevance_share: float) -> float | None:
    denom = min(len(item.words), len(s.words))
    share = len(item.words & s.words) / denom if denom else 0.0
    return share if share >= relevance_share else None


@lru_cache(maxsize=100_000)
def _decide_cached(contents: tuple[str, ...], template: str | None, support_share: float, relevance_share: float,
                   heed: float) -> _Decision:
    reading = read(contents, template)
    material = _material(reading)
    prompt = "\n\n".join(contents)
    labels = _LABELS.search(prompt)
    positive, negative = labels.groups() if labels else ("supported", "unsupported")
    relevance = positive == "relevant"
    ignored = ({" ".join(m.group(1).split()).upper() for m in _IGNORE.finditer(prompt)}
               if "ignore" in prompt.lower() else set())

    decided = []
    for n, item in reading.items:
        terms = _terms(item)
        best: _Sentence | None = None
        best_share = 0.0
        for s in material:
            share = (_relevant(terms, s.terms, relevance_share) if relevance
                     else _supports(terms, s.terms, support_share))
            if share is None:
                continue
            if (best is None or share > best_share
                    or (share == best_share and best.names & ignored and not s.names & ignored)):
                best, best_share = s, share
        label = best is not None
        if best is not None and best.names & ignored and _unit("heed", item) < heed:
            label = False
        decided.append((n, item, label, best.text if label and best else "", positive, negative))
    plain = tuple(json.dumps({"item": n, "verdict": pos if label else neg, "evidence": evidence}, ensure_ascii=False)
                  for n, _item, label, evidence, pos, neg in decided)
    flipped = tuple(json.dumps({"item": n, "verdict": neg if label else pos, "evidence": ""}, ensure_ascii=False)
                    for n, _item, label, _evidence, pos, neg in decided)
    text = _REPLY_HEAD + ", ".join(plain) + _REPLY_TAIL
    return _Decision(tuple(decided), text, Usage(len(prompt.split()), len(text.split())),
                     hashlib.blake2b(prompt.encode(), digest_size=8).hexdigest(), plain, flipped,
                     tuple(f"{item!r}, {str(n)!r}))".encode() for n, item, *_ in decided))
