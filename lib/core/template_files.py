"""The default judge templates as files: what `python -m lib templates` prints or writes.

A user who wants to change a template starts from ours: write them out, edit
one, and score with `python -m lib score FILE --template METRIC=FILE`. Each
template comes with the fields it reads, so an edit that makes a metric read a
field it must never receive shows up before any run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lib.core.metrics import METRIC_NAMES, get_metric
from lib.core.prompts import DEFAULT_TEMPLATES, fields_read, prompt_hash
from lib.core.samples import FIELDS


@dataclass(frozen=True)
class TemplateInfo:
    """One default template: its metric, text, content hash and the fields it reads."""

    metric: str
    text: str
    prompt_hash: str
    reads: tuple[str, ...]
    never: tuple[str, ...]

    @property
    def filename(self) -> str:
        return f"{self.metric}.txt"

    @property
    def header(self) -> str:
        return (f"{self.metric} (prompt hash {self.prompt_hash}): reads {', '.join(self.reads)}; "
                f"must never receive {', '.join(self.never)}")


def default_templates(metric: str | None = None) -> list[TemplateInfo]:
    """The default templates (one metric's, or all five in registry order).

    Raises:
        KeyError: an unknown metric.
    """
    names = [get_metric(metric).name] if metric is not None else list(METRIC_NAMES)
    out = []
    for m in names:
        text = DEFAULT_TEMPLATES[m]
        out.append(TemplateInfo(m, text, prompt_hash(text), tuple(f for f in FIELDS if f in fields_read(text, m)),
                                tuple(f for f in FIELDS if f in get_metric(m).never)))
    return out


def write_templates(folder: str | Path, metric: str | None = None) -> list[Path]:
    """Write each default template to `<folder>/<metric>.txt` (byte-identical: same prompt hash).

    Returns the files written; the folder is created when absent.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for info in default_templates(metric):
        path = folder / info.filename
        path.write_text(info.text, encoding="utf-8", newline="")
        written.append(path)
    return written
