"""Each page's first load in headless Chromium against `streamlit run app.py`, and the dashboard's peak memory.

A load is timed from navigation to the page's main content: Streamlit's app
root reports its script as finished (data-test-script-state="notRunning"), a
title is on the page, no element is still a loading skeleton, and every
Plotly chart has drawn its SVG; and that state lasts (a rerun restarts the
wait). Two passes:

- cold: a new dashboard process for each page, so the page pays for opening
  the database and for every loader it calls (the worst first load);
- in one process: each page once, in a fresh browser session, in menu order,
  as a user opening the dashboard and visiting every page meets them; the
  process's peak RSS (VmHWM) is read after.

Run by itself (`main`), it measures each page in a running dashboard, median
of 3 loads each in a fresh browser session, for this tree and for an older
revision (`--before REV`, exported with `git archive` and served from its own
folder, on the same database), and prints per page and revision:

- first content: navigation until the page's title and one more element of
  the main area are drawn (what a user sees first);
- full run: until the script has finished and everything is drawn (as above);
- server: from the first to the last websocket message of the load (the
  script's run, as the browser receives it);
- bytes: what the server sent over the websocket for the page.

    python tests/benchmarks/bench_pages.py [--before REV|none] [--db PATH] [--large] [--pages PAGE ...]

With `--reference` it measures instead each page beside a reference page (a title and one Plotly chart the size
of Trends' five panels, in a second server on the same machine), alternating the two in fresh sessions, and
prints each page's median full run against the reference's and their ratio (target: under 1.5x, issue 28):

    python tests/benchmarks/bench_pages.py --reference [--pages PAGE ...]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.benchmarks.report import Figure, Report, vm_hwm_mib, warn  # noqa: E402
from tests.support.browser import POINT_JS, StreamlitServer  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
PAGE_SECONDS = 2.0
RSS_MIB = 1024.0


def pages() -> list[tuple[str, str]]:
    """(name, url path) of each page app.py registers, in menu order ('' for the default page)."""
    out = []
    for stem, args in re.findall(r'st\.Page\(\s*"pages/(\w+)\.py"([^)]*)\)', (ROOT / "app.py").read_text()):
        path = re.search(r'url_path="([^"]*)"', args)
        out.append((stem, path.group(1) if path else "" if "default=True" in args else stem))
    return out


@contextmanager
def dashboard(db: Path, log: Path, script: Path = ROOT / "app.py", cwd: Path = ROOT):
    """`streamlit run` (tests.support.browser.StreamlitServer) serving `db`; yields (url, pid).

    Each server writes its output into its own folder beside `log`.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    log_dir = Path(tempfile.mkdtemp(dir=log.parent, prefix=f"{log.stem}-"))
    with StreamlitServer(db, log_dir=log_dir, script=script, cwd=cwd) as server:
        assert server.proc is not None
        yield server.url, server.proc.pid


_RENDERED = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app) return -2;
    if (app.getAttribute('data-test-script-state') !== 'notRunning' || !document.querySelector('h1')) return -1;
    // lazily loaded elements (Plotly among them) show a skeleton until their code has arrived and drawn
    if (document.querySelector(
        '[data-testid="stSkeleton"], [data-testid="stSkeletonElement"], [data-testid="stAppSkeleton"], '
        + '[data-testid="stSpinner"]')) return -1;
    const charts = document.querySelectorAll('[data-testid="stPlotlyChart"]');
    for (const c of charts) if (!c.querySelector('.main-svg')) return -1;
    return charts.length;
}"""


def _load(browser, url: str, shot: Path | None, *, quiet: float = 0.6, timeout: float = 120) -> tuple[float, str]:
    """Seconds from navigation to the rendered page, in a fresh session; and a note on what was seen.

    Rendered: the script has finished, a title is there, no skeleton or spinner is left and every
    Plotly chart has drawn, and all of that still holds `quiet` seconds later (a rerun, e.g. after a
    query-parameter update, restarts the wait). The time is when that last stretch began, polled
    every 50 ms.
    """
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        t0 = time.perf_counter()
        page.goto(url, wait_until="commit")
        booted = since = None
        charts = 0
        while True:
            state = page.evaluate(_RENDERED)
            now = time.perf_counter()
            if booted is None and state != -2:
                booted = now - t0
            if state >= 0:
                since = since or now
                charts = state
                if now - since >= quiet:
                    break
            else:
                since = None
            if now - t0 > timeout:
                raise TimeoutError(f"not rendered after {timeout:.0f} s")
            time.sleep(0.05)
        secs = since - t0
        errors = page.locator('[data-testid="stException"]').count()
        if shot is not None:
            page.screenshot(path=str(shot), full_page=True)
        note = (f"frontend up {booted:.1f} s, rendered {secs:.1f} s with {charts} chart(s)"
                + (f"; {errors} EXCEPTION BOX(ES)" if errors else ""))
        return secs, note
    finally:
        context.close()


def _safe_load(browser, url: str, shot: Path | None) -> tuple[float, str]:
    """_load, or NaN and the reason when the page never rendered (a broken page is a MISS, not a crash)."""
    try:
        return _load(browser, url, shot)
    except Exception as exc:  # reported beside the figure; the other pages are still measured
        return float("nan"), f"DID NOT RENDER: {type(exc).__name__}: {str(exc).splitlines()[0][:100]}"


def page_loads(report: Report, work: Path, db: Path, label: str, *, cold: bool = True) -> None:
    """Time each page's first load against `db`; figures named with `label`."""
    from playwright.sync_api import sync_playwright

    names = pages()
    log = work / f"streamlit-{label}.log"
    shots = work / "screens"
    shots.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            floor = work / "floor_app.py"
            floor.write_text('import streamlit as st\n\nst.title("A one-line Streamlit page")\n')
            with dashboard(db, log, floor) as (url, _):
                secs, note = _load(browser, url, None)
            report.add(Figure(f"page_floor_s@{label}", "floor: a one-line Streamlit page, same browser and machine",
                              secs, "s", note=note))
            if cold:
                for name, path in names:
                    with dashboard(db, log) as (url, _):
                        secs, note = _safe_load(browser, f"{url}/{path}", None)
                    report.add(Figure(f"page_cold_s[{name}]@{label}", f"{name}: cold first load ({label})", secs, "s",
                                      f"< {PAGE_SECONDS:.0f} s", secs < PAGE_SECONDS, f"new process; {note}"))
            with dashboard(db, log) as (url, pid):
                for name, path in names:
                    secs, note = _safe_load(browser, f"{url}/{path}", shots / f"{label}-{name}.png")
                    report.add(Figure(f"page_s[{name}]@{label}", f"{name}: first load in a running dashboard ({label})",
                                      secs, "s", f"< {PAGE_SECONDS:.0f} s", secs < PAGE_SECONDS, note))
                returning_loads(p, report, url, names, work / f"profile-{abs(hash(label))}", label)
                rss = vm_hwm_mib(pid)
            report.add(Figure(f"dashboard_rss_mib@{label}", f"dashboard peak RSS after every page ({label})", rss,
                              "MiB", f"< {RSS_MIB:.0f} MiB", rss < RSS_MIB, "VmHWM of the streamlit process"))
            median_loads(browser, report, work, db, label)
            point_clicks(browser, report, work, db, label)
        finally:
            browser.close()
    text = log.read_text(errors="replace") if log.exists() else ""
    if "Traceback" in text:
        warn(f"the dashboard logged a traceback; see {log}")


def returning_loads(p, report: Report, url: str, names: list[tuple[str, str]], profile: Path, label: str) -> None:
    """Each page as a returning user meets it: a new browser process on a profile that has opened the
    dashboard before, so Streamlit's static code (Plotly's 4.7 MB bundle among it, served immutable) comes
    from the browser's cache, as it does for anyone who opened the dashboard once. The session is still new.
    The first-visit figures above are the same loads with an empty profile."""
    import shutil

    shutil.rmtree(profile, ignore_errors=True)

    def visit(target: str) -> tuple[float, str]:
        browser = p.chromium.launch_persistent_context(str(profile), executable_path=CHROMIUM, args=ARGS,
                                                       viewport={"width": 1400, "height": 1000})
        try:
            return _safe_load(_Reuse(browser), target, None)
        finally:
            browser.close()

    for _, path in names:   # the earlier visit: every page once, so each page's code is in the cache
        visit(f"{url}/{path}")
    for name, path in names:
        secs, note = visit(f"{url}/{path}")
        report.add(Figure(f"page_returning_s[{name}]@{label}",
                          f"{name}: a returning user's load, new browser process and session ({label})", secs, "s",
                          f"< {PAGE_SECONDS:.0f} s", secs < PAGE_SECONDS, note))


class _Reuse:
    """A persistent browser context offered where _load expects a browser (its new_context is the context)."""

    def __init__(self, context) -> None:
        self._context = context

    def new_context(self, **_: object):
        return _Kept(self._context)


class _Kept:
    """The persistent context, whose close is the caller's (visit closes the browser)."""

    def __init__(self, context) -> None:
        self._context = context

    def new_page(self):
        return self._context.new_page()

    def close(self) -> None:
        for page in self._context.pages:
            page.close()


# -- before and after, per page ------------------------------------------------------------------------------------
LOADS = 3
BEFORE = "7b01243"   # main before the page-speed work of issue 14 item 18

_CONTENT = """() => {
    const main = document.querySelector('[data-testid="stMain"]');
    if (!main || !main.querySelector('h1')) return false;
    if (document.querySelector('[data-testid="stAppSkeleton"]')) return false;
    return main.querySelectorAll('[data-testid="stElementContainer"]').length >= 2;
}"""


@dataclass(frozen=True)
class Load:
    """One page load in a fresh browser session (seconds from navigation; bytes over the websocket)."""

    content_s: float
    full_s: float
    server_s: float
    bytes: int
    charts: int
    errors: int


def measure(browser, url: str, *, quiet: float = 0.6, timeout: float = 120) -> Load:
    """Load `url` in a fresh session: first content, full run, the websocket's span and bytes (see the docstring)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    frames: list[tuple[float, int]] = []

    def on_socket(ws) -> None:
        ws.on("framereceived", lambda payload: frames.append((time.perf_counter(), len(payload))))

    page.on("websocket", on_socket)
    try:
        t0 = time.perf_counter()
        page.goto(url, wait_until="commit")
        content = since = None
        charts = 0
        while True:
            now = time.perf_counter()
            if content is None and page.evaluate(_CONTENT):
                content = now - t0
            state = page.evaluate(_RENDERED)
            if state >= 0:
                since = since or now
                charts = state
                if now - since >= quiet:
                    break
            else:
                since = None
            if now - t0 > timeout:
                raise TimeoutError(f"not rendered after {timeout:.0f} s")
            time.sleep(0.05)
        shown = [(t, n) for t, n in frames if t <= since]
        server = shown[-1][0] - shown[0][0] if shown else float("nan")
        errors = page.locator('[data-testid="stException"]').count()
        return Load(content if content is not None else since - t0, since - t0, server,
                    sum(n for _, n in shown), charts, errors)
    finally:
        context.close()


def median_load(browser, url: str, n: int = LOADS) -> Load:
    """The median of each measure over `n` loads (each in a fresh session)."""
    loads = [measure(browser, url) for _ in range(n)]
    return Load(*(statistics.median(getattr(x, f) for x in loads) for f in
                  ("content_s", "full_s", "server_s", "bytes", "charts")), max(x.errors for x in loads))


def export_revision(rev: str, dest: Path) -> Path:
    """The tree of git revision `rev` in `dest` (git archive: no worktree, nothing in this checkout changes)."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def measure_tree(browser, db: Path, tree: Path, log: Path, only: set[str] | None = None) -> dict[str, Load]:
    """Every page (or those named in `only`) of the checkout at `tree`, served on `db` in one dashboard, after a
    first visit of the root."""
    names = [(n, path) for n, path in pages() if not only or n in only]
    out: dict[str, Load] = {}
    with dashboard(db, log, tree / "app.py", cwd=tree) as (url, _):
        measure(browser, url)   # the process opens the database and imports its modules once, as any server has
        for name, path in names:
            try:
                out[name] = median_load(browser, f"{url}/{path}")
            except Exception as exc:  # a page that never renders is reported, the others still measured
                print(f"{name}: DID NOT RENDER ({type(exc).__name__}: {str(exc).splitlines()[0][:100]})")
    return out


def median_loads(browser, report: Report, work: Path, db: Path, label: str, before: str = BEFORE) -> None:
    """Each page in a running dashboard as the newcomer issue timed it (median of LOADS fresh sessions), for this
    tree and, in the note, for the revision `before` served on the same database."""
    try:
        old = export_revision(before, work / f"tree-{before}")
    except subprocess.CalledProcessError:
        old = None
    was = measure_tree(browser, db, old, work / "before.log") if old else {}
    for name, load in measure_tree(browser, db, ROOT, work / "after.log").items():
        b = was.get(name)
        report.add(Figure(f"page_median_s[{name}]@{label}",
                          f"{name}: in a running dashboard, median of {LOADS} fresh sessions ({label})", load.full_s,
                          "s", f"< {PAGE_SECONDS:.0f} s", load.full_s < PAGE_SECONDS,
                          f"first content {load.content_s:.2f} s, server {load.server_s:.2f} s, "
                          f"{load.bytes / 1000:,.0f} kB sent"
                          + (f"; before the page-speed work ({before}) {b.full_s:.2f} s" if b else "")))


def point_to_run(browser, url: str, metric: str = "faithfulness") -> float:
    """Seconds from a click on a point of Trends' chart (the page already drawn) to its Run page drawn (as _load)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        page.goto(f"{url}/trends", wait_until="commit")
        drawn = None
        while drawn is None or time.perf_counter() - drawn < 0.6:   # drawn, and settled (as _load)
            if page.evaluate(_RENDERED) < 0:
                drawn = None
            else:
                drawn = drawn or time.perf_counter()
            time.sleep(0.05)
        target = page.evaluate(POINT_JS, metric)
        point = page.locator('[data-testid="stMain"] .scatterlayer .trace').nth(target["trace"]) \
            .locator(".points path").nth(target["point"])
        point.scroll_into_view_if_needed()
        box = point.bounding_box()
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(x, y)   # Plotly's drag layer takes the mouse: click where the point is
        t0 = time.perf_counter()
        page.mouse.click(x, y)
        since = None
        while True:
            now = time.perf_counter()
            on_run = "/run?" in page.evaluate("() => location.href") and page.evaluate(
                "() => Array.from(document.querySelectorAll('h1')).map(h => h.innerText).join('|')").startswith("Run")
            if on_run and page.evaluate(_RENDERED) >= 0:
                since = since or now
                if now - since >= 0.6:
                    return since - t0
            else:
                since = None
            if now - t0 > 120:
                raise TimeoutError("the Run page did not open")
            time.sleep(0.05)
    finally:
        context.close()


def point_clicks(browser, report: Report, work: Path, db: Path, label: str) -> None:
    """Trends point -> its Run page, median of LOADS fresh sessions in one running dashboard."""
    with dashboard(db, work / "click.log") as (url, _):
        measure(browser, url)
        secs = statistics.median(point_to_run(browser, url) for _ in range(LOADS))
    report.add(Figure(f"point_to_run_s@{label}", f"a point on Trends' chart to its Run page drawn ({label})", secs,
                      "s", f"< {PAGE_SECONDS:.0f} s", secs < PAGE_SECONDS, f"median of {LOADS} fresh sessions"))


TRENDS_PX = 34 + 5 * 200 + 4 * 76 + 30   # lib.presentation.trend_stack: title, five panels, gaps, date labels
REFERENCE_RATIO = 1.5   # issue 28 item 8: every page settles within 1.5x the reference page, measured side by side
REFERENCE_APP = '''"""The reference page: a title and one Plotly chart the height of Trends' five panels."""
import plotly.graph_objects as go
import streamlit as st

st.set_page_config(page_title="reference", layout="wide")
st.title("A reference page with one Plotly chart")
fig = go.Figure()
for k in range(5):
    fig.add_scatter(x=list(range(90)), y=[0.6 + 0.05 * k + 0.01 * ((i * 7 + k) % 5) for i in range(90)],
                    mode="lines+markers", name=f"metric {k}")
fig.update_layout(height=HEIGHT, margin=dict(l=10, r=10, t=40, b=10))
st.plotly_chart(fig, key="reference")
'''


@dataclass(frozen=True)
class SideBySide:
    """A page and the reference page, loaded alternately in the same minutes (medians of full runs)."""

    page_s: float
    reference_s: float

    @property
    def ratio(self) -> float:
        return self.page_s / self.reference_s


def side_by_side(browser, db: Path, work: Path, only: set[str] | None = None, n: int = LOADS) -> dict[str, SideBySide]:
    """Each page (or those in `only`) against the reference page (REFERENCE_APP, one Plotly chart), each load in a
    fresh session, alternating page and reference `n` times, both servers up all along: the same machine load
    falls on both, so the ratio holds on a shared machine where the seconds do not."""
    ref_script = work / "reference_app.py"
    ref_script.write_text(REFERENCE_APP.replace("HEIGHT", str(TRENDS_PX)))
    names = [(name, path) for name, path in pages() if not only or name in only]
    out: dict[str, SideBySide] = {}
    with dashboard(db, work / "side-app.log") as (url, _), dashboard(db, work / "side-ref.log", ref_script) as (ref, _):
        measure(browser, url)   # both processes import their modules and open what they read once
        measure(browser, ref)
        for name, path in names:
            mine, theirs = [], []
            for _ in range(n):
                theirs.append(measure(browser, ref).full_s)
                mine.append(measure(browser, f"{url}/{path}").full_s)
            out[name] = SideBySide(statistics.median(mine), statistics.median(theirs))
            r = out[name]
            print(f"{name}: {r.page_s:.2f} s beside the reference page's {r.reference_s:.2f} s: {r.ratio:.2f}x "
                  f"(target < {REFERENCE_RATIO}x: {'PASS' if r.ratio < REFERENCE_RATIO else 'MISS'})", flush=True)
    return out


def print_figures(label: str, after: dict[str, Load], before: dict[str, Load] | None, rev: str) -> None:
    """One line per page and measure: 'figure: value (target ...; before ...)'."""
    measures = (("full run", "full_s", 1.0, "s", f"< {PAGE_SECONDS:.0f} s"),
                ("first content", "content_s", 1.0, "s", ""), ("server", "server_s", 1.0, "s", ""),
                ("bytes sent", "bytes", 1e-3, "kB", ""))
    for name, a in after.items():
        b = (before or {}).get(name)
        for what, field, scale, unit, target in measures:
            value = getattr(a, field) * scale
            verdict = f", {'PASS' if value < PAGE_SECONDS else 'MISS'}" if target else ""
            was = f"; before ({rev}) {getattr(b, field) * scale:,.2f} {unit}" if b else ""
            print(f"{name} {what} @{label}: {value:,.2f} {unit} (target {target or 'none'}{verdict}{was})"
                  + (f"  [{a.errors} EXCEPTION BOX(ES)]" if a.errors and field == "full_s" else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", default=BEFORE, metavar="REV",
                        help=f"also measure this git revision (default {BEFORE}: main before the page-speed work; "
                             "'none': this tree only)")
    parser.add_argument("--db", type=Path, help="the database to serve (default: the demo, built in --workdir)")
    parser.add_argument("--large", action="store_true", help="also the synthetic 2,000-run store")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/evaldrift-bench-pages"))
    parser.add_argument("--pages", nargs="+", metavar="PAGE", help="only these pages (e.g. trends compare)")
    parser.add_argument("--reference", action="store_true",
                        help="only each page beside the reference page with one Plotly chart (target < 1.5x)")
    args = parser.parse_args(argv)
    only = set(args.pages or ())
    from playwright.sync_api import sync_playwright

    from lib.jobs._demo import build_demo  # after sys.path: this tree's lib
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    targets: list[tuple[Path, str]] = []
    demo = args.db or work / "demo.duckdb"
    if not demo.exists():
        build_demo(demo)
    targets.append((demo, "demo" if args.db is None else demo.name))
    if args.large:
        from tests.benchmarks import synth
        big = work / "synthetic-2000.duckdb"
        if not big.exists():
            synth.build(big, 2000)
        targets.append((big, "2,000 runs"))
    old = None
    if args.before != "none":
        try:
            old = export_revision(args.before, work / f"tree-{args.before}")
        except subprocess.CalledProcessError:
            print(f"before ({args.before}): not in this repository's history; skipped")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        if args.reference:
            try:
                side_by_side(browser, demo, work, only)
            finally:
                browser.close()
            return 0
        try:
            for db, label in targets:
                before = measure_tree(browser, db, old, work / "before.log", only) if old else None
                after = measure_tree(browser, db, ROOT, work / "after.log", only)
                print_figures(label, after, before, args.before)
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
