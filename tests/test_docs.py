"""The README says what the code does: the wiring table, every setting, the two set-up commands."""

from pathlib import Path

from lib.core.metrics import wiring_markdown
from lib.core.settings import SETTINGS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_wiring_table_is_the_registry():
    assert wiring_markdown() in README


def test_readme_documents_every_setting():
    missing = [env for _, env, _ in SETTINGS if f"`{env}`" not in README]
    assert not missing, f"README.md does not document {missing}"


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
