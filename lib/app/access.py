"""Who may see the pages and who may spend money on a paid judge: allow-lists of users and e-mail domains.

Pure rules over the signed-in user's e-mail (from the OIDC identity token)
and the operator's settings; lib.app.gate applies them to Streamlit's login.
An entry is an e-mail address (alice@example.com) or a domain (@example.com);
comparison ignores case. An empty list allows every signed-in user.
"""

from __future__ import annotations

from collections.abc import Sequence

from lib.core.endpoints import OFFLINE
from lib.core.settings import Settings


def matches(email: str | None, entries: Sequence[str]) -> bool:
    """True when `email` is on the list (an address, or its domain as @domain)."""
    if not email or "@" not in email:
        return False
    email = email.strip().lower()
    domain = "@" + email.rsplit("@", 1)[1]
    return any(e.strip().lower() in (email, domain) for e in entries)


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


def may_replace(email: str | None, settings: Settings, *, login: bool) -> bool:
    """May this user record over (or restore) a stored run? The people who may launch on a paid judge."""
    return not login or not settings.ablation_users or matches(email, settings.ablation_users)
