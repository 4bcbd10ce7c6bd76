"""Inspect AI eval logs (`.eval`, a zip of header.json and samples/*.json; or one `.json`) -> one run.

Per sample: `id` (with `@<epoch>` when the log has several epochs), `input`
(text, or the user messages of a chat input) as the question, `output.completion`
as the answer, `target` as the reference, and the passages from the sample's
metadata (`contexts`, or `context`) when the task put them there. Each scorer
whose name maps to one of our metrics becomes that metric: a number as is, a
boolean as 1/0, Inspect's grades C / P / I as 1 / 0.5 / 0, and NaN or a missing
value as not scored (`model_graded_fact` leaves NaN when it cannot read its
grader). The grader is the log's `grader` model role, else the task's model.
"""

from __future__ import annotations

import math
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from lib.core.errors import InputError
from lib.intake.importers import shapes
from lib.intake.importers.base import Imported, parse_time
from lib.intake.ingest import METRIC_COLUMNS

# Inspect scorer -> our metric: the model-graded ones compare the answer with the target.
DEFAULT_METRIC_MAP: dict[str, str] = {"model_graded_fact": "answer_correctness",
                                      "model_graded_qa": "answer_correctness",
                                      **{alias: m for m, aliases in METRIC_COLUMNS.items() for alias in aliases}}
GRADES = {"C": 1.0, "P": 0.5, "I": 0.0}


ZSTD = 93   # the zip compression method Inspect writes its .eval members with (Python 3.11's zipfile lacks it)


def _member(z: zipfile.ZipFile, name: str) -> bytes:
    """One member's bytes, Zstandard-compressed ones included."""
    info = z.getinfo(name)
    shapes.check_members(z, [name], source=str(z.filename))
    if info.compress_type != ZSTD:
        with z.open(name) as fh:
            return shapes.bounded(fh, name=name, source=str(z.filename), declared=info.file_size)
    import io

    import zstandard

    with open(z.filename, "rb") as fh:  # type: ignore[arg-type]
        fh.seek(info.header_offset)
        local = fh.read(30)
        if local[:4] != b"PK\x03\x04":
            raise zipfile.BadZipFile(f"bad local header for {name}")
        skip = int.from_bytes(local[26:28], "little") + int.from_bytes(local[28:30], "little")
        fh.seek(info.header_offset + 30 + skip)
        raw = fh.read(info.compress_size)
    # read as a stream, never past the declared size: a member that inflates further is refused
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw)) as reader:
            return shapes.bounded(reader, name=name, source=str(z.filename), declared=info.file_size)
    except zstandard.ZstdError as exc:
        raise zipfile.BadZipFile(f"{name}: {exc}") from None


def _load(path: Path) -> tuple[dict, list[dict]]:
    source = str(path)
    try:
        if path.suffix.lower() == ".eval":
            with zipfile.ZipFile(path) as z:
                names = sorted(n for n in z.namelist() if n.startswith("samples/") and n.endswith(".json"))
                shapes.check_members(z, ["header.json", *names], source=source)  # sizes, before a byte is read
                header = shapes.strict_json(_member(z, "header.json"), source=f"{source} header.json",
                                            what="Inspect log")
                shapes.check(header, shapes.INSPECT_HEADER, source=f"{source} header.json", row=None, path="")
                samples = []
                for row, n in enumerate(names, start=1):
                    sample = shapes.strict_json(_member(z, n), source=f"{source} {n}", what="Inspect log")
                    shapes.check(sample, shapes.INSPECT_SAMPLE, source=f"{source} {n}", row=row, path="")
                    samples.append(sample)
        else:
            header = shapes.strict_json(shapes.read_bytes(path), source=source, what="Inspect log")
            shapes.check(header, shapes.INSPECT_HEADER, source=source, row=None, path="")
            samples = list(header.get("samples") or [])
            for row, sample in enumerate(samples, start=1):
                shapes.check(sample, shapes.INSPECT_SAMPLE, source=source, row=row, path="samples")
    except (OSError, zipfile.BadZipFile, KeyError, UnicodeDecodeError, ValueError, NotImplementedError,
            EOFError) as exc:
        raise InputError(f"not a readable Inspect log: {exc}", source=source) from None
    if not isinstance(header, dict) or "eval" not in header:
        raise InputError("not an Inspect log (no 'eval' section)", source=source)
    if not samples:
        raise InputError("the log holds no samples (was it written with --no-log-samples?)", source=source)
    order = {sid: i for i, sid in enumerate(header["eval"].get("dataset", {}).get("sample_ids") or [])}
    samples.sort(key=lambda s: (order.get(s.get("id"), len(order)), s.get("epoch", 1)))
    return header, samples


def _text(value: object) -> object:
    """Inspect input/target: text, a list of chat messages, or a list of targets -> text."""
    if isinstance(value, list):
        parts = []
        for item in value:
            if isinstance(item, dict):
                if item.get("role", "user") != "user":
                    continue
                content = item.get("content")
                if isinstance(content, list):
                    content = " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
                parts.append(str(content))
            else:
                parts.append(str(item))
        return "\n".join(parts)
    return value


def _grade(value: object) -> object:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value.strip().upper() in GRADES:
        return GRADES[value.strip().upper()]
    if isinstance(value, float) and math.isnan(value):
        return None
    return value   # a number, or something validation names


def read_inspect(path: str | Path, *, metric_map: Mapping[str, str] | None = None) -> Imported:
    """Read an Inspect AI log."""
    path = Path(path)
    header, samples = _load(path)
    spec = header["eval"]
    mapping = {**DEFAULT_METRIC_MAP, **(metric_map or {})}
    epochs = len({s.get("epoch", 1) for s in samples}) > 1
    rows, sources = [], {}
    for s in samples:
        row: dict[str, object] = {"id": f"{s.get('id')}@{s.get('epoch', 1)}" if epochs else s.get("id"),
                                  "question": _text(s.get("input")), "answer": (s.get("output") or {}).get(
                                      "completion"), "ground_truth": _text(s.get("target"))}
        meta = s.get("metadata") or {}
        if "contexts" in meta or "context" in meta:
            ctx = meta.get("contexts", meta.get("context"))
            row["contexts"] = [ctx] if isinstance(ctx, str) else ctx
        for scorer, score in (s.get("scores") or {}).items():
            metric = mapping.get(scorer)
            if metric is not None:
                sources[metric] = scorer
                row[metric] = _grade((score or {}).get("value"))
        rows.append(row)
    frame = pd.DataFrame(rows, dtype=object)
    frame.index = pd.RangeIndex(1, len(frame) + 1, name="row")
    roles = spec.get("model_roles") or {}
    grader = (roles.get("grader") or {}).get("model") or spec.get("model")
    return Imported(frame, "inspect_ai", (spec.get("packages") or {}).get("inspect_ai"), sources, grader,
                    parse_time(spec.get("created")))
