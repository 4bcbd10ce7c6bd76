"""A run's finding as Markdown, for a triage channel or the weekly review.

One function, `run_report`, reads everything the diagnosis engine knows about
a run (what moved, what changed, the suspects and the ablations that test
them, the canary, where the judge's evidence came from) and writes it down
with the numbers. Every value comes from a lib call; nothing is recomputed here.

Sample text, run ids, labels, config values and judge output are untrusted:
inline they pass through `md_text` (lib.presentation.mdtext: what a renderer
would read as markup, a table cell, an HTML tag or an entity is
backslash-escaped, and nothing else, so the finding also reads well as plain
text; line breaks are flattened), and multi-line text goes
in a fence longer than any backtick run inside it (`md_fence`), so no value
can open a link, an image, an HTML tag, or close its own code block.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence

import pandas as pd

from lib.core.endpoints import normalise
from lib.core.errors import InputError
from lib.core.metrics import get_metric
from lib.core.prompts import fields_read, lint
from lib.core.records import MAIN
from lib.core.samples import FIELDS
from lib.diagnosis import provenance, trends
from lib.diagnosis.ablation import AblationResult, AblationSpec, split_headline
from lib.presentation.mdtext import md_text
from lib.presentation.run_list import missing_part
from lib.store import Store

EVIDENCE_EXAMPLES = 3   # evidence strings quoted from outside the metric's own artifact
# The marks that open markup inline ($ opens LaTeX on GitHub and in Streamlit);
# with brackets escaped, Streamlit's :colour[...] directives cannot form either.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~<>&$])")
# GFM links a bare URL (scheme://, www.) and an e-mail address in the text itself, after escapes are read, so no
# backslash stops it: an invisible word joiner (U+2060) between ':' and '//', 'www' and '.', '@' and the domain does
_AUTOLINK = re.compile(r"(?<=[A-Za-z]:)(?=//)|(?<=\b[Ww]{3})(?=\.)|(?<=@)")
WORD_JOINER = "\u2060"
_BACKTICKS = re.compile(r"`+")


# -- escaping -----------------------------------------------------------------------
def md_escape(value: object) -> str:
    """Inline-safe text for Streamlit to render: every mark that can start markup is escaped, no line breaks."""
    return _AUTOLINK.sub(WORD_JOINER, _MD_SPECIAL.sub(r"\\\1", " ".join(str(value).split())))


def md_fence(text: str, lang: str = "") -> str:
    """A fenced code block whose fence no backtick run inside `text` can close."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{fence}{lang}\n{body}{fence}"


def _num(x: object, fmt: str = ".3f", signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)) or x is pd.NA:
        return "n/a"
    return f"{float(x):{'+' if signed else ''}{fmt}}"  # type: ignore[arg-type]   # a number, or a frame's cell


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table; cells must already be escaped."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


# -- sections ---------------------------------------------------------------------
def _header(store: Store, run_id: str, prev: str | None) -> list[str]:
    run = store.run(run_id)
    out = [f"# evaldrift finding: run {md_text(run_id)}", ""]
    out.append(f"- started: {md_text(run.started_at)}")
    if run.label:
        out.append(f"- label: {md_text(run.label)}")
    out.append(f"- previous run: {md_text(prev) if prev else 'none (first run)'}")
    out.append(f"- database: {md_text(store.path.name)}")
    out += ["", "Pipeline config:", "", md_fence(json.dumps(run.pipeline, indent=2, sort_keys=True,
                                                          ensure_ascii=False), "json"), ""]
    return out


def _reads_and_lint(store: Store, metric: str, prompt_hash: object, missing: str) -> tuple[str, str]:
    if not isinstance(prompt_hash, str):
        return missing, "no template recorded"
    template = store.prompt(prompt_hash)
    if template is None:
        return "?", "template not stored"
    try:
        read = fields_read(template, metric)
        findings = lint(template, metric)
    except (ValueError, InputError) as exc:  # a stored template not of field names only (from before the doors)
        return "?", str(exc)
    reads = ", ".join(f for f in FIELDS if f in read)
    text = "; ".join(f"reads {f.field}, which {metric} must never receive" for f in findings)
    return reads, text or "clean"


def _metrics(store: Store, run_id: str, prev: str | None, suite: str) -> list[str]:
    cur = store.run_metrics(run_id, suite)
    before = store.run_metrics(prev, suite).set_index("metric") if prev else pd.DataFrame()
    rows = []
    for r in cur.itertuples(index=False):
        change = "n/a"
        if prev and r.metric in before.index:
            old = before.loc[r.metric, "score"]
            if r.score is not None and not pd.isna(r.score) and not pd.isna(old):
                change = _num(float(r.score) - float(old), signed=True)
        who = {"judge_model": r.judge_model, "scorer": getattr(r, "scorer", None)}
        missing = {part: missing_part(part, **who) for part in ("judge model", "prompt", "binding")}
        reads, lint_text = _reads_and_lint(store, r.metric, r.prompt_hash, missing["prompt"])
        rows.append([md_text(r.metric), _num(r.score), change, str(r.n), str(r.n_failed), str(r.n_excluded),
                     *(md_text(v if isinstance(v, str) and v else missing[part]) for part, v in
                       (("judge model", r.judge_model), ("prompt", r.prompt_hash), ("binding", r.binding))),
                     md_text(reads), md_text(lint_text)])
    out = [f"## Metrics ({md_text(suite)} suite)", ""]
    if not rows:
        return [*out, "No metrics recorded for this run.", ""]
    out.append(_table(["metric", "score", "change vs previous", "n", "failed", "excluded", "judge", "prompt",
                       "binding", "template reads", "lint"], rows))
    return [*out, "", "Failed and excluded samples are counted, never scored; `n` is the samples scored.", ""]


def _jumps(jumps: list[trends.Jump], results: list[AblationResult]) -> list[str]:
    out = ["## Jumps at this run", ""]
    if not jumps:
        return [*out, "No metric moved beyond its jump threshold (its paired per-sample change, and the "
                      "run-to-run spread once measured) at this run.", ""]
    tested: dict[tuple[str, str], str] = {}
    for res in results:
        for v in res.verdicts:
            tested.setdefault((v.metric, v.arm), f"{v.kind} ({res.ablation_id})")
    for j in jumps:
        out += [f"### {md_text(j.metric)}: {j.before:.3f} -> {j.after:.3f} ({j.delta:+.3f})", "",
                f"From {md_text(j.prev_run_id)} to this run: {j.ratio:.1f}x the jump threshold "
                f"±{j.threshold:.3f} ({md_text(j.basis or 'the run-to-run spread')}).", "",
                "Suspects, most likely first:", ""]
        for k, s in enumerate(j.suspects, start=1):
            line = f"{k}. **{md_text(s.kind)}**: {md_text(s.description)}. Test: {md_text(s.test)}."
            if s.blank:
                verdict = tested.get((j.metric, s.blank))
                line += (f" Ablation: {md_text(verdict)}." if verdict
                         else " Ablation: not run yet (`python -m lib report ... --ablate` runs it).")
            out.append(line)
        out.append("")
    return out


def _changes(changes: trends.RunChanges) -> list[str]:
    out = ["## What changed against the previous run", ""]
    if changes.prev_run_id is None:
        return [*out, "This is the first run: nothing to compare.", ""]
    if changes.is_empty:
        return [*out, f"Nothing recorded changed since {md_text(changes.prev_run_id)}: same judge, templates, "
                      f"bindings and pipeline config.", ""]
    for m, (a, b) in changes.judge_models.items():
        out.append(f"- {md_text(m)} judge model: {md_text(a)} -> {md_text(b)}")
    for m, (a, b) in changes.bindings.items():
        out.append(f"- {md_text(m)} binding: {md_text(a)} -> {md_text(b)}")
    if changes.judge_models or changes.bindings:
        out.append("")
    for t in changes.templates:
        out += [f"### {md_text(t.metric)} template {md_text(t.before_hash)} -> {md_text(t.after_hash)}", "",
                f"- reads before: {md_text(', '.join(t.fields_before) or 'unknown')}",
                f"- reads after: {md_text(', '.join(t.fields_after) or 'unknown')}"]
        if t.newly_forbidden:
            out.append(f"- **now reads {md_text(', '.join(t.newly_forbidden))}, which {md_text(t.metric)} "
                       f"must never receive**")
        out += ["", md_fence(t.diff or "(no textual difference)", "diff"), ""]
    if changes.pipeline:
        rows = [[md_text(k), md_text(json.dumps(a, ensure_ascii=False)),
                 md_text(json.dumps(b, ensure_ascii=False))] for k, (a, b) in changes.pipeline.items()]
        out += ["### Pipeline config", "", _table(["key", "before", "after"], rows), ""]
    return out


def _canary(store: Store, run_id: str) -> list[str]:
    out = ["## Canary", ""]
    status = trends.canary_status(store)
    if status.baseline is None:
        return [*out, md_text(status.sentence), ""]
    here = status.frame[status.frame["run_id"] == run_id]
    if here.empty:
        out.append("This run scored no canary set.")
    else:
        score, alarm = float(here["score"].iloc[0]), bool(here["alarm"].iloc[0])
        word = "**ALARM**: above" if alarm else "within"
        out.append(f"Canary faithfulness at this run: {score:.3f}, {word} its baseline {status.baseline:.3f} "
                   f"(alarm above {_num(status.threshold)}). The canary answers hold correct facts only the "
                   f"reference states, so a correctly wired faithfulness judge reads them low.")
    return [*out, "", f"Latest: {md_text(status.sentence)}", ""]


def _provenance(store: Store, run_id: str, prev: str | None, suite: str, metric: str = "faithfulness") -> list[str]:
    against = get_metric(metric).against
    out = [f"## Evidence provenance ({md_text(metric)})", ""]
    frame = provenance.provenance(store, run_id, metric, suite=suite)
    summary = provenance.provenance_summary(frame, metric)
    if summary.empty:
        return [*out, "No supported verdicts with evidence are stored for this run.", ""]
    row = summary.iloc[0]
    locations = [c for c in provenance.LOCATIONS if c in summary.columns]
    out.append(_table(["supported verdicts", *locations, f"share outside {against}"],
                      [[str(int(row["supported"])), *(str(int(row[c])) for c in locations),
                        f"{float(row['outside_share']):.1%}"]]))
    out.append("")
    if prev:
        ps = provenance.provenance_summary(provenance.provenance(store, prev, metric, suite=suite), metric)
        if not ps.empty:
            out += [f"Previous run: {float(ps.iloc[0]['outside_share']):.1%} evidenced outside {against}.", ""]
    leaked = frame[frame["location"].isin([f for f in FIELDS if f != against])]
    if not leaked.empty:
        where = ", ".join(sorted(set(leaked["location"])))
        out += [f"{len(leaked)} supported verdicts cite evidence found only in {md_text(where)}: a judge that "
                f"reads only {against} could not have written them. Examples (sample text, verbatim):", ""]
        lines = [f"[{r.sample_id}] in {r.location}: {' '.join(str(r.evidence).split())}"
                 for r in leaked.head(EVIDENCE_EXAMPLES).itertuples(index=False)]
        out += [md_fence("\n".join(lines), "text"), ""]
    return out


def _spec_words(spec: AblationSpec) -> str:
    changed = [f"{', '.join(spec.blanks)} blanked" if spec.blanks else "",
               f"{', '.join(spec.swaps)} swapped with another sample's (pairing seed {spec.swap_seed})"
               if spec.swaps else ""]
    parts = [f"{', '.join(spec.metrics)} x {'; '.join(x for x in changed if x)}"]
    if spec.scorer:
        parts.append(f"scorer {spec.scorer}")
    else:
        parts.append(f"judge {spec.judge} ({normalise(spec.endpoint)})")
    parts.append(f"{spec.repeats} repeats")
    if spec.limit:
        parts.append(f"first {spec.limit} samples")
    return ", ".join(parts)


def _stored_ablations(store: Store, run_id: str, results: list[AblationResult]) -> list[str]:
    """Add the run's finished stored ablations to `results`; return lines for the unfinished ones."""
    shown = {r.ablation_id for r in results}
    pending = []
    for row in store.ablations(run_id).itertuples(index=False):
        if row.ablation_id in shown:
            continue
        if row.status == "done" and isinstance(row.result, str) and row.result:
            results.append(AblationResult.from_dict(json.loads(row.result)))
            shown.add(row.ablation_id)
        else:
            pending.append(f"- {md_text(row.ablation_id)}: {md_text(row.status)}, {row.done} of {row.total} "
                           f"judgings stored (running it again resumes it)")
    return pending


def _headline_lines(res: AblationResult) -> list[str]:
    """The verdict in one sentence, in bold, then its caveats once, in italics (lib.diagnosis.ablation._lead)."""
    said = split_headline(res.verdicts, res.summary)
    return [f"**{md_text(said.lead)}**", "", *([f"_{md_text(said.small_print)}_", ""] if said.caveats else [])]


def _ablations(results: list[AblationResult], pending: list[str]) -> list[str]:
    out = ["## Ablations of this run", ""]
    if not results and not pending:
        return [*out, "No ablation of this run is stored. `python -m lib ablate --db PATH --run RUN --metric M "
                      "--blank FIELD` runs one; `report --ablate` runs the ones the suspects call for.", ""]
    for res in results:
        out += [f"### {md_text(res.ablation_id)}: {md_text(_spec_words(res.spec))}", "",
                *_headline_lines(res)]
        out += [f"- {md_text(v.sentence)}" for v in res.verdicts]
        out += [f"- replay check: {md_text(c.sentence)}" for c in res.replay]
        if res.four is not None:
            out.append(f"- four readings: {md_text(res.four.sentence)}")
        out += [f"- cost: {md_text(res.accounting)}", ""]
    if pending:
        out += ["Unfinished:", "", *pending, ""]
    return out


# -- the report ------------------------------------------------------------------
def run_report(store: Store, run_id: str, *, ablation_results: Sequence[AblationResult] | None = None,
               suite: str = MAIN) -> str:
    """The Markdown finding for one run.

    Args:
        store: the run store.
        run_id: an existing run id.
        ablation_results: ablations just run for this report (listed first;
            the run's other stored ablations follow).
        suite: the sample suite for metrics, jumps and provenance.

    Returns:
        Markdown text: header and pipeline config, metrics with the change
        against the previous run, the jumps at this run with their suspects,
        what changed (judge, template diffs with the fields each reads,
        bindings, pipeline keys), the canary, faithfulness evidence
        provenance, and the run's ablations with their verdicts.

    Raises:
        NotFoundError: no such run.
    """
    store.run(run_id)
    prev = store.previous_run(run_id)
    results = list(ablation_results or [])
    jumps = [j for j in trends.find_jumps(store, suite=suite) if j.run_id == run_id]
    pending = _stored_ablations(store, run_id, results)
    parts = _header(store, run_id, prev)
    parts += _summary(jumps, results)
    parts += _metrics(store, run_id, prev, suite)
    parts += _jumps(jumps, results)
    parts += _changes(trends.run_changes(store, run_id, suite=suite))
    parts += _canary(store, run_id)
    parts += _provenance(store, run_id, prev, suite)
    parts += _ablations(results, pending)
    return "\n".join(parts).rstrip() + "\n"


def _summary(jumps: list[trends.Jump], results: list[AblationResult]) -> list[str]:
    out = ["## In short", ""]
    if jumps:
        out += [f"- {md_text(j.sentence)}" for j in jumps]
    else:
        out.append("- No metric jumped beyond noise at this run.")
    out += [f"- Ablation {md_text(r.ablation_id)}: {md_text(split_headline(r.verdicts, r.summary).lead)}"
            for r in results]
    return [*out, ""]


__all__ = ["md_escape", "md_fence", "run_report"]
