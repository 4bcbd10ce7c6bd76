"""People's labels: stored without silent replacement, frozen by version, exported, and through the file door."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from lib.core.errors import InputError
from lib.core.labels import BINARY, SCORE, Label, content_key
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.records import MAIN
from lib.core.samples import EvalSample
from lib.intake.labels import import_labels
from lib.store import Store
from lib.store import history as hs
from lib.store.parquet import ParquetStore, export_parquet
from tests.support.synthetic_runs import facts, record


def half_supported(i: int, f) -> EvalSample:
    """Claim 1 is in the passages; claim 2 only in the reference."""
    return EvalSample(f"s{i:02d}", f.question, f"{f.fact1} {f.fact2}", (f"{f.fact1} {f.filler}",),
                      f"{f.fact1} {f.fact2}")


@pytest.fixture
def store(fresh_db: Path):
    items = [half_supported(i, f) for i, f in enumerate(facts(8))]
    with Store(fresh_db) as s:
        record(s, "r1", items, "faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)
        yield s


def _label(store: Store, sid: str, value: float, *, who: str = "ana", item: int | None = 1,
           kind: str = BINARY) -> Label:
    sample = store.latest_samples(MAIN, [sid])[sid]
    return Label(suite=MAIN, sample_id=sid, metric="faithfulness", item=item, kind=kind, value=value,
                 content=content_key("faithfulness", sample), labeller=who,
                 labelled_at=datetime(2026, 10, 5, 9, 0), source="test")


def test_a_new_label_by_the_same_person_supersedes_visibly_and_history_stays(store: Store) -> None:
    assert hs.labelled_metrics(store, MAIN) == set()
    store.add_labels([_label(store, "s00", 1.0), _label(store, "s00", 1.0, who="bo")])
    store.add_labels([_label(store, "s00", 0.0)])   # ana changes her mind
    current = store.labels(MAIN)
    assert sorted(zip(current["labeller"], current["value"], strict=True)) == [("ana", 0.0), ("bo", 1.0)]
    history = store.label_history(MAIN)
    assert list(history["seq"]) == [1, 2, 3]
    assert list(history["superseded_by"].fillna(0).astype(int)) == [3, 0, 0]   # ana's first, by her second
    # the metrics the calibration set labels (what the agreement reads instead of a labels read a metric)
    assert hs.labelled_metrics(store, MAIN) == {"faithfulness"} and hs.labelled_metrics(store, "other") == set()


def test_the_calibration_set_is_frozen_by_version(store: Store) -> None:
    assert store.calibration_version(MAIN) == 0
    store.add_labels([_label(store, "s00", 1.0), _label(store, "s01", 1.0)])
    v2 = store.calibration_version(MAIN)
    store.add_labels([_label(store, "s00", 0.0), _label(store, "s02", 1.0)])
    assert store.calibration_version(MAIN) == 4
    then = store.labels(MAIN, version=v2)
    assert sorted(zip(then["sample_id"], then["value"], strict=True)) == [("s00", 1.0), ("s01", 1.0)]
    now = store.labels(MAIN)
    assert sorted(zip(now["sample_id"], now["value"], strict=True)) == [("s00", 0.0), ("s01", 1.0), ("s02", 1.0)]


def test_labels_travel_in_the_parquet_export_and_read_back(store: Store, tmp_path: Path) -> None:
    store.add_labels([_label(store, "s00", 1.0), _label(store, "s01", 0.4, item=None, kind=SCORE),
                      _label(store, "s00", 0.0)])
    export_parquet(store, tmp_path / "ds")
    with ParquetStore(tmp_path / "ds") as ds:
        assert ds.label_history(MAIN).drop(columns=["superseded_by"]).equals(
            store.label_history(MAIN).drop(columns=["superseded_by"]))
        assert list(ds.labels(MAIN)["value"]) == list(store.labels(MAIN)["value"])
        assert ds.calibration_version(MAIN) == 3


# -- the file door ------------------------------------------------------------------------------
def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_jsonl_file_keyed_by_id_and_a_csv_keyed_by_content_are_stored(store: Store, tmp_path: Path) -> None:
    _write(tmp_path / "l.jsonl", [{"sample_id": "s00", "metric": "faithfulness", "item": 1, "label": "supported"},
                                  {"sample_id": "s00", "metric": "faithfulness", "item": 2, "label": False}])
    stored = import_labels(store, tmp_path / "l.jsonl", labeller="ana")
    assert [(lab.item, lab.value, lab.seq) for lab in stored] == [(1, 1.0, 1), (2, 0.0, 2)]
    s1 = store.latest_samples(MAIN, ["s01"])["s01"]
    csv = tmp_path / "l.csv"
    csv.write_text("question,ground_truth,metric,score,labeller\n"
                   f"\"{s1.question}\",\"{s1.ground_truth}\",faithfulness,0.5,bo\n")
    (lab,) = import_labels(store, csv)
    assert (lab.sample_id, lab.kind, lab.value, lab.labeller, lab.item) == ("s01", SCORE, 0.5, "bo", None)
    assert lab.source == "file:l.csv"


GOOD = {"sample_id": "s00", "metric": "faithfulness", "item": 1, "label": "1", "labeller": "ana"}
BAD_ROWS = [
    ({"metric": "fluency"}, "metric", "unknown metric"),
    ({"sample_id": "nope"}, "sample_id", "no sample 'nope'"),
    ({"sample_id": "", "question": "what?", "ground_truth": "x"}, "question", "no samples"),
    ({"item": 3}, "item", "has 2 items"),
    ({"item": "1.5"}, "item", "whole number"),
    ({"label": "maybe"}, "label", "binary label"),
    ({"label": "", "score": "1.5"}, "score", "[0, 1]"),
    ({"label": "", "score": "NaN"}, "score", "a number"),
    ({"score": "0.5"}, "label", "exactly one"),
    ({"labeller": ""}, "labeller", "missing labeller"),
    ({"labelled_at": "yesterday"}, "labelled_at", "ISO time"),
    ({"run_id": "r9"}, "run_id", "run 'r9'"),
    ({"colour": "red"}, "colour", "unknown column"),
    ({"_row": 7}, "_row", "unknown column"),                      # a column never says which row an error names
    ({"note": "a\x00b"}, "note", "NUL character"),
    ({"note": "n" * 1001}, "note", "over the limit of 1,000 (EVALDRIFT_MAX_FIELD_CHARS"),   # the test's limit
    ({"labeller": "\ud800"}, "labeller", "unpaired surrogate"),
    ({"note": ["a"]}, "note", "must be text, a number or true/false"),
    ({"item": {"k": 1}}, "item", "must be text, a number or true/false"),
    ({"item": "inf"}, "item", "whole number"),
    ({"item": 1e300}, "item", "whole number"),
    ({"labelled_at": "0001-01-01T00:00:00"}, "labelled_at", "between 1970 and now"),
    ({"labelled_at": "9999-12-31T00:00:00"}, "labelled_at", "between 1970 and now"),
    ({"labelled_at": "2999-01-01T00:00:00"}, "labelled_at", "between 1970 and now"),
]


@pytest.mark.parametrize(("change", "field", "words"), BAD_ROWS, ids=[r[1] + ":" + r[2] for r in BAD_ROWS])
def test_a_bad_row_is_named_with_its_field_and_nothing_is_stored(store: Store, tmp_path: Path, change: dict,
                                                                 field: str, words: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALDRIFT_MAX_FIELD_CHARS", "1000")
    path = _write(tmp_path / "bad.jsonl", [GOOD, {**GOOD, "sample_id": "s01"}, {**GOOD, "sample_id": "s02", **change}])
    with pytest.raises(InputError) as err:
        import_labels(store, path)
    assert err.value.row == 3 and err.value.field == field and words in str(err.value)
    assert "bad.jsonl" in str(err.value)
    assert store.label_history(MAIN).empty   # the two good rows were not stored either


def test_the_same_label_twice_in_one_file_is_refused(store: Store, tmp_path: Path) -> None:
    path = _write(tmp_path / "dup.jsonl", [GOOD, {**GOOD, "label": 0}])
    with pytest.raises(InputError, match="first at row 1") as err:
        import_labels(store, path)
    assert err.value.row == 2 and store.label_history(MAIN).empty


def test_a_label_records_the_content_it_was_given_for(store: Store, tmp_path: Path) -> None:
    changed = [half_supported(i, f) for i, f in enumerate(facts(8))]
    changed[0] = EvalSample("s00", changed[0].question, changed[0].answer, ("other passage",), changed[0].ground_truth)
    record(store, "r2", changed, "faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED, day=1)
    path = _write(tmp_path / "l.jsonl", [{**GOOD, "run_id": "r1"}, GOOD])
    old, new = import_labels(store, path)   # two runs' copies of s00: r1's, and the latest (r2's)
    first = store.latest_samples(MAIN, ["s00"], "r1")["s00"]
    assert old.content == content_key("faithfulness", first) != new.content
