"""The reliability cases, as data: the tests run over them and tests/README.md's "Reliability" table is made from them.

Every row of that table is a case below, and every case below is a
parametrized test (tests/test_reliability_*.py, tests/test_fuzz_ingest.py,
tests/test_security.py), so the table can only list what the suite tried. The
"rows lost" column is what those tests assert: it must be 0.

Regenerate the section of tests/README.md after changing a case:

    python -m tests.reliability_cases --write-readme
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support.openai_server import Fault

README = Path(__file__).resolve().parent / "README.md"   # tests/README.md: testing beside the tests
BEGIN = "<!-- section:reliability -->"
END = "<!-- /section:reliability -->"
UPDATE_COMMAND = "python -m tests.reliability_cases --write-readme"

TRANSPORT = "transport"   # retried by OpenAIJudge (max_attempts), with backoff and jitter
PARSE = "parse"           # a 200 reply that cannot be read: asked again by the harness (parse_attempts)


@dataclass(frozen=True)
class RawReply:
    """An HTTP reply the loopback OpenAI server cannot give: any status, content type and body bytes."""

    status: int
    content_type: str
    body: bytes


@dataclass(frozen=True)
class JudgeFault:
    """One way the judge's server misbehaves (tests/test_reliability_judge.py).

    Attributes:
        id: the test id.
        fault: what the server does, in words.
        server: the scripted fault on the loopback server (tests/support/openai_server.py),
            or a RawReply served by a raw loopback HTTP server.
        retried_by: TRANSPORT or PARSE.
        reason: words the failed sample's reason must hold when the fault never lifts.
        wait: how the wait before a retry is chosen, in words.
        final: not retried at all (the request itself is refused).
    """

    id: str
    fault: str
    server: Fault | RawReply
    retried_by: str
    reason: str
    wait: str
    final: bool = False


JUDGE_TIMEOUT = 0.3   # seconds per attempt in the fault tests (the timeout fault sleeps 1.0)
# The sample the fault cases judge for faithfulness: exactly three claims, two supported by the passages.
FAULT_SAMPLE = {
    "sample_id": "fault-1",
    "question": "How long are audit log exports retained, and how are they delivered?",
    "answer": ("Audit log exports are retained for 90 days. Audit log exports are delivered daily at 02:00 UTC. "
               "Audit log exports use 512-bit encryption keys."),
    "contexts": ("Audit log exports are retained for 90 days.", "Audit log exports are delivered daily at 02:00 UTC."),
    "ground_truth": "Audit log exports are retained for 90 days and delivered daily at 02:00 UTC.",
}
FAULT_SAMPLE_CLAIMS = 3
FEW_VERDICTS = '{"verdicts": [{"item": 1, "verdict": "supported", "evidence": ""}]}'
MANY_VERDICTS = '{"verdicts": [' + ", ".join(
    f'{{"item": {i}, "verdict": "supported", "evidence": ""}}' for i in range(1, 41)) + "]}"

JUDGE_FAULTS: tuple[JudgeFault, ...] = (
    JudgeFault("timeout", f"answers after 1.0 s; the judge allows {JUDGE_TIMEOUT} s", Fault("timeout", delay=1.0),
               TRANSPORT, "timed out", "backoff with full jitter"),
    JudgeFault("429-retry-after", "429 with Retry-After: 0.7", Fault("429", retry_after=0.7), TRANSPORT,
               "rate limited (429)", "the Retry-After value (0.7 s)"),
    JudgeFault("429-retry-after-huge", "429 with Retry-After: 3600", Fault("429", retry_after=3600), TRANSPORT,
               "rate limited (429)", "Retry-After, capped at max_backoff"),
    JudgeFault("429-retry-after-negative", "429 with Retry-After: -5", Fault("429", retry_after=-5), TRANSPORT,
               "rate limited (429)", "backoff (a negative Retry-After is ignored)"),
    JudgeFault("429-retry-after-nan", "429 with Retry-After: nan", Fault("429", retry_after=float("nan")), TRANSPORT,
               "rate limited (429)", "backoff (a NaN Retry-After is ignored)"),
    JudgeFault("429-bare", "429 without Retry-After", Fault("429"), TRANSPORT, "rate limited (429)",
               "backoff with full jitter"),
    JudgeFault("500", "500 Internal Server Error", Fault("500"), TRANSPORT, "server error (500)",
               "backoff with full jitter"),
    JudgeFault("503", "503 Service Unavailable", Fault("503"), TRANSPORT, "server error (503)",
               "backoff with full jitter"),
    JudgeFault("drop", "closes the connection without a byte", Fault("drop"), TRANSPORT, "connection failed",
               "backoff with full jitter"),
    JudgeFault("html-200", "200 whose body is an HTML page (a proxy), not a completion",
               RawReply(200, "text/html", b"<html><body>Gateway says hello</body></html>"), TRANSPORT,
               "unreadable response", "backoff with full jitter"),
    JudgeFault("cut-body-200", "200 whose JSON body is cut off mid-way",
               RawReply(200, "application/json", b'{"id": "x", "object": "chat.completion", "choices": ['), TRANSPORT,
               "unreadable response", "backoff with full jitter"),
    JudgeFault("wrong-body-200", "200 whose JSON body is not a completion",
               RawReply(200, "application/json", b'{"id": "x", "object": "chat.completion", "created": 0, '
                                                 b'"model": "m", "choices": "none today"}'), TRANSPORT,
               "unreadable response", "backoff with full jitter"),
    JudgeFault("502-html", "502 with an HTML body", RawReply(502, "text/html", b"<html>Bad Gateway</html>"),
               TRANSPORT, "server error (502)", "backoff with full jitter"),
    JudgeFault("408", "408 Request Timeout", RawReply(408, "application/json", b'{"error": {"message": "slow"}}'),
               TRANSPORT, "retryable status (408)", "backoff with full jitter"),
    JudgeFault("401", "401 Unauthorized (a bad key)",
               RawReply(401, "application/json", b'{"error": {"message": "invalid api key"}}'), TRANSPORT,
               "refused the request (401)", "none: not retried, a bad key stays bad", final=True),
    JudgeFault("malformed", "200 with prose instead of JSON", Fault("malformed"), PARSE, "not JSON",
               "asked again once, with a repair message naming the error"),
    JudgeFault("truncated", "200 with the JSON cut in half", Fault("truncated"), PARSE, "not JSON",
               "asked again once, with a repair message naming the error"),
    JudgeFault("empty", "200 with an empty message", Fault("text", text=""), PARSE, "not JSON",
               "asked again once, with a repair message naming the error"),
    JudgeFault("too-few-verdicts", "200 with 1 verdict for 3 claims", Fault("text", text=FEW_VERDICTS), PARSE,
               "verdicts for", "asked again once, with a repair message naming the error"),
    JudgeFault("too-many-verdicts", "200 with 40 verdicts for 3 claims", Fault("text", text=MANY_VERDICTS),
               PARSE, "40 verdicts for", "asked again once, with a repair message naming the error"),
    JudgeFault("unknown-label", "200 with the verdict \"maybe\"",
               Fault("text", text='{"verdicts": [' + ", ".join(
                   f'{{"item": {i}, "verdict": "maybe"}}' for i in range(1, FAULT_SAMPLE_CLAIMS + 1)) + "]}"),
               PARSE, "is 'maybe'", "asked again once, with a repair message naming the error"),
    JudgeFault("wrong-shape", "200 with a JSON list, not an object", Fault("text", text='["supported"]'), PARSE,
               "bad shape", "asked again once, with a repair message naming the error"),
)


@dataclass(frozen=True)
class BadInput:
    """One kind of bad (or awkward but valid) ingest input (tests/test_fuzz_ingest.py).

    Attributes:
        id: the corruption's name in the fuzzer.
        what: the input, in words.
        formats: the formats it can be written in.
        outcome: what ingest must do, in words (every error names row and field).
    """

    id: str
    what: str
    formats: tuple[str, ...]
    outcome: str


ALL = ("jsonl", "csv", "parquet")
BAD_INPUTS: tuple[BadInput, ...] = (
    BadInput("malformed-line", "a line that is not JSON", ("jsonl",), "error: its line, no field"),
    BadInput("not-an-object", "a line holding a JSON list or number", ("jsonl",), "error: its line, no field"),
    BadInput("invalid-utf8", "bytes that are not UTF-8", ("jsonl", "csv"),
             "error: its line (JSONL), its row and column (CSV)"),
    BadInput("wrong-type-text", "a number, list, object or boolean where text belongs", ("jsonl", "parquet"),
             "error: row and field"),
    BadInput("bare-nan-text", "bare NaN / Infinity token in a text field", ("jsonl",), "error: row and field"),
    BadInput("nan-score", "NaN score (bare token, text \"nan\" or float NaN)", ALL,
             "error (JSONL, CSV); Parquet NaN = not scored"),
    BadInput("inf-score", "infinite score", ALL, "error: row and field"),
    BadInput("out-of-range-score", "score below 0 or above 1", ALL, "error: row and field"),
    BadInput("non-numeric-score", "score given as words or a boolean", ("jsonl", "csv"), "error: row and field"),
    BadInput("missing-text", "null / empty cell / absent key in a text field", ALL, "error: row and field"),
    BadInput("empty-text", "an empty string", ALL, "kept (JSONL, Parquet); error in CSV (empty cell = missing)"),
    BadInput("huge-text", "a 200,000-character string", ALL, "kept intact"),
    BadInput("unusual-unicode", "emoji, right-to-left, combining marks, U+2028, zero-width, BOM", ALL,
             "kept intact"),
    BadInput("nul-char", "a NUL character in text", ALL, "error: row and field"),
    BadInput("lone-surrogate", "an unpaired surrogate (`\\ud800`)", ("jsonl",), "error: row and field"),
    BadInput("duplicate-id", "two rows with one sample id (also 7 and \"7\")", ALL,
             "error: the second row, sample_id"),
    BadInput("empty-id", "an empty or blank sample id", ALL, "error: row and field"),
    BadInput("missing-column", "a column a scored metric receives (or the answer) absent from the file", ALL,
             "error: no row, the field"),
    BadInput("alias-clash", "a column and its Ragas alias both present", ALL, "error: no row, the alias"),
    BadInput("contexts-string", "contexts given as a plain string", ALL, "error: row and field"),
    BadInput("contexts-json-string", "contexts given as a JSON-array string", ALL, "kept (read as the list)"),
    BadInput("contexts-bad-passage", "a passage that is a number or null", ("jsonl", "parquet"),
             "error: row and field"),
    BadInput("no-rows", "an empty file or a header alone", ALL, "error: no row"),
    BadInput("random-bytes", "arbitrary bytes under each extension", ALL, "InputError or a clean ingest, nothing else"),
)


@dataclass(frozen=True)
class CliCase:
    """A bad command line (tests/test_fuzz_ingest.py): exit code 2, a message, no traceback."""

    id: str
    args: tuple[str, ...]   # {db}: a demo copy, {new}: a path never to be created, {good}/{bad}/...: files
    message: str            # a regular expression the message must match (case-insensitive)


CLI_CASES: tuple[CliCase, ...] = (
    CliCase("unknown-option", ("runs", "--db", "{db}", "--no-such-flag"), r"unrecognized arguments: --no-such-flag"),
    CliCase("ingest-missing-file", ("ingest", "--db", "{new}", "--run-id", "r1", "/nonexistent/x.jsonl"),
            r"x\.jsonl.*cannot read file"),
    CliCase("ingest-unsupported-type", ("ingest", "--db", "{new}", "--run-id", "r1", "{db}"),
            r"unsupported file type '\.duckdb'"),
    CliCase("ingest-bad-row-jsonl", ("ingest", "--db", "{new}", "--run-id", "r1", "{bad}"),
            r"row 2, field 'question': missing value"),
    CliCase("ingest-bad-score-csv", ("ingest", "--db", "{new}", "--run-id", "r1", "{badcsv}"),
            r"row 3, field 'faithfulness'.*\[0, 1\]"),
    CliCase("ingest-pipeline-not-json", ("ingest", "--db", "{new}", "--run-id", "r1", "--pipeline", "{{oops", "{good}"),
            r"--pipeline is not JSON"),
    CliCase("ingest-bad-started-at", ("ingest", "--db", "{new}", "--run-id", "r1", "--started-at", "yesterday",
                                      "{good}"), r"--started-at wants an ISO date-time"),
    CliCase("ingest-template-unknown-metric", ("ingest", "--db", "{new}", "--run-id", "r1", "--template",
                                               "flattery={tpl}", "{good}"), r"unknown metric 'flattery'"),
    CliCase("ingest-db-is-a-folder", ("ingest", "--db", "{dir}", "--run-id", "r1", "{good}"), r"cannot open|directory"),
    CliCase("record-not-json", ("record", "--db", "{new}", "{good}"), r"not JSON"),
    CliCase("record-not-a-run", ("record", "--db", "{new}", "{notrun}"), r"missing key 'run_id'"),
    CliCase("report-unknown-run", ("report", "--db", "{db}", "--run", "nightly-19990101", "--out", "{out}"),
            r"no run 'nightly-19990101'"),
    CliCase("report-out-folder-missing", ("report", "--db", "{db}", "--run", "latest", "--out", "/nonexistent/r.md"),
            r"--out: no folder"),
    CliCase("ablate-quote-run", ("ablate", "--db", "{db}", "--run", "x'); DROP TABLE runs; --", "--metric",
                                 "faithfulness", "--blank", "ground_truth"),
            r"no run \"x'\); DROP TABLE runs; --\" in"),
    CliCase("ablate-newline-run", ("ablate", "--db", "{db}", "--run", "nightly\n--", "--metric", "faithfulness",
                                   "--blank", "ground_truth"), r"no run"),
    CliCase("lint-template-unknown-field", ("lint", "--template", "{tpl}", "--metric", "faithfulness"), r"vibes"),
)


@dataclass(frozen=True)
class ProcessCase:
    """A process killed or run alongside others (kill, concurrency and security tests)."""

    id: str
    area: str
    what: str
    checked: str
    lost: str = "0"


PROCESS_CASES: tuple[ProcessCase, ...] = (
    ProcessCase("kill-ingest", "kill", "SIGKILL an ingest of a 20,000-sample JSONL file at random moments: once "
                "anywhere, three times after the write began (once replacing an earlier copy of the run)",
                "the database opens; that run has 0 or all 20,000 samples (the old copy or the new, whole); "
                "earlier runs untouched"),
    ProcessCase("kill-ablation", "kill", "SIGKILL an ablation child 3 times while it stores results, then resume",
                "the database opens; progress count = stored results; no duplicates; resume finishes it"),
    ProcessCase("dashboard-and-recorder", "concurrency", "dashboard serving 3 browser sessions and an ablation "
                "while two recorder processes (`python -m lib record`, `python -m lib ingest`) record runs",
                "recorder hands over through the inbox; no lock error on any page; the run appears on refresh; "
                "every run in the database after shutdown"),
    ProcessCase("dashboard-opened-while-held", "concurrency", "the dashboard's first page load while another "
                "process holds the database", "a plain notice, no lock error; the page opens by itself once it is free",
                "0"),
    ProcessCase("concurrent-drains", "concurrency", "6 sessions draining an inbox of 24 runs at once",
                "each run recorded exactly once; no error"),
    ProcessCase("xss", "security", "`<script>` and `<img onerror>` in an answer (and in the question, passages, "
                "reference, label, config, judge verdicts and a failure reason), every page opened in Chromium",
                "no script runs (window.__xss undefined); the literal text is shown"),
    ProcessCase("sql-quotes", "security", "run ids, sample ids and metric names full of quotes and SQL through "
                "store, ingest, inbox, ablation and CLI", "stored and read back verbatim; every table still there"),
    ProcessCase("api-key", "security", "a planted OPENAI_API_KEY through an OpenAI-judge ablation and the dashboard",
                "absent from stdout/stderr, the database bytes and its text, and every page"),
    ProcessCase("prompt-injection", "security", "an answer telling the judge to mark every claim supported",
                "offline judge: verdicts unchanged, a normal sample; an obedient model judge shows up as "
                "evidence found 'nowhere'"),
    ProcessCase("inbox-target", "concurrency", "`python -m lib ingest --db dbdir/teamB.duckdb` while the "
                "dashboard holds teamA and teamB (one inbox); then teamB's file deleted", "teamA's drain leaves the "
                "run, teamB's records it; a run for a gone database waits with a reason (tests/test_inbox.py)"),
    ProcessCase("inbox-hostile", "security", "a FIFO, a folder, a symlink loop and a symlink to a file elsewhere "
                "named `*.run.json` in the inbox; a dangling link, a FIFO and a symlinked reason in rejected/",
                "the drain never blocks (a thread joined in 20 s); each entry set aside with its reason; the good "
                "run recorded; no link followed; listing rejects raises nothing"),
    ProcessCase("hostile-imports", "security", "Inspect and promptfoo files with a list where an object is "
                "read, a 40-digit id, a 5,000-digit integer, a key given twice, 200,000-deep nesting, a "
                "1,000,001-character field (tests/test_hostile_imports.py)",
                "exit 2, one line naming file, row and field; no traceback; nothing written"),
    ProcessCase("zip-bomb", "security", "a 43 kB Inspect `.eval` whose member inflates to 1 GiB, declared "
                "honestly, and the same declared as 12 kB", "exit 2 naming the member and the limit "
                "(`EVALDRIFT_MAX_INPUT_BYTES`), before reading or at the declared size; peak memory 136 MB "
                "(asserted under 400 MB)"),
    ProcessCase("container-bombs", "security", "a 10 kB Parquet with one zstd field of 300M characters, a 1 kB "
                "one with a 300,000-character value in 2,000 rows as a dictionary and as prefixes, and an MLflow "
                "store with 3,000 trace rows of one id and a 500 kB span (tests/test_container_bombs.py)",
                "exit 2, one line naming file, row and field, before the pages inflate or the rows multiply; "
                "peak memory 143-264 MB (asserted under 400 MB); nothing written"),
    ProcessCase("huge-sample-page", "security", "a run recorded under a raised field cap with a 3,000,000-"
                "character answer and 3,000,000 characters of passages, opened on the Run page",
                "each text cut to 20,000 characters with a note and a download of the whole; no MessageSizeError"),
    ProcessCase("stop-and-lanes", "judge", "a model-judge ablation whose server holds every answer 60 s, then a "
                "free offline ablation, then Stop (tests/test_job_stop.py)", "the free job finishes meanwhile; Stop "
                "ends the hung job in under 5 s with its reason; Resume finishes it"),
    ProcessCase("deadline-and-sigterm", "judge", "a 1 s job deadline, and SIGTERM to a process whose job "
                "waits on a hung call", "the job stops under 6 s after start; the process exits and releases "
                "the database in under 5 s; the job is left stopped, resumable"),
    ProcessCase("ablation-inconclusive", "judge", "OpenAI-judge ablation (30 samples, 2 repeats, 4 in flight) "
                "against a server failing every call", "INCONCLUSIVE, in words, with the failure reason"),
)


# -- the README table ---------------------------------------------------------------------------
def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def readme_section() -> str:
    """The Markdown that goes between the reliability markers."""
    lines = [
        "## Reliability",
        "",
        "What the test suite does to evaldrift, and what it checks. This section is generated from",
        "`tests/reliability_cases.py`, the data the reliability tests are parametrized over",
        f"(`{UPDATE_COMMAND}`); `tests/test_fuzz_ingest.py` fails when it is out of date.",
        "\"Rows lost\" is what the tests assert: stored rows that went missing or were half-written.",
        "",
        "**Concurrency: one process owns the database.** DuckDB lets one process hold a file (others cannot",
        "even read it). The dashboard, or the CLI when the dashboard is down, owns it. A recorder that finds",
        "it held (`python -m lib record`, or `lib.intake.inbox.record`) checks the run in full first (a bad run",
        "is refused with exit 2, as when the database is free), then writes it as one JSON file into the",
        "inbox folder (`EVALDRIFT_INBOX` when it is set, for any database, else `<db folder>/inbox`: one rule,",
        "`inbox.folder_for`; written to a temporary name, then renamed). The owner drains that folder and",
        "`<db folder>/inbox` (`inbox.folders_drained`: a recorder without the owner's `EVALDRIFT_INBOX` is drained",
        "too; one with it says the owner takes it only if the owner's names the same folder) on every page load",
        "(`lib.app.ui.sidebar` calls `inbox.drain`),",
        "and every CLI command drains it before anything else: each file is recorded in its own",
        "transaction, then removed; a bad one is moved to `inbox/rejected/` with a `.reason.txt` beside it",
        "(listed on Overview) and the pages and later files carry on; sessions of one dashboard drain one",
        "at a time. A hand-over names its database (databases in one folder share an inbox): only that",
        "database records it, and a run whose database is gone waits in the inbox with a `.reason.txt`",
        "saying so. The inbox takes only regular files its user owns, checked before a non-blocking open",
        "that follows no link (a FIFO, folder, symlink or file over `EVALDRIFT_MAX_INPUT_BYTES` goes to",
        "`rejected/` with its reason), and listing rejects never raises. A command that must write and finds",
        "the database held says how many runs wait. The",
        "reading commands (`runs`, `lint`, `report` without `--ablate`, `labels agreement` and `history`) read a "
        "**read-only snapshot** instead:",
        "the dashboard writes `<db>.snapshot` beside the file when it opens it and again within 2 s of any",
        "change (runs, ablations, a drained hand-over; `lib.store.snapshot`, `lib.app.snapshots`), copied",
        "whole by a `cp` process after a checkpoint and swapped in, and the command says on stderr how old it",
        "is (`tests/test_cli_while_dashboard.py`: a real dashboard and real CLI processes). A page load that",
        "finds the database held by another process (a job writing while the dashboard was down) shows a",
        "notice and tries again every 2 s. Writes are transactions, so a killed process leaves each run,",
        "ingest or batch of ablation results wholly there or wholly absent.",
        "",
        "**Jobs: a hung judge holds nothing.** Ablations run in two lanes with their own workers (the",
        "offline judge's; model judges' and scorers'), so a free job never queues behind a paid one. Every",
        "running ablation and re-judge has a Stop button: the job stops within seconds, its calls in flight",
        "cancelled, what was judged kept, and Resume asks the rest. `EVALDRIFT_JUDGE_TIMEOUT` bounds each",
        "attempt by the wall clock (a server that trickles bytes included) and `EVALDRIFT_JOB_DEADLINE`",
        "cancels the calls in flight when it passes; on exit (SIGTERM included) the dashboard stops its jobs",
        "the same way before joining its workers, so the database is released at once.",
        "",
        "### Judge faults (real openai SDK against loopback HTTP servers)",
        "",
        "| fault | retried by | wait before retrying | when it never lifts | rows lost |",
        "|---|---|---|---|---|",
    ]
    for f in JUDGE_FAULTS:
        by = "not retried" if f.final else (
            "judge (max_attempts)" if f.retried_by == TRANSPORT else "harness (parse_attempts)")
        lines.append(f"| {_cell(f.fault)} | {by} | {_cell(f.wait)} | sample failed: "
                     f"\"{_cell(f.reason)}\", no score; aggregates count it in n_failed | 0 |")
    lines += ["", "### Bad input (hypothesis, over JSONL, CSV and Parquet)", "",
              "| input | formats | outcome | rows lost |", "|---|---|---|---|"]
    for b in BAD_INPUTS:
        lines.append(f"| {_cell(b.what)} | {', '.join(b.formats)} | {_cell(b.outcome)}; "
                     f"the database is unchanged on error | 0 |")
    lines += ["", "Bad command lines (exit code 2, a message, no traceback): "
              + ", ".join(f"`{c.id}`" for c in CLI_CASES) + ".", "",
              "### Processes: kills, concurrency, security", "",
              "| area | what | checked | rows lost |", "|---|---|---|---|"]
    for p in PROCESS_CASES:
        lines.append(f"| {p.area} | {_cell(p.what)} | {_cell(p.checked)} | {p.lost} |")
    return "\n".join(lines)


def readme_with_section(text: str) -> str:
    """README text with the reliability section replaced by the generated one."""
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError(f"{README} lacks the {BEGIN} ... {END} markers")
    return pattern.sub(lambda _: f"{BEGIN}\n{readme_section()}\n{END}", text, count=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-readme", action="store_true", help="rewrite tests/README.md's reliability section")
    args = parser.parse_args(argv)
    if args.write_readme:
        text = README.read_text(encoding="utf-8")
        new = readme_with_section(text)
        if new != text:
            README.write_text(new, encoding="utf-8")
            print(f"updated {README}")
        else:
            print(f"{README} is up to date")
    else:
        print(readme_section())
    return 0


if __name__ == "__main__":
    sys.exit(main())
