"""Which labels pair with which judgings (lib.diagnosis.agreement.pair_labels): a row per rule, each through both
forms a caller hands the judgings in (the store's, with each sample's text once as a copy; the calibration's, with
the text and the verdicts as JSON on every row)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from lib.core.labels import BINARY, SCORE, content_key
from lib.core.results import FAILED, OK
from lib.core.samples import EvalSample
from lib.diagnosis.agreement._agreement import pair_labels

METRIC = "faithfulness"
SAMPLE = EvalSample("s1", "Where is Paris?", "Paris is in France. It is big. It has a tower.",
                    ("Paris is in France.",), "Paris is in France.")
CHANGED = EvalSample("s1", SAMPLE.question, "Paris is in Spain. It is big. It has a tower.", SAMPLE.contexts,
                     SAMPLE.ground_truth)


def label_rows(labels: list[tuple], sample_id: str = "s1") -> pd.DataFrame:
    """(item, kind, value[, labeller[, content sample]]) -> the frame Store.labels returns."""
    rows = []
    for seq, (item, kind, value, *rest) in enumerate(labels, start=1):
        who = rest[0] if rest else "ann"
        seen = rest[1] if len(rest) > 1 else SAMPLE
        rows.append({"seq": seq, "suite": "main", "sample_id": sample_id, "metric": METRIC, "item": item,
                     "kind": kind, "value": value, "content": content_key(METRIC, seen), "labeller": who,
                     "labelled_at": pd.Timestamp("2026-01-01"), "source": "test", "note": None})
    frame = pd.DataFrame(rows)
    frame["item"] = frame["item"].astype("Int64")
    return frame


def judgings_with_copies(status: str, score: float | None, verdicts: list[bool]) -> tuple[pd.DataFrame, pd.DataFrame]:
    judgings = pd.DataFrame([{
        "run_id": "r1", "started_at": pd.Timestamp("2026-01-02"), "sample_id": "s1", "status": status,
        "score": score, "verdict_labels": verdicts, "judge_model": "judge-a", "prompt_hash": "abc", "binding": None,
        "scorer": None, "copy": "c1"}], dtype=object)
    copies = pd.DataFrame([{"copy": "c1", "sample_id": "s1", "question": SAMPLE.question, "answer": SAMPLE.answer,
                            "contexts": list(SAMPLE.contexts), "ground_truth": SAMPLE.ground_truth}], dtype=object)
    return judgings, copies


def judgings_with_text(status: str, score: float | None, verdicts: list[bool]) -> pd.DataFrame:
    return pd.DataFrame([{
        "run_id": "r1", "sample_id": "s1", "status": status, "score": score,
        "verdicts": json.dumps([{"item": f"claim {k}", "label": v, "verdict": "", "evidence": ""}
                                for k, v in enumerate(verdicts, start=1)]),
        "judge_model": "judge-a", "prompt_hash": "abc", "binding": None, "scorer": None,
        "question": SAMPLE.question, "answer": SAMPLE.answer, "contexts": list(SAMPLE.contexts),
        "ground_truth": SAMPLE.ground_truth}])


B, S = BINARY, SCORE
ALL_THREE = [(1, B, 1.0), (2, B, 0.0), (3, B, 1.0)]
# (rule, labels, judging status, score, verdicts, item pairs (judge, people), sample pair (judge, people, binary))
RULES = [
    ("an item label pairs with the judge's verdict on that item",
     [(2, B, 0.0)], OK, 0.67, [True, True, False], [(True, False)], None),
    ("every item labelled: the people's sample score is the metric's reduction",
     ALL_THREE, OK, 1.0, [True, True, True], [(True, True), (True, False), (True, True)], (1.0, 2 / 3, False)),
    ("two people split on an item: no pair", [(1, B, 1.0, "ann"), (1, B, 0.0, "bob")], OK, 0.67,
     [True, True, False], [], None),
    ("two people who agree count once", [(1, B, 1.0, "ann"), (1, B, 1.0, "bob")], OK, 0.67,
     [False, True, False], [(False, True)], None),
    ("a score label on an item pairs no verdict", [(1, S, 0.7)], OK, 0.67, [True, True, False], [], None),
    ("an item beyond the judge's verdicts pairs nothing", [(3, B, 1.0)], OK, 1.0, [True, True], [], None),
    ("a whole-sample binary label pairs with the sample score", [(None, B, 1.0)], OK, 0.67,
     [True, True, False], [], (0.67, 1.0, True)),
    ("two people split on the whole sample: no pair", [(None, B, 1.0, "ann"), (None, B, 0.0, "bob")], OK, 0.67,
     [True, True, False], [], None),
    ("a whole-sample score label", [(None, S, 0.4)], OK, 0.67, [True, True, False], [], (0.67, 0.4, False)),
    ("a failed judging pairs nothing", ALL_THREE, FAILED, None, [], [], None),
    ("a label of other content pairs nothing", [(1, B, 1.0, "ann", CHANGED)], OK, 0.67, [True, True, False],
     [], None),
    ("a judging without a score pairs its items, not the sample", ALL_THREE, OK, math.nan, [True, False, True],
     [(True, True), (False, False), (True, True)], None),
]


@pytest.mark.parametrize("form", ["copies", "text"])
@pytest.mark.parametrize(("rule", "labels", "status", "score", "verdicts", "items", "sample"), RULES,
                         ids=[r[0] for r in RULES])
def test_the_pairing_rule(form: str, rule: str, labels: list[tuple], status: str, score: float | None,
                          verdicts: list[bool], items: list[tuple], sample: tuple | None) -> None:
    frame = label_rows(labels)
    if form == "copies":
        judgings, copies = judgings_with_copies(status, score, verdicts)
        pairs = pair_labels(frame, judgings, METRIC, copies)
    else:
        pairs = pair_labels(frame, judgings_with_text(status, score, verdicts), METRIC)
    assert list(zip(pairs.items["judge"], pairs.items["people"], strict=True)) == items
    got = list(zip(pairs.samples["judge"], pairs.samples["people"], pairs.samples["binary"], strict=True))
    assert got == pytest.approx([sample] if sample else [])
    assert set(pairs.items["instrument"]) | set(pairs.samples["instrument"]) <= {"judge-a · prompt abc"}
    assert pairs.n_labels == len(labels)


@pytest.mark.parametrize("form", ["copies", "text"])
def test_each_judging_of_several_samples_and_runs_pairs_with_its_own_samples_labels(form: str) -> None:
    """Three judgings: s1 in run r1, s2 in r1, s1 again in r2 (so a copy's text is found again after another's);
    people labelled s1's three claims and nothing of s2."""
    other = EvalSample("s2", "Where is Rome?", "Rome is in Italy. It is old.", ("Rome is in Italy.",), "Rome.")
    rows = [("r1", SAMPLE, [True, True, True]), ("r1", other, [True, False]), ("r2", SAMPLE, [True, False, True])]
    judgings = pd.DataFrame([{
        "run_id": run, "sample_id": s.sample_id, "status": OK, "score": sum(v) / len(v),
        "verdicts": json.dumps([{"item": "", "label": x, "verdict": "", "evidence": ""} for x in v]),
        "verdict_labels": v, "judge_model": "judge-a", "prompt_hash": "abc", "binding": None, "scorer": None,
        "copy": s.sample_id, "question": s.question, "answer": s.answer, "contexts": list(s.contexts),
        "ground_truth": s.ground_truth} for run, s, v in rows], dtype=object)
    if form == "copies":
        copies = pd.DataFrame([{"copy": s.sample_id, "sample_id": s.sample_id, "question": s.question,
                                "answer": s.answer, "contexts": list(s.contexts), "ground_truth": s.ground_truth}
                               for s in (SAMPLE, other)], dtype=object)
        pairs = pair_labels(label_rows(ALL_THREE), judgings.drop(columns=["verdicts"]), METRIC, copies)
    else:
        pairs = pair_labels(label_rows(ALL_THREE), judgings.drop(columns=["verdict_labels", "copy"]), METRIC)
    assert list(zip(pairs.items["run_id"], pairs.items["judge"], pairs.items["people"], strict=True)) == [
        ("r1", True, True), ("r1", True, False), ("r1", True, True),
        ("r2", True, True), ("r2", False, False), ("r2", True, True)]
    assert list(pairs.samples["run_id"]) == ["r1", "r2"] and set(pairs.samples["sample_id"]) == {"s1"}
    assert list(pairs.samples["people"]) == pytest.approx([2 / 3, 2 / 3])


def test_no_judgings_pair_nothing() -> None:
    pairs = pair_labels(label_rows(ALL_THREE), pd.DataFrame(), METRIC)
    assert pairs.items.empty and pairs.samples.empty and pairs.n_labels == 3


def test_an_unlabelled_sample_pairs_nothing() -> None:
    judgings, copies = judgings_with_copies(OK, 1.0, [True] * 3)
    pairs = pair_labels(label_rows(ALL_THREE, sample_id="s2"), judgings, METRIC, copies)
    assert pairs.items.empty and pairs.samples.empty
