"""A file recorded a chunk at a time: memory bounded by the chunk, not the file (issue 9 item 12).

`lib.intake.ingest` reads a whole file into one frame, which a page upload or an
importer wants. Recording a large file that way holds the file several times
over (the bytes, the parsed objects, the frame, the run record, the frames
written). Here the file is read in chunks of `CHUNK_ROWS` rows; each chunk is
validated by the same rules (`lib.intake.ingest.records_from_frame`, row numbers as
the file counts them) and written before the next is read, all inside one
transaction (`Store.record_run_parts`), so a bad row anywhere still leaves the
store unchanged.

Only what must span the file is kept whole: each sample id with its row (a
duplicate is named with both rows), and the ok scores of each metric as packed
floats for the run's aggregate. For JSON Lines the columns are the keys of
every line (one cheap first pass), as for the whole-file reader, so a key
first seen late means the same thing here as there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd

from lib.core.errors import InputError
from lib.core.records import MAIN, RunRecord
from lib.intake import ingest, parquetread, reading
from lib.intake.ingest import FIELD_COLUMNS, ROW_INDEX, SAMPLE_ID
from lib.store import Store

CHUNK_ROWS = 2_000


@dataclass(frozen=True)
class FileRun:
    """What `run_from_frame` takes besides the frame: the run-level facts of a file."""

    run_id: str
    started_at: datetime | None = None
    pipeline: Mapping[str, object] | None = None
    judge_model: str | None = None
    templates: Mapping[str, str] | None = None
    binding: str | None = None
    suite: str = MAIN


def frames(path: str | Path, *, chunk_rows: int | None = None) -> Iterator[pd.DataFrame]:
    """The file as frames of at most `chunk_rows` rows, indexed by row as `reading.read_table` indexes them."""
    path = Path(path)
    chunk_rows = chunk_rows or CHUNK_ROWS
    kind = reading.READERS.get(path.suffix.lower())
    if kind is not None:
        from lib.intake.importers.shapes import require_regular

        require_regular(path)   # a FIFO would block the reader forever
    if kind == "jsonl":
        return _jsonl_frames(path, chunk_rows)
    if kind == "csv":
        return _csv_frames(path, chunk_rows)
    if kind == "parquet":
        return _parquet_frames(path, chunk_rows)
    reading.read_table(path)  # raises the reader's own error for the extension
    raise AssertionError("unreachable")


def parts(path: str | Path, run: FileRun, *, chunk_rows: int | None = None) -> Iterator[RunRecord]:
    """The file's run as parts, each validated; a sample id seen in an earlier part is refused with both rows."""
    source = str(path)
    first_row_of: dict[str, int] = {}
    n = 0
    for frame in frames(path, chunk_rows=chunk_rows):
        part = ingest.run_from_frame(frame, source=source, run_id=run.run_id, started_at=run.started_at,
                                     pipeline=run.pipeline, judge_model=run.judge_model, templates=run.templates,
                                     binding=run.binding, suite=run.suite)
        column = next((c for c in frame.columns if str(c).strip() in FIELD_COLUMNS[SAMPLE_ID]), SAMPLE_ID)
        for row, sample in zip(frame.index, part.samples[run.suite], strict=True):
            first = first_row_of.setdefault(sample.sample_id, int(row))
            if first != row:
                raise InputError(f"duplicate sample id {sample.sample_id!r} (first at row {first})", row=int(row),
                                 field=str(column), source=source)
        n += len(frame)
        if run.started_at is None:  # every part carries the first part's time, as one run
            run = dataclasses.replace(run, started_at=part.started_at)
        yield part
    if n == 0:
        raise InputError("no rows: a run needs at least one sample", source=source)


@dataclass(frozen=True)
class Recorded:
    """What a file gave: its run id, the sample fields it had, and how many samples."""

    run_id: str
    fields: tuple[str, ...]
    n_samples: int


def check_file(path: str | Path, run: FileRun, *, chunk_rows: int | None = None) -> Recorded:
    """Validate the whole file, keeping nothing; nothing is written."""
    n, fields = 0, tuple[str, ...]()
    for part in parts(path, run, chunk_rows=chunk_rows):
        n, fields = n + len(part.samples[run.suite]), part.fields
    return Recorded(run.run_id, tuple(fields), n)


def record_file(store: Store, path: str | Path, run: FileRun, *, chunk_rows: int | None = None) -> Recorded:
    """Record the file as one run, a chunk at a time, in one transaction (all or nothing)."""
    counts: list[int] = []
    fields: list[tuple[str, ...]] = []

    def tally() -> Iterator[RunRecord]:
        for part in parts(path, run, chunk_rows=chunk_rows):
            counts.append(len(part.samples[run.suite]))
            fields[:] = [part.fields]
            yield part

    store.record_run_parts(tally())
    return Recorded(run.run_id, fields[0], sum(counts))


# -- readers ---------------------------------------------------------------------------------------------------
def _jsonl_lines(path: Path) -> Iterator[tuple[int, dict[str, object]]]:
    try:
        with open(path, "rb") as fh:
            # binary lines split on b"\n" only, as the whole-file reader splits
            for lineno, raw in enumerate(fh, start=1):
                obj = reading.parse_jsonl_line(raw.rstrip(b"\n"), lineno, str(path))
                if obj is not None:
                    yield lineno, obj
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", source=str(path)) from None


def _jsonl_frames(path: Path, chunk_rows: int) -> Iterator[pd.DataFrame]:
    keys = dict.fromkeys(k for _, obj in _jsonl_lines(path) for k in obj)  # first pass: every key, in order
    rows: list[int] = []
    records: list[dict[str, object]] = []
    for lineno, obj in _jsonl_lines(path):
        rows.append(lineno)
        records.append(obj)
        if len(records) == chunk_rows:
            yield _frame(records, rows, list(keys))
            rows, records = [], []
    if records:
        yield _frame(records, rows, list(keys))


def _frame(records: list[dict[str, object]], rows: list[int], columns: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame(records, columns=columns, dtype=object)
    frame.index = pd.Index(rows, name=ROW_INDEX)
    return frame


def _csv_frames(path: Path, chunk_rows: int) -> Iterator[pd.DataFrame]:
    source = str(path)
    try:
        reading.refuse_doubled_header(path, source)
    except UnicodeDecodeError:
        raise reading.csv_decode_error(path, source) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", source=source) from None
    start = 1
    try:
        reader = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False, encoding="utf-8-sig",
                             chunksize=chunk_rows)
        for chunk in reader:
            chunk = chunk.astype(object).where(chunk != "", None)
            chunk.index = pd.RangeIndex(start, start + len(chunk), name=ROW_INDEX)
            start += len(chunk)
            yield chunk
    except UnicodeDecodeError:
        raise reading.csv_decode_error(path, source) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", source=source) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise InputError(f"not a readable CSV file: {str(exc).strip()}", source=source) from None


def _parquet_frames(path: Path, chunk_rows: int) -> Iterator[pd.DataFrame]:
    # sizes checked from the footer, and each batch measured before it becomes Python objects (issue 39 item 2)
    return parquetread.frames(path, batch_rows=chunk_rows)


def ingest_file(store: Store, path: str | Path, *, run_id: str, started_at: datetime | None = None,
                pipeline: dict | None = None, judge_model: str | None = None,
                templates: dict[str, str] | None = None, binding: str | None = None,
                suite: str = MAIN) -> Recorded:
    """Read, validate and record one file as one run, all or nothing.

    Arguments after `path` are as in `run_from_frame`. The file is read,
    validated and written a chunk at a time (memory bounded by the chunk, not
    the file) in one transaction that replaces any earlier copy of
    `run_id`: a bad row anywhere leaves the store as it was, and ingesting the
    same file twice leaves one copy.

    Returns:
        The run id, the sample fields the file had, and the number of samples.

    Raises:
        InputError: the file is unreadable, or a row, field or argument is bad;
            the store is then unchanged.
    """
    return record_file(store, path, FileRun(run_id, started_at, pipeline, judge_model, templates, binding, suite))


__all__ = ["CHUNK_ROWS", "FileRun", "Recorded", "check_file", "frames", "ingest_file", "parts", "record_file"]
