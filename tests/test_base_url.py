"""The operator's OPENAI_BASE_URL (issue 23 item 10): credentials or a query string refused with a clear message,
a bad port or an IPv6 address out of brackets a clear error, never a traceback; the key always goes as Bearer."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lib.core.errors import InputError
from lib.core.settings import load
from tests.conftest import offline_responder
from tests.support.cli import run_cli
from tests.support.openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "examples" / "kettle_faq.jsonl"

BAD = [
    ("http://judge-user:s3cret-pw@127.0.0.1:{port}/v1", "must not carry credentials"),
    ("http://127.0.0.1:{port}/v1?key=s3cret-pw", "must not carry a query string"),
    ("http://127.0.0.1:{port}/v1#s3cret-pw", "must not carry a query string or fragment"),
    ("http://127.0.0.1:99999/v1", "Port out of range"),
    ("http://127.0.0.1:eighty/v1", "a port is a number from 1 to 65535"),
    ("http://127.0.0.1:0/v1", "a port is a number from 1 to 65535"),
    ("http://::1:8000/v1", "an IPv6 address goes in brackets"),
    ("http://[::1:8000/v1", "Invalid IPv6 URL"),
    ("127.0.0.1:8000/v1", "must be an http:// or https:// URL with a host"),
]


@pytest.mark.parametrize(("url", "message"), BAD)
def test_a_base_url_that_cannot_be_used_as_given_is_refused_by_name(url: str, message: str) -> None:
    with pytest.raises(InputError, match="OPENAI_BASE_URL") as err:
        load(environ={"OPENAI_BASE_URL": url.format(port=8000)})
    assert message in str(err.value)
    assert "s3cret" not in str(err.value)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1", "https://api.example.com/v1/", "http://[::1]:8000/v1",
                                 "HTTP://LOCALHOST/v1"])
def test_a_plain_base_url_is_taken_as_given(url: str) -> None:
    assert load(environ={"OPENAI_BASE_URL": url}).base_url == url


def score(base_url: str, db: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="sk-operator-key", EVALDRIFT_JUDGE_MODEL="team-model")
    return run_cli("score", "--db", db, EXAMPLE, "--run-id", "r1", "--metrics", "faithfulness", "--judge", "openai",
                   env=env)


def test_the_cli_refuses_a_bad_base_url_in_one_line_and_sends_the_key_as_bearer(tmp_path: Path) -> None:
    with OpenAIServer(offline_responder) as server:
        port = server.base_url.split(":")[2].split("/")[0]
        for url, message in BAD:
            proc = score(url.format(port=port), tmp_path / "e.duckdb")
            assert proc.returncode == 2, (url, proc.stderr)
            assert "Traceback" not in proc.stderr and message in proc.stderr, (url, proc.stderr)
            assert len(proc.stderr.strip().splitlines()) == 1 and "s3cret" not in proc.stderr
        assert server.n_calls == 0                          # nothing reached the judge with a refused URL
        proc = score(server.base_url, tmp_path / "e.duckdb")
        assert proc.returncode == 0, proc.stderr
        sent = {next(v for k, v in h.items() if k.lower() == "authorization") for h in server.headers_seen}
        assert sent == {"Bearer sk-operator-key"}


def test_the_dashboard_says_which_setting_is_wrong_without_a_traceback(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALDRIFT_DB", str(tmp_path / "e.duckdb"))
    monkeypatch.setenv("OPENAI_BASE_URL", "http://judge-user:s3cret-pw@127.0.0.1:8000/v1")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    [error] = [e.value.replace("\\", "").replace("\u2060", "") for e in at.error]   # as read: escapes rendered
    assert "OPENAI_BASE_URL" in error and "must not carry credentials" in error and "s3cret" not in error
    assert json.dumps([m.value for m in at.markdown]).count("s3cret") == 0
