"""Stored ablation results carry a format and are read through one function that knows the older ones
(issue 15): a result written today loads, one written before the accounting loads honestly, a newer one is
refused with a sentence, not a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lib.core.errors import InputError
from lib.diagnosis.ablation import LEAK, AblationResult
from lib.diagnosis.ablation_result import RESULT_FORMAT

FIXTURE = Path(__file__).parent / "fixtures" / "ablation_result_format2.json"


def stored() -> dict[str, object]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_a_result_written_in_todays_format_loads_whole_and_round_trips() -> None:
    d = stored()
    assert d["format"] == RESULT_FORMAT == 2
    result = AblationResult.from_dict(d)
    assert next((v.metric, v.arm, v.kind) for v in result.verdicts) == ("faithfulness", "ground_truth", LEAK)
    assert result.exit_code == 1 and result.judgings == 120
    assert json.loads(json.dumps(result.to_dict())) == d


def test_a_format_1_result_loads_and_its_accounting_claims_no_judgings_it_never_counted() -> None:
    d = stored()
    for name in ("format", "judgings", "not_rejudged", "repeats_skipped", "probe"):
        d.pop(name)
    for v in d["verdicts"]:  # type: ignore[union-attr]
        for name in ("headroom", "min_effect", "rule_out", "joint", "renders", "why"):
            v.pop(name, None)
    result = AblationResult.from_dict(d)
    assert result.verdicts[0].kind == LEAK and not result.verdicts[0].joint
    assert result.accounting.startswith(f"{result.calls} judge calls") and "judgings" not in result.accounting


@pytest.mark.parametrize(("change", "says"), [
    ({"format": RESULT_FORMAT + 1}, "newer evaldrift"),
    ({"format": "2"}, "format '2'"),
    ({"verdicts": None}, "not an ablation result"),
])
def test_a_result_this_version_cannot_read_is_refused_with_a_sentence(change: dict[str, object], says: str) -> None:
    with pytest.raises(InputError, match=says):
        AblationResult.from_dict({**stored(), **change})
