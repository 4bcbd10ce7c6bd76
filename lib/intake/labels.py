"""People's labels from a file (CSV or JSONL) or from the CLI, checked whole before any is stored.

| column | meaning | required |
|---|---|---|
| `sample_id` (or `id`) | the sample, as the store has it | this, or `question` + `ground_truth` |
| `question`, `ground_truth` | the sample by its content (both must match one stored sample) | or `sample_id` |
| `metric` | one of the five metrics | yes |
| `item` | 1-based claim, passage or statement number; empty for the whole sample | no |
| `label` | binary: true/false, 1/0, yes/no, or the metric's verdict words | this or `score` |
| `score` | a score in [0, 1] | this or `label` |
| `labeller` | who labelled (else the `--labeller` given) | yes |
| `labelled_at` | ISO time (default: now) | no |
| `suite` | default `main` | no |
| `run_id` | the run whose copy of the sample was labelled (default: the latest run holding it) | no |
| `note` | free text | no |

A bad row is refused with its row (1-based line or data row) and field named, and nothing is stored.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

from lib.core.errors import InputError, cut
from lib.core.labels import BINARY, SCORE, Label, check_value, content_key, label_items
from lib.core.metrics import METRICS
from lib.core.records import MAIN
from lib.core.validate import EARLIEST, field_limit, text_problem, too_long
from lib.intake.importers.base import parse_time
from lib.intake.importers.shapes import read_bytes
from lib.intake.reading import describe_value, parse_jsonl_line, read_table
from lib.store import Store

COLUMNS = ("sample_id", "id", "question", "ground_truth", "metric", "item", "label", "score", "labeller",
           "labelled_at", "suite", "run_id", "note")
FUTURE_SLACK = timedelta(days=1)   # a labeller's clock a little ahead of ours is not a typo
_YES = {"true", "1", "yes", "y", "1.0"}
_NO = {"false", "0", "no", "n", "0.0"}


def read_rows(path: str | Path) -> list[tuple[int, dict[str, object]]]:
    """A labels file's rows (CSV with a header, or JSONL of objects), each with its 1-based row number.

    Read as every door reads (lib.intake.reading): a regular file within EVALDRIFT_MAX_INPUT_BYTES, UTF-8,
    strict JSON (a key given twice, nesting too deep or a 5,000-digit number refused by row and field), a CSV
    cell of any length (Python's csv module would stop at 131,072 characters); then every cell is checked to
    be one value (text, a number, true/false or empty), never a list or an object.

    Raises:
        InputError: naming the file, the row and the field.
    """
    path = Path(path)
    source = path.name
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl", ".ndjson"):
        raise InputError("a labels file is .csv or .jsonl", source=source)
    try:
        data = read_bytes(path)
        if suffix == ".csv":
            frame = read_table(path)
            rows = [(int(n), {str(k).strip(): v for k, v in record.items() if v is not None})
                    for n, record in zip(frame.index, frame.to_dict("records"), strict=True)]
        else:
            rows = [(n, obj) for n, raw in enumerate(data.split(b"\n"), start=1)
                    if (obj := parse_jsonl_line(raw, n, source)) is not None]
    except InputError as exc:   # the file as the user named it, not the path it was read from
        raise InputError(exc.reason, row=exc.row, field=exc.field, source=source) from None
    for n, row in rows:
        for name, value in row.items():
            if not _is_cell(value):
                raise InputError(f"must be text, a number or true/false, got {describe_value(value)}", row=n,
                                 field=name, source=source)
    return rows


def _is_cell(value: object) -> bool:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return True
    return isinstance(value, int | float)   # HugeNumber, BareConstant, lists and objects are not


def _text(row: Mapping[str, object], name: str) -> str:
    value = row.get(name)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value).strip()


def _check_texts(row: Mapping[str, object], limit: int, bad: Callable[[str, str | None], InputError]) -> None:
    """Every text cell storable (no NUL, no unpaired surrogate) and within EVALDRIFT_MAX_FIELD_CHARS."""
    for name, value in row.items():
        if isinstance(value, str):
            problem = too_long(len(value), limit) or text_problem(value)
            if problem:
                raise bad(problem, name)


def _item(text: str) -> int | None:
    """A 1-based item number from its text ('2', '2.0'), or None when it is not a whole number."""
    try:
        number = float(text)
    except ValueError:
        return None
    if not math.isfinite(number) or number != int(number) or abs(number) > 1e9:
        return None
    return int(number)


def _binary(value: object, metric: str) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float) and value in (0, 1):
        return float(value)
    text = str(value).strip().lower()
    pos, neg = METRICS[metric].labels
    if text in _YES or text == pos:
        return 1.0
    if text in _NO or text == neg:
        return 0.0
    return None


def labels_from_rows(store: Store, rows: Sequence[Mapping[str, object]], *, source: str,
                     labeller: str | None = None, now: datetime | None = None,
                     numbers: Sequence[int] | None = None) -> list[Label]:
    """Check every row and make its Label; the first bad row raises InputError naming it and its field.

    Args:
        store: where the samples are (ids are resolved and content hashed against it).
        rows: mappings of the columns above (a file's, the CLI's or the page's).
        source: the door ("file:<name>", "cli", "dashboard"); file errors name the file.
        labeller: who labelled, for rows without a `labeller`.
        now: the time for rows without `labelled_at`.
        numbers: each row's number in its file, for errors (default 1, 2, ...); never read from a row, so a
            column of the file cannot say which row an error names.
    """
    now = now or datetime.now().replace(microsecond=0)
    where = source.removeprefix("file:")
    limit = field_limit()
    out: list[Label] = []
    seen: dict[tuple, int] = {}
    for k, row in enumerate(rows, start=1):
        n = numbers[k - 1] if numbers is not None else k

        def bad(message: str, field: str | None, n: int = n) -> InputError:
            return InputError(message, row=n, field=field, source=where)

        unknown = sorted(set(row) - set(COLUMNS))
        if unknown:
            raise bad(f"unknown column {cut(unknown[0])}; known: {', '.join(COLUMNS)}", unknown[0])
        _check_texts(row, limit, bad)
        suite = _text(row, "suite") or MAIN
        metric = _text(row, "metric")
        if metric not in METRICS:
            raise bad(f"unknown metric {cut(metric)}; known: {', '.join(METRICS)}" if metric else "missing metric",
                      "metric")
        sid = _text(row, "sample_id") or _text(row, "id")
        if not sid:
            question, truth = _text(row, "question"), _text(row, "ground_truth")
            if not question or not truth:
                raise bad("give sample_id, or question and ground_truth to find the sample by its content",
                          "sample_id")
            found = store.sample_ids_by_content(suite, question, truth)
            if len(found) != 1:
                raise bad(f"{'no' if not found else len(found)} samples of suite {cut(suite)} have this question "
                          f"and ground_truth{'' if not found else ': give sample_id'}", "question")
            sid = found[0]
        run_id = _text(row, "run_id") or None
        sample = store.latest_samples(suite, [sid], run_id).get(sid)
        if sample is None:
            what = f"run {cut(run_id)}" if run_id else f"suite {cut(suite)}"
            raise bad(f"no sample {cut(sid)} in {what}", "run_id" if run_id else "sample_id")
        item_text = _text(row, "item")
        item: int | None = None
        if item_text:
            item = _item(item_text)
            if item is None:
                raise bad(f"item must be a whole number, got {cut(item_text)}", "item")
            n_items = len(label_items(metric, sample))
            if not 1 <= item <= n_items:
                raise bad(f"sample {cut(sid)} has {n_items} items for {metric}; item {item} is not one", "item")
        has_label, has_score = _text(row, "label") != "", _text(row, "score") != ""
        if has_label == has_score:
            raise bad("give exactly one of label (binary) and score (in [0, 1])", "label")
        if has_label:
            kind, value = BINARY, _binary(row.get("label"), metric)
            if value is None:
                pos, neg = METRICS[metric].labels
                raise bad(f"a binary label is true/false, 1/0, yes/no, {pos}/{neg}; got {cut(row.get('label'))}",
                          "label")
        else:
            kind = SCORE
            try:
                value = float(row.get("score"))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                raise bad(f"score must be a number, got {cut(row.get('score'))}", "score") from None
        problem = check_value(kind, value)
        if problem:
            raise bad(problem, "label" if kind == BINARY else "score")
        who = _text(row, "labeller") or (labeller or "").strip()
        if not who:
            raise bad("missing labeller (a column, or --labeller)", "labeller")
        when = now
        if _text(row, "labelled_at"):
            when = parse_time(_text(row, "labelled_at"))  # type: ignore[assignment]
            if when is None:
                raise bad(f"not an ISO time: {cut(row.get('labelled_at'))}", "labelled_at")
            if not EARLIEST <= when <= now + FUTURE_SLACK:   # year 1 or 9999 is a typo, not a label's time
                raise bad(f"{when.isoformat()} is not a time a label was made: labels are made between "
                          f"{EARLIEST.year} and now", "labelled_at")
        label = Label(suite=suite, sample_id=sid, metric=metric, item=item, kind=kind, value=value,
                      content=content_key(metric, sample), labeller=who, labelled_at=when, source=source,
                      note=_text(row, "note"))
        if label.key in seen:
            raise bad(f"the same label twice in one file (first at row {seen[label.key]}); keep one", "sample_id")
        seen[label.key] = n
        out.append(label)
    return out


def import_labels(store: Store, path: str | Path, *, labeller: str | None = None) -> list[Label]:
    """Check a labels file whole and store its labels (all or none); returns what was stored, with seq."""
    rows = read_rows(path)
    if not rows:
        raise InputError("no labels in the file", source=Path(path).name)
    labels = labels_from_rows(store, [r for _, r in rows], source=f"file:{Path(path).name}", labeller=labeller,
                              numbers=[n for n, _ in rows])
    seqs = store.add_labels(labels)
    return [replace(lab, seq=s) for lab, s in zip(labels, seqs, strict=True)]
