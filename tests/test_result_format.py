"""Stored ablation results carry a format and are read through one function that knows the older ones
(issue 15): a result written today loads, one written before the accounting loads honestly, a newer one is
refused with a sentence, not a traceback."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from lib.core.errors import InputError
from lib.diagnosis.ablation import LEAK, AblationResult
from lib.diagnosis.ablation._result import RESULT_FORMAT, ArmVerdict

FIXTURE = Path(__file__).parent / "fixtures" / "ablation_result_format2.json"


def stored() -> dict[str, object]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_a_format_2_result_loads_whole_as_an_ablation_that_judged_every_sample() -> None:
    d = stored()
    assert d["format"] == 2 and RESULT_FORMAT == 3
    result = AblationResult.from_dict(d)
    assert next((v.metric, v.arm, v.kind) for v in result.verdicts) == ("faithfulness", "ground_truth", LEAK)
    assert result.exit_code == 1 and result.judgings == 120
    assert not result.sequential and result.stopped_early == 0
    assert all(v.stop == "" and v.judged == 0 and v.interval_words == "95% CI" for v in result.verdicts)
    # written again, it is today's format: the old fields as they were, the new ones at their defaults
    again = json.loads(json.dumps(result.to_dict()))
    assert again["format"] == RESULT_FORMAT and again["sequential"] is False and again["stopped_early"] == 0
    new_keys = ("format", "sequential", "stopped_early", "verdicts", "spec")
    assert {k: val for k, val in again.items() if k not in new_keys} \
        == {k: val for k, val in d.items() if k not in ("format", "verdicts", "spec")}
    # the spec is read as a typed AblationSpec: the old keys as they were, `sequential` at its default
    assert again["spec"] == {**d["spec"], "sequential": False} and result.spec.run_id == d["spec"]["run_id"]
    assert [{k: val for k, val in v.items() if k not in ("stop", "judged")} for v in again["verdicts"]] \
        == d["verdicts"]


def test_a_result_in_todays_format_round_trips() -> None:
    result = AblationResult.from_dict(stored())
    d = json.loads(json.dumps(result.to_dict()))
    d["sequential"], d["stopped_early"] = True, 80
    d["verdicts"][0].update(stop="move decided", judged=40)  # type: ignore[index]
    again = AblationResult.from_dict(d)
    assert again.sequential and again.stopped_early == 80 and again.planned == result.planned + 80
    assert (again.verdicts[0].stop, again.verdicts[0].judged, again.verdicts[0].interval_words) == \
        ("move decided", 40, "95% CS")
    assert "80 judgings not needed (arms stopped once their verdicts were decided)" in again.accounting
    assert json.loads(json.dumps(again.to_dict())) == d


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


def test_an_arm_verdict_is_built_by_keyword_only() -> None:
    """27 fields, most of them numbers or None: two swapped by position would pass every type check."""
    fields = {f.name: None for f in dataclasses.fields(ArmVerdict)}
    with pytest.raises(TypeError):
        ArmVerdict(*fields.values())
    assert ArmVerdict(**fields).metric is None
