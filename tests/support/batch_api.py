"""The OpenAI Files and Batches endpoints for the loopback server (tests/support/openai_server.py).

Enough of the Batch API for the real ``openai`` SDK: ``POST /v1/files``
(multipart upload), ``GET /v1/files/{id}`` and ``/content``, ``POST
/v1/batches``, ``GET /v1/batches/{id}`` and ``POST /v1/batches/{id}/cancel``.
A batch is worked through in a thread, line by line, by the server's own
responder; its status moves validating -> in_progress -> finalizing ->
completed (or expired, cancelled), with request counts as it goes. Output and
error files are JSONL in the Batch API's format.

Faults: ``fail_lines`` (line numbers answered with a 500 in the error file),
``garble_lines`` (a 200 whose content is not the verdicts), ``expire_after``
(lines done before the batch expires; the rest go to the error file as
expired), ``step`` (seconds per line) and ``gate`` (clear it to hold the work
in progress).
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import threading
import time
import uuid
from typing import Any

__all__ = ["BatchAPI"]


def _now() -> int:
    return int(time.time())


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a multipart/form-data body: name -> (filename, bytes)."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    out = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        out[str(name)] = (part.get_filename(), part.get_payload(decode=True) or b"")
    return out


class BatchAPI:
    """The files and batches of one loopback server."""

    def __init__(self, owner: Any) -> None:
        self.owner = owner
        self.lock = threading.Lock()
        self.files: dict[str, dict[str, Any]] = {}
        self.contents: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.fail_lines: set[int] = set()
        self.garble_lines: set[int] = set()
        self.expire_after: int | None = None
        self.step = 0.0
        self.gate = threading.Event()
        self.gate.set()
        self.lines_answered = 0
        self.created = 0

    # -- routing (called by the handler) ----------------------------------------------------
    def get(self, handler: Any, path: str) -> None:
        parts = path.strip("/").split("/")   # v1, files|batches, id, [content]
        with self.lock:
            if parts[1] == "files" and len(parts) == 4 and parts[3] == "content" and parts[2] in self.contents:
                self._send_bytes(handler, self.contents[parts[2]])
                return
            if parts[1] == "files" and len(parts) == 3 and parts[2] in self.files:
                handler._send_json(200, self.files[parts[2]])
                return
            if parts[1] == "batches" and len(parts) == 3 and parts[2] in self.batches:
                handler._send_json(200, dict(self.batches[parts[2]]))
                return
        handler._not_found()

    def post(self, handler: Any, path: str, raw: bytes) -> None:
        parts = path.strip("/").split("/")
        if parts[1:] == ["files"]:
            fields = _multipart(handler.headers.get("Content-Type", ""), raw)
            name, data = fields.get("file", (None, b""))
            purpose = fields.get("purpose", (None, b""))[1].decode()
            handler._send_json(200, self._add_file(name or "upload.jsonl", data, purpose))
            return
        if parts[1:] == ["batches"]:
            body = json.loads(raw or b"{}")
            with self.lock:
                known = body.get("input_file_id") in self.contents
            if not known:
                handler._send_error_json(400, "no such input file", "invalid_request_error")
                return
            handler._send_json(200, self._create(body))
            return
        if len(parts) == 4 and parts[1] == "batches" and parts[3] == "cancel":
            with self.lock:
                batch = self.batches.get(parts[2])
                if batch is not None and batch["status"] in ("validating", "in_progress"):
                    batch.update(status="cancelling", cancelling_at=_now())
            if batch is None:
                handler._not_found()
            else:
                handler._send_json(200, dict(batch))
            return
        handler._not_found()

    @staticmethod
    def _send_bytes(handler: Any, data: bytes) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/octet-stream")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
        if handler.protocol_version == "HTTP/1.0":
            handler.close_connection = True

    # -- files and batches ----------------------------------------------------------------------
    def _add_file(self, name: str, data: bytes, purpose: str) -> dict[str, Any]:
        fid = f"file-{uuid.uuid4().hex[:16]}"
        obj = {"id": fid, "object": "file", "bytes": len(data), "created_at": _now(), "filename": name,
               "purpose": purpose, "status": "processed"}
        with self.lock:
            self.files[fid] = obj
            self.contents[fid] = data
        return obj

    def _create(self, body: dict[str, Any]) -> dict[str, Any]:
        bid = f"batch_{uuid.uuid4().hex[:16]}"
        batch = {"id": bid, "object": "batch", "endpoint": body.get("endpoint"), "errors": None,
                 "input_file_id": body["input_file_id"], "completion_window": body.get("completion_window", "24h"),
                 "status": "validating", "output_file_id": None, "error_file_id": None, "created_at": _now(),
                 "in_progress_at": None, "expires_at": _now() + 86400, "finalizing_at": None, "completed_at": None,
                 "failed_at": None, "expired_at": None, "cancelling_at": None, "cancelled_at": None,
                 "request_counts": {"total": 0, "completed": 0, "failed": 0}, "metadata": body.get("metadata")}
        with self.lock:
            self.batches[bid] = batch
            self.created += 1
        threading.Thread(target=self._work, args=(bid,), daemon=True, name=f"batch:{bid}").start()
        return dict(batch)

    def _work(self, bid: str) -> None:
        with self.lock:
            batch = self.batches[bid]
            lines = [json.loads(x) for x in self.contents[batch["input_file_id"]].decode().splitlines() if x.strip()]
            batch.update(status="in_progress", in_progress_at=_now(),
                         request_counts={"total": len(lines), "completed": 0, "failed": 0})
        out: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for i, line in enumerate(lines):
            self.gate.wait()
            if self.step:
                time.sleep(self.step)
            with self.lock:
                status = batch["status"]
            if status == "cancelling" or (self.expire_after is not None and i >= self.expire_after):
                code = "batch_cancelled" if status == "cancelling" else "batch_expired"
                errors += [{"id": f"batch_req_{uuid.uuid4().hex[:12]}", "custom_id": x["custom_id"],
                            "response": None, "error": {"code": code, "message": f"not done: {code}"}}
                           for x in lines[i:]]
                break
            entry = self._answer(i, line)
            (out if entry["response"]["status_code"] == 200 else errors).append(entry)
            with self.lock:
                counts = batch["request_counts"]
                counts["completed" if entry["response"]["status_code"] == 200 else "failed"] += 1
        self._finalise(batch, out, errors)

    def _answer(self, i: int, line: dict[str, Any]) -> dict[str, Any]:
        rid = f"batch_req_{uuid.uuid4().hex[:12]}"
        if i in self.fail_lines:
            return {"id": rid, "custom_id": line["custom_id"], "error": None,
                    "response": {"status_code": 500, "request_id": rid,
                                 "body": {"error": {"message": "scripted batch line failure", "type": "server_error"}}}}
        body = line["body"]
        text = "these are not the verdicts" if i in self.garble_lines else self.owner.responder(body)
        with self.lock:
            self.lines_answered += 1
        words = sum(len(str(m.get("content") or "").split()) for m in body.get("messages", []))
        completion = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": _now(),
                      "model": body.get("model"), "system_fingerprint": self.owner.model_fingerprint,
                      "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                   "message": {"role": "assistant", "content": text, "refusal": None}}],
                      "usage": {"prompt_tokens": words, "completion_tokens": len(text.split()),
                                "total_tokens": words + len(text.split())}}
        return {"id": rid, "custom_id": line["custom_id"], "error": None,
                "response": {"status_code": 200, "request_id": rid, "body": completion}}

    def _finalise(self, batch: dict[str, Any], out: list, errors: list) -> None:
        with self.lock:
            batch.update(status="finalizing", finalizing_at=_now())
        output = self._add_file("output.jsonl", "".join(json.dumps(x) + "\n" for x in out).encode(), "batch_output")
        error = (self._add_file("errors.jsonl", "".join(json.dumps(x) + "\n" for x in errors).encode(),
                                "batch_output") if errors else None)
        with self.lock:
            expired = any((e.get("error") or {}).get("code") == "batch_expired" for e in errors)
            cancelled = batch["status"] == "cancelling" or any(
                (e.get("error") or {}).get("code") == "batch_cancelled" for e in errors)
            final = "cancelled" if cancelled else "expired" if expired else "completed"
            batch.update(status=final, output_file_id=output["id"] if out else None,
                         error_file_id=error["id"] if error else None, **{f"{final}_at": _now()})
