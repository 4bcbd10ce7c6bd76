"""Login: with an [auth] section, Streamlit's OIDC login stands in front of every page.

A real OIDC provider (oidc-provider-mock) runs on loopback in the test; the
dashboard is configured for it through a secrets file of the test's own. A
user on EVALDRIFT_ALLOWED_USERS signs in there and sees the pages; one who is
not on it signs in too but sees no page, by the front door or a deep link.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, Locator, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.support.browser import (
    MAIN,
    SIDEBAR_NAV,
    StreamlitServer,
    copy_db,
    follow,
    free_port,
    home_port,
    wait_for_app,
)
from tests.support.cli import run_cli
from tests.support.openai_server import OpenAIServer

oidc = pytest.importorskip("oidc_provider_mock", reason="pip install -r tests/requirements.txt")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")   # Authlib's, from inside the provider

ALLOWED = "alice@team.example"
VIEWER = "bob@team.example"       # may see the pages, not spend on the paid judge
STRANGER = "mallory@elsewhere.example"
DEMO_METRIC = "faithfulness"


@pytest.fixture(scope="module")
def dashboard(paid_dashboard: tuple) -> StreamlitServer:
    """The dashboard behind login (allow-list: @team.example), and the provider it trusts, both on loopback.

    One server for the module: the paid dashboard's (its judge a loopback OpenAI server that no test here but
    the paid ones makes call), so the provider, the server's first start and each user's sign-in are paid once.
    """
    return paid_dashboard[0]


@contextmanager
def behind_login(db: Path, work: Path, *, base_url: str | None = None) -> Iterator[StreamlitServer]:
    """A dashboard on `db` behind login, and the OIDC provider it trusts, both on loopback; its paid judge is
    at `base_url` (default: a loopback port nobody listens on)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")   # the provider in this process: plain HTTP on loopback
    try:
        with oidc.run_server_in_thread(port=0) as idp:
            # the process's home port when free (tests/support/browser.py): the kept Chromium has compiled the app's
            # scripts for that origin already, in an earlier module or an earlier test of this one
            port = home_port()
            secrets_file = work / "secrets.toml"
            secrets_file.write_text(
                "[auth]\n"
                f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
                f'cookie_secret = "{secrets.token_hex(32)}"\n'
                'client_id = "evaldrift"\n'
                'client_secret = "evaldrift-test-secret"\n'
                f'server_metadata_url = "http://localhost:{idp.server_port}/.well-known/openid-configuration"\n',
                encoding="utf-8")
            # the loopback provider sends no email_verified: its operator vouches for its email claim by naming it
            env = {"EVALDRIFT_ALLOWED_USERS": "@team.example", "EVALDRIFT_ABLATION_USERS": ALLOWED,
                   "EVALDRIFT_IDENTITY_CLAIM": "email",
                   "EVALDRIFT_JUDGE_MODEL": "team-model",
                   "OPENAI_BASE_URL": base_url or f"http://127.0.0.1:{free_port()}/v1",
                   "AUTHLIB_INSECURE_TRANSPORT": "1"}
            with StreamlitServer(db, env=env, port=port, log_dir=work / "logs",
                                 args=("--secrets.files", str(secrets_file))) as server:
                server.idp_url = f"http://localhost:{idp.server_port}"   # to give a test user claims of its own
                server.sessions = {}   # user -> the browser's cookies (its login cookie) after signing in
                yield server
    finally:
        mp.undo()



def body_text(page: Page, where: str = "body") -> str:
    """The page's text as read: without the invisible word joiners that keep an address or a URL unlinked."""
    return page.inner_text(where).replace("\u2060", "")


def sign_in(page: Page, server: StreamlitServer, who: str, *, sub: str | None = None) -> Page:
    """`who` signs in on `page`'s tab through the provider's own form (as its user `sub`, by default `who`), and
    lands on the Overview (or a refusal).

    Nobody is signed in before, neither at the dashboard nor at the provider: the context's cookies are cleared
    first (the module's context is one, kept for the browser's caches: a page load in a new context costs Chromium
    about 2.5 CPU s more, the app's scripts fetched and compiled anew). The cookies the round trip leaves are kept
    for `signed_in`."""
    page.context.clear_cookies()
    page.goto(server.url + "/")
    wait_for_app(page)
    assert DEMO_METRIC not in body_text(page)     # nothing of the data before signing in
    page.get_by_role("button", name="Sign in").click()
    page.locator('input[name="sub"]').fill(sub or who)     # the provider's own sign-in form
    page.get_by_role("button", name="Authorize").click()
    page.wait_for_url(f"{server.url}/**")
    wait_for_app(page)
    server.sessions[who] = page.context.cookies()
    return page


def signed_in(page: Page, server: StreamlitServer, who: str) -> Page:
    """`page`'s context holding `who`'s login cookie from a real sign-in on `server`; `page` is returned unloaded.

    For the tests of what a signed-in user may do, not of signing in: the
    provider's round trip and the Overview it lands on are paid once per user
    and server (by the first `sign_in`, or here), and the test opens its own
    page directly. The cookie is the one Streamlit set; nothing is forged.
    Users take turns in the module's one context: Streamlit reads the cookie
    when a tab's session opens, so a tab opened as one user stays that user's
    after the context's cookies become another's (two users at once: two tabs).
    """
    if who not in server.sessions:
        sign_in(page, server, who)
        page.goto("about:blank")
    use_cookies(page.context, server.sessions[who])
    return page


def open_as(page: Page, server: StreamlitServer, who: str, path: str) -> Page:
    """`server`'s `path` in a session of `who`'s (`signed_in`). A sign-in made here leaves the tab on the Overview it
    landed on, in `who`'s session: the page is opened from there as the dashboard's own links do (`follow`: no
    second page load). Otherwise the tab opens the link, and its new session reads `who`'s cookie."""
    if who not in server.sessions:
        sign_in(page, server, who)
        follow(page, server.url + path)
        return page
    signed_in(page, server, who)
    page.goto(server.url + path)
    wait_for_app(page)
    return page


def use_cookies(context: BrowserContext, cookies: list) -> None:
    """The context's cookies become exactly `cookies` (a user's, from `sign_in`; none: nobody signed in)."""
    context.clear_cookies()
    if cookies:
        context.add_cookies(cookies)


def test_a_user_on_the_allow_list_signs_in_sees_the_pages_and_records_an_incident_state_as_themselves(
        dashboard: StreamlitServer, page: Page) -> None:
    """The user is the provider's `alice-verified`, whose email claim is verified: a verified email is let in, and
    the user is known by it (the viewer's sign-in lets in an email the provider says nothing about)."""
    provider_user(dashboard, "alice-verified", {"email": ALLOWED, "email_verified": True})
    page = sign_in(page, dashboard, ALLOWED, sub="alice-verified")
    body = body_text(page)
    assert f"Signed in as {ALLOWED}" in body
    assert DEMO_METRIC in body_text(page, MAIN)
    titles = page.locator(f'{SIDEBAR_NAV} [data-testid="stSidebarNavLink"]').all_inner_texts()
    assert {"Overview", "Trends", "Ablation", "Review"} <= {t.strip() for t in titles}

    # an incident state, on the Overview the sign-in landed on, is recorded as the signed-in user
    assert f"Recorded as {ALLOWED} (signed in)." in body and "Your name" not in body   # no name to type
    state = page.locator('[class*="st-key-state_"]').first
    state.evaluate("e => e.scrollIntoView({block: 'center'})")
    picked = state.locator("input[role=combobox]")
    picked.click()
    page.get_by_role("option", name="explained as system change", exact=True).click()
    page.wait_for_function("e => e.value === 'explained as system change'", arg=picked.element_handle())
    page.locator('[class*="st-key-note_"] input').first.fill("checked by the signed-in user")
    page.locator('[class*="st-key-record_"] button').first.click()
    # read back from the store on the next run: the change carries the signed-in user, not a typed name. The form's
    # run and the rerun it asks for may not have begun when a short quiet spell ends: wait for the line itself.
    recorded = f"{ALLOWED}: explained as system change (checked by the signed-in user)"
    with contextlib.suppress(PlaywrightTimeoutError):   # if it never comes, the assertion says what is shown instead
        page.wait_for_function("t => document.body.textContent.replaceAll('\\u2060', '').includes(t)", arg=recorded)
    wait_for_app(page)
    assert recorded in page.text_content("body").replace("\u2060", "")

    # the sidebar's Trends: a click, not a page load (a deep link of a signed-in user is opened by the tests of the
    # Ablation and Import pages below)
    page.locator(f'{SIDEBAR_NAV} [data-testid="stSidebarNavLink"]').filter(has_text=re.compile("^Trends$")).click()
    wait_for_app(page)
    assert page.url.split("?")[0] == dashboard.url + "/trends"
    assert DEMO_METRIC in body_text(page, MAIN)


def test_a_user_not_on_the_allow_list_sees_no_page(dashboard: StreamlitServer, page: Page) -> None:
    page = sign_in(page, dashboard, STRANGER)
    text = body_text(page)
    assert f"{STRANGER} is not on this dashboard's list of users" in text
    assert DEMO_METRIC not in text
    for deep in ("/trends", "/ablation", "/run?run=latest", "/import"):
        page.goto(dashboard.url + deep)
        wait_for_app(page)
        text = body_text(page)
        assert "not on this dashboard's list of users" in text and DEMO_METRIC not in text, deep


def test_without_signing_in_a_deep_link_shows_only_the_sign_in(dashboard: StreamlitServer, page: Page) -> None:
    use_cookies(page.context, [])
    page.goto(dashboard.url + "/ablation")
    wait_for_app(page)
    assert page.get_by_role("button", name="Sign in").is_visible()
    assert DEMO_METRIC not in body_text(page)


def test_a_signed_in_viewer_sees_the_database_by_name_never_its_server_path(dashboard: StreamlitServer,
                                                                            page: Page) -> None:
    # read on the Overview the viewer's sign-in lands on (this file's first sign-in of the viewer: the later
    # tests of what a viewer may do reuse its cookie)
    page = sign_in(page, dashboard, VIEWER)
    text = body_text(page, MAIN)
    assert "Database team.duckdb" in text
    assert str(Path(dashboard.db).parent) not in body_text(page)    # no server path, in any form


@pytest.mark.parametrize(("who", "may_launch"), [(ALLOWED, True), (VIEWER, False)])
def test_only_the_listed_users_may_launch_an_ablation_with_the_paid_judge(
        paid_dashboard: tuple, page: Page, who: str, may_launch: bool) -> None:
    """The listed user then launches it, and a viewer may not stop it (`stop_by_a_viewer_and_the_owner`)."""
    server, judge, _ = paid_dashboard
    if may_launch:   # before the job: signing in waits for a page that settles
        signed_in(page, server, VIEWER)
    page = open_as(page, server, who, "/ablation")
    launch = page.get_by_role("button", name="Launch ablation")
    assert launch.is_enabled()                        # the run's own judge is offline: open to everyone
    page.get_by_text("(from the sidebar)").click()    # the paid judge
    wait_for_app(page)
    assert not launch.is_enabled()                    # a listed user still confirms the paid calls once
    assert ("EVALDRIFT_ABLATION_USERS" in body_text(page)) is not may_launch
    if may_launch:
        page.get_by_text("Launch up to").filter(has_text="calls to the paid judge team-model").click()
        wait_for_app(page)
        assert launch.is_enabled()
        stop_by_a_viewer_and_the_owner(page, server, judge)
    else:
        assert page.get_by_text("Launch up to").count() == 0


@pytest.mark.parametrize(("who", "may_score"), [(ALLOWED, True), (VIEWER, False)])
def test_only_the_listed_users_may_score_an_upload_with_the_paid_judge(
        dashboard: StreamlitServer, page: Page, who: str, may_score: bool) -> None:
    page = open_as(page, dashboard, who, "/import")
    row = {"id": "q1", "question": "When?", "answer": "At nine.", "contexts": ["It opens at nine."],
           "ground_truth": "At nine."}
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        files=[{"name": "mine.jsonl", "mimeType": "application/octet-stream",
                "buffer": (json.dumps(row) + "\n").encode()}])
    wait_for_app(page)
    record = page.locator(".st-key-imp_record button")
    # a file without scores is scored by default, as `score` does, with the sidebar's (paid) judge: only a listed
    # user may launch it
    assert record.is_enabled() is may_score
    assert ("EVALDRIFT_ABLATION_USERS" in body_text(page)) is not may_score


def provider_user(server: StreamlitServer, sub: str, claims: dict) -> None:
    """Give the provider's user `sub` these claims (oidc-provider-mock's PUT /users/<sub>)."""
    import urllib.request

    req = urllib.request.Request(f"{server.idp_url}/users/{sub}", data=json.dumps(claims).encode(), method="PUT",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as reply:
        assert reply.status == 204


@pytest.mark.parametrize(("sub", "claims", "refusal"), [
    ("ceo-unverified", {"email": "ceo@team.example", "email_verified": False}, "is not verified"),
    ("mallory@evil.example@team.example", None, "not on this dashboard's list of users"),   # two @: no domain
])
def test_an_unverified_email_or_a_forged_address_is_not_let_in(
        dashboard: StreamlitServer, page: Page, sub: str, claims: dict | None, refusal: str) -> None:
    if claims is not None:
        provider_user(dashboard, sub, claims)
    page = sign_in(page, dashboard, sub)      # the provider signs them in; the dashboard does not let them in
    text = body_text(page)
    assert refusal in text and DEMO_METRIC not in text
    for deep in ("/trends", "/import"):
        page.goto(dashboard.url + deep)
        wait_for_app(page)
        text = body_text(page)
        assert refusal in text and DEMO_METRIC not in text, deep


@pytest.fixture(scope="module")
def paid_dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[StreamlitServer, object, str]]:
    """The dashboard behind login, its paid judge a loopback OpenAI server, and a paid ablation done there (its
    faithfulness blanked ground_truth only, so the four readings are still to launch).

    On the mini demo (three of the demo's nights, a leak among them): what the pages show is not the point here,
    and the dashboard's first page load on it costs the server about 2.4 CPU s against 3.9 s on the whole demo."""
    from lib.diagnosis.ablation import AblationSpec
    from tests.conftest import offline_responder
    from tests.support.reliability_support import mini_demo

    work = tmp_path_factory.mktemp("paid")
    db = copy_db(mini_demo(), work / "team.duckdb")
    judge = OpenAIServer(offline_responder).start()
    try:
        env = {**os.environ, "OPENAI_BASE_URL": judge.base_url, "OPENAI_API_KEY": "sk-test",
               "EVALDRIFT_JUDGE_MODEL": "team-model"}
        proc = run_cli("ablate", "--db", db, "--run", "latest", "--metric", "faithfulness", "--blank", "ground_truth",
                       "--judge", "openai", "--limit", "4", "--repeats", "1", "--json", "--yes", env=env)
        assert proc.returncode in (0, 1, 3), proc.stderr
        ablation_id = AblationSpec.from_dict(json.loads(proc.stdout)["spec"]).ablation_id
        with behind_login(db, work, base_url=judge.base_url) as server:
            yield server, judge, ablation_id
    finally:
        judge.stop()


@pytest.mark.parametrize(("who", "may_launch"), [(ALLOWED, True), (VIEWER, False)])
def test_the_four_readings_of_a_paid_ablation_are_launched_only_by_a_listed_user(
        paid_dashboard: tuple, page: Page, who: str, may_launch: bool) -> None:
    server, judge, ablation_id = paid_dashboard
    page = open_as(page, server, who, f"/ablation?ablation={ablation_id}")
    four = page.get_by_role("button", name="Launch the four readings on this run")
    assert four.count() == 1, body_text(page, MAIN)
    calls = len(judge.requests)
    confirm = page.get_by_text("Launch up to").filter(has_text="calls to the paid judge team-model")
    if may_launch:   # a listed user confirms the paid calls, then may launch
        assert not four.is_enabled()
        confirm.click()
        wait_for_app(page)
        assert four.is_enabled()
    else:            # the form's judge is the run's offline one; the readings would call the paid judge: refused
        assert confirm.count() == 0
        assert not four.is_enabled()
        assert "EVALDRIFT_ABLATION_USERS" in body_text(page, MAIN)
        four.click(force=True)    # a disabled button does nothing, even clicked
        wait_for_app(page)
        assert len(judge.requests) == calls


def _visible_stop(page: Page) -> Locator:
    """The ablation's Stop button once drawn (a fragment rerun may briefly draw a second, hidden, one)."""
    stop = page.locator(".st-key-abl_stop button").filter(visible=True).first
    try:
        stop.wait_for(timeout=60_000)
    except Exception:
        raise AssertionError(body_text(page, MAIN)) from None
    return stop


def stop_by_a_viewer_and_the_owner(owner: Page, server: StreamlitServer, judge: OpenAIServer) -> None:
    """The listed user launches the paid ablation `owner` shows ready; a viewer opening its link may not stop it,
    its owner may. Any signed-in viewer could press Stop on a colleague's paid job (noticed after issue 23)."""
    judge.latency = 3.0   # slow enough that the job is still running while both users look at it
    viewer = None
    try:
        owner.get_by_role("button", name="Launch ablation").click()
        stop = _visible_stop(owner)
        link = owner.url
        assert "ablation=" in link

        # the viewer's own tab, opened with the viewer's cookie: the owner's session stays the owner's
        viewer = owner.context.new_page()
        use_cookies(viewer.context, server.sessions[VIEWER])
        viewer.goto(link)
        their_stop = _visible_stop(viewer)
        assert not any(b.is_enabled() for b in viewer.locator(".st-key-abl_stop button").all())
        assert "may stop a job on a paid judge" in body_text(viewer, MAIN)
        their_stop.click(force=True)   # a disabled button does nothing, even clicked
        time.sleep(2)
        viewer.close()
        owner.bring_to_front()
        assert stop.is_visible() and stop.is_enabled()   # still running for its owner

        stop.click()
        owner.get_by_text("Nothing was decided").or_(owner.get_by_text("stopped")).first.wait_for(timeout=60_000)
    finally:
        judge.latency = 0.0
        if viewer is not None and not viewer.is_closed():
            viewer.close()
