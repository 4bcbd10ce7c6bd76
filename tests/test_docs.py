"""The docs say what the code does: every .md file's links, commands, paths and settings; the README's tables.

The README is the guide (under 400 lines); the reference sits beside what it describes, one README.md per
folder. Every check that keeps a doc true runs over each of them, so text moved out of the README stays checked.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
from functools import cache
from pathlib import Path

import pytest

from lib.core.metrics import wiring_markdown
from lib.core.settings import SETTINGS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
_SKIP = ("node_modules", "data")   # data/: databases and what users drop there, not docs


def project_docs(root: Path) -> list[Path]:
    """The .md files of the project under `root`: not in a dot folder, node_modules or data/, nor in a virtual
    environment made inside the checkout (a folder holding pyvenv.cfg, whatever its name: `python -m venv V`)."""
    found = []
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP
                         and not (here / d / "pyvenv.cfg").exists())
        found += [here / f for f in files if f.endswith(".md")]
    return sorted(found)


DOCS = project_docs(ROOT)
DOC_IDS = [str(p.relative_to(ROOT)) for p in DOCS]

_FENCE = re.compile(r"^ *```[^\n]*\n(.*?)^ *```", re.S | re.M)   # indented too (a block in a list item)
_INLINE = re.compile(r"`([^`]+)`")   # a span may wrap onto the next line
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.M)
_SETTING = re.compile(r"\$?\b((?:EVALDRIFT|OPENAI)_[A-Z0-9_]+)\b")
_REPO_PATH = re.compile(r"^(?:lib|tests|pages|data/examples)/[\w./-]*$|^(?:app\.py|requirements\.txt|\.ci/run|"
                        r"\.mypy\.ini|\.ruff\.toml|\.pytest\.ini|\.streamlit/config\.toml)$")
_DOTTED = re.compile(r"^(?:lib|tests)(?:\.\w+)+(?::\w+)?$")


def _text(doc: Path) -> str:
    return doc.read_text(encoding="utf-8")


def _prose(text: str) -> str:
    """The text outside fenced blocks and inline code (where a Markdown link is a link)."""
    return _INLINE.sub("", _FENCE.sub("", text))


def _code(text: str) -> list[str]:
    """Every fenced block (continuation lines joined) and every inline code span."""
    blocks = [b.replace("\\\n", " ") for b in _FENCE.findall(text)]
    return blocks + [" ".join(span.split()) for span in _INLINE.findall(_FENCE.sub("", text))]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", plain.lower()).replace(" ", "-")


def _anchors(doc: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in _HEADING.findall(_FENCE.sub("", _text(doc))):
        slug = _slug(heading)
        out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return out


def _link_problems(doc: Path) -> list[str]:
    problems = []
    for target in _LINK.findall(_prose(_text(doc))):
        if re.match(r"^[a-z]+:", target):   # http(s), mailto: not reached from a test
            continue
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        if path and (not dest.exists() or ROOT not in dest.parents):
            problems.append(f"{target}: no such file in the repository")
        elif anchor and (dest.is_dir() or dest.suffix != ".md"):
            problems.append(f"{target}: an anchor into something that is not a doc")
        elif anchor and anchor not in _anchors(dest):
            problems.append(f"{target}: {path or doc.name} has no heading #{anchor}")
    return problems


@cache
def _cli_options() -> dict[str, set[str]]:
    """Each `python -m lib` command and every option it (or a sub-command of it) takes."""
    from lib.cli.parser import build_parser

    def options(parser: argparse.ArgumentParser) -> set[str]:
        found = set()
        for action in parser._actions:
            found.update(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    found |= options(sub)
        return found

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {name: options(parser) for name, parser in commands.choices.items()}


def _module_file(dotted: str) -> Path | None:
    base = ROOT / Path(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py", base / "__main__.py"):
        if candidate.exists():
            return candidate
    return None


def _command_problems(doc: Path) -> list[str]:
    problems = []
    commands = _cli_options()
    for code in _code(_text(doc)):
        for line in code.splitlines():
            line = line.split(" # ")[0]
            for m in re.finditer(r"python -m lib (\S+)((?: +(?!python |&&|\|\|)\S+)*)", line):
                name, rest = m.group(1), m.group(2)
                if name in ("COMMAND", "..."):
                    continue
                if name not in commands:
                    problems.append(f"`python -m lib {name}`: no such command")
                    continue
                flags = {f for f in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", rest)}
                problems += [f"`python -m lib {name}` has no option {f}" for f in sorted(flags - commands[name])]
            for m in re.finditer(r"python (?:-m (tests(?:\.\w+)+|lib(?:\.\w+)+)|((?:tests|lib)/[\w/.-]+\.py))"
                                 r"((?: +(?!python |&&)\S+)*)", line):
                module, script, rest = m.groups()
                source = _module_file(module) if module else ROOT / script
                if source is None or not source.exists():
                    problems.append(f"`python {'-m ' + module if module else script}`: no such file")
                    continue
                text = source.read_text(encoding="utf-8")
                for flag in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", rest):
                    if f'"{flag}"' not in text:
                        problems.append(f"{source.relative_to(ROOT)} takes no option {flag}")
            if re.search(r"\bbash \.ci/run\b", line) and not (ROOT / ".ci" / "run").exists():
                problems.append("bash .ci/run: no such file")
            if re.search(r"\bstreamlit run app\.py\b", line) and not (ROOT / "app.py").exists():
                problems.append("streamlit run app.py: no app.py")
            for req in re.findall(r"pip install -r (\S+)", line):
                if not (ROOT / req).exists() and not (ROOT / "tests" / req).exists():
                    problems.append(f"pip install -r {req}: no such file")
    return problems


def _cli_table_problems(doc: Path) -> list[str]:
    """The command reference's rows: the first cell's spans name a command and only options it takes."""
    problems = []
    commands = _cli_options()
    rows = [line for line in _text(doc).splitlines() if line.startswith("| `")]
    for row in rows:
        for span in _INLINE.findall(re.split(r"(?<!\\)\|", row)[1]):
            name = span.split()[0]
            if name not in commands:
                continue
            flags = set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", span))
            problems += [f"table row `{name} ...` has no option {f}" for f in sorted(flags - commands[name])]
    return problems


def _known_env() -> set[str]:
    """Settings, and the variables .ci/run and the tests themselves read (named in testing docs)."""
    names = {s.env for s in SETTINGS}
    sources = [ROOT / ".ci" / "run", *sorted(p for p in (ROOT / "tests").rglob("*.py") if p != Path(__file__))]
    for source in sources:
        names |= set(_SETTING.findall(source.read_text(encoding="utf-8")))
    return names


def _quoted_problems(doc: Path) -> list[str]:
    problems = []
    known = _known_env()
    for span in _code(_text(doc)):
        for env in _SETTING.findall(span):
            if env not in known:
                problems.append(f"`{env}`: no such setting")
        token = span.strip().rstrip(".,")
        if _REPO_PATH.match(token) and not (ROOT / token).exists():
            problems.append(f"`{token}`: no such path")
        if _DOTTED.match(token):
            module, _, attr = token.partition(":")
            problems += _dotted_problems(module, attr)
    return problems


def _dotted_problems(dotted: str, attr: str) -> list[str]:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        if _module_file(".".join(parts[:cut])) is not None:
            names = parts[cut:] + ([attr] if attr else [])
            if not names:
                return []
            obj = importlib.import_module(".".join(parts[:cut]))
            for name in names:
                if not hasattr(obj, name):
                    return [f"`{dotted}{':' + attr if attr else ''}`: {'.'.join(parts[:cut])} has no {name}"]
                obj = getattr(obj, name)
            return []
    return [f"`{dotted}`: no such module"]


@pytest.mark.parametrize("doc", DOCS, ids=DOC_IDS)
def test_every_link_resolves(doc: Path) -> None:
    assert not _link_problems(doc)


@pytest.mark.parametrize("doc", DOCS, ids=DOC_IDS)
def test_every_command_names_what_exists(doc: Path) -> None:
    assert not _command_problems(doc) + _cli_table_problems(doc)


@pytest.mark.parametrize("doc", DOCS, ids=DOC_IDS)
def test_every_quoted_setting_path_and_module_exists(doc: Path) -> None:
    assert not _quoted_problems(doc)


def test_a_virtual_environment_made_inside_the_checkout_is_not_read_as_our_docs(tmp_path: Path) -> None:
    """A fresh-clone run of .ci/run in `python -m venv V` failed here: the packages' own README.md files (with
    links into their repositories) were checked as ours."""
    for doc in ("README.md", "lib/README.md", "V/lib/python3.11/site-packages/openai/README.md",
                "venv2/README.md", ".venv/README.md", "node_modules/x/README.md", "data/notes.md"):
        (tmp_path / doc).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / doc).write_text("# doc\n")
    for venv in ("V", "venv2", ".venv"):
        (tmp_path / venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert [str(p.relative_to(tmp_path)) for p in project_docs(tmp_path)] == ["README.md", "lib/README.md"]
    assert ROOT / "README.md" in DOCS and ROOT / "lib" / "store" / "README.md" in DOCS


def test_every_doc_is_reachable_from_the_readme() -> None:
    reached, todo = set(), [ROOT / "README.md"]
    while todo:
        doc = todo.pop()
        if doc in reached:
            continue
        reached.add(doc)
        for target in _LINK.findall(_prose(_text(doc))):
            path = target.partition("#")[0]
            dest = (doc.parent / path).resolve() if path and not re.match(r"^[a-z]+:", target) else None
            if dest is not None and dest.suffix == ".md" and dest.exists():
                todo.append(dest)
    missing = [str(p.relative_to(ROOT)) for p in DOCS if p not in reached]
    assert not missing, f"no link from README.md leads to {missing}"


def test_the_readme_is_a_guide_under_400_lines() -> None:
    assert len(README.splitlines()) < 400


def test_the_checks_catch_a_broken_doc(tmp_path: Path) -> None:
    # The checks above must be able to fail: a doc with one of each mistake is caught by each.
    doc = tmp_path / "broken.md"
    doc.write_text("# Broken\n\n## A heading\n\n[gone](lib/nowhere.md) [anchor](#no-such-heading) [ok](#a-heading)\n\n"
                   "`python -m lib ablate --no-such-flag` `python -m lib frobnicate` `python tests/nothing.py`\n"
                   "`python -m tests.reliability_cases --no-flag`\n\n"
                   "| `runs --db PATH --colour` | x |\n\n"
                   "`EVALDRIFT_NO_SUCH_SETTING` `lib/core/nothing.py` `lib.core.settings.no_such_name`\n",
                   encoding="utf-8")
    links = _link_problems(doc)
    commands = _command_problems(doc) + _cli_table_problems(doc)
    quoted = _quoted_problems(doc)
    assert len(links) == 2 and "lib/nowhere.md" in links[0] and "#no-such-heading" in links[1]
    assert any("--no-such-flag" in p for p in commands) and any("frobnicate" in p for p in commands)
    assert any("tests/nothing.py" in p for p in commands) and any("--no-flag" in p for p in commands)
    assert any("--colour" in p for p in commands)
    assert any("EVALDRIFT_NO_SUCH_SETTING" in p for p in quoted) and any("nothing.py" in p for p in quoted)
    assert any("no_such_name" in p for p in quoted)


def test_readme_wiring_table_is_the_registry():
    assert wiring_markdown() in README


def test_readme_documents_every_setting():
    settings_doc = (ROOT / "lib" / "app" / "README.md").read_text(encoding="utf-8")   # the settings reference
    missing = [s.env for s in SETTINGS if f"| `{s.env}` |" not in settings_doc]
    assert not missing, f"lib/app/README.md does not document {missing}"


def test_readme_gives_the_two_setup_commands():
    assert "pip install -r requirements.txt && streamlit run app.py" in README
    assert "bash .ci/run" in README
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "python -m pytest" in ci
    assert "-r tests/requirements.txt" in ci


def test_readme_verdict_table_has_a_row_for_every_verdict_word():
    from lib.diagnosis.ablation import _verdicts as verdicts

    words = [verdicts.LEAK, verdicts.CLEAN, verdicts.SENSITIVE, verdicts.INSENSITIVE, verdicts.INCONCLUSIVE,
             verdicts.REPLAY_MISMATCH]
    table = README.split("| verdict | what was measured | what it does not say |")[1].split("\n\n")[0]
    rows = [line.split("|")[1].strip() for line in table.splitlines()[2:]]
    assert rows == words
    assert "does not read" not in table.replace("that the code does not read", "")


def test_the_readme_glossary_is_the_one_the_pages_show() -> None:
    from lib.presentation.glossary import glossary_markdown

    assert glossary_markdown() in README


# -- the figures the docs quote are the ones the page gives today (issue 40 item 3) ------------------------------------
_VERDICT_QUOTE = re.compile(r'\*"((?:LEAK|CLEAN|SENSITIVE|INSENSITIVE|INCONCLUSIVE|REPLAY MISMATCH):\s.+?)"\*', re.S)
QUOTING = ("README.md", "pages/README.md", "lib/diagnosis/README.md")   # the docs that quote the demo's ablation


def _build_page_ablation(path: Path, demo: Path) -> None:
    """The demo with the ablation the Ablation page launches as it opens (ablation_form.opening_spec, the run's own
    judge, built as the page's job runner builds it), stored."""
    import shutil

    from lib.core.settings import load
    from lib.diagnosis import incidents
    from lib.diagnosis.ablation import recorded_judge, run_ablation
    from lib.judging.build import build_judge, endpoint_of
    from lib.presentation.ablation_form import DEFAULT_METRIC, opening_spec, start_at
    from lib.store import Store

    shutil.copy(demo, path)
    settings = load({})
    with Store(path) as store:
        found, _ = incidents.load(store)
        run_id, metric = start_at(found, store.run_ids())
        judge = recorded_judge(store, run_id, (metric or DEFAULT_METRIC,))
        spec = opening_spec(found, store.run_ids(), judge=judge, endpoint=endpoint_of(judge, settings))
        run_ablation(store, spec, build_judge(spec.judge, spec.endpoint, settings))


@pytest.fixture(scope="module")
def page_ablation(demo_db: Path, tmp_path_factory: pytest.TempPathFactory):
    """The result of the page's opening ablation on the demo (built once per code, then read from the store)."""
    import json
    import shutil

    from lib.diagnosis.ablation import AblationResult
    from lib.store import Store
    from tests.conftest import built_once

    source = built_once("demo-page-ablation", lambda path: _build_page_ablation(path, demo_db))
    copy = Path(shutil.copy(source, tmp_path_factory.mktemp("page-ablation") / "demo.duckdb"))
    with Store(copy) as store:
        (row,) = store.ablations().itertuples(index=False)
    return AblationResult.from_dict(json.loads(row.result))


def _pieces_in_order(quote: str, sentence: str) -> bool:
    """Is every piece of the quote (split at an ellipsis) in the sentence, in order, whitespace aside?"""
    text, at = " ".join(sentence.split()), 0
    for piece in (" ".join(p.split()) for p in quote.split("…")):
        found = text.find(piece.strip(), at)
        if found < 0:
            return False
        at = found + len(piece.strip())
    return True


def _quotes(doc: str) -> list[str]:
    return [" ".join(q.split()) for q in _VERDICT_QUOTE.findall(_text(ROOT / doc))]


@pytest.mark.parametrize("doc", QUOTING)
def test_the_verdict_the_docs_quote_is_the_one_the_ablation_page_gives_the_demo_today(doc: str, page_ablation) -> None:
    """The README quoted -0.127, a 95% CI and n=398 from an ablation that judged every sample, while the page
    stops at 100 samples once a 95% confidence sequence decides: the quote is checked against the page's own run."""
    quotes = _quotes(doc)
    sentences = [v.sentence for v in page_ablation.verdicts]
    assert quotes, f"{doc} quotes no verdict of the demo's ablation"
    stale = [q for q in quotes if not any(_pieces_in_order(q, s) for s in sentences)]
    assert not stale, f"{doc} quotes {stale[0]!r}; the page gives: {sentences[0]!r}"


def test_the_quote_check_catches_a_stale_figure() -> None:
    sentence = ("LEAK: faithfulness moves -0.134 (95% CS -0.246 to -0.023, a confidence sequence) when ground_truth "
                "is blanked, n=99 samples. Judging stopped after 100 of 400 samples.")
    assert _pieces_in_order("LEAK: faithfulness moves -0.134 (95% CS -0.246 to -0.023, … n=99 samples", sentence)
    assert not _pieces_in_order("LEAK: faithfulness moves -0.127 (95% CI -0.143 to -0.111) … n=398 samples",
                                sentence)
    assert not _pieces_in_order("n=99 samples … LEAK: faithfulness", sentence)   # out of order
