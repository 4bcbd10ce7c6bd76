"""An external scorer with a floor: `module:function` for the judge's-floor tests (issue 25 item 2).

A lexical faithfulness scorer that, like a model judge, says "supported" for a
few claims it cannot check: one claim in FALSE_SUPPORT (by a hash of its text,
whatever the passages) is credited. On answers paired with another question's
passages every credit is such a false one, so the score sits at the scorer's
floor (about 0.04), and blanking the passages, or anything else, cannot lower it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from lib.core.samples import EvalSample

FALSE_SUPPORT = 25   # one claim in 25 is credited whatever the passages say


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 3}


def _credited(claim: str, one_in: int) -> bool:
    return int(hashlib.sha256(claim.encode()).hexdigest(), 16) % one_in == 0


def _score(samples: Sequence[EvalSample], one_in: int) -> list[float | None]:
    out: list[float | None] = []
    for s in samples:
        claims = [c.strip() for c in re.split(r"(?<=[.!?])\s+", s.answer) if c.strip()]
        passages = _words(" ".join(s.contexts))
        ok = [_credited(c, one_in) or len(_words(c) & passages) * 2 > len(_words(c)) for c in claims]
        out.append(sum(ok) / len(ok) if ok else None)
    return out


def lenient_faithfulness(samples: Sequence[EvalSample]) -> list[float | None]:
    """Share of the answer's sentences whose words the passages hold (more than half), or that it credits anyway
    (one in FALSE_SUPPORT)."""
    return _score(samples, FALSE_SUPPORT)


def more_lenient_faithfulness(samples: Sequence[EvalSample]) -> list[float | None]:
    """The same, crediting one claim in 8 whatever the passages say (a floor near 0.12)."""
    return _score(samples, 8)
