"""A judge that changes behind its name: the offline judge's verdicts, with a different grading rule on a share of
items once `share` is set (issue 45, A3).

`DriftingResponder` answers a chat.completions body (the loopback server's responder) the way the offline judge
answers the same messages, with seeded per-call noise (`noise`: each item's verdict flips with that probability,
drawn from the request's seed, as a model sampling at temperature > 0 would), and, once `share` > 0, the verdict
reversed on the items whose hash (the planted rule's salt, the prompt, the item number) falls below `share`: the
same items every night, the change a new snapshot under the same name makes on part of the items.
`ResponderJudge` asks the same responder in this process, for sweeps too long for HTTP (the benchmark); the
tests ask it through the loopback server and the real openai SDK.
"""

from __future__ import annotations

import hashlib
import json

from lib.core.calls import JudgeReply, JudgeRequest, Message, Usage
from lib.core.metrics import METRIC_NAMES, get_metric
from lib.judging import OfflineJudge

_OPPOSITE = {w: pair[1 - i] for m in METRIC_NAMES for pair in (get_metric(m).labels,) for i, w in enumerate(pair)}


def _unit(*parts: object) -> float:
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


class DriftingResponder:
    """The offline judge with seeded noise, and a planted rule change on `share` of the items (0: none)."""

    def __init__(self, *, noise: float = 0.0, share: float = 0.0, salt: str = "rule-b") -> None:
        self.noise = noise
        self.share = share
        self.salt = salt
        self._judge = OfflineJudge(noise=noise)

    def changed(self, prompt: str, item: int) -> bool:
        """Does the planted rule reverse this item's verdict?"""
        return _unit(self.salt, prompt, item) < self.share

    def reply(self, messages: tuple[Message, ...], seed: int | None) -> str:
        text = self._judge.complete(JudgeRequest(self._judge.model, messages, 0.0, seed)).text
        if not self.share:
            return text
        prompt = messages[-1].content
        data = json.loads(text)
        for v in data["verdicts"]:
            if self.changed(prompt, int(v["item"])):
                v["verdict"] = _OPPOSITE[v["verdict"]]
        return json.dumps(data, ensure_ascii=False)

    def __call__(self, body: dict) -> str:
        messages = tuple(Message(m["role"], m["content"]) for m in body["messages"])
        return self.reply(messages, body.get("seed"))


class ResponderJudge:
    """A cacheable judge that asks a DriftingResponder in this process (no HTTP): what the loopback judge says."""

    cacheable = True
    concurrency = 1

    def __init__(self, responder: DriftingResponder, model: str = "judge-x",
                 endpoint: str = "http://127.0.0.1:1/v1") -> None:
        self.responder = responder
        self.model = model
        self.endpoint = endpoint

    def complete(self, request: JudgeRequest) -> JudgeReply:
        return JudgeReply(text=self.responder.reply(request.messages, request.seed), usage=Usage(1, 1),
                          served_model=self.model)
