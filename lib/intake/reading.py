"""Reading a table file (JSONL, CSV or Parquet) into a frame, with every fault named by row and field."""

from __future__ import annotations

import codecs
import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from lib.core import jsontext
from lib.core.errors import InputError
from lib.intake import parquetread  # a Parquet file's sizes are checked from its footer before a page inflates

ROW_INDEX = "row"
READERS = {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".parquet": "parquet"}


@dataclass(frozen=True)
class BareConstant:
    """A `NaN`/`Infinity` token in a JSON line: kept so the error can name its field."""

    token: str

    def __repr__(self) -> str:
        return self.token


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a JSONL, CSV or Parquet file into a frame of plain Python values.

    The frame's index, named "row", holds each record's row number as the
    module docstring defines it; `records_from_frame` reports errors by it.

    Raises:
        InputError: the file cannot be read or parsed (for a malformed JSONL
            line, `row` is its line number).
    """
    path = Path(path)
    source = str(path)
    kind = READERS.get(path.suffix.lower())
    if kind is None:
        raise InputError(f"unsupported file type {path.suffix or '(none)'!r}; use .jsonl, .json, .csv or .parquet",
                         source=source)
    from lib.intake.importers.shapes import require_regular

    require_regular(path)   # a FIFO would block the reader forever
    if kind == "jsonl":
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read file: {exc.strerror or exc}", source=source) from None
        return _read_jsonl(data, source)
    if kind == "csv":
        return _read_csv(path, source)
    return _read_parquet(path, source)


def _read_jsonl(data: bytes, source: str) -> pd.DataFrame:
    records: list[dict[str, object]] = []
    rows: list[int] = []
    # Split on b"\n" only: str.splitlines would also split on U+2028 and friends,
    # which JSON allows unescaped inside strings.
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        obj = parse_jsonl_line(raw, lineno, source)
        if obj is not None:
            records.append(obj)
            rows.append(lineno)
    frame = pd.DataFrame(records, dtype=object)
    frame.index = pd.Index(rows, name=ROW_INDEX)
    return frame


def parse_jsonl_line(raw: bytes, lineno: int, source: str) -> dict[str, object] | None:
    """One JSON Lines record (None for a blank line), or the InputError naming the line."""
    try:
        line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", row=lineno,
                         source=source) from None
    if not line.strip():
        return None
    try:
        obj = jsontext.loads(line, parse_constant=BareConstant)
    except jsontext.JsonProblem as exc:
        raise InputError(str(exc), row=lineno, field=exc.field, source=source) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} (column {exc.colno})", row=lineno, source=source) from None
    if not isinstance(obj, dict):
        hint = " (this reader wants JSON Lines: one object per line)" if isinstance(obj, list) else ""
        raise InputError(f"expected a JSON object, got {describe_value(obj)}{hint}", row=lineno, source=source)
    return obj


def _read_csv(path: Path, source: str) -> pd.DataFrame:
    try:
        # Every cell as text, nothing guessed: "NA" or "None" in a question stays text.
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False, encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise csv_decode_error(path, source) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", source=source) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise InputError(f"not a readable CSV file: {str(exc).strip()}", source=source) from None
    refuse_doubled_header(path, source)  # pandas would rename the second copy "name.1" and use the first
    frame = frame.astype(object).where(frame != "", None)  # an empty cell is CSV's only missing value
    frame.index = pd.RangeIndex(1, len(frame) + 1, name=ROW_INDEX)
    return frame


def refuse_doubled_header(path: Path, source: str) -> None:
    with open(path, encoding="utf-8-sig", newline="") as fh:
        header = next(csv.reader(fh), [])
    names = [name.strip() for name in header]
    doubled = [name for k, name in enumerate(names) if name in names[:k]]
    if doubled:
        raise InputError(f"the header names column {doubled[0]!r} more than once (which one is meant is not ours "
                         f"to guess)", field=doubled[0], source=source)


def csv_decode_error(path: Path, source: str) -> InputError:
    """The error for a CSV file that is not UTF-8, naming the record and column of the first bad byte.

    (pandas reports only an offset within the chunk it was decoding.)
    """
    data = path.read_bytes()
    data = data[len(codecs.BOM_UTF8):] if data.startswith(codecs.BOM_UTF8) else data
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Parse the text before the bad byte, plus one letter so the record it sits in is counted.
        records = list(csv.reader(io.StringIO(data[:exc.start].decode("utf-8") + "x", newline="")))
        row = len(records) - 1 if len(records) > 1 else None  # the header is not a row
        col = len(records[-1]) - 1
        field = records[0][col] if row is not None and col < len(records[0]) else None
        return InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start} of the file)", row=row, field=field,
                          source=source)
    return InputError("not UTF-8 text", source=source)


def _read_parquet(path: Path, source: str) -> pd.DataFrame:
    return parquetread.read_whole(path, source=source)


def describe_value(value: object) -> str:
    if isinstance(value, BareConstant):
        return f"bare {value.token} (not JSON)"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, jsontext.HugeNumber):
        return repr(value)
    return {bool: "a boolean", dict: "an object", list: "a list"}.get(type(value), type(value).__name__)
