"""A file recorded a chunk at a time (issue 9 item 12): same run as the whole-file reader, bounded chunks,
errors by row across chunks, nothing half-written."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lib.core.errors import InputError
from lib.core.results import aggregate
from lib.intake import chunked
from lib.intake.chunked import FileRun, check_file, ingest_file, record_file
from lib.intake.ingest import run_from_frame
from lib.intake.reading import read_table
from lib.store import Store


def rows(n: int, seed: int = 3) -> list[dict[str, object]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        out.append({"sample_id": f"s{i:03d}", "question": f"q {i}?", "answer": f"answer {i} ✓",
                    "contexts": [f"passage {i}", "second\u2028line"], "ground_truth": f"ref {i}",
                    "faithfulness": None if i % 7 == 3 else rng.choice([0.0, 0.25, 1 / 3, 0.5, 1.0]),
                    "context_recall": rng.random()})
    return out


def write(path: Path, data: list[dict[str, object]]) -> Path:
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in data), encoding="utf-8")
    elif path.suffix == ".csv":
        frame = pd.DataFrame(data)
        frame["contexts"] = [json.dumps(c) for c in frame["contexts"]]
        frame.to_csv(path, index=False)
    else:
        pq.write_table(pa.Table.from_pylist(data), path)
    return path


def stored(store: Store, run_id: str) -> tuple[object, ...]:
    scores = store.sample_scores(run_id).sort_values(["metric", "sample_id"]).reset_index(drop=True)
    scores["score"] = scores["score"].astype(object).where(scores["score"].notna(), None)  # NaN != NaN
    metrics = store.run_metrics(run_id)[["metric", "score", "n", "n_failed", "n_excluded"]]
    return (store.samples(run_id), scores[["metric", "sample_id", "status", "score", "reason"]].to_dict("records"),
            metrics.to_dict("records"), store.run_fields(run_id))


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_a_file_recorded_in_chunks_is_the_run_the_whole_file_gives(tmp_path: Path, suffix: str) -> None:
    path = write(tmp_path / f"f{suffix}", rows(23))
    whole = run_from_frame(read_table(path), source=str(path), run_id="r")
    with Store(tmp_path / "a.duckdb") as a, Store(tmp_path / "b.duckdb") as b:
        a.record_run(whole)
        done = record_file(b, path, FileRun("r", started_at=whole.started_at), chunk_rows=5)
        assert done.n_samples == 23 and done.fields == whole.fields
        assert stored(a, "r") == stored(b, "r")
        # the aggregate over chunks is the harness's rule over the whole run, to the last bit
        faith = next(m for m in whole.metrics if m.metric == "faithfulness")
        assert b.run_metrics("r").set_index("metric").loc["faithfulness", "score"] == aggregate(faith.results).score


def test_ingest_file_never_holds_more_than_a_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "f.jsonl", rows(12))
    monkeypatch.setattr(chunked, "CHUNK_ROWS", 5)
    sizes: list[int] = []
    real = Store.record_run_parts

    def spy(self: Store, parts):  # type: ignore[no-untyped-def]
        def each():
            for p in parts:
                sizes.append(len(p.samples["main"]))
                yield p
        return real(self, each())

    monkeypatch.setattr(Store, "record_run_parts", spy)
    with Store(tmp_path / "s.duckdb") as store:
        ingest_file(store, path, run_id="r")
        assert len(store.samples("r")) == 12
    assert sizes == [5, 5, 2]


def test_a_duplicate_id_in_a_later_chunk_names_both_rows_and_keeps_the_earlier_copy(tmp_path: Path) -> None:
    data = rows(12)
    data[10]["sample_id"] = data[1]["sample_id"]
    path = write(tmp_path / "f.jsonl", data)
    with Store(tmp_path / "s.duckdb") as store:
        record_file(store, write(tmp_path / "good.jsonl", rows(4)), FileRun("r"), chunk_rows=5)
        before = stored(store, "r")
        with pytest.raises(InputError) as err:
            record_file(store, path, FileRun("r"), chunk_rows=5)
        assert (err.value.row, err.value.field) == (11, "sample_id") and "first at row 2" in str(err.value)
        assert stored(store, "r") == before        # the earlier copy, untouched: nothing half-written


@pytest.mark.parametrize(("line", "field", "says"), [
    ({"faithfulness": 1.5}, "faithfulness", "[0, 1]"),
    ({"answer": None}, "answer", "missing"),
    ({"contexts": "not a list"}, "contexts", "list"),
])
def test_a_bad_cell_in_the_last_chunk_names_its_line_and_writes_nothing(tmp_path: Path, line: dict[str, object],
                                                                        field: str, says: str) -> None:
    data = rows(14)
    data[13].update(line)
    path = write(tmp_path / "f.jsonl", data)
    with Store(tmp_path / "s.duckdb") as store:
        before = store.counts()
        with pytest.raises(InputError) as err:
            record_file(store, path, FileRun("r"), chunk_rows=4)
        assert (err.value.row, err.value.field) == (14, field) and says in str(err.value)
        assert store.counts() == before
    with pytest.raises(InputError):
        check_file(path, FileRun("r"), chunk_rows=4)


def test_a_key_first_seen_late_means_what_it_means_in_the_whole_file(tmp_path: Path) -> None:
    # answer_relevance appears only on line 9: earlier lines have it missing (not scored), as in one frame
    data = rows(10)
    data[8]["answer_relevance"] = 0.5
    path = write(tmp_path / "f.jsonl", data)
    whole = run_from_frame(read_table(path), source=str(path), run_id="r")
    with Store(tmp_path / "a.duckdb") as a, Store(tmp_path / "b.duckdb") as b:
        a.record_run(whole)
        record_file(b, path, FileRun("r", started_at=whole.started_at), chunk_rows=3)
        assert stored(a, "r") == stored(b, "r")
        relevance = b.run_metrics("r").set_index("metric").loc["answer_relevance"]
        assert (relevance["n"], relevance["n_failed"]) == (1, 9)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_an_empty_file_is_refused_as_no_rows(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"e{suffix}"
    if suffix == ".parquet":
        pq.write_table(pa.Table.from_pylist([], schema=pa.schema([("answer", pa.string())])), path)
    elif suffix == ".csv":
        path.write_text("sample_id,answer\n", encoding="utf-8")
    else:
        path.write_text("\n\n", encoding="utf-8")
    with Store(tmp_path / "s.duckdb") as store, pytest.raises(InputError, match="no rows"):
        record_file(store, path, FileRun("r"))


def test_csv_rows_count_records_across_chunks(tmp_path: Path) -> None:
    data = rows(9)
    data[7]["ground_truth"] = "a quoted\nmulti-line reference"
    data[8]["faithfulness"] = 2
    path = write(tmp_path / "f.csv", data)
    with pytest.raises(InputError) as err:
        check_file(path, FileRun("r"), chunk_rows=4)
    assert (err.value.row, err.value.field) == (9, "faithfulness")   # record 9, though line 10 of the file


def staging_tables(store: Store) -> list[str]:
    return [r[0] for r in store.cursor().execute(
        "SELECT table_name FROM duckdb_tables() WHERE starts_with(table_name, '_stage_')").fetchall()]


def test_a_failed_chunked_record_leaves_no_staging_and_a_killed_ones_is_dropped_on_open(tmp_path: Path) -> None:
    data = rows(14)
    data[12]["faithfulness"] = "high"
    db = tmp_path / "s.duckdb"
    with Store(db) as store:
        with pytest.raises(InputError):
            record_file(store, write(tmp_path / "f.jsonl", data), FileRun("r"), chunk_rows=4)
        assert staging_tables(store) == [] and not store.has_run("r")
        # what a process killed between its chunks leaves behind
        store.cursor().execute("CREATE TABLE _stage_samples_0badc0ffee00 AS SELECT * FROM samples LIMIT 0")
    with Store(db) as store:
        assert staging_tables(store) == []
        record_file(store, write(tmp_path / "g.jsonl", rows(9)), FileRun("r"), chunk_rows=4)
        assert len(store.samples("r")) == 9 and staging_tables(store) == []
