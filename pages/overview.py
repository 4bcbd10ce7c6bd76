"""Overview: is any metric moving beyond the judge's noise right now, what could explain it, and is the
measurement itself healthy (canary, template lint, unattributed scores)?"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from lib.app import access, gate, loaders, ui, ui_history
from lib.core.formatting import signed
from lib.core.metrics import wiring_table
from lib.core.records import CANARY, MAIN
from lib.diagnosis import incidents, trends
from lib.intake import inbox
from lib.presentation import alerts, glossary, views

ctx = ui.sidebar()

CARD_WIDTH = 250   # px: a metric's name, its score and "within threshold" uncut
SPARK_HEIGHT = 40  # px
COLUMN_CONFIG = {
    "score": st.column_config.NumberColumn(format="%.3f"),
    "runs": st.column_config.NumberColumn("runs using it"),
    "in_latest_run": st.column_config.CheckboxColumn("used by the latest run"),
}


def show_rejected(rejections: list[inbox.Rejection]) -> None:
    """Hand-over files the inbox drain refused: named with their reason, as plain text."""
    if not rejections:
        return
    where = (ui.md_literal(" and ".join(dict.fromkeys(str(r.path.parent) for r in rejections)))
             if access.sees_server_paths(login=gate.login_configured())
             else "the inbox's rejected folder on the server")
    st.warning(f"{len(rejections)} run file(s) handed over through the inbox were refused and set aside in "
               f"{where}; fix each and record it again "
               "(`python -m lib record FILE`).", icon=":material/inbox:")
    st.dataframe(pd.DataFrame({"file": [r.path.name for r in rejections], "reason": [r.reason for r in rejections]}),
                 hide_index=True, key="overview_rejected")


# -- lib calls ---------------------------------------------------------------------------------
rejected = [r for folder in inbox.folders_drained(ctx.path) for r in inbox.rejected(folder)]
history = loaders.history(ctx.db_path, ctx.version, MAIN)
if history.empty:
    st.title("Overview")
    show_rejected(rejected)
    st.info(f"This database holds no runs yet. {ui.NO_RUNS_HINT}")
    st.stop()
cards = loaders.metric_cards(ctx.db_path, ctx.version, ui_history.version(ctx))
recent, earlier = views.recent_jumps(loaders.jumps(ctx.db_path, ctx.version))
canary = loaders.canary(ctx.db_path, ctx.version)
lint = loaders.lint(ctx.db_path, ctx.version)
summary = views.history_summary(history)
lint_summary = views.lint_summary(lint, summary.latest_run)
unattributed = pd.concat([views.unattributed(history),
                          views.unattributed(loaders.history(ctx.db_path, ctx.version, CANARY))])

# -- render ------------------------------------------------------------------------------------
st.title("Overview")
database = ctx.path if access.sees_server_paths(login=gate.login_configured()) else ctx.db_name
st.caption(f"{summary.n_runs} runs; latest {ui.md_literal(summary.latest_run)} at {summary.latest_at:%Y-%m-%d %H:%M}. "
           f"Database {ui.md_literal(database)} · judge for ablations {ui.md_literal(ctx.judge)}.")
show_rejected(rejected)

read_at = ui_history.panel_read_at(ctx)   # one version for the panel's loaders; a job ending mid-draw reruns it
evidence = loaders.jump_evidence(ctx.db_path, ctx.version, read_at)
sent = loaders.sent_alerts(ctx.db_path, ctx.version)
found, finished = loaders.incidents(ctx.db_path, read_at)
ui_history.incident_panel(ctx, loaders.standings(ctx.db_path, ctx.version, read_at), found,
                          loaders.jumps(ctx.db_path, ctx.version), evidence, announced=alerts.announced(sent),
                          series=finished)

# a wrapping row of fixed-width cards: five columns on a laptop screen cut the scores to "0.…"
cards_row = st.container(horizontal=True, wrap=True, gap="small", key="overview_cards")
for card in cards:
    # our own sparkline under the metric: st.metric's chart_data logs Vega "Infinite extent" warnings
    with cards_row, st.container(border=True, width=CARD_WIDTH, key=f"card_{card.metric}"):
        st.metric(
            card.metric,
            f"{card.score:.3f}" if card.score is not None else "—",
            signed(card.delta) if card.delta is not None else None,   # as the lead line writes it
            delta_color="normal" if card.beyond_noise else "off",
            delta_description=("beyond threshold" if card.beyond_noise else "within threshold"
                               if card.decided else "not decided: too few runs")
            if card.previous_run else "new instrument",
            help=(f"Latest run {ui.md_literal(card.run_id)}, judge {ui.md_literal(card.judge_model or 'unrecorded')}, "
                  f"n={card.n}, {card.n_failed} failed. Change against "
                  f"{ui.md_literal(card.previous_run or 'no earlier run')}, the last run measured with the same "
                  f"instrument. {trends.label(trends.RUN_SPREAD, card.noise_sd)}: {trends.HELP[trends.RUN_SPREAD]} "
                  f"{trends.label(trends.JUMP_THRESHOLD, card.threshold)}"
                  f"{f' ({card.basis})' if card.basis else ''}: {trends.HELP[trends.JUMP_THRESHOLD]} "
                  f"Sparkline: the last {len(card.spark)} runs."),
        )
        st.vega_lite_chart(views.sparkline_spec(card.spark), height=SPARK_HEIGHT, width="stretch",
                           key=f"spark_{card.metric}")
        if card.leak_note:   # a latest score measured by a template that reads a must-never-receive field
            st.caption(f":red[{ui.md_literal(card.leak_note)}]")

left, right = st.columns([3, 2], gap="large")
with left:
    st.subheader("Jumps beyond noise")
    if not recent:
        st.success("No run-to-run change exceeds the judge's noise band.")
    for j in recent:
        with st.container(border=True):
            arrow = "up" if j.delta > 0 else "down"
            known = evidence.get((j.metric, j.run_id))
            noisy = incidents.likely_noise(j, known)   # never with a lint finding, an instrument change or a LEAK
            said = incidents.reading(j, known)          # the latest evidence first
            alarming = known is not None and bool(known.reads_never or known.leak)
            colour = "gray" if noisy else "red" if j.ratio >= 2 or alarming else "orange"
            st.markdown(f":{colour}[**{ui.md_literal(j.metric)}** {arrow} "
                        f"{j.before:.3f} → {j.after:.3f} ({j.delta:+.3f})], {j.ratio:.1f}x the jump threshold "
                        f"±{j.threshold:.3f}, at {ui.md_literal(j.run_id)} ({j.started_at:%Y-%m-%d})"
                        + (f": {ui.md_literal(said)}." if said else "."),
                        help=trends.HELP[trends.JUMP_THRESHOLD])
            st.caption("Suspects, most likely first:",
                       help=glossary.help_for("instrument", "binding", "split"))
            for a in views.suspect_actions(j):
                st.text(f"{a.kind}: {a.description}")
                st.caption(f"Test: {ui.md_literal(a.test)}")   # a link's label is one line: the words go here
                st.page_link(a.page, label="Run this test" if a.page == views.PAGE_ABLATION else
                             "Run this test: the 2x2 split on Compare", query_params=a.params,
                             icon=":material/science:" if a.page == views.PAGE_ABLATION else
                             ":material/compare_arrows:")
            st.page_link(views.PAGE_RUN, label=f"Open run {ui.md_literal(j.run_id)}", icon=":material/open_in_new:",
                         query_params={"run": j.run_id, "metric": j.metric})
    if earlier:
        st.page_link(views.PAGE_TRENDS, label=f"{len(earlier)} earlier jumps: see Trends",
                     icon=":material/show_chart:")

with right:
    st.subheader("Is the measurement healthy?")
    st.markdown("**Canary**")
    if canary.latest_alarm:
        st.error(ui.md_literal(canary.sentence), icon=":material/warning:")
    elif canary.alarm_runs:
        st.warning(ui.md_literal(canary.sentence))
    else:
        st.success(ui.md_literal(canary.sentence))

    st.markdown("**Template lint**")
    found = lint_summary.findings
    if lint_summary.in_latest:
        st.error(f"{lint_summary.in_latest} template(s) used by the latest run read a field their metric must "
                 "never receive.")
    elif not found.empty:
        st.warning(f"{len(found)} of {lint_summary.total} stored templates have lint findings; none is used by "
                   "the latest run.")
    else:
        st.success(f"All {lint_summary.total} stored templates are clean.")
    if not found.empty:
        for r in found.itertuples(index=False):   # sentences: in this narrow column a table cuts the finding
            st.caption(f"**{ui.md_literal(r.metric)}** `{r.prompt_hash}`: {ui.md_literal(r.findings)} "
                       f"({r.runs} run(s), last {ui.md_literal(r.last_run)})")
        with st.expander("As a table"):
            st.dataframe(found[["metric", "prompt_hash", "findings", "runs", "last_run", "in_latest_run"]],
                         hide_index=True, column_config=COLUMN_CONFIG, key="overview_lint")

    st.markdown("**Attribution**")
    if unattributed.empty:
        st.success("Every stored score records its judge model, prompt hash and binding.")
    else:
        st.warning(f"{len(unattributed)} stored score(s) lack a judge model, prompt hash or binding: "
                   "they cannot be compared with confidence.")
        st.dataframe(unattributed, hide_index=True, column_config=COLUMN_CONFIG, key="overview_unattributed")

    st.markdown("**Alerts sent**", help="What `python -m lib watch` sent to the team's channel (EVALDRIFT_NOTIFY), "
                "and what it still owes: a pending message is sent again at its next look.")
    if not sent:
        st.caption("No alert sent yet: `python -m lib watch` sends one when a metric moves.")
    else:
        st.dataframe(alerts.alerts_frame(sent), hide_index=True, key="overview_alerts",
                     column_config={"time": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm")})

    with st.expander("What each metric may see"):
        st.dataframe(pd.DataFrame(wiring_table()), hide_index=True, key="overview_wiring")
