"""Re-score an Inspect log's samples with its own scorer; runs in Inspect's environment, never imports evaldrift.

    python inspect_score_worker.py LOG [SCORER] < requests

The scorer is rebuilt from the log itself (`eval.scorers[]`: its name and options: grading template,
instructions, grader model), as `inspect score` rebuilds it, and the grader is called with the log's own model
roles. Each request is one JSON line, {"samples": [{"id", "question", "answer", "contexts", "ground_truth"}, ...]}:
each sample is the log's sample of that id (its first epoch) with those fields put where Inspect keeps them
(`input`, `output`, `target`, `metadata.contexts` or `metadata.context`), scored by `inspect_ai.score_async`.
Each answer is one line, `EVALDRIFT {"inspect": version, "scores": [...], "reasons": [...]}`: a score in
[0, 1] (grades C / P / I as 1 / 0.5 / 0), or null with Inspect's reason. The process serves requests until its
input closes (one Inspect start for a whole ablation), or exits after IDLE seconds without one.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import sys

IDLE = 900.0
GRADES = {"C": 1.0, "P": 0.5, "I": 0.0}


def _value(value: object) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        return GRADES.get(value.strip().upper())
    if isinstance(value, int | float) and math.isfinite(float(value)):
        return float(value)
    return None


def _text(value: object) -> object:
    """As lib.intake.importers.inspect._text (this file never imports evaldrift): messages or targets -> text."""
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


def content_id(question: object, reference: object) -> str:
    """As lib.intake.importers.base.content_id: the id evaldrift gives a sample the log numbered by position."""
    key = json.dumps([question if isinstance(question, str) else None,
                      reference if isinstance(reference, str) else None], ensure_ascii=False)
    return "c-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


NOT_REACHED = "the blank did not reach the judge: {field}'s text is still in its prompt"


def _grader_prompt(score) -> str:
    """The prompt Inspect's grader was given for a score, as the scorer recorded it (model_graded_*: its
    `grading` messages), or "" when the scorer recorded none."""
    grading = (getattr(score, "metadata", None) or {}).get("grading") or []
    parts = []
    for message in grading:
        if hasattr(message, "model_dump"):   # a ChatMessage in the scoring process; a dict once in a log
            message = message.model_dump(mode="json")
        if isinstance(message, dict) and message.get("role") != "assistant":
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
            parts.append(str(content or ""))
    return "\n".join(parts)


def _original(sample) -> dict:
    """The log sample's own fields, as evaldrift read them."""
    dumped = sample.model_dump(mode="json")
    meta = dumped.get("metadata") or {}
    ctx = meta.get("contexts", meta.get("context"))
    return {"question": _text(dumped.get("input")), "ground_truth": _text(dumped.get("target")),
            "answer": (dumped.get("output") or {}).get("completion"),
            "contexts": [ctx] if isinstance(ctx, str) else list(ctx or [])}


def not_reached(prompt: str, original: dict, wanted: dict) -> str | None:
    """The first blanked field whose own text is still in the grader's prompt (another key of the sample held it),
    once the text of every field as given is taken out of the prompt; None when each blank reached the judge.

    Blanked: given empty where the log's sample has text. A field's text counts by each of its non-empty parts
    (each passage).
    """
    if not prompt:
        return None
    given = [t for f in ("question", "answer", "ground_truth") for t in [wanted.get(f)] if isinstance(t, str) and t]
    given += [p for p in wanted.get("contexts") or [] if p]
    if wanted.get("contexts"):
        given.append("\n".join(wanted["contexts"]))
    rest = prompt
    for text in sorted(given, key=len, reverse=True):   # the longest first: a passage may hold a shorter field
        rest = rest.replace(text, "")
    for field in ("question", "answer", "ground_truth", "contexts"):
        was, now = original.get(field), wanted.get(field)
        parts = [p for p in (was if isinstance(was, list) else [was]) if isinstance(p, str) and p.strip()]
        if parts and not now and any(p in rest for p in parts):
            return NOT_REACHED.format(field=field)
    return None


def _put(sample, wanted: dict):   # the log's sample with the request's fields where Inspect keeps them
    copy = sample.model_copy(deep=True)
    copy.epoch = 1
    copy.scores = None
    copy.input = wanted["question"]
    copy.target = wanted["ground_truth"]
    copy.output.completion = wanted["answer"]
    if copy.output.choices:
        copy.output.choices[0].message.text = wanted["answer"]
    meta = dict(copy.metadata or {})
    key = "contexts" if "contexts" in meta or "context" not in meta else "context"
    meta[key] = "\n".join(wanted["contexts"]) if isinstance(meta.get(key), str) else list(wanted["contexts"])
    copy.metadata = meta
    return copy


async def _serve(path: str, name: str | None) -> None:
    import inspect_ai
    from inspect_ai import score_async
    from inspect_ai._eval.score import resolve_scorers  # how `inspect score` rebuilds a log's scorers
    from inspect_ai.log import read_eval_log

    log = read_eval_log(path)
    specs = [s for s in log.eval.scorers or [] if name is None or s.name.split("/")[-1] == name]
    if len(specs) != 1:
        have = ", ".join(s.name for s in log.eval.scorers or []) or "none"
        raise SystemExit(f"the log's scorers are {have}: name one (LOG#SCORER)" if specs else
                         f"the log has no scorer {name!r} (its scorers: {have})")
    spec = specs[0]
    scorers = resolve_scorers(log, spec.name, spec.options or {})
    key = spec.name.split("/")[-1]
    first: dict[str, object] = {}
    for s in log.samples or []:
        first.setdefault(str(s.id), s)
    ids = {s.id for s in log.samples or []}
    if all(isinstance(i, int) for i in ids) and ids == set(range(1, len(ids) + 1)):
        # ids 1..N are the positions Inspect numbers id-less samples by: evaldrift named them by their content
        for s in log.samples or []:
            dumped = s.model_dump(mode="json")
            first.setdefault(content_id(_text(dumped.get("input")), _text(dumped.get("target"))), s)
    loop = asyncio.get_running_loop()
    while True:
        try:
            line = await asyncio.wait_for(loop.run_in_executor(None, sys.stdin.readline), IDLE)
        except asyncio.TimeoutError:  # noqa: UP041 (Inspect runs on Python 3.10 too, where it is not TimeoutError)
            os._exit(0)
        if not line:
            return
        wanted = json.loads(line)["samples"]
        # answered by position: one request may hold a sample several times (each arm of an ablation)
        present = [i for i, w in enumerate(wanted) if str(w["id"]) in first]
        pairs: list[tuple[float | None, str | None]] = [
            (None, f"the log has no sample {w['id']!r}") for w in wanted]
        if present:
            run = log.model_copy()
            run.samples = [_put(first[str(wanted[i]["id"])], wanted[i]) for i in present]
            scored = await score_async(run, scorers, action="overwrite", display="none", copy=False)
            for i, s in zip(present, scored.samples or [], strict=True):
                got = (s.scores or {}).get(key)
                # a blank proven by the prompt the grader was given: text of a blanked field still there is no
                # ablation of that field (another metadata key carried it), so no score is read from it
                missed = not_reached(_grader_prompt(got), _original(first[str(wanted[i]["id"])]), wanted[i])
                if missed is not None:
                    pairs[i] = (None, missed)
                    continue
                value = _value(got.value) if got is not None else None
                why = " ".join(str(getattr(got, "explanation", None) or got).split())[:200]
                pairs[i] = (value, None if value is not None else f"Inspect gave no score ({why})")
        scores, reasons = [p[0] for p in pairs], [p[1] for p in pairs]
        print("EVALDRIFT " + json.dumps({"inspect": inspect_ai.__version__, "scores": scores, "reasons": reasons}),
              flush=True)


def main() -> None:
    asyncio.run(_serve(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] else None))
    # every answer is flushed and the caller has closed our stdin: end without tearing the interpreter down (Inspect,
    # its model providers and the openai SDK make that a large heap to collect, for nothing)
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
