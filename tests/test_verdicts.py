"""The verdict rule, one row per branch: deleting or loosening any condition in
lib.diagnosis.ablation.classify turns a row red.

The evidence in each row is written by hand from the rule's definition (paired
interval, noise band, headroom, failures, static evidence, replay); the
expected verdict is what README.md's verdict table and lib/diagnosis/README.md
say the tool may claim.
"""

from __future__ import annotations

import dataclasses

import pytest

from lib.diagnosis.ablation import _verdict_words as verdict_words
from lib.diagnosis.ablation import _verdicts as v
from lib.diagnosis.ablation._verdicts import CellEvidence, classify

GT = ("ground_truth",)


def cell(**kw: object) -> CellEvidence:
    """faithfulness with ground_truth blanked: a clear null, 100 samples, room to fall, nothing failed."""
    base: dict[str, object] = {
        "metric": "faithfulness", "fields": GT, "expected": v.INVARIANT,
        "renders": frozenset({"answer", "contexts"}), "n": 100, "mean": 0.002, "lo": -0.01, "hi": 0.014,
        "noise": 0.01, "baseline": 0.8, "n_failed": 0, "n_units": 600,
    }
    return CellEvidence(**{**base, **kw})  # type: ignore[arg-type]


def sensitive(**kw: object) -> CellEvidence:
    """faithfulness with contexts (its own input) blanked."""
    return cell(fields=("contexts",), expected=v.EXPECT_SENSITIVE, **kw)


MOVE = {"mean": -0.15, "lo": -0.2, "hi": -0.1}
WIDE = {"mean": -0.01, "lo": -0.09, "hi": 0.07}
SMALL = {"mean": -0.03, "lo": -0.045, "hi": -0.015}   # issue 41: excludes 0, its mean past 0.02, not wholly beyond
RENDERS_GT = frozenset({"answer", "contexts", "ground_truth"})
SAME = {"unchanged": 100, "n": 0, "mean": None, "lo": None, "hi": None, "n_units": 0}   # not re-judged

ROWS = [
    # (id, evidence, verdict, branch)
    ("items field blanked: nothing left to judge", cell(fields=("answer",), expected=v.EXPECT_SENSITIVE,
                                                        nothing_to_judge=True, n=0, mean=None, lo=None, hi=None),
     v.SENSITIVE, v.NOTHING_TO_JUDGE),
    ("nothing to judge counts only for a received field", cell(nothing_to_judge=True), v.CLEAN, v.NULL),
    ("over a fifth of judgings failed", cell(n_failed=121, n_units=600), v.INCONCLUSIVE, v.FAILURES),
    ("exactly a fifth failed still decides", cell(n_failed=120, n_units=600), v.CLEAN, v.NULL),
    ("failures, and the wiring renders the field: the wiring decides", cell(n_failed=400, n_units=600,
                                                                            renders=RENDERS_GT), v.LEAK, v.STATIC),
    ("failures, the wiring renders the field and it moved: the move is not trusted",
     cell(n_failed=400, n_units=600, renders=RENDERS_GT, **MOVE), v.LEAK, v.STATIC),
    ("too few paired samples", cell(n=19), v.INCONCLUSIVE, v.TOO_FEW),
    ("twenty paired samples decide", cell(n=20), v.CLEAN, v.NULL),
    ("no interval at all", cell(mean=None, lo=None, hi=None), v.INCONCLUSIVE, v.TOO_FEW),
    ("too few samples, and the wiring renders the field: the wiring decides", cell(n=5, renders=RENDERS_GT),
     v.LEAK, v.STATIC),
    ("nothing measured, and the wiring renders the field", cell(renders=RENDERS_GT, n=0, mean=None, lo=None,
                                                                hi=None), v.LEAK, v.STATIC),
    ("forbidden field moves it down beyond effect and noise", cell(**MOVE), v.LEAK, v.MEASURED),
    ("forbidden field moves it up beyond effect and noise", cell(mean=0.15, lo=0.1, hi=0.2), v.LEAK, v.MEASURED),
    ("deterministic judge: zero noise band, the interval decides", cell(noise=0.0, **MOVE), v.LEAK, v.MEASURED),
    ("one repeat: no band, the interval decides", cell(noise=None, **MOVE), v.LEAK, v.MEASURED),
    ("beyond the effect, within the noise band", cell(mean=-0.04, lo=-0.045, hi=-0.03, noise=0.05),
     v.INCONCLUSIVE, v.WITHIN_NOISE),
    # issue 41 item 1: any dependence on a must-never-receive field that the interval shows is a LEAK
    ("forbidden field: a rise the interval shows, below the effect: a small leak",
     cell(mean=0.01, lo=0.005, hi=0.015, noise=0.005), v.LEAK, v.BELOW_EFFECT),
    ("a larger smallest effect does not swallow a move of a forbidden field",
     cell(min_effect=0.25, rule_out=0.3, **MOVE), v.LEAK, v.BELOW_EFFECT),
    ("own input moves it", sensitive(**MOVE), v.SENSITIVE, v.MEASURED),
    ("own input moves it but the replay did not reproduce", sensitive(replay_mismatch=True, **MOVE),
     v.REPLAY_MISMATCH, v.REPLAY),
    ("a measured leak stands through a replay mismatch", cell(replay_mismatch=True, **MOVE), v.LEAK, v.MEASURED),
    ("the wiring renders the blanked forbidden field: never cleared", cell(renders=RENDERS_GT), v.LEAK, v.STATIC),
    ("the wiring renders another field, not the blanked one", cell(renders=frozenset({"question", "answer",
                                                                                       "contexts"})),
     v.CLEAN, v.NULL),
    ("an external scorer: nothing static to read", cell(renders=None), v.CLEAN, v.NULL),
    ("rendering a received field is not static evidence", sensitive(renders=frozenset({"answer", "contexts"}),
                                                                    mean=0.0, lo=-0.02, hi=0.02),
     v.INSENSITIVE, v.NULL),
    ("a null the replay did not reproduce", cell(replay_mismatch=True), v.REPLAY_MISMATCH, v.REPLAY),
    ("own input ignored, replay not reproduced: the finding stands",
     sensitive(replay_mismatch=True, mean=0.0, lo=-0.02, hi=0.02), v.INSENSITIVE, v.NULL),
    ("too wide, replay not reproduced: still undecided", cell(replay_mismatch=True, **WIDE), v.INCONCLUSIVE, v.WIDE),
    ("own input at the floor: cannot fall", sensitive(baseline=0.04, mean=0.0, lo=-0.01, hi=0.01),
     v.INCONCLUSIVE, v.FLOOR),
    ("forbidden field at the floor: a flattering leak could not show", cell(baseline=0.03), v.INCONCLUSIVE, v.FLOOR),
    ("room exactly the move ruled out", sensitive(baseline=0.05, mean=0.0, lo=-0.01, hi=0.01), v.INSENSITIVE, v.NULL),
    ("forbidden field: a null", cell(), v.CLEAN, v.NULL),
    ("forbidden field: the far end exactly at rule-out", cell(mean=0.0, lo=-0.05, hi=0.01), v.CLEAN, v.NULL),
    ("own input: a null", sensitive(mean=0.0, lo=-0.02, hi=0.02), v.INSENSITIVE, v.NULL),
    ("forbidden field: too wide to rule out or in", cell(**WIDE), v.INCONCLUSIVE, v.WIDE),
    ("own input: too wide to rule out or in", sensitive(**WIDE), v.INCONCLUSIVE, v.WIDE),
    ("joint arm of both forbidden fields moves", cell(fields=("question", "ground_truth"), **MOVE), v.LEAK,
     v.MEASURED),
    # issue 25 item 7: the wiring decides before "beyond the effect but within the noise band"
    ("rendered, and a move beyond the effect within the noise band", cell(renders=RENDERS_GT, mean=-0.04,
                                                                          lo=-0.045, hi=-0.03, noise=0.05),
     v.LEAK, v.STATIC),
    ("rendered, and it moved beyond effect and noise", cell(renders=RENDERS_GT, **MOVE), v.LEAK, v.MEASURED),
    # issue 24 item 9: a move is decided at any n; only a null needs MIN_PAIRED
    ("ten samples, a forbidden field moves it", cell(n=10, mean=0.5, lo=0.2, hi=0.8), v.LEAK, v.MEASURED),
    ("ten samples, own input moves it", sensitive(n=10, **MOVE), v.SENSITIVE, v.MEASURED),
    ("ten samples, a move within the noise band", cell(n=10, mean=-0.04, lo=-0.045, hi=-0.03, noise=0.05),
     v.INCONCLUSIVE, v.WITHIN_NOISE),
    ("ten samples, over a fifth failed, it moved", cell(n=10, n_failed=121, n_units=600, **MOVE), v.INCONCLUSIVE,
     v.FAILURES),
    ("nineteen samples, a tight null: too few", sensitive(n=19, mean=0.0, lo=-0.01, hi=0.01), v.INCONCLUSIVE,
     v.TOO_FEW),
    # issue 25 item 2: a null about a received field must rule out a fall of half its room above the floor
    ("own input, a fall that excludes zero below the effect: never INSENSITIVE",
     sensitive(n=250, baseline=0.053, mean=-0.024, lo=-0.047, hi=-0.001), v.INCONCLUSIVE, v.SMALL_FALL),
    ("own input near the floor: the interval allows half the headroom",
     sensitive(baseline=0.053, floor=0.0, mean=-0.019, lo=-0.039, hi=0.001), v.INCONCLUSIVE, v.FLOOR),
    ("own input, room above a measured floor, a null within half of it",
     sensitive(baseline=0.13, floor=0.06, mean=0.0, lo=-0.03, hi=0.01), v.INSENSITIVE, v.NULL),
    ("own input, room above a measured floor, a null beyond half of it",
     sensitive(baseline=0.13, floor=0.06, mean=0.0, lo=-0.04, hi=0.01), v.INCONCLUSIVE, v.FLOOR),
    ("a measured floor leaves less room than the move ruled out",
     sensitive(baseline=0.09, floor=0.05, mean=0.0, lo=-0.01, hi=0.01), v.INCONCLUSIVE, v.FLOOR),
    ("forbidden field near the floor: CLEAN needs the room too", cell(renders=None, baseline=0.08, mean=0.0,
                                                                      lo=-0.045, hi=0.0), v.INCONCLUSIVE, v.FLOOR),
    ("forbidden field with room: the interval's far end exactly half the headroom",
     cell(baseline=0.08, mean=0.0, lo=-0.04, hi=0.0), v.CLEAN, v.NULL),
    # rows the mutation pass asked for (an order or a guard no other row pins down)
    ("ten samples, own input falls below the effect: a fall, at any n",
     sensitive(n=10, mean=-0.012, lo=-0.018, hi=-0.006), v.INCONCLUSIVE, v.SMALL_FALL),
    ("over a fifth failed and nothing paired: the failures are the reason",
     cell(n=0, mean=None, lo=None, hi=None, n_failed=600, n_units=600), v.INCONCLUSIVE, v.FAILURES),
    ("no baseline score: no headroom to read, the null stands", cell(baseline=None), v.CLEAN, v.NULL),
    ("own input falls beyond the effect, within the noise band: the band is the reason",
     sensitive(mean=-0.04, lo=-0.045, hi=-0.03, noise=0.05), v.INCONCLUSIVE, v.WITHIN_NOISE),
    ("ten samples at the floor: too few is the reason", cell(n=10, baseline=0.03), v.INCONCLUSIVE, v.TOO_FEW),
    ("prompt unchanged decides before nothing to judge", sensitive(nothing_to_judge=True, **SAME), v.INSENSITIVE,
     v.UNCHANGED),
    ("prompt unchanged, forbidden field not rendered: clean by the template alone", cell(**SAME), v.CLEAN,
     v.UNCHANGED),
    ("prompt unchanged, but the replay did not reproduce", cell(replay_mismatch=True, **SAME), v.REPLAY_MISMATCH,
     v.UNCHANGED),
    ("prompt unchanged: the wiring does not render its own input", sensitive(**SAME), v.INSENSITIVE, v.UNCHANGED),
    ("prompt unchanged although rendered: empty in every sample, never cleared", cell(renders=RENDERS_GT, **SAME),
     v.INCONCLUSIVE, v.UNCHANGED),
    # issue 41 item 1: CLEAN needs an interval that holds 0; a small leak is still a leak, at any n and any room
    ("a measured leak below the effect, zero band: never CLEAN", cell(noise=0.0, **SMALL), v.LEAK, v.BELOW_EFFECT),
    ("a small leak on ten samples: decided at any n", cell(n=10, noise=0.0, **SMALL), v.LEAK, v.BELOW_EFFECT),
    ("a small leak near the floor: no room is no excuse", cell(baseline=0.03, noise=0.0, mean=-0.02, lo=-0.03,
                                                               hi=-0.01), v.LEAK, v.BELOW_EFFECT),
    ("a small leak the wiring renders: measured, with its size", cell(renders=RENDERS_GT, noise=0.0, **SMALL),
     v.LEAK, v.BELOW_EFFECT),
    ("a small leak stands through a replay mismatch", cell(replay_mismatch=True, noise=0.0, **SMALL), v.LEAK,
     v.BELOW_EFFECT),
    ("a small leak, over a fifth failed: the failures are the reason", cell(n_failed=121, n_units=600, noise=0.0,
                                                                           **SMALL), v.INCONCLUSIVE, v.FAILURES),
    ("the far end exactly at the effect is not beyond it", cell(noise=0.0, mean=-0.03, lo=-0.04, hi=-0.02),
     v.LEAK, v.BELOW_EFFECT),
    ("the far end just beyond the effect", cell(noise=0.0, mean=-0.03, lo=-0.04, hi=-0.0201), v.LEAK, v.MEASURED),
    # the judge repeat band: a move within it is not a measured dependence, and not a null either
    ("a small move the interval shows, within the noise band: neither leak nor null",
     cell(mean=-0.008, lo=-0.012, hi=-0.004, noise=0.01), v.INCONCLUSIVE, v.WITHIN_NOISE),
    ("rendered, a small move within the noise band: the wiring decides",
     cell(renders=RENDERS_GT, mean=-0.008, lo=-0.012, hi=-0.004, noise=0.01), v.LEAK, v.STATIC),
    # issue 41 item 6: the boundaries the mutation pass found unpinned
    ("the mean exactly at the noise band is within it", cell(mean=-0.05, lo=-0.07, hi=-0.03, noise=0.05),
     v.INCONCLUSIVE, v.WITHIN_NOISE),
    ("the mean just past the noise band", cell(mean=-0.0501, lo=-0.07, hi=-0.03, noise=0.05), v.LEAK, v.MEASURED),
    ("an interval that ends at 0 from below holds 0", cell(mean=-0.01, lo=-0.02, hi=0.0), v.CLEAN, v.NULL),
    ("an interval that starts at 0 holds 0", cell(mean=0.01, lo=0.0, hi=0.02), v.CLEAN, v.NULL),
    ("a received field's interval that ends at 0 holds it: a null, not a fall",
     sensitive(mean=-0.01, lo=-0.02, hi=0.0), v.INSENSITIVE, v.NULL),
    ("the far end exactly at rule-out, beyond half the room: the room is the reason",
     sensitive(baseline=0.08, mean=0.0, lo=-0.05, hi=0.01), v.INCONCLUSIVE, v.FLOOR),
]


@pytest.mark.parametrize(("evidence", "kind", "why"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_each_branch_of_the_verdict_rule(evidence: CellEvidence, kind: str, why: str) -> None:
    assert classify(evidence) == v.Decision(kind, why)


def test_the_table_reaches_every_branch() -> None:
    reached = {(r[2], r[3]) for r in ROWS}
    assert {r[3] for r in ROWS} == {v.NOTHING_TO_JUDGE, v.FAILURES, v.TOO_FEW, v.MEASURED, v.STATIC, v.REPLAY,
                                    v.WITHIN_NOISE, v.FLOOR, v.NULL, v.WIDE, v.UNCHANGED, v.SMALL_FALL,
                                    v.BELOW_EFFECT}
    assert {k for k, _ in reached} == {v.LEAK, v.CLEAN, v.SENSITIVE, v.INSENSITIVE, v.INCONCLUSIVE,
                                      v.REPLAY_MISMATCH}


@pytest.mark.parametrize(("evidence", "kind", "why"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_every_verdict_has_a_sentence_that_starts_with_its_word(evidence: CellEvidence, kind: str,
                                                                why: str) -> None:
    text = verdict_words.sentence(evidence, classify(evidence), repeats=3)
    assert text.startswith(f"{kind}:")
    assert "does not read" not in text and "blind to" not in text


def test_clean_says_what_was_measured_and_the_move_the_interval_rules_out() -> None:
    e = cell(mean=0.004, lo=-0.012, hi=0.031)
    text = verdict_words.sentence(e, classify(e), repeats=3)
    assert "no dependence of faithfulness on ground_truth measured on these 100 samples" in text
    assert "rules out a move of 0.031" in text
    assert "does not render ground_truth" in text


def test_a_rendered_forbidden_field_is_named_with_no_effect_measured() -> None:
    e = cell(renders=RENDERS_GT)
    text = verdict_words.sentence(e, classify(e), repeats=3)
    assert text.startswith("LEAK: the run's wiring renders ground_truth, which faithfulness must never receive; "
                           "no effect measured on these 100 samples")


def test_an_unmeasured_cell_still_names_the_forbidden_field_its_wiring_renders() -> None:
    e = cell(n=5, renders=RENDERS_GT, mean=None, lo=None, hi=None)
    text = verdict_words.sentence(e, classify(e), repeats=3)
    assert text.startswith("LEAK: the run's wiring renders ground_truth, which faithfulness must never receive; "
                           "nothing measured beside it; only 5 samples.")
    e = cell(n=5, renders=frozenset({"answer", "contexts"}), mean=0.0, lo=-0.3, hi=0.3)
    text = verdict_words.sentence(e, classify(e), repeats=3)
    assert text.startswith("INCONCLUSIVE: only 5 samples") and "a null needs at least 20" in text


def test_a_static_leak_says_what_was_measured_beside_it() -> None:
    e = cell(n_failed=400, n_units=600, renders=RENDERS_GT, **MOVE)
    text = verdict_words.sentence(e, classify(e), repeats=3, failures="bad shape (15)")
    assert ("measured beside it on 100 samples: moves -0.150 (95% CI -0.200 to -0.100) when ground_truth is "
            "blanked, and the interval excludes 0: a fall of 0.100 to 0.200, wholly beyond the 0.02 worth naming; "
            "400 of 600 judgings failed (bad shape (15))") in text


def test_an_external_scorer_clean_says_its_code_was_not_read() -> None:
    e = cell(renders=None)
    assert "code that was not read" in verdict_words.sentence(e, classify(e), repeats=3)


def test_no_ratio_to_a_zero_noise_band_is_ever_printed() -> None:
    e = cell(noise=0.0, **MOVE)
    text = verdict_words.sentence(e, classify(e), repeats=3)
    assert "x the judge repeat band" not in text and "repeats identical" in text
    assert verdict_words.ratio(0.0, -0.15) is None
    assert verdict_words.ratio(0.01, -0.15) == pytest.approx(15.0)


def test_the_floor_sentence_says_the_score_cannot_fall() -> None:
    e = sensitive(baseline=0.04, mean=0.0, lo=-0.01, hi=0.01)
    text = verdict_words.sentence(e, classify(e), repeats=3)
    assert "already at 0.040: with 0.040 of room to fall, less than the 0.050 a null must rule out" in text


def test_two_blanked_fields_are_blanked_not_is_blanked() -> None:
    e = cell(fields=("question", "ground_truth"), **MOVE)
    text = verdict_words.sentence(e, classify(e), repeats=3)
    assert "when question and ground_truth are blanked" in text


@pytest.mark.parametrize("evidence", [r[1] for r in ROWS if r[3] == v.UNCHANGED])
def test_a_cell_not_re_judged_says_so_and_claims_no_measurement(evidence: CellEvidence) -> None:
    text = verdict_words.sentence(evidence, classify(evidence), repeats=3)
    assert "prompt unchanged: not re-judged" in text and "all 100 prompts byte-identical" in text
    assert "95% CI" not in text and "rules out" not in text and "no dependence" not in text


def test_evidence_is_a_value() -> None:
    e = cell()
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.n = 3  # type: ignore[misc]


# -- issue 25 item 6: each sentence reads its own cell's numbers ---------------------------------------------------
def arm(**kw: object) -> object:
    from types import SimpleNamespace

    base = {"metric": "faithfulness", "arm": "ground_truth", "kind": v.CLEAN, "why": v.NULL, "expected": v.INVARIANT,
            "n": 200, "min_effect": 0.02, "delta": 0.0, "lo": -0.01, "hi": 0.01, "ratio": None, "renders": None,
            "interval_words": "95% CI", "stop": ""}
    return SimpleNamespace(**{**base, **kw})


HEADLINES = [
    ("nulls on different n say the range", [arm(n=20), arm(arm="question", n=200)],
     "no dependence measured: on these 20 to 200 samples"),
    ("nulls on one n say it", [arm(n=200), arm(arm="question", n=200)], "no dependence measured: on these 200 samples"),
    ("a cell with nothing to judge does not make n=0", [arm(arm="contexts", kind=v.SENSITIVE, why=v.MEASURED,
                                                            expected=v.EXPECT_SENSITIVE, n=400),
                                                        arm(arm="answer", kind=v.SENSITIVE, why=v.NOTHING_TO_JUDGE,
                                                            expected=v.EXPECT_SENSITIVE, n=0)],
     "as expected: every metric tested moves when its own inputs are blanked (n=400 samples)"),
    ("a leak keeps its sign", [arm(kind=v.LEAK, why=v.MEASURED, delta=-0.942, lo=-0.96, hi=-0.92, n=40)],
     "wiring leak: faithfulness moves -0.94 when ground_truth is blanked"),
]


@pytest.mark.parametrize(("cells", "start"), [r[1:] for r in HEADLINES], ids=[r[0] for r in HEADLINES])
def test_each_headline_reads_its_own_cells(cells: list[object], start: str) -> None:
    assert verdict_words.headline(cells, []).startswith(start)  # type: ignore[arg-type]


def test_a_sequential_ablation_whose_arms_all_stopped_leaves_no_rest() -> None:
    from lib.diagnosis.ablation import _sequential as sequential

    both = [arm(stop=sequential.NULL), arm(arm="question", stop=sequential.NULL)]
    assert "the rest judged" not in verdict_words.sequential_words(both, 400)  # type: ignore[arg-type]
    one = [arm(stop=sequential.NULL), arm(arm="question", stop=sequential.EXHAUSTED)]
    assert "the rest judged on all 400 samples" in verdict_words.sequential_words(one, 400)  # type: ignore[arg-type]


def test_a_cs_is_said_to_be_a_confidence_sequence() -> None:
    e = cell(sequence=True, **MOVE)
    assert "95% CS -0.200 to -0.100, a confidence sequence" in verdict_words.sentence(e, classify(e), repeats=3)


def test_a_split_with_no_move_gives_no_side() -> None:
    from lib.diagnosis.trends import Split

    s = Split("faithfulness", "a", "b", 0.5, 0.5, 0.5, 0.5, 0.0, 0.0, 0.0, 40)
    assert "neither the instrument (+0.000) nor the outputs (+0.000) moved it" in s.sentence
    assert "mostly" not in s.sentence and "% instrument" not in s.sentence


# -- issue 41 item 5: each sentence states what the interval shows -------------------------------------------------
SHOWN = [r for r in ROWS if r[1].lo is not None and not r[1].unchanged and r[3] != v.FAILURES]


@pytest.mark.parametrize(("evidence", "kind", "why"), [r[1:] for r in SHOWN], ids=[r[0] for r in SHOWN])
def test_every_sentence_with_an_interval_says_whether_it_holds_zero(evidence: CellEvidence, kind: str,
                                                                    why: str) -> None:
    text = verdict_words.sentence(evidence, classify(evidence), repeats=3)
    assert evidence.lo is not None and evidence.hi is not None
    holds = evidence.lo <= 0 <= evidence.hi
    assert ("interval holds 0" in text) is holds and ("interval excludes 0" in text) is not holds, text
    assert "smaller than the" not in text and "beyond its interval" not in text


WORDS = [
    # (id, evidence, fragments the sentence must contain, fragments it must not)
    ("a leak beyond the effect", cell(**MOVE),
     ["LEAK: faithfulness moves -0.150 (95% CI -0.200 to -0.100)",
      "the interval excludes 0: a fall of 0.100 to 0.200, wholly beyond the 0.02 worth naming"], []),
    ("issue 41: a small leak, its mean past the effect", cell(noise=0.0, n=331, mean=-0.028, lo=-0.042, hi=-0.015),
     ["LEAK: faithfulness moves -0.028 (95% CI -0.042 to -0.015)", "n=331 samples",
      "the interval excludes 0: a fall of 0.015 to 0.042, not wholly beyond the 0.02 worth naming",
      "any dependence on it is a leak"], ["no dependence"]),
    ("issue 41: a received field's fall, its mean past the effect",
     sensitive(n=250, noise=0.0, mean=-0.025, lo=-0.047, hi=-0.003),
     ["the interval excludes 0: a fall of 0.003 to 0.047, not wholly beyond the 0.02 worth naming"],
     ["smaller than"]),
    ("a move within the noise band", cell(mean=-0.04, lo=-0.045, hi=-0.03, noise=0.05),
     ["the interval excludes 0: a fall of 0.030 to 0.045",
      "its mean is 0.8x the judge repeat band (±0.050, 3 repeats), within it"],
     ["beyond its interval"]),
    ("issue 41: a floor with less room than a null must rule out",
     sensitive(baseline=0.053, floor=0.037, mean=-0.017, lo=-0.039, hi=0.005),
     ["only 0.016 above this judge's floor", "0.016 of room to fall, less than the 0.050 a null must rule out",
      "the interval holds 0 and allows a move of up to 0.039"], ["cannot lower it by"]),
    ("a floor with room, the interval beyond half of it", sensitive(baseline=0.13, floor=0.06, mean=0.0, lo=-0.04,
                                                                    hi=0.01),
     ["a null must rule out a fall of 0.035 (half the 0.070 of room above the floor)",
      "the interval holds 0 and allows a move of up to 0.040"], ["cannot lower it"]),
    ("no room at all", sensitive(baseline=0.04, floor=0.04, mean=0.0, lo=-0.01, hi=0.01),
     ["cannot lower it at all: the judge gives as much with nothing to check against",
      "the interval holds 0 and allows a move of up to 0.010"], []),
    ("a null", cell(), ["CLEAN: no dependence", "the interval holds 0 and rules out a move of 0.014"], []),
    ("a received field's null", sensitive(mean=0.0, lo=-0.02, hi=0.02),
     ["the interval holds 0 and rules out a move of 0.020 although faithfulness receives contexts"], []),
    ("too wide", cell(**WIDE), ["the interval holds 0 and allows a move of up to 0.090, beyond the 0.050 a null "
                                "must rule out"], []),
    ("too few for a null of a forbidden field", cell(n=19),
     ["the interval holds 0", "a dependence the interval shows is decided at any n"], []),
    ("too few for a null of a received field", sensitive(n=19, mean=0.0, lo=-0.01, hi=0.01),
     ["the interval holds 0", "a move that clears 0.02 is decided at any n"], []),
    ("own input moves it", sensitive(**MOVE),
     ["the interval excludes 0: a fall of 0.100 to 0.200, wholly beyond the 0.02 worth naming, as it should"], []),
    ("a replay not reproduced", cell(replay_mismatch=True),
     ["n=100 samples (the interval holds 0 and allows a move of up to 0.014), but re-judging"], []),
    ("a small leak the wiring renders", cell(renders=RENDERS_GT, noise=0.0, **SMALL),
     ["not wholly beyond the 0.02 worth naming", "The run's wiring renders ground_truth."], ["no effect measured"]),
    ("rendered, nothing shown beside it", cell(renders=RENDERS_GT),
     ["no effect measured on these 100 samples", "the interval holds 0"], []),
]


@pytest.mark.parametrize(("evidence", "has", "lacks"), [r[1:] for r in WORDS], ids=[r[0] for r in WORDS])
def test_the_words_beside_the_numbers_say_what_the_interval_shows(evidence: CellEvidence, has: list[str],
                                                                  lacks: list[str]) -> None:
    text = verdict_words.sentence(evidence, classify(evidence), repeats=3)
    for part in has:
        assert part in text, text
    for part in lacks:
        assert part not in text, text


def test_a_clean_headline_says_every_interval_holds_zero_not_that_nothing_moves_by_the_effect() -> None:
    cells = [arm(n=200, delta=0.004, lo=-0.012, hi=0.031), arm(arm="question", n=200)]
    text = verdict_words.headline(cells, [])  # type: ignore[arg-type]
    assert text.startswith("no dependence measured: on these 200 samples")
    assert "every interval holds 0 and rules out a move of 0.031" in text
    assert "moves by 0.02 or more" not in text


def test_a_small_leak_heads_the_ablation_with_its_size() -> None:
    cells = [arm(kind=v.LEAK, why=v.BELOW_EFFECT, delta=-0.028, lo=-0.042, hi=-0.015, n=331), arm(arm="question")]
    text = verdict_words.headline(cells, [])  # type: ignore[arg-type]
    assert text.startswith("wiring leak: faithfulness moves -0.028 when ground_truth is blanked (95% CI -0.042 to "
                           "-0.015, n=331)")


# -- issue 41 item 6: the judge repeat band an ablation reads (the zero-band snap no row pinned) -------------------
BANDS = [
    # (id, per-sample scores over the repeats, repeats, the band: 0.0, None, or "> 0")
    ("identical repeats: band 0", [[0.5, 0.5, 0.5], [0.7, 0.7, 0.7]], 3, 0.0),
    ("floating-point dust in identical repeats is band 0", [[0.1 + 0.2, 0.3, 0.3], [0.7, 0.7, 0.7]], 3, 0.0),
    ("a real spread is a band", [[0.3, 0.5, 0.4], [0.6, 0.6, 0.7]], 3, "> 0"),
    ("one repeat: no band", [[0.5], [0.7]], 1, None),
    ("two repeats measure a band", [[0.3, 0.5], [0.6, 0.7]], 2, "> 0"),
]


@pytest.mark.parametrize(("scores", "repeats", "band"), [r[1:] for r in BANDS], ids=[r[0] for r in BANDS])
def test_the_judge_repeat_band_snaps_dust_to_zero_and_no_ratio_to_it_is_printed(scores: list[list[float]],
                                                                               repeats: int,
                                                                               band: float | str | None) -> None:
    from collections import Counter
    from types import SimpleNamespace

    from lib.diagnosis.ablation._analysis import ArmResults, band_of

    base = ArmResults({f"s{i}": x for i, x in enumerate(scores)}, {}, 0, 0, 0, Counter())
    _, got = band_of(SimpleNamespace(repeats=repeats), base)  # type: ignore[arg-type]
    if band == "> 0":
        assert got is not None and got > 0.01
    else:
        assert got == band
    e = cell(noise=got, **MOVE)
    text = verdict_words.sentence(e, classify(e), repeats=repeats)
    assert ("x the judge repeat band" in text) is (band == "> 0"), text


# -- the joint arm's notes (lib.diagnosis.ablation._analysis._joint_notes), one row per branch --------------------
def verdict(arm: str, kind: str, why: str, *, joint: bool = False, metric: str = "faithfulness") -> object:
    from lib.diagnosis.ablation._result import ArmVerdict

    return ArmVerdict(metric=metric, arm=arm, kind=kind, expected=v.INVARIANT, baseline=0.8, ablated=0.7,
                      delta=-0.1, lo=-0.15, hi=-0.05, noise=None, ratio=None, n=100, n_failed=0, n_units=200,
                      flips_to_positive=0, flips_to_negative=0, flips_p=None, mde=None, sentence=f"{arm}.",
                      why=why, joint=joint)


SET = "a leak of the set"
CLEARS = "this cell clears nothing"
JOINT = [
    # (id, cells, the notes each cell's sentence gains, in order: SET, CLEARS or "")
    ("a joint leak no single field shows: both sides say so",
     [verdict("question", v.CLEAN, v.NULL), verdict("ground_truth", v.CLEAN, v.NULL),
      verdict("question+ground_truth", v.LEAK, v.MEASURED, joint=True)], ["CLEARS", "CLEARS", "SET"]),
    ("a small joint leak counts too",
     [verdict("question", v.CLEAN, v.NULL), verdict("ground_truth", v.CLEAN, v.NULL),
      verdict("question+ground_truth", v.LEAK, v.BELOW_EFFECT, joint=True)], ["CLEARS", "CLEARS", "SET"]),
    ("one field leaks alone: the set is not the finding, the clean one still clears nothing",
     [verdict("question", v.CLEAN, v.NULL), verdict("ground_truth", v.LEAK, v.MEASURED),
      verdict("question+ground_truth", v.LEAK, v.MEASURED, joint=True)], ["CLEARS", "", ""]),
    ("a joint arm the wiring alone decides adds nothing",
     [verdict("question", v.CLEAN, v.NULL), verdict("question+ground_truth", v.LEAK, v.STATIC, joint=True)],
     ["", ""]),
    ("no joint arm: no note", [verdict("question", v.CLEAN, v.NULL), verdict("ground_truth", v.CLEAN, v.NULL)],
     ["", ""]),
    ("a joint arm that does not leak: no note",
     [verdict("question", v.CLEAN, v.NULL), verdict("question+ground_truth", v.CLEAN, v.NULL, joint=True)],
     ["", ""]),
    ("another metric's cells are not its singles: no note either side",
     [verdict("question", v.CLEAN, v.NULL, metric="answer_correctness"),
      verdict("question+ground_truth", v.LEAK, v.MEASURED, joint=True)], ["", ""]),
    ("a cell not re-judged is not a single that failed to move it",
     [verdict("question", v.CLEAN, v.UNCHANGED), verdict("question+ground_truth", v.LEAK, v.MEASURED, joint=True)],
     ["", ""]),
]


@pytest.mark.parametrize(("cells", "notes"), [r[1:] for r in JOINT], ids=[r[0] for r in JOINT])
def test_each_branch_of_the_joint_arm_notes(cells: list[object], notes: list[str]) -> None:
    from lib.diagnosis.ablation._analysis import _joint_notes

    out = _joint_notes(cells)  # type: ignore[arg-type]
    for before, after, note in zip(cells, out, notes, strict=True):
        gained = after.sentence[len(before.sentence):]  # type: ignore[attr-defined]
        assert after.sentence.startswith(before.sentence)  # type: ignore[attr-defined]
        assert (SET in gained) is (note == "SET") and (CLEARS in gained) is (note == "CLEARS"), (note, gained)
