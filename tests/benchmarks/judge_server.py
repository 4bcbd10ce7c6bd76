"""The loopback OpenAI-compatible server in its own process, answering as the offline judge would.

It runs in a child process so its work (parsing, deciding, sleeping the
latency) does not share the benchmark's interpreter lock with the client under
measurement, as a real model server would not. It answers two kinds of prompt:

- ours (evaldrift's templates): exactly what lib.judging.OfflineJudge answers;
- Ragas' faithfulness prompts (statement generation, then NLI over the
  statements), recognised by their text: the statements are the answer's
  sentences, and each verdict is the offline judge's decision for that
  statement against the context, so both tools are scored by the same rule;
- Ragas' context recall prompt (classify each statement of the reference as
  attributable to the context or not): the reference's sentences, each
  decided against the context by the same rule.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import time
from multiprocessing.connection import Connection

RAGAS_INPUT = "Now perform the same with the following input\ninput: "
RAGAS_STATEMENTS = "Break down each sentence into one or more fully understandable statements"
RAGAS_NLI = "judge the faithfulness of a series of statements"
RAGAS_RECALL = "classify if the statement can be attributed to the given context"


def _ragas_input(prompt: str) -> dict:
    tail = prompt[prompt.rindex(RAGAS_INPUT) + len(RAGAS_INPUT):]
    return json.loads(tail[: tail.rindex("\nOutput:")])


def _offline_verdicts(context: str, statements: list[str]) -> list[bool]:
    from lib.core.calls import JudgeRequest, Message
    from lib.judging import OfflineJudge

    items = "\n".join(f"ITEM {i}: {s}" for i, s in enumerate(statements, start=1))
    prompt = (f'CONTEXT:\n{context}\n\nCLAIMS:\n{items}\n\nVerdict words: "supported" or "unsupported".')
    reply = OfflineJudge().complete(JudgeRequest("offline-lexical-v2", (Message("user", prompt),)))
    return [v["verdict"] == "supported" for v in json.loads(reply.text)["verdicts"]]


def respond(body: dict) -> str:
    """The assistant content for one chat.completions request body."""
    from lib.core.calls import JudgeRequest, Message
    from lib.core.metrics import split_sentences
    from lib.judging import OfflineJudge

    messages = body["messages"]
    prompt = "\n\n".join(str(m.get("content") or "") for m in messages)
    if RAGAS_INPUT in prompt:
        data = _ragas_input(prompt)
        if RAGAS_STATEMENTS in prompt:
            return json.dumps({"statements": split_sentences(data["answer"])})
        if RAGAS_NLI in prompt:
            statements = data["statements"]
            labels = _offline_verdicts(data["context"], statements) if statements else []
            return json.dumps({"statements": [
                {"statement": s, "reason": "stated by the context" if ok else "not stated by the context",
                 "verdict": int(ok)} for s, ok in zip(statements, labels, strict=True)]})
        if RAGAS_RECALL in prompt:
            statements = split_sentences(data["answer"])   # Ragas hands the reference over as "answer"
            labels = _offline_verdicts(data["context"], statements) if statements else []
            return json.dumps({"classifications": [
                {"statement": s, "reason": "stated by the context" if ok else "not stated by the context",
                 "attributed": int(ok)} for s, ok in zip(statements, labels, strict=True)]})
        raise ValueError("an unknown Ragas prompt")
    judge = OfflineJudge()
    request = JudgeRequest(judge.model, tuple(Message(m["role"], m["content"]) for m in messages),
                           float(body.get("temperature") or 0.0), body.get("seed"))
    return judge.complete(request).text


def _serve(conn: Connection, latency: float) -> None:
    from tests.support.openai_server import OpenAIServer

    server = OpenAIServer(respond, latency=latency, keep_alive=True).start()
    conn.send(server.base_url)
    try:
        while True:
            command = conn.recv()
            if command == "count":
                conn.send(server.n_calls)
            elif command == "errors":
                conn.send([repr(e) for e in server.errors[:5]])
            elif command == "cpu":
                conn.send(time.process_time())
            else:
                break
    finally:
        server.stop()


class JudgeServer:
    """The server process; `with JudgeServer(latency=0.05) as srv: srv.base_url, srv.n_calls()`."""

    def __init__(self, *, latency: float) -> None:
        self.latency = latency
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, latency), daemon=True)
        self.base_url = ""

    def __enter__(self) -> JudgeServer:
        self._proc.start()
        if not self._conn.poll(60):
            raise RuntimeError("the judge server process did not start")
        self.base_url = self._conn.recv()
        return self

    def n_calls(self) -> int:
        self._conn.send("count")
        return int(self._conn.recv())

    def cpu(self) -> float:
        """The server process's CPU seconds so far (all its threads)."""
        self._conn.send("cpu")
        return float(self._conn.recv())

    def errors(self) -> list[str]:
        self._conn.send("errors")
        return list(self._conn.recv())

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self._conn.send("stop")
        self._proc.join(timeout=10)
        if self._proc.is_alive():
            self._proc.terminate()
