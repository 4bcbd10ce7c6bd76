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
"""

from __future__ import annotations

import re
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from tests.benchmarks.report import Figure, Report, vm_hwm_mib, warn
from tests.support.browser import StreamlitServer

ROOT = Path(__file__).resolve().parents[2]
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
def dashboard(db: Path, log: Path, script: Path = ROOT / "app.py"):
    """`streamlit run` (tests.support.browser.StreamlitServer) serving `db`; yields (url, pid).

    Each server writes its output into its own folder beside `log`.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    log_dir = Path(tempfile.mkdtemp(dir=log.parent, prefix=f"{log.stem}-"))
    with StreamlitServer(db, log_dir=log_dir, script=script) as server:
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
                rss = vm_hwm_mib(pid)
            report.add(Figure(f"dashboard_rss_mib@{label}", f"dashboard peak RSS after every page ({label})", rss,
                              "MiB", f"< {RSS_MIB:.0f} MiB", rss < RSS_MIB, "VmHWM of the streamlit process"))
        finally:
            browser.close()
    text = log.read_text(errors="replace") if log.exists() else ""
    if "Traceback" in text:
        warn(f"the dashboard logged a traceback; see {log}")
