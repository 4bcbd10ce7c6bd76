"""evaldrift: did the system change, or did the measurement? The dashboard's entry point."""

import streamlit as st

from lib.app import demo_start

try:
    secrets = dict(st.secrets)
except Exception:   # no secrets.toml: the environment alone decides
    secrets = {}
demo_start.start_early(secrets)   # a first start: the demo build judges while the imports below run

from lib.app.gate import require_user  # noqa: E402 (after the early start, on purpose)
from lib.app.ui import load_settings, navigating  # noqa: E402

st.set_page_config(page_title="evaldrift", layout="wide")

PAGES = [
    st.Page("pages/overview.py", title="Overview", default=True),
    st.Page("pages/trends.py", title="Trends", url_path="trends"),
    st.Page("pages/run.py", title="Run", url_path="run"),
    st.Page("pages/compare.py", title="Compare", url_path="compare"),
    st.Page("pages/ablation.py", title="Ablation", url_path="ablation"),
    st.Page("pages/canary.py", title="Canary", url_path="canary"),
    st.Page("pages/review.py", title="Review", url_path="review"),
    st.Page("pages/labels.py", title="Labels", url_path="labels"),
    st.Page("pages/import.py", title="Import", url_path="import"),
]

require_user(load_settings())   # with an [auth] section: nobody past this line unless signed in and allowed

with navigating():
    st.navigation(PAGES).run()
