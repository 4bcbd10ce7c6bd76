"""Real receivers on loopback for the watcher's tests: an HTTP server taking Apprise's JSON posts and Slack-format
webhooks (Mattermost's incoming webhooks take Slack's payload), and an SMTP server (aiosmtpd) taking its email.

The HTTP receiver can answer 500 for its first N posts (a channel that fails, then recovers), or hold each post
for a while before answering (so a test can kill a watcher mid-send).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Post:
    path: str
    body: dict


@dataclass
class HttpReceiver:
    """What a loopback webhook received; `fail_first` posts answered 500 (and not kept), each post kept, then held
    `hold` seconds before its answer."""

    port: int = 0
    fail_first: int = 0
    hold: float = 0.0
    posts: list[Post] = field(default_factory=list)
    refused: int = 0
    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)   # ends every hold at once

    def json_url(self, path: str = "/alerts") -> str:
        return f"json://127.0.0.1:{self.port}{path}"

    def slack_url(self, token: str = "abc123") -> str:
        """A Slack-format incoming webhook (Apprise's Mattermost plugin posts Slack's `{"text": ...}` payload to
        http://host:port/hooks/<token>; Apprise's own slack:// always posts to hooks.slack.com)."""
        return f"mmost://127.0.0.1:{self.port}/{token}"

    def texts(self) -> list[str]:
        """The message of each accepted post as a person reads it: JSON's title and message, Slack's text."""
        return [f"{p.body['title']}\n{p.body.get('message', '')}" if "title" in p.body else p.body.get("text", "")
                for p in self.posts]


@contextmanager
def http_receiver(*, fail_first: int = 0, hold: float = 0.0) -> Iterator[HttpReceiver]:
    """A webhook receiver on 127.0.0.1 (a free port), stopped after."""
    rec = HttpReceiver(fail_first=fail_first, hold=hold)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:   # a post is received (kept) before it is held and answered: a sender killed meanwhile
                fail = rec.refused < rec.fail_first   # has delivered it without knowing
                if fail:
                    rec.refused += 1
                else:
                    rec.posts.append(Post(self.path, json.loads(raw or b"{}")))
            rec.arrived.set()
            if rec.hold:
                rec.release.wait(rec.hold)
            self.send_response(500 if fail else 200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    rec.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield rec
    finally:
        rec.release.set()
        server.shutdown()
        server.server_close()


@dataclass
class SmtpReceiver:
    port: int = 0
    messages: list[Message] = field(default_factory=list)

    def url(self) -> str:
        return (f"mailto://127.0.0.1:{self.port}?from=evaldrift@example.test&to=team@example.test"
                "&mode=insecure&format=html")


@contextmanager
def smtp_receiver() -> Iterator[SmtpReceiver]:
    """A real SMTP server (aiosmtpd) on 127.0.0.1 keeping every message it is given."""
    import socket

    from aiosmtpd.controller import Controller

    rec = SmtpReceiver()

    class Handler:
        async def handle_DATA(self, server, session, envelope) -> str:
            rec.messages.append(message_from_bytes(envelope.content))
            return "250 OK"

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        rec.port = s.getsockname()[1]
    controller = Controller(Handler(), hostname="127.0.0.1", port=rec.port)
    controller.start()
    try:
        yield rec
    finally:
        controller.stop()
