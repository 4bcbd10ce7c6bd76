"""Exports that read well as plain text (issue 14 item 16): md_text escapes only what a Markdown renderer
would misread, checked against a real CommonMark renderer (markdown-it-py, with GFM tables and
strikethrough); plain_text drops those escapes again."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from lib.presentation.mdtext import md_text, plain_text
from lib.presentation.report import md_fence

RENDERER = MarkdownIt("commonmark").enable(["table", "strikethrough"])
SPECIALS = "\\`*_[]<>|~&$#-+=.)!(:;/ 1aZé\n"


def _html_text(value: str) -> str:
    """What markdown-it prints for literal text."""
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _flat(value: str) -> str:
    return " ".join(value.split())


# -- one row per rule -------------------------------------------------------------------------------
@pytest.mark.parametrize(("raw", "written"), [
    ("ground_truth -> projected", "ground_truth -> projected"),      # the two complaints: untouched
    ("_em_ and snake_", "\\_em\\_ and snake\\_"),                     # an underscore at a word's edge
    ("**bold** 2*3", "\\*\\*bold\\*\\* 2\\*3"),                       # asterisks emphasise even inside words
    ("`code`", "\\`code\\`"),
    ("[a](b) ![i](j)", "\\[a](b) !\\[i](j)"),
    ("<script>x</script>", "\\<script>x\\</script>"),                  # no tag opens without its <
    ("a | b", "a \\| b"),
    ("~~gone~~ $x$", "\\~\\~gone\\~\\~ \\$x\\$"),
    ("&amp; &#38; & AT&T", "\\&amp; \\&#38; & AT&T"),                 # only a character reference
    ("C:\\data\\*", "C:\\data\\\\\\*"),                                # a backslash before punctuation
    ("ends with \\", "ends with \\\\"),
    ("# heading", "\\# heading"),
    ("- item", "\\- item"),
    ("+ item", "\\+ item"),
    ("> quote", "\\> quote"),
    ("12. item", "12\\. item"),
    ("3) item", "3\\) item"),
    ("-0.020 as wired", "-0.020 as wired"),                            # not a list marker
    ("#3 of 5", "#3 of 5"),                                            # not a heading
    ("two\nlines\r\n  here", "two lines here"),
])
def test_md_text_escapes_only_what_a_renderer_would_misread(raw: str, written: str) -> None:
    assert md_text(raw) == written


# -- against a renderer ---------------------------------------------------------------------------
@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=SPECIALS, min_size=1, max_size=24))
def test_any_value_renders_as_itself_in_a_paragraph_a_list_item_and_a_table_cell(value: str) -> None:
    flat = _flat(value)
    if not flat:
        return
    want = _html_text(flat)
    assert RENDERER.render(f"note: {md_text(value)}") == f"<p>note: {want}</p>\n"
    assert RENDERER.render(md_text(value)) == f"<p>{want}</p>\n"
    item = RENDERER.render(f"- {md_text(value)}")
    assert item == f"<ul>\n<li>{want}</li>\n</ul>\n"
    table = RENDERER.render(f"| a | b |\n|---|---|\n| {md_text(value)} | x |\n")
    assert re.search(r"<td>(.*?)</td>\s*<td>x</td>", table).group(1) == want   # type: ignore[union-attr]


# st.text()'s own alphabet (all but the surrogates) named by category: the default's check against the UTF-8 codec
# encodes every code point once a process (3.5 -> 2.4 CPU s for this file with no Hypothesis folder, as in a clone)
@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(exclude_categories=("Cs",)), min_size=0, max_size=40))
def test_plain_text_gives_back_the_value(value: str) -> None:
    assert plain_text(md_text(value)) == _flat(value)


def test_plain_text_keeps_code_fences_as_written() -> None:
    fenced = md_fence("keep \\* and \\_ here")
    text = f"# {md_text('run_1 -> *x*')}\n\n{fenced}\n\n- {md_text('[a]')}\n"
    assert plain_text(text) == f"# run_1 -> *x*\n\n{fenced}\n\n- [a]\n"
