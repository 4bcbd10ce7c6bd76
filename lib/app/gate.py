"""Streamlit's own OIDC login in front of every page, when the operator configured an [auth] section.

app.py calls `require_user()` before st.navigation, so no page runs for a
visitor who is not signed in, or who is signed in but not on
EVALDRIFT_ALLOWED_USERS. Without an [auth] section nobody signs in, and the
shipped .streamlit/config.toml serves on localhost only.
"""

from __future__ import annotations

import streamlit as st

from lib.app import access
from lib.core import settings as settings_mod
from lib.core.settings import Settings
from lib.presentation.report import md_escape


def login_configured() -> bool:
    """True when .streamlit/secrets.toml has an [auth] section."""
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets file at all
        return False


def require_user(settings: Settings) -> str | None:
    """The signed-in user's e-mail, or None when login is off; stops the script for anyone not let in."""
    if not login_configured():
        return None
    if not st.user.is_logged_in:
        st.title("evaldrift")
        st.write("Sign in to see this team's evaluation runs.")
        if st.button("Sign in", type="primary", key="gate_login"):
            st.login()
        st.stop()
    email = current_email(settings)
    if email is None and access.unverified(st.user, settings):
        st.title("evaldrift")
        st.error("This account's e-mail address is not verified by your provider (it did not send email_verified "
                 "true), so it cannot be used to sign in here. Verify it with the provider, or ask this dashboard's "
                 "operator.")
        if st.button("Sign out", key="gate_logout"):
            st.logout()
        st.stop()
    if not access.may_sign_in(email, settings):
        st.title("evaldrift")
        st.error(f"{md_escape(email or 'This account')} is not on this dashboard's list of users. "
                 "Ask its operator to add you (EVALDRIFT_ALLOWED_USERS).")
        if st.button("Sign out", key="gate_logout"):
            st.logout()
        st.stop()
    return email


def current_email(settings: Settings | None = None) -> str | None:
    """The signed-in user's address (None when login is off, or the provider sent none it vouches for).

    Read from the claim EVALDRIFT_IDENTITY_CLAIM names; an unverified e-mail is none (lib.app.access.identity).
    """
    if not login_configured() or not st.user.is_logged_in:
        return None
    if settings is None:
        settings = settings_mod.load(secrets=dict(st.secrets))
    return access.identity(st.user, settings)


def show_user(email: str | None) -> None:
    """The signed-in user and a sign-out button, in the sidebar (nothing when login is off)."""
    if email is None and not login_configured():
        return
    with st.sidebar:
        st.caption(f"Signed in as {md_escape(email or 'an account without e-mail')}")
        if st.button("Sign out", key="gate_signout"):
            st.logout()
