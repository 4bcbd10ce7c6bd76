"""Who may see the pages and who may spend money on a paid judge: allow-lists of users and e-mail domains.

Pure rules over the signed-in user's e-mail (from the OIDC identity token)
and the operator's settings; lib.app.gate applies them to Streamlit's login.
An entry is an e-mail address (alice@example.com) or a domain (@example.com);
comparison ignores case. An empty list allows every signed-in user. An
address is parsed strictly (one @, a local part and a domain, no spaces) and a
domain is compared whole; the token's email counts only when the provider
does not say it is unverified (`identity`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from lib.app import trust
from lib.core.endpoints import OFFLINE
from lib.core.settings import Settings
from lib.diagnosis.ablation import AblationSpec

_ADDRESS = re.compile(r"[^@\s]+@[^@\s]+")   # exactly one @, something on each side, no white space


def matches(email: str | None, entries: Sequence[str]) -> bool:
    """True when `email` is one address on the list, or its whole domain is (as @domain).

    `mallory@evil.example@team.example` is no address at all (two @), so it matches nothing.
    """
    if not email or not _ADDRESS.fullmatch(email.strip()):
        return False
    email = email.strip().lower()
    domain = "@" + email.split("@")[1]
    return any(e.strip().lower() in (email, domain) for e in entries)


def _verified(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def identity(claims: Mapping[str, object], settings: Settings) -> str | None:
    """The signed-in user's address from the identity token's claims, or None when there is none to trust.

    With EVALDRIFT_IDENTITY_CLAIM unset, the address is the `email` claim, trusted only when the provider
    sends `email_verified` true: absent or null is no verification (a provider that verifies without saying
    so is named by the operator: EVALDRIFT_IDENTITY_CLAIM=email). With the setting, its claim is read; an
    `email` the provider marks `email_verified` as anything but true is still not trusted.
    """
    claim = settings.identity_claim or "email"
    value = claims.get(claim)
    if not isinstance(value, str) or not value.strip():
        return None
    if unverified(claims, settings):
        return None
    return value.strip()


def unverified(claims: Mapping[str, object], settings: Settings) -> bool:
    """True when the token carries an e-mail address the provider does not vouch for (as identity() reads it)."""
    if (settings.identity_claim or "email") != "email" or not claims.get("email"):
        return False
    said = "email_verified" in claims and claims["email_verified"] is not None
    if settings.identity_claim is None and not said:
        return True   # nothing said: not trusted unless the operator named the claim
    return said and not _verified(claims["email_verified"])


def may_sign_in(email: str | None, settings: Settings) -> bool:
    """With login on: is this signed-in user allowed to see the pages?"""
    return not settings.allowed_users or matches(email, settings.allowed_users)


def may_launch(email: str | None, endpoint: str, settings: Settings, *, login: bool) -> bool:
    """May this user launch an ablation on `endpoint`? The offline judge costs nothing: always.

    Without login there is no user to tell apart: whoever reaches the page (by default, only this
    machine) may launch. With login, EVALDRIFT_ABLATION_USERS (when set) names who may launch on a paid judge.
    """
    if endpoint == OFFLINE or not login or not settings.ablation_users:
        return True
    return matches(email, settings.ablation_users)


def may_stop(email: str | None, endpoint: str | None, settings: Settings, *, login: bool) -> bool:
    """May this user stop a running job on `endpoint`? Whoever may launch it there: a stop wastes nothing kept,
    but it halts a colleague's paid work. A job whose judge cannot be read is stopped by the listed users only."""
    if endpoint is None:
        return may_replace(email, settings, login=login)
    return may_launch(email, endpoint, settings, login=login)


STOP_REFUSED = ("Only the people this server's operator lists in EVALDRIFT_ABLATION_USERS may stop a job on a "
                "paid judge; it keeps running.")


def may_replace(email: str | None, settings: Settings, *, login: bool) -> bool:
    """May this user record over (or restore) a stored run? The people who may launch on a paid judge."""
    return not login or not settings.ablation_users or matches(email, settings.ablation_users)


def sees_server_paths(*, login: bool) -> bool:
    """May the viewer read this server's file paths (the database, the inbox)? Only its operator.

    Without login the dashboard serves this machine only (the shipped config), so whoever reads it is the
    operator; with login on, viewers are other people: they see names, and operators read paths on the server.
    """
    return not login


def may_run(email: str | None, spec: AblationSpec, settings: Settings, *, login: bool) -> bool:
    """May this user launch `spec`? Checked against the judge it will actually call, never a form's choice.

    An external scorer calls the operator's endpoint (Ragas: a model), so it counts as paid.
    """
    return may_launch(email, endpoint_of_spec(spec, settings), settings, login=login)


def endpoint_of_spec(spec: AblationSpec, settings: Settings) -> str:
    """Where `spec` calls: an external scorer calls the operator's endpoint; a judge runs where lib.app.trust says."""
    return "external scorer" if spec.scorer is not None else trust.server_endpoint(spec, settings)
