"""Inspect AI eval logs (`.eval`, a zip of header.json and samples/*.json; or one `.json`) -> one run.

With EVALDRIFT_INSPECT_PYTHON (a Python with inspect-ai) the log is read by Inspect's own
`read_eval_log` (its stable surface; it reads unfinished logs too), in that environment; without it, by
the reader below, kept tested against logs the real Inspect writes.

Per sample: `id` (Inspect's own sample id; the epochs of one sample are its repeats), `input`
(text, or the user messages of a chat input) as the question, `output.completion`
as the answer, `target` as the reference, and the passages from the sample's
metadata (`contexts`, or `context`) when the task put them there. Each scorer
whose name maps to one of our metrics becomes that metric: a number as is, a
boolean as 1/0, Inspect's grades C / P / I as 1 / 0.5 / 0, and NaN or a missing
value as not scored (`model_graded_fact` leaves NaN when it cannot read its
grader). A sample that errored has no score: not scored, with Inspect's error kept in the notes.

The grader is where Inspect takes it from: the scorer's `model` option
(`model_graded_fact(model=...)`, in `eval.scorers[].options.model`), else the
log's `grader` model role, else the task's model (Inspect's fallback: then the
answering model grades too, and the notes say so). The scorer's options
(grading template, instructions, grade pattern, partial credit) are the
metric's instrument: their text is stored as its template (braces doubled: it
is a record, never rendered), so a change of template is a prompt marker.
"""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import cast

import pandas as pd

from lib.core.errors import InputError
from lib.intake.importers import shapes
from lib.intake.importers.base import Imported, content_id, parse_time
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


WORKER = Path(__file__).with_name("inspect_worker.py")


def _load_with_inspect(path: Path, python: str) -> tuple[dict, list[dict]]:
    """The log as Inspect's own reader gives it (in the Python named by EVALDRIFT_INSPECT_PYTHON)."""
    import subprocess

    try:
        # -I: the worker's folder holds this module, named inspect.py like the standard library's module
        proc = subprocess.run([python, "-I", str(WORKER), str(path)], capture_output=True, text=True, timeout=300)
    except OSError as exc:
        raise InputError(f"EVALDRIFT_INSPECT_PYTHON names a Python that cannot be run, {python}: {exc}",
                         source=str(path)) from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise InputError(f"Inspect's reader could not read the log: {last[:300]}", source=str(path))
    data = shapes.strict_json(proc.stdout.encode(), source=str(path), what="Inspect log (as Inspect read it)")
    if not isinstance(data, dict) or not isinstance(data.get("header"), dict):
        raise InputError("Inspect's reader gave no log header", source=str(path))
    return data["header"], list(data.get("samples") or [])


def _load(path: Path) -> tuple[dict, list[dict]]:
    source = str(path)
    from lib.core import settings

    python = settings.load().inspect_python
    if python:
        header, samples = _load_with_inspect(path, python)
        return _checked(header, samples, source)
    try:
        if path.suffix.lower() == ".eval":
            with zipfile.ZipFile(path) as z:
                names = sorted(n for n in z.namelist() if n.startswith("samples/") and n.endswith(".json"))
                extra = ["reductions.json"] if "reductions.json" in z.namelist() else []
                shapes.check_members(z, ["header.json", *extra, *names], source=source)  # sizes, before a byte is read
                header = cast(dict, shapes.strict_json(_member(z, "header.json"), source=f"{source} header.json",
                                                       what="Inspect log"))
                shapes.check(header, shapes.INSPECT_HEADER, source=f"{source} header.json", row=None, path="")
                if "reductions.json" in z.namelist():   # each scorer's epoch reducer and reduced sample scores
                    reductions = shapes.strict_json(_member(z, "reductions.json"), source=f"{source} reductions.json",
                                                    what="Inspect log")
                    shapes.check(reductions, shapes.INSPECT_REDUCTIONS, source=f"{source} reductions.json",
                                 row=None, path="")
                    header["reductions"] = reductions
                samples = []
                for row, n in enumerate(names, start=1):
                    sample = cast(dict, shapes.strict_json(_member(z, n), source=f"{source} {n}", what="Inspect log"))
                    shapes.check(sample, shapes.INSPECT_SAMPLE, source=f"{source} {n}", row=row, path="")
                    samples.append(sample)
        else:
            header = cast(dict, shapes.strict_json(shapes.read_bytes(path), source=source, what="Inspect log"))
            shapes.check(header, shapes.INSPECT_HEADER, source=source, row=None, path="")
            samples = list(header.get("samples") or [])
            for row, sample in enumerate(samples, start=1):
                shapes.check(sample, shapes.INSPECT_SAMPLE, source=source, row=row, path="samples")
    except KeyError as exc:
        raise InputError(f"not a readable Inspect log: {exc} (an unfinished log has no header yet: "
                         f"EVALDRIFT_INSPECT_PYTHON lets Inspect's own reader read it)", source=source) from None
    except (OSError, zipfile.BadZipFile, UnicodeDecodeError, ValueError, NotImplementedError, EOFError) as exc:
        raise InputError(f"not a readable Inspect log: {exc}", source=source) from None
    return _checked(header, samples, source)


def _checked(header: dict, samples: list[dict], source: str) -> tuple[dict, list[dict]]:
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


def _positional(samples: list[dict]) -> bool:
    """True when the ids are 1..N, the numbers Inspect gives samples that have none: positions, not identities."""
    ids = {s.get("id") for s in samples}
    return all(isinstance(i, int) and not isinstance(i, bool) for i in ids) and ids == set(range(1, len(ids) + 1))


def _mapped(samples: list[dict], mapping: Mapping[str, str], source: str) -> dict[str, str]:
    """Scorer -> our metric, for the scorers the log has; two scorers of one metric are refused, naming both."""
    scorers = list(dict.fromkeys(name for s in samples for name in (s.get("scores") or {})))
    out: dict[str, str] = {}
    for scorer in scorers:
        metric = mapping.get(scorer)
        if metric is None:
            continue
        other = next((k for k, m in out.items() if m == metric), None)
        if other is not None:
            raise InputError(f"two scorers, {other} and {scorer}, both map to {metric}: one would hide the other; "
                             f"map one to another metric with --metric-map {scorer}=METRIC (or import the log "
                             f"once per scorer)", field="metrics", source=source)
        out[scorer] = metric
    return out


def _reductions(header: dict) -> dict[str, tuple[str, dict[str, object]]]:
    """Scorer -> (Inspect's epoch reducer, sample id -> the reduced value Inspect scored the sample with)."""
    out: dict[str, tuple[str, dict[str, object]]] = {}
    for r in header.get("reductions") or []:
        if isinstance(r, dict) and isinstance(r.get("scorer"), str):
            values = {str(x.get("sample_id")): x.get("value") for x in r.get("samples") or [] if isinstance(x, dict)}
            out[r["scorer"]] = (str(r.get("reducer") or "mean"), values)
    return out


def read_inspect(path: str | Path, *, metric_map: Mapping[str, str] | None = None) -> Imported:
    """Read an Inspect AI log.

    Raises:
        InputError: an unreadable log, or two scorers that map to one metric (naming both and --metric-map).
    """
    path = Path(path)
    header, samples = _load(path)
    spec = header["eval"]
    mapping = _mapped(samples, {**DEFAULT_METRIC_MAP, **(metric_map or {})}, str(path))
    sources = {metric: scorer for scorer, metric in mapping.items()}
    # Inspect numbers samples without ids 1..N by position: a reordered run would pair other questions
    positional = _positional(samples)
    reductions = _reductions(header)
    rows: list[dict] = []
    reduced_scores: dict[str, dict[str, object]] = {}
    errors: dict[str, int] = {}
    for s in samples:
        if s.get("error"):
            message = str((s.get("error") or {}).get("message") or s.get("error"))
            errors[message[:160]] = errors.get(message[:160], 0) + 1
        question, reference = _text(s.get("input")), _text(s.get("target"))
        row: dict[str, object] = {"id": content_id(question, reference) if positional else s.get("id"),
                                  "question": question, "answer": (s.get("output") or {}).get("completion"),
                                  "ground_truth": reference}
        meta = s.get("metadata") or {}
        if "contexts" in meta or "context" in meta:
            ctx = meta.get("contexts", meta.get("context"))
            row["contexts"] = [ctx] if isinstance(ctx, str) else ctx
        for scorer, score in (s.get("scores") or {}).items():
            metric = mapping.get(scorer)
            if metric is None:
                continue
            reducer, reduced = reductions.get(scorer, ("mean", {}))
            if reducer != "mean" and str(s.get("id")) in reduced:
                # Inspect's own score of the sample is its reducer's value (max, mode...), not the epochs' mean
                reduced_scores.setdefault(metric, {})[str(row["id"])] = _grade(reduced[str(s.get("id"))])
            value = (score or {}).get("value")
            row[metric] = _grade(value)
        rows.append(row)
    frame = pd.DataFrame(rows, dtype=object)
    frame.index = pd.RangeIndex(1, len(frame) + 1, name="row")
    graders = {metric: _grader(spec, {scorer}) for metric, scorer in sources.items()}
    grader, place = _grader(spec, set(sources.values()))
    notes: dict[str, object] = {}
    if positional:
        notes["sample_ids"] = ("hash of question and reference (the log's ids 1..N are the positions Inspect "
                               "numbers samples without ids by)")
    reduced_by = {m: reductions[sc][0] for m, sc in sources.items() if sc in reductions}
    warnings = []
    if any(r != "mean" for r in reduced_by.values()):
        notes["epochs_reducer"] = reduced_by
        warnings.append("epochs reduced by " + ", ".join(f"{r} ({m})" for m, r in reduced_by.items())
                        + ": each sample's score is Inspect's reduced score, as Inspect reports it")
    if errors:
        notes["sample_errors"] = errors
    if header.get("status") not in (None, "success"):
        warnings.append(f"the log's status is {header.get('status')!r}: Inspect did not finish it")
    if place == "eval.model":
        notes["grader_is_answering_model"] = True
    return Imported(frame, "inspect_ai", (spec.get("packages") or {}).get("inspect_ai"), sources, grader,
                    parse_time(spec.get("created")), grader_source=place,
                    templates=_instruments(spec, sources, samples), notes=notes, warnings=tuple(warnings),
                    graders={m: g for m, (g, _) in graders.items() if g},
                    grader_sources={m: p for m, (_, p) in graders.items() if p}, reduced=reduced_scores)


def _scorer_options(spec: dict) -> dict[str, dict]:
    return {str(s.get("name")).split("/")[-1]: (s.get("options") or {}) for s in spec.get("scorers") or []
            if isinstance(s, dict)}


def _grader(spec: dict, scorers: set[str]) -> tuple[str | None, str | None]:
    """The grader model and where it was read, in the order Inspect resolves it."""
    for name, options in _scorer_options(spec).items():
        if scorers and name not in {x.split("/")[-1] for x in scorers}:
            continue
        model = options.get("model")
        if isinstance(model, list):
            model = ", ".join(str(m) for m in model) or None
        if model:
            return str(model), "eval.scorers[].options.model"
    role = (spec.get("model_roles") or {}).get("grader") or {}
    if role.get("model"):
        return str(role["model"]), "eval.model_roles.grader"
    return spec.get("model"), "eval.model" if spec.get("model") else None


def metadata_fields(template: object, samples: list[dict]) -> dict[str, str]:
    """A grading template's variables that name another key of the samples' metadata -> the field whose text that
    key holds (as the first sample that has it shows: the passages, joined or one of them; the question; the
    reference), or "unknown". Inspect fills a template's other variables from the sample's metadata, so a
    template reading `{contexts_text}` shows the grader the passages under another name."""
    import string

    from lib.core.profiles import INSPECT_PLACES

    if not isinstance(template, str):
        return {}
    try:
        names = {n for _, n, _, _ in string.Formatter().parse(template) if n}
    except ValueError:
        return {}
    out: dict[str, str] = {}
    for name in sorted(names - set(INSPECT_PLACES) - {"instructions"}):
        sample = next((s for s in samples if name in (s.get("metadata") or {})), None)
        if sample is None:
            continue
        value, meta = sample["metadata"][name], sample.get("metadata") or {}
        passages = meta.get("contexts", meta.get("context"))
        passages = [passages] if isinstance(passages, str) else [p for p in passages or [] if isinstance(p, str)]
        text = "\n".join(value) if isinstance(value, list) else str(value)
        if passages and any(p and p in text for p in passages):
            out[name] = "contexts"
        elif text == _text(sample.get("target")):
            out[name] = "ground_truth"
        elif text == _text(sample.get("input")):
            out[name] = "question"
        else:
            out[name] = "unknown"
    return out


def _instruments(spec: dict, sources: dict[str, str], samples: list[dict]) -> dict[str, str]:
    """Our metric -> the text of its scorer's grading options (the template and what shapes the grader's prompt),
    with the field each other metadata key its template reads holds (`metadata_fields`, when there are any)."""
    options = _scorer_options(spec)
    out = {}
    for metric, scorer in sources.items():
        opts = {k: v for k, v in options.get(scorer.split("/")[-1], {}).items() if k not in ("model", "model_role")}
        if fields := metadata_fields(opts.get("template"), samples):
            opts["metadata_fields"] = fields
        text = (f"Inspect AI scorer {scorer}: its grading options (template, instructions, grade pattern; "
                f"default: Inspect's own)\n" + json.dumps(opts, sort_keys=True, indent=1, default=str))
        out[metric] = text.replace("{", "{{").replace("}", "}}")
    return out
