"""A Parquet file read with its sizes checked before its pages inflate (issue 39 item 2).

A Parquet file is a container: a page compressed with zstd turns 11 kB into 300 MB, a dictionary page holds a
value once that a reader expands into every row that points at it, and a prefix-encoded (DELTA_BYTE_ARRAY) page
repeats a value's start in every row. So the sizes are checked where they are known, before they are paid:

1. From the footer, before a page is read: the column chunks' uncompressed sizes together may not pass
   EVALDRIFT_MAX_INPUT_BYTES (what any file read whole may hold), and one chunk may not hold more than its rows
   can under EVALDRIFT_MAX_FIELD_CHARS (at most 4 bytes a character, a field a row, plus what each value's
   length and levels take): a chunk larger than that holds a field over the limit, and is refused naming its
   column and rows without being decompressed.
2. Before a row is used: each row's text is measured where it lies, by DuckDB (lib.store.parquet_sizes: a
   dictionary's value counted in every row that points at it, never copied) and, for a prefix-encoded
   (DELTA_BYTE_ARRAY) column, by pyarrow in batches small enough that one cannot expand past BATCH_BUDGET. A value
   of more than 4 bytes a character of EVALDRIFT_MAX_FIELD_CHARS is refused with its row and field, and the file's
   values together may not pass EVALDRIFT_MAX_INPUT_BYTES.
3. Then the file is read as it is, a batch at a time, each value measured again before it becomes a Python
   object.

A value under these limits is then checked, character by character, by the rules every door shares
(lib.core.validate), as a JSONL or CSV file's is.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lib.core.errors import InputError
from lib.core.settings import load as load_settings
from lib.store import parquet_sizes

ROW_INDEX = "row"                 # as lib.intake.reading names it
BYTES_PER_CHAR = 4                # the most UTF-8 spends on one character
VALUE_OVERHEAD = 16               # a value's length prefix and its repetition and definition levels, with room
CHUNK_SLACK = 1 << 16             # page headers and statistics a column chunk adds
BATCH_BUDGET = 16 << 20           # bytes a batch of a prefix-encoded column may expand to (pyarrow peaks at ~4x)
EXPANDING = frozenset({"DELTA_BYTE_ARRAY"})   # encodings whose values may repeat earlier bytes (besides dictionaries)
INPUT_SETTING = "EVALDRIFT_MAX_INPUT_BYTES"
FIELD_SETTING = "EVALDRIFT_MAX_FIELD_CHARS"


def _open_error(exc: Exception, source: str) -> InputError:
    if isinstance(exc, FileNotFoundError):
        return InputError(f"cannot read file: {exc.strerror or exc}", source=source)
    return InputError(f"not a readable Parquet file: {exc}", source=source)


def check_footer(meta: pq.FileMetaData, source: str, *, input_limit: int, field_chars: int) -> None:
    """Refuse a file whose column chunks, uncompressed, hold more than the limits allow (nothing is decompressed).

    Raises:
        InputError: naming the column and the first row of the chunk that passes a limit.
    """
    total = 0
    start = 1
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        rows = group.num_rows
        for c in range(group.num_columns):
            chunk = group.column(c)
            size = chunk.total_uncompressed_size
            field = chunk.path_in_schema.split(".")[0]
            most = rows * BYTES_PER_CHAR * field_chars + chunk.num_values * VALUE_OVERHEAD + CHUNK_SLACK
            if size > most:
                span = f"row {start}" if rows == 1 else f"rows {start}-{start + rows - 1}"
                raise InputError(f"the column holds {size:,} bytes uncompressed in {span}, more than {rows:,} "
                                 f"{'row' if rows == 1 else 'rows'} can hold under the limit of {field_chars:,} "
                                 f"characters a field ({FIELD_SETTING}; an operator can raise it); refused before "
                                 f"decompressing", row=start, field=field, source=source)
            total += size
            if total > input_limit:
                raise InputError(f"the file's pages hold more than {input_limit:,} bytes uncompressed, over the limit "
                                 f"of {input_limit:,} ({INPUT_SETTING}; an operator can raise it); refused before "
                                 f"decompressing", row=start, field=field, source=source)
        start += rows


def _leaves(meta: pq.FileMetaData, encodings: frozenset[str]) -> dict[str, int]:
    """Text leaf columns (their dotted paths) with a page in one of `encodings` -> their largest chunk, uncompressed."""
    out: dict[str, int] = {}
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            if chunk.physical_type == "BYTE_ARRAY" and encodings & set(chunk.encodings):
                out[chunk.path_in_schema] = max(out.get(chunk.path_in_schema, 0), chunk.total_uncompressed_size)
    return out


def row_bytes(array: pa.Array) -> np.ndarray:
    """Each row's bytes once its values are expanded (dictionaries looked up, lists summed), measured in place."""
    n = len(array)
    if isinstance(array, pa.DictionaryArray):
        sizes = row_bytes(array.dictionary)
        indices = array.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        out = sizes[indices] if len(sizes) else np.zeros(n)
        return np.where(array.is_null().to_numpy(zero_copy_only=False), 0, out)
    kind = array.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind) \
            or pa.types.is_large_binary(kind):
        return pc.binary_length(array).fill_null(0).to_numpy(zero_copy_only=False).astype(np.float64)
    if pa.types.is_map(kind):   # laid out as a list of key-value structs
        array = array.view(pa.list_(pa.struct([kind.key_field, kind.item_field])))
        kind = array.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        values = array.flatten()
        parents = pc.list_parent_indices(array).to_numpy(zero_copy_only=False)
        return np.bincount(parents, weights=row_bytes(values), minlength=n).astype(np.float64)
    if pa.types.is_struct(kind):
        total = np.zeros(n)
        for part in array.flatten():
            total += row_bytes(part)
        return total
    if pa.types.is_primitive(kind):
        return np.full(n, float(max(kind.bit_width // 8, 1)))
    return np.full(n, array.nbytes / max(n, 1))   # another layout: already decoded, counted on average


def _top(leaf: str) -> str:
    return leaf.split(".")[0]


def _over_field(sizes: np.ndarray, field_bytes: int, field_chars: int, *, start: int, name: str,
                source: str) -> None:
    over = np.flatnonzero(sizes > field_bytes)
    if len(over):
        raise InputError(f"holds {int(sizes[over[0]]):,} bytes, more than {field_chars:,} characters (the limit, "
                         f"{FIELD_SETTING}; an operator can raise it); refused before it was read",
                         row=start + int(over[0]), field=name, source=source)


def _measure(path: str | Path, meta: pq.FileMetaData, rows: int, source: str, *, input_limit: int,
             field_chars: int) -> None:
    """Measure every row's text before any row is used: a value over the field limit, or the file's values
    together over the input limit, is refused here, before a frame is made (so a chunked ingest stages nothing).

    Text columns are measured by DuckDB in place (lib.store.parquet_sizes: a dictionary's value is counted in each
    row that points at it, and never copied); prefix-encoded ones by pyarrow, in batches of `rows`; every other
    column counts as much as its pages hold uncompressed.
    """
    field_bytes = BYTES_PER_CHAR * field_chars
    prefixed = sorted({_top(leaf) for leaf in _leaves(meta, EXPANDING)})
    measured = parquet_sizes.column_sizes(path, skip=prefixed, source=source)
    for column in measured:
        if column.largest > field_bytes:
            row = parquet_sizes.first_row_over(path, column.column, field_bytes, source=source)
            raise InputError(f"holds {column.largest:,} bytes, more than {field_chars:,} characters (the limit, "
                             f"{FIELD_SETTING}; an operator can raise it); refused before it was read",
                             row=row or None, field=column.column, source=source)
    counted = {c.column for c in measured} | set(prefixed)
    fixed = sum(meta.row_group(g).column(c).total_uncompressed_size for g in range(meta.num_row_groups)
                for c in range(meta.num_columns) if _top(meta.row_group(g).column(c).path_in_schema) not in counted)
    total = float(fixed + sum(c.total for c in measured))
    if total > input_limit:
        largest = max(measured, key=lambda c: c.total).column
        row = parquet_sizes.first_row_past(path, [c.column for c in measured], fixed, input_limit, source=source)
        raise _over_input(input_limit, row or None, largest, source)
    if prefixed:
        start = 1
        for batch in pq.ParquetFile(path, metadata=meta).iter_batches(batch_size=rows, columns=prefixed):
            for name, array in zip(batch.schema.names, batch.columns, strict=True):
                sizes = row_bytes(array)
                _over_field(sizes, field_bytes, field_chars, start=start, name=name, source=source)
                running = total + np.cumsum(sizes)
                past = np.flatnonzero(running > input_limit)
                if len(past):
                    raise _over_input(input_limit, start + int(past[0]), name, source)
                total = float(running[-1]) if len(running) else total
            start += batch.num_rows


def _over_input(limit: int, row: int | None, field: str, source: str) -> InputError:
    return InputError(f"the file's values reach more than {limit:,} bytes here, over the limit of {limit:,} "
                      f"({INPUT_SETTING}; an operator can raise it); refused before they were read", row=row,
                      field=field, source=source)


def frames(path: str | Path, *, batch_rows: int, source: str | None = None) -> Iterator[pd.DataFrame]:
    """The file as frames of at most `batch_rows` rows of plain Python values, indexed by row from 1.

    Raises:
        InputError: unreadable, or over a limit (file, row and field named), before the values are expanded
            and before the first frame is given.
    """
    source = source or str(path)
    settings = load_settings()
    input_limit, field_chars = settings.max_input_bytes, settings.max_field_chars
    try:
        meta = pq.read_metadata(path)
    except (pa.ArrowException, OSError) as exc:
        raise _open_error(exc, source) from None
    check_footer(meta, source, input_limit=input_limit, field_chars=field_chars)
    prefixed = _leaves(meta, EXPANDING)
    # a prefix-encoded value is at most its chunk long: batches small enough that one cannot expand past the budget
    rows = min(batch_rows, max(1, BATCH_BUDGET // max(prefixed.values()))) if prefixed else batch_rows
    start = 1
    try:
        _measure(path, meta, rows, source, input_limit=input_limit, field_chars=field_chars)
        # measured: the values fit the limits, and are read as they are
        for batch in pq.ParquetFile(path, metadata=meta).iter_batches(batch_size=rows):
            for name, array in zip(batch.schema.names, batch.columns, strict=True):
                _over_field(row_bytes(array), BYTES_PER_CHAR * field_chars, field_chars, start=start, name=name,
                            source=source)
            frame = pd.DataFrame({name: array.to_pylist() for name, array in zip(batch.schema.names, batch.columns,
                                                                                   strict=True)}, dtype=object)
            frame.index = pd.RangeIndex(start, start + len(frame), name=ROW_INDEX)
            start += len(frame)
            yield frame
    except (pa.ArrowException, OSError) as exc:
        raise _open_error(exc, source) from None


def read_whole(path: str | Path, *, source: str | None = None, batch_rows: int = 2_000) -> pd.DataFrame:
    """The whole file as one frame (see `frames`); a file with no rows gives its columns and no rows."""
    source = source or str(path)
    parts = list(frames(path, batch_rows=batch_rows, source=source))
    if not parts:
        try:
            names = pq.read_schema(path).names
        except (pa.ArrowException, OSError) as exc:
            raise _open_error(exc, source) from None
        frame = pd.DataFrame({name: [] for name in names}, dtype=object)
        frame.index = pd.RangeIndex(1, 1, name=ROW_INDEX)
        return frame
    frame = pd.concat(parts) if len(parts) > 1 else parts[0]
    frame.index = pd.RangeIndex(1, len(frame) + 1, name=ROW_INDEX)
    return frame


__all__ = ["check_footer", "frames", "read_whole", "row_bytes"]
