"""Judge calls through the OpenAI Batch API (also served by vLLM): submit, poll, collect, finish.

A large ablation or re-judge can be sent as one batch instead of live calls:

1. submit: the job's distinct requests not already in the call cache
   (lib.diagnosis.batch._requests) are written as JSONL, uploaded
   (files.create, purpose "batch") and sent (batches.create); the batch id,
   the job's spec and every request are stored (lib.store.batches) before
   anything else happens, so a restarted process polls the same batch;
2. poll: batches.retrieve gives the status and request counts, stored as
   the job's progress;
3. collect: when the batch has ended (completed, expired, cancelled or
   failed), its output and error files are read (files.content). A readable
   reply is kept (batch_replies); a failed line, an unreadable reply or a
   request the batch never answered is recorded with its reason in
   batch_faults, and never scored;
4. finish: the job itself is run (lib.diagnosis.ablation, lib.diagnosis.rejudge)
   with a judge that answers each request the batch answered with its reply
   (BatchAnswers) and asks only the faults live, with the live judge's own
   retries. So results, usage and the call cache are stored exactly as a live
   run stores them: one call per reply, its tokens, then the cache.

The client is made from the operator's settings (OPENAI_BASE_URL,
OPENAI_API_KEY): never from the database or a URL. A job submitted to
another endpoint than the settings name is refused, not sent elsewhere.
"""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING, Any, Final

import pandas as pd

from lib.core.calls import JudgeReply, JudgeRequest, Usage
from lib.core.endpoints import normalise
from lib.core.errors import InputError
from lib.diagnosis.batch._jobs import ENDED, BatchJob, load
from lib.diagnosis.batch._requests import ablation_requests, rejudge_requests
from lib.judging.base import Judge, judge_endpoint
from lib.judging.harness import parse_verdicts
from lib.judging.structured import BOOK, JSON_SCHEMA, chat_body, reply_of
from lib.store import Store
from lib.store import batches as bs
from lib.store import history as hs

if TYPE_CHECKING:
    import openai

ABLATION, REJUDGE = "ablation", "rejudge"
CHAT: Final = "/v1/chat/completions"


def client_for(base_url: str | None, api_key: str | None, *, timeout: float = 120.0) -> openai.OpenAI:
    """The SDK client for the batch endpoints (from the operator's settings only). The SDK is imported here, not
    with the module: the dashboard's pages import this module, and the SDK costs 0.4 s to import."""
    import openai

    return openai.OpenAI(api_key=api_key or "not-needed", base_url=base_url, timeout=timeout, max_retries=3)


# -- submit ---------------------------------------------------------------------------------------
def _lines(requests: list[JudgeRequest], endpoint: str) -> bytes:
    out = io.StringIO()
    for r in requests:
        mode = BOOK.first(endpoint, r.model, shape=r.shape, start=JSON_SCHEMA)
        out.write(json.dumps({"custom_id": r.key, "method": "POST", "url": CHAT, "body": chat_body(r, mode)},
                             ensure_ascii=False) + "\n")
    return out.getvalue().encode("utf-8")


def submit(store: Store, client: openai.OpenAI, *, kind: str, spec: Any) -> BatchJob | None:
    """Send a job's uncached requests as one batch; None when the call cache already answers them all.

    Args:
        store: the run store (the call cache, and where the batch is recorded).
        client: from `client_for(settings.base_url, settings.api_key)`.
        kind: ABLATION (spec: an AblationSpec) or REJUDGE (spec: a RejudgeSpec).
    """
    if kind == ABLATION:
        requests, job_id = ablation_requests(store, spec), spec.ablation_id
    elif kind == REJUDGE:
        requests, job_id = rejudge_requests(store, spec), spec.series_id
    else:
        raise InputError(f"unknown batch job kind {kind!r}", field="kind")
    endpoint = normalise(spec.endpoint)
    _check_endpoint(client, endpoint)
    keys = [r.key for r in requests]
    held = hs.cached_keys(store, keys) | bs.answered_keys(store, keys)   # in the cache, or in a batch's replies
    requests = [r for r in requests if r.key not in held]
    if not requests:
        return None
    uploaded = client.files.create(file=("evaldrift-batch.jsonl", _lines(requests, endpoint)), purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint=CHAT, completion_window="24h",
                                  metadata={"evaldrift_job": job_id})
    frame = pd.DataFrame({"key": [r.key for r in requests], "request": [r.to_json() for r in requests],
                          "items": [r.shape.items if r.shape else 0 for r in requests],
                          "labels": [json.dumps(list(r.shape.labels) if r.shape else []) for r in requests]})
    bs.add_job(store, {"batch_id": batch.id, "kind": kind, "job_id": job_id, "spec": spec.to_dict(),
                       "model": spec.judge, "endpoint": endpoint, "status": batch.status, "total": len(requests),
                       "input_file_id": uploaded.id}, frame)
    return load(store, batch.id)


def _check_endpoint(client: openai.OpenAI, endpoint: str) -> None:
    if normalise(str(client.base_url)) != endpoint:
        raise InputError(f"the job's judge lives at {endpoint}, but the settings point at "
                         f"{normalise(str(client.base_url))}: set OPENAI_BASE_URL to the job's endpoint",
                         field="endpoint")


# -- poll and collect -------------------------------------------------------------------------------
def poll(store: Store, client: openai.OpenAI, batch_id: str) -> BatchJob:
    """Read the batch's status and counts from the server; collect its files once it has ended."""
    job = load(store, batch_id)
    _check_endpoint(client, job.endpoint)
    if job.collected:
        return job
    batch = client.batches.retrieve(batch_id)
    counts = batch.request_counts
    bs.update_job(store, batch_id, status=batch.status, completed=counts.completed if counts else 0,
                  failed=counts.failed if counts else 0, output_file_id=batch.output_file_id,
                  error_file_id=batch.error_file_id)
    if batch.status in ENDED:
        _collect(store, client, batch_id, batch.output_file_id, batch.error_file_id)
    return load(store, batch_id)


def _read(client: openai.OpenAI, file_id: str | None) -> list[dict[str, Any]]:
    if not file_id:
        return []
    out = []
    for line in client.files.content(file_id).text.splitlines():
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue   # an unreadable line names no request: its request is reported as unanswered
    return out


def _outcome(entry: dict[str, Any], items: int, labels: list[str]) -> tuple[Any, str]:
    """(the reply, '') for a readable answer; (None, why) for a fault."""
    response = entry.get("response") or {}
    status = response.get("status_code")
    if entry.get("error") or status != 200:
        error = entry.get("error") or (response.get("body") or {}).get("error") or {}
        why = error.get("code") or error.get("message") or "no reason given"
        return None, f"batch line failed ({status or 'no response'}: {why})"
    try:
        reply = reply_of(response.get("body"))
        parse_verdicts(reply.text, [str(i) for i in range(items)], (labels[0], labels[1]))
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        return None, f"unreadable reply in the batch output: {exc}"
    return reply, ""


def _collect(store: Store, client: openai.OpenAI, batch_id: str, output_id: str | None,
             error_id: str | None) -> None:
    entries = {str(e.get("custom_id")): e for e in _read(client, error_id) + _read(client, output_id)}
    status = str(bs.job(store, batch_id)["status"])  # type: ignore[index]
    faults: dict[str, str] = {}
    rows = []
    for key, _, items, labels_json in bs.requests(store, batch_id):
        labels = json.loads(labels_json)
        entry = entries.get(key)
        if entry is None:
            faults[key] = f"not answered by the batch ({status})"
            continue
        reply, why = _outcome(entry, items, labels)
        if reply is None:
            faults[key] = why
            continue
        rows.append((key, reply.text, reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.fingerprint))
    bs.add_replies(store, batch_id, rows)
    bs.add_faults(store, batch_id, faults)
    bs.update_job(store, batch_id, collected=True, replies=len(rows))


def cancel(store: Store, client: openai.OpenAI, batch_id: str) -> BatchJob:
    """Ask the server to cancel the batch (what it answered before cancelling is collected as usual)."""
    job = load(store, batch_id)
    _check_endpoint(client, job.endpoint)
    if not job.ended:
        client.batches.cancel(batch_id)
    return poll(store, client, batch_id)


# -- finish ------------------------------------------------------------------------------------------
class BatchAnswers:
    """A judge that answers with a batch's replies, and asks the live judge what the batch did not answer.

    A reply from the batch counts as the call it was (one call, its tokens), so a job run with it stores
    the same results, usage and call cache as a live run.
    """

    cacheable = True

    def __init__(self, live: Judge, replies: dict[str, JudgeReply]) -> None:
        self.live = live
        self.model = live.model
        self.endpoint = judge_endpoint(live)
        self.concurrency = live.concurrency
        self._replies = replies

    def complete(self, request: JudgeRequest) -> JudgeReply:
        reply = self._replies.get(request.key)
        return reply if reply is not None else self.live.complete(request)


def finish(store: Store, batch_id: str, judge: Judge) -> object:
    """Run the collected job with the live judge: the batch's replies come from the cache, faults are asked live.

    Returns:
        The ablation's result or the re-judged series (None when stopped).

    Raises:
        InputError: the batch has not been collected yet, or the judge is not the job's.
    """
    from lib.diagnosis.ablation import AblationSpec, run_ablation
    from lib.diagnosis.rejudge import RejudgeSpec, run_rejudge

    job = load(store, batch_id)
    if not job.collected:
        raise InputError(f"batch {batch_id} is {job.status}: poll it until it has ended", field="batch")
    if judge.model != job.model or normalise(judge_endpoint(judge)) != job.endpoint:
        raise InputError(f"batch {batch_id} was judged by {job.model} at {job.endpoint}; finish it with that judge",
                         field="judge")
    spec = bs.job(store, batch_id)["spec"]  # type: ignore[index]
    answers = BatchAnswers(judge, {k: JudgeReply(text, Usage(p, c), fp)
                                   for k, text, p, c, fp in bs.replies(store, batch_id)})
    if job.kind == ABLATION:
        out: object = run_ablation(store, AblationSpec.from_dict(spec), answers)  # type: ignore[arg-type]
    else:
        out = run_rejudge(store, RejudgeSpec.from_dict(spec), answers)  # type: ignore[arg-type]
    if out is not None:
        bs.update_job(store, batch_id, finished=True)
    return out
