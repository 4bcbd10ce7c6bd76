"""Streamlit glue for recording over a run id: the warning and the explicit choice, and the replaced runs.

The rules live in lib.app.replacing; this module lays the widgets out. Run
ids and reasons are stored text: escaped wherever Streamlit reads Markdown.
"""

from __future__ import annotations

import streamlit as st

from lib.app import gate, replacing
from lib.app.ui import Context, load_settings
from lib.core.errors import EvaldriftError
from lib.presentation.report import md_escape as md


def replace_choice(ctx: Context, run_id: str, *, key: str) -> tuple[replacing.RecordChoice, bool]:
    """Say what recording `run_id` would replace and ask; returns the choice and whether the user confirmed."""
    choice = replacing.record_choice(ctx.store, run_id, user=ctx.user, settings=load_settings(),
                                     login=gate.login_configured())
    if choice.existing is None:
        return choice, False
    st.warning(md(choice.warning()), icon=":material/warning:")
    if not choice.allowed:
        st.info(replacing.NOT_ALLOWED)
        return choice, False
    confirmed = st.checkbox(f"Replace run {md(run_id)} (the current copy is kept and can be restored)",
                            value=False, key=key)
    return choice, confirmed


def replaced_runs(ctx: Context, *, key: str) -> None:
    """The replaced runs kept in this database, with a Restore button (launchers only); nothing when none."""
    said = st.session_state.pop(f"{key}_said", None)
    if said:
        st.success(md(said))
    kept = ctx.store.archived_runs()
    if not kept:
        return
    with st.expander(f"Replaced runs ({len(kept)} kept)"):
        for entry in kept:
            st.text(replacing.archive_label(entry))   # plain text: run ids and reasons are stored text
        labels = {a.archive_id: replacing.archive_label(a) for a in kept}
        pick = st.selectbox("Copy to restore", list(labels), format_func=labels.__getitem__, key=f"{key}_pick")
        allowed = replacing.access.may_replace(ctx.user, load_settings(), login=gate.login_configured())
        if not allowed:
            st.caption(replacing.NOT_ALLOWED.replace("replace a run; pick a new run id", "restore a replaced run"))
        if st.button("Restore this copy", key=f"{key}_go", disabled=bool(ctx.frozen) or not allowed,
                     help=ctx.frozen):
            try:
                said = replacing.restore(ctx.store, pick, user=ctx.user, settings=load_settings(),
                                         login=gate.login_configured())
            except EvaldriftError as exc:
                st.error(md(str(exc)))
            else:
                st.session_state[f"{key}_said"] = said
                st.rerun()   # the list above shows the restored state


def check_record(ctx: Context, run_id: str, *, confirmed: bool) -> None:
    """The page's last check before recording over `run_id` (lib.app.replacing.check_record, with the page's user).

    Raises:
        InputError: the run id is stored and the user did not tick the box, or may not replace it.
    """
    replacing.check_record(ctx.store, run_id, confirmed=confirmed, user=ctx.user, settings=load_settings(),
                           login=gate.login_configured())
