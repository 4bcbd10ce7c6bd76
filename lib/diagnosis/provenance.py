"""Evidence provenance: where each supported claim's evidence was found (contexts, ground_truth, question,
answer or nowhere), the static half of telling a leak from support."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pandas as pd

from lib.core.metrics import get_metric
from lib.core.records import MAIN
from lib.store import Store

LOCATIONS = ("contexts", "ground_truth", "question", "answer", "nowhere")
_WORDS = re.compile(r"[a-z0-9][a-z0-9:.\-]*")


def _fuzzy_in(evidence: str, text: str, threshold: float = 0.8) -> bool:
    ev = set(_WORDS.findall(evidence.lower()))
    if not ev:
        return False
    from lib.core.metrics import split_sentences

    return any(len(ev & set(_WORDS.findall(sent.lower()))) / len(ev) >= threshold for sent in split_sentences(text))


def provenance(store: Store, run_id: str | None, metric: str = "faithfulness", *, suite: str = MAIN,
               fuzzy: bool = True, sample_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """Where each positive verdict's evidence string occurs.

    Returns a frame: run_id, sample_id, item, evidence, location, match
    ('exact' | 'fuzzy' | ''). The metric's own right-hand artifact is checked
    first (contexts for faithfulness): evidence there is legitimate. Evidence
    found only in another artifact was read from something the metric should
    not have relied on; 'nowhere' means the judge cited text it was not shown.
    """
    raw = store.supported_evidence(metric, suite, run_id, sample_ids)
    spec = get_metric(metric)
    order = [spec.against] + [f for f in ("contexts", "ground_truth", "question") if f != spec.against]
    col = {"contexts": "in_contexts", "ground_truth": "in_ground_truth", "question": "in_question"}
    locations, matches = [], []
    for r in raw.itertuples(index=False):
        loc, how = "nowhere", ""
        for f in order:
            if getattr(r, col[f]):
                loc, how = f, "exact"
                break
        if loc == "nowhere" and fuzzy and r.evidence:
            texts = {"contexts": " ".join(r.contexts), "ground_truth": r.ground_truth, "question": r.question}
            for f in order:
                if _fuzzy_in(r.evidence, texts[f]):
                    loc, how = f, "fuzzy"
                    break
        locations.append(loc)
        matches.append(how)
    out = raw[["run_id", "sample_id", "item", "evidence"]].copy()
    out["location"] = locations
    out["match"] = matches
    return out


def provenance_summary(frame: pd.DataFrame, metric: str = "faithfulness") -> pd.DataFrame:
    """Per run: positive verdicts, counts by location, and the share evidenced outside the metric's own artifact."""
    against = get_metric(metric).against
    if frame.empty:
        return pd.DataFrame(columns=["run_id", "supported", *LOCATIONS, "outside_share"])
    counts = frame.pivot_table(index="run_id", columns="location", values="item", aggfunc="count", fill_value=0)
    for loc in LOCATIONS:
        if loc not in counts:
            counts[loc] = 0
    counts = counts[list(LOCATIONS)]
    counts.insert(0, "supported", counts.sum(axis=1))
    counts["outside_share"] = (counts["supported"] - counts[against]) / counts["supported"]
    return counts.reset_index()
