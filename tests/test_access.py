"""Who may sign in and who may launch a paid-judge ablation: one row per branch of lib.app.access."""

from __future__ import annotations

import pytest

from lib.app import access
from lib.core.settings import load

URL = "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(("email", "entries", "expected"), [
    ("alice@team.example", ["alice@team.example"], True),
    ("ALICE@Team.Example", ["alice@team.example"], True),       # case does not matter
    ("alice@team.example", ["@team.example"], True),            # a whole domain
    ("alice@team.example.evil", ["@team.example"], False),      # a domain is the whole domain
    ("mallory@elsewhere.example", ["@team.example", "alice@team.example"], False),
    ("alice", ["alice"], False),                                # no e-mail, no match
    (None, ["@team.example"], False),
    ("mallory@evil.example@team.example", ["@team.example"], False),   # two @: no address, no domain
    ("mallory@evil.example@team.example", ["@evil.example@team.example"], False),
    ("@team.example", ["@team.example"], False),                # no local part
    ("alice@", ["alice@"], False),                              # no domain
    ("al ice@team.example", ["@team.example"], False),          # white space inside
    (" alice@team.example ", ["@team.example"], True),          # around it: trimmed
    ("alice@sub.team.example", ["@team.example"], False),       # a sub-domain is another domain
])
def test_matches(email: str | None, entries: list[str], expected: bool) -> None:
    assert access.matches(email, entries) is expected


@pytest.mark.parametrize(("allowed", "email", "expected"), [
    ("", "anyone@anywhere.example", True),       # no list: every signed-in user
    ("@team.example", "bob@team.example", True),
    ("@team.example", "mallory@elsewhere.example", False),
])
def test_may_sign_in(allowed: str, email: str, expected: bool) -> None:
    assert access.may_sign_in(email, load(environ={"EVALDRIFT_ALLOWED_USERS": allowed})) is expected


@pytest.mark.parametrize(("launchers", "email", "endpoint", "login", "expected"), [
    ("alice@team.example", "bob@team.example", "offline", True, True),    # the offline judge costs nothing
    ("alice@team.example", "bob@team.example", URL, False, True),         # no login: no one to tell apart
    ("", "bob@team.example", URL, True, True),                           # no list: everyone signed in
    ("alice@team.example", "alice@team.example", URL, True, True),
    ("alice@team.example", "bob@team.example", URL, True, False),
    ("alice@team.example", None, URL, True, False),
])
def test_may_launch(launchers: str, email: str | None, endpoint: str, login: bool, expected: bool) -> None:
    settings = load(environ={"EVALDRIFT_ABLATION_USERS": launchers})
    assert access.may_launch(email, endpoint, settings, login=login) is expected


@pytest.mark.parametrize(("launchers", "email", "endpoint", "login", "expected"), [
    ("alice@team.example", "bob@team.example", "offline", True, True),    # an offline job: anyone may stop it
    ("alice@team.example", "bob@team.example", URL, False, True),         # no login: no one to tell apart
    ("", "bob@team.example", URL, True, True),                           # no list: everyone signed in
    ("alice@team.example", "alice@team.example", URL, True, True),        # a listed user stops a paid job
    ("alice@team.example", "bob@team.example", URL, True, False),         # a viewer never stops a paid job
    ("alice@team.example", "bob@team.example", None, True, False),        # judge unreadable: the listed only
    ("alice@team.example", "alice@team.example", None, True, True),
    ("alice@team.example", "bob@team.example", None, False, True),
])
def test_may_stop(launchers: str, email: str | None, endpoint: str | None, login: bool, expected: bool) -> None:
    """Stop was open to every viewer (noticed after issue 23): only those who may launch a job may stop it."""
    settings = load(environ={"EVALDRIFT_ABLATION_USERS": launchers})
    assert access.may_stop(email, endpoint, settings, login=login) is expected


def test_lists_come_from_the_environment_or_a_toml_list_in_secrets() -> None:
    s = load(environ={}, secrets={"EVALDRIFT_ALLOWED_USERS": ["@team.example", "eve@x.example"],
                                  "EVALDRIFT_SCORERS": "a.b:c, d:e"})
    assert s.allowed_users == ("@team.example", "eve@x.example")
    assert s.scorers == ("a.b:c", "d:e")


def test_the_shipped_streamlit_config_serves_this_machine_only_and_calls_no_metrics_url() -> None:
    import tomllib
    from pathlib import Path

    config = tomllib.loads((Path(__file__).resolve().parents[1] / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "localhost"
    assert config["browser"]["gatherUsageStats"] is False
    assert config["client"]["toolbarMode"] == "viewer"      # no Deploy button


@pytest.mark.parametrize(("claims", "claim", "expected"), [
    ({"email": "alice@team.example"}, "", None),                                         # no verification said
    ({"email": "ceo@team.example", "email_verified": None}, "", None),                   # null is no verification
    ({"email": "alice@team.example"}, "email", "alice@team.example"),                    # the operator vouches
    ({"email": "alice@team.example", "email_verified": None}, "email", "alice@team.example"),
    ({"email": "ceo@team.example", "email_verified": False}, "email", None),             # said false: never
    ({"email": "alice@team.example", "email_verified": True}, "", "alice@team.example"),
    ({"email": "alice@team.example", "email_verified": "true"}, "", "alice@team.example"),   # as some send it
    ({"email": "ceo@team.example", "email_verified": False}, "", None),                  # unverified: no identity
    ({"email": "ceo@team.example", "email_verified": "false"}, "", None),
    ({"email": "ceo@team.example", "email_verified": "yes"}, "", None),                  # only true is true
    ({"sub": "x"}, "", None),                                                            # no address at all
    ({"email": "ceo@team.example", "email_verified": False, "preferred_username": "alice@team.example"},
     "preferred_username", "alice@team.example"),                                        # another claim, named
    ({"email": "alice@team.example"}, "preferred_username", None),                       # the named claim is absent
])
def test_identity_trusts_only_a_verified_email_or_the_claim_the_operator_names(
        claims: dict, claim: str, expected: str | None) -> None:
    settings = load(environ={"EVALDRIFT_IDENTITY_CLAIM": claim})
    assert access.identity(claims, settings) == expected
    said = claims.get("email_verified")
    assert access.unverified(claims, settings) is (claim in ("", "email") and "email" in claims and (
        said not in (None, True, "true") or (claim == "" and said is None)))
