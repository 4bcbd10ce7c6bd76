"""A deterministic offline judge: lexical entailment over the whole prompt.

It is a stand-in for a model judge, and honest about it. What it shares with a
model is the property this project is about: it reads the whole rendered
prompt. Every line that is not an item is material it may find support in, so
a template that interpolates the reference leaks with this judge exactly as it
does with a model.

Rules:
- material: the lines under a heading ("CONTEXT:", "question:"), up to the
  next blank line; unheaded text is taken as instructions, not evidence.
- support: an item is supported by a sentence holding at least `support_share`
  of the item's content words and every number and time the item states.
- relevance: an item is relevant to a sentence sharing at least
  `relevance_share` of the smaller of their two content-word sets.
- the section headed ANSWER (or RESPONSE) is the text under judgement, not
  evidence for its own claims.
- instructions: if the prompt asks to ignore a headed section (e.g. "Ignore
  the REFERENCE ANSWER section"), support found only in that section is
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

from lib.judges.base import JudgeReply, JudgeRequest, Usage
from lib.metrics import split_sentences

STOPWORDS = frozenset(
    """a an the and or but if of to in on at by for with from as is are was were be been being it its
    this that these those there their they them we our you your he she his her not no yes do does did
    can could may might will would shall should must than then so such into onto over under about per
    each every any all some more most less also only just very which who whom whose what when where why
    how has have had up out off via one""".split()
)
_WORD = re.compile(r"[a-z][a-z\-']*|\d+(?::\d+)?(?:\.\d+)?%?")
_NUMBER = re.compile(r"^\d")
_ITEM = re.compile(r"^ITEM (\d+): (.*)$")
_HEADING = re.compile(r"^([A-Za-z][A-Za-z _]{2,}):\s*$")
_PASSAGE = re.compile(r"^PASSAGE \d+: ")
_LABELS = re.compile(r'[Vv]erdict words: "(\w+)" or "(\w+)"')
_IGNORE = re.compile(r"ignore the ([A-Z][A-Z _]+?) section", re.IGNORECASE)

VARIANTS: dict[str, dict[str, float]] = {
    "offline-lexical-v1": {"support_share": 0.75, "relevance_share": 0.5},
    "offline-lexical-v2": {"support_share": 0.7, "relevance_share": 0.5},
}
DEFAULT_MODEL = "offline-lexical-v2"
JUDGED_SECTIONS = frozenset({"ANSWER", "RESPONSE", "GENERATED ANSWER"})


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


@lru_cache(maxsize=200_000)
def _terms(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(content words, numbers) of a text."""
    words: set[str] = set()
    numbers: set[str] = set()
    for tok in _WORD.findall(text.lower()):
        if _NUMBER.match(tok):
            numbers.add(tok)
        elif tok not in STOPWORDS and len(tok) > 2:
            words.add(_stem(tok))
    return frozenset(words), frozenset(numbers)


@dataclass(frozen=True)
class _Sentence:
    text: str
    section: str
    words: frozenset[str]
    numbers: frozenset[str]


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
        prompt = request.prompt
        verdicts = self._decide(prompt)
        salt = hashlib.blake2b(prompt.encode(), digest_size=8).hexdigest() if self.noise else ""
        out = []
        for n, item, label, evidence, positive, negative in verdicts:
            if self.noise and _unit(request.seed, salt, item, str(n)) < self.noise:
                label = not label
                evidence = "" if not label else evidence
            out.append({"item": n, "verdict": positive if label else negative, "evidence": evidence})
        text = json.dumps({"verdicts": out}, ensure_ascii=False)
        usage = Usage(len(request.prompt.split()), len(text.split()))
        return JudgeReply(text=text, usage=usage, fingerprint=self.model)

    def _decide(self, prompt: str) -> list[tuple[int, str, bool, str, str, str]]:
        return _decide_cached(prompt, self._support_share, self._relevance_share, self.heed)


@lru_cache(maxsize=100_000)
def _decide_cached(prompt: str, support_share: float, relevance_share: float,
                   heed: float) -> list[tuple[int, str, bool, str, str, str]]:
    items: list[tuple[int, str]] = []
    material: list[_Sentence] = []
    section = ""  # material is what stands under a heading, up to the next blank line
    for line in prompt.splitlines():
        line = line.strip()
        if not line:
            section = ""
            continue
        m = _ITEM.match(line)
        if m:
            items.append((int(m.group(1)), m.group(2)))
            continue
        h = _HEADING.match(line)
        if h:
            section = h.group(1).strip().upper()
            continue
        if not section:
            continue
        line = _PASSAGE.sub("", line)
        for sent in split_sentences(line):
            words, numbers = _terms(sent)
            if words:
                material.append(_Sentence(sent, section, words, numbers))
    labels = _LABELS.search(prompt)
    positive, negative = labels.groups() if labels else ("supported", "unsupported")
    relevance = positive == "relevant"
    ignored = {m.group(1).strip().upper() for m in _IGNORE.finditer(prompt)}

    # The answer's own section (an {answer} beside its claims) is the thing
    # being judged, not evidence for it.
    material = [s for s in material if s.section not in JUDGED_SECTIONS]

    decided = []
    for n, item in items:
        iw, inum = _terms(item)
        best: _Sentence | None = None
        best_share = 0.0
        for s in material:
            if relevance:
                denom = min(len(iw), len(s.words))
                share = len(iw & s.words) / denom if denom else 0.0
                ok = share >= relevance_share
            else:
                share = len(iw & s.words) / len(iw) if iw else 0.0
                ok = share >= support_share and inum <= s.numbers
            if ok and (best is None or share > best_share
                       or (share == best_share and best.section in ignored and s.section not in ignored)):
                best, best_share = s, share
        label = best is not None
        if label and best.section in ignored and _unit("heed", item) < heed:
            label = False
        decided.append((n, item, label, best.text if label and best else "", positive, negative))
    return decided
