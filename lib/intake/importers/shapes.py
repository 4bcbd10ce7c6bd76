"""The input boundary of the tool readers: size limits, strict JSON, and the shape the reader walks.

Another tool's file is read through the same strict JSON as a JSONL line or a
hand-over (`lib.core.jsontext.loads`: a key given twice, nesting thousands
deep and an integer of more digits than anyone writes on purpose are refused),
after its size is checked against EVALDRIFT_MAX_INPUT_BYTES before a byte is
read (for a zip, each member's compressed and uncompressed size, and all
members together; a member that inflates past its declared size is cut off at
the limit). Then `check` walks the parts of the document the reader uses: where
the reader expects an object, a list, text or a whole number, anything else is
an InputError naming the file, the row and the field, never an AttributeError
three calls down. What a field means (a score, a passage) is still checked by
`lib.intake.ingest`, the rules every door shares.
"""

from __future__ import annotations

import json
import os
import stat
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Protocol

from lib.core.errors import InputError
from lib.core.jsontext import HugeNumber, JsonProblem, loads
from lib.core.settings import load as load_settings

LIMIT_SETTING = "EVALDRIFT_MAX_INPUT_BYTES"


def input_limit() -> int:
    """Bytes a file read whole (or a zip member, or a zip's members together) may hold."""
    return load_settings().max_input_bytes


def read_bytes(path: str | Path, *, limit: int | None = None) -> bytes:
    """A whole file's bytes, refused unread when larger than the limit.

    Raises:
        InputError: unreadable, not a regular file, or over the limit (named).
    """
    limit = input_limit() if limit is None else limit
    source = str(path)
    try:
        with open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > limit:
                raise InputError(_over(size, limit, "the file"), source=source)
            data = fh.read(limit + 1)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", source=source) from None
    if len(data) > limit:
        raise InputError(_over(len(data), limit, "the file", at_least=True), source=source)
    return data


def open_regular(path: str | Path) -> BinaryIO:
    """The file open for reading, refused when it is not a regular file (a FIFO, a device, a folder).

    Opened without blocking: opening a FIFO for reading waits for a writer, forever if none comes, so the
    check is made on the open descriptor before any read (and no name swapped in between can get past it).

    Raises:
        InputError: not a regular file, or cannot be opened.
    """
    source = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", source=source) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise InputError("not a regular file (a pipe, a device or a folder is not read)", source=source)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def require_regular(path: str | Path) -> None:
    """Refuse, before anything opens it, a path that is not a regular file (open_regular's check).

    Raises:
        InputError: not a regular file, or cannot be opened.
    """
    open_regular(path).close()


def check_members(z: zipfile.ZipFile, names: list[str], *, source: str, limit: int | None = None) -> None:
    """Refuse a zip whose members (to be read) declare more than the limit, each or together, before reading.

    Raises:
        InputError: naming the member and the limit.
    """
    limit = input_limit() if limit is None else limit
    total = 0
    for name in names:
        info = z.getinfo(name)
        for size, what in ((info.compress_size, "compressed"), (info.file_size, "uncompressed")):
            if size > limit:
                raise InputError(_over(size, limit, f"member {name} ({what})"), field=name, source=source)
        total += info.file_size
        if total > limit:
            raise InputError(_over(total, limit, "the members together (uncompressed)"), field=name, source=source)


class Readable(Protocol):
    """A stream of bytes: a zip member, a decompressing reader."""

    def read(self, size: int = -1, /) -> bytes: ...


def bounded(reader: Readable, *, name: str, source: str, declared: int) -> bytes:
    """Read a decompressing stream up to the member's declared size (checked against the limit already).

    A member that inflates past what its zip entry declares is refused, so memory stays within the
    declared size however the bytes were made.

    Raises:
        InputError: naming the member.
    """
    data = reader.read(declared + 1)
    if len(data) > declared:
        raise InputError(f"member {name} inflates past the {declared:,} bytes its zip entry declares", field=name,
                         source=source)
    return data


def strict_json(data: str | bytes, *, source: str, what: str) -> object:
    """Parse a whole document through the project's strict JSON (NaN allowed: the tools write it).

    Raises:
        InputError: not JSON, a key given twice, nesting too deep (the field named when known).
    """
    try:
        return loads(data)
    except JsonProblem as exc:
        raise InputError(f"not a readable {what}: {exc}", field=exc.field, source=source) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not a readable {what}: not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
                         source=source) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"not a readable {what}: {exc}", source=source) from None


# -- shapes ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scalar:
    """One of these JSON value kinds (bool is never an int here)."""

    kinds: tuple[type, ...]
    nullable: bool = True


@dataclass(frozen=True)
class Obj:
    """A JSON object whose named keys, when present, have these shapes (other keys are not read); the keys in
    `required` must be present (a reader that indexes one would otherwise fail with a KeyError)."""

    fields: Mapping[str, Shape] = field(default_factory=dict)
    nullable: bool = True
    required: tuple[str, ...] = ()


class _Missing:
    """Where a required key was: nothing."""

    def __repr__(self) -> str:
        return "nothing (the key is missing)"


MISSING = _Missing()


@dataclass(frozen=True)
class ListOf:
    """A JSON list of one shape."""

    item: Shape
    nullable: bool = True


@dataclass(frozen=True)
class MapOf:
    """A JSON object whose every value has one shape."""

    item: Shape
    nullable: bool = True


@dataclass(frozen=True)
class OneOf:
    """Any of these shapes."""

    options: tuple[Shape, ...]


ANY = Scalar(())
Shape = Scalar | Obj | ListOf | MapOf | OneOf

TEXT = Scalar((str,))
WHOLE = Scalar((int,))
ID = Scalar((str, int))


def check(value: object, shape: Shape, *, source: str, row: int | None, path: str) -> None:
    """Refuse a value that does not have the shape, naming file, row and field (its path in the record).

    Raises:
        InputError: the first part out of shape.
    """
    problem = _mismatch(value, shape)
    if problem is None:
        return
    where, expected, got = problem
    full = ".".join(p for p in (path, where) if p).replace(".[", "[")
    raise InputError(f"must be {expected}, got {_kind(got)}", row=row, field=full or None, source=source)


def _mismatch(value: object, shape: Shape) -> tuple[str, str, object] | None:
    """(where, what was expected, what was there) of the first mismatch, or None."""
    if isinstance(shape, OneOf):
        for option in shape.options:
            if _mismatch(value, option) is None:
                return None
        return "", " or ".join(_expects(o) for o in shape.options), value
    if value is None:
        return None if shape.nullable else ("", _expects(shape), value)
    if isinstance(shape, Scalar):
        if not shape.kinds:
            return None
        ok = isinstance(value, shape.kinds) and not (isinstance(value, bool) and bool not in shape.kinds)
        return None if ok else ("", _expects(shape), value)
    if isinstance(shape, Obj | MapOf):
        if not isinstance(value, dict):
            return "", _expects(shape), value
        items = shape.fields.items() if isinstance(shape, Obj) else ((k, shape.item) for k in value)
        if isinstance(shape, Obj):
            for key in shape.required:
                if key not in value:
                    return key, _expects(shape.fields.get(key, ANY)), MISSING
        for key, sub in items:
            if key in value and (bad := _mismatch(value[key], sub)) is not None:
                return (f"{key}.{bad[0]}" if bad[0] else key), bad[1], bad[2]
        return None
    if not isinstance(value, list):
        return "", _expects(shape), value
    for k, item in enumerate(value, start=1):
        if (bad := _mismatch(item, shape.item)) is not None:
            return (f"[{k}].{bad[0]}" if bad[0] else f"[{k}]"), bad[1], bad[2]
    return None


def _expects(shape: Shape) -> str:
    if isinstance(shape, Scalar):
        names = {str: "text", int: "a whole number", float: "a number", bool: "true or false"}
        return " or ".join(names.get(k, k.__name__) for k in shape.kinds) or "a value"
    if isinstance(shape, OneOf):
        return " or ".join(_expects(o) for o in shape.options)
    return "a list" if isinstance(shape, ListOf) else "an object"


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, HugeNumber | _Missing):
        return repr(value)
    return {bool: "a boolean", str: "text", dict: "an object", list: "a list", int: "a whole number",
            float: "a number"}.get(type(value), type(value).__name__)


def _over(size: int, limit: int, what: str, *, at_least: bool = False) -> str:
    return (f"{what} is {'more than ' if at_least else ''}{size - (1 if at_least else 0):,} bytes, over the limit of "
            f"{limit:,} ({LIMIT_SETTING}; an operator can raise it)")


# -- what the readers walk -------------------------------------------------------------------------------------
# Inspect AI: each scorer's epoch reducer and the reduced scores (reductions.json, or the .json log's "reductions");
INSPECT_REDUCTIONS = ListOf(Obj({"scorer": TEXT, "reducer": TEXT, "samples": ListOf(Obj({"sample_id": ID}))}))
# the header (or the whole .json log) and each sample; input and target may be text or messages
# (the reader guards their parts itself).
INSPECT_HEADER = Obj({
    "eval": Obj({"dataset": Obj({"sample_ids": ListOf(ID)}), "model_roles": MapOf(Obj({"model": TEXT})),
                 "model": TEXT, "packages": Obj({"inspect_ai": TEXT})}, nullable=False),
    "samples": ListOf(ANY),
    "reductions": INSPECT_REDUCTIONS,
}, nullable=False)
INSPECT_SAMPLE = Obj({
    "id": ID, "epoch": Scalar((int,), nullable=False), "output": Obj({"completion": ANY}), "metadata": Obj(),
    "scores": MapOf(Obj({"value": ANY})),
}, nullable=False)

# promptfoo: the results file, and each result (a test case for one prompt and provider).
PROMPTFOO_PROVIDER = OneOf((TEXT, Obj({"id": TEXT, "label": TEXT})))
PROMPTFOO_FILE = Obj({
    "results": Obj({"results": ListOf(ANY)}),
    "config": Obj({"defaultTest": Obj({"options": Obj({"provider": PROMPTFOO_PROVIDER})})}),
    "metadata": Obj({"promptfooVersion": TEXT}),
}, nullable=False)
PROMPTFOO_RESULT = Obj({
    "testCase": Obj({"vars": Obj(), "options": Obj({"provider": PROMPTFOO_PROVIDER})}),
    "vars": Obj(), "testIdx": ID, "promptIdx": ID, "provider": PROMPTFOO_PROVIDER,
    "response": Obj({"output": ANY}),
    "gradingResult": Obj({"componentResults": ListOf(Obj({
        "assertion": Obj({"type": TEXT, "provider": PROMPTFOO_PROVIDER}),
    }, nullable=False))}),
}, nullable=False)

# DeepEval: a test run (the file DEEPEVAL_RESULTS_FOLDER holds) and each of its test cases.
DEEPEVAL_RUN = Obj({"testCases": ListOf(ANY), "conversationalTestCases": ListOf(ANY)}, nullable=False)
DEEPEVAL_CASE = Obj({
    "input": TEXT, "actualOutput": TEXT, "expectedOutput": TEXT, "retrievalContext": ListOf(ANY),
    "context": ListOf(ANY),
    "metricsData": ListOf(Obj({"name": Scalar((str,), nullable=False), "evaluationModel": TEXT, "error": TEXT},
                              nullable=False, required=("name",))),
}, nullable=False)
