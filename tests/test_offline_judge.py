"""The offline judge: lexical entailment over the whole prompt, deterministic, honest about being a stand-in."""

from __future__ import annotations

import json

import pytest

from lib.core.calls import JudgeRequest, Message
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED, REPLAY
from lib.core.samples import EvalSample, blank
from lib.judging import OfflineJudge
from lib.judging.base import Judge, MemoryCache
from lib.judging.harness import Instrument, score_sample

RULE = 'Verdict words: "supported" or "unsupported".'
RELEVANCE_RULE = 'Verdict words: "relevant" or "irrelevant".'


def ask(prompt: str, judge: OfflineJudge | None = None, seed: int | None = 0) -> list[dict]:
    judge = judge or OfflineJudge()
    reply = judge.complete(JudgeRequest(judge.model, (Message("user", prompt),), 0.0, seed))
    return json.loads(reply.text)["verdicts"]


def test_offline_judge_satisfies_the_judge_protocol_and_is_not_cached() -> None:
    judge = OfflineJudge()
    assert isinstance(judge, Judge)
    assert judge.cacheable is False


def test_unknown_offline_model_is_refused() -> None:
    with pytest.raises(ValueError, match="offline-lexical-v2"):
        OfflineJudge("gpt-5")


def test_a_claim_stated_by_a_passage_is_supported_with_that_sentence_as_evidence() -> None:
    prompt = ("CONTEXT:\nPASSAGE 1: Owners receive a summary. Backups are kept for 30 days.\n\n"
              "CLAIMS:\nITEM 1: Backups are kept for 30 days.\n\n" + RULE)
    assert ask(prompt) == [{"item": 1, "verdict": "supported", "evidence": "Backups are kept for 30 days."}]


def test_a_claim_with_a_different_number_is_unsupported() -> None:
    prompt = ("CONTEXT:\nPASSAGE 1: Backups are kept for 30 days.\n\n"
              "CLAIMS:\nITEM 1: Backups are kept for 60 days.\n\n" + RULE)
    assert ask(prompt) == [{"item": 1, "verdict": "unsupported", "evidence": ""}]


def test_a_claim_with_a_different_time_is_unsupported() -> None:
    prompt = ("CONTEXT:\nPASSAGE 1: Reports are delivered daily at 02:00 UTC.\n\n"
              "CLAIMS:\nITEM 1: Reports are delivered daily at 03:30 UTC.\n"
              "ITEM 2: Reports are delivered daily at 02:00 UTC.\n\n" + RULE)
    assert [v["verdict"] for v in ask(prompt)] == ["unsupported", "supported"]


def test_support_threshold_differs_between_the_two_model_versions() -> None:
    # 7 of the claim's 10 content words are in the passage: share 0.7.
    # v2 needs 0.7 (supported), v1 needs 0.75 (unsupported).
    prompt = ("CONTEXT:\nalpha bravo charlie delta echo foxtrot golf.\n\n"
              "CLAIMS:\nITEM 1: alpha bravo charlie delta echo foxtrot golf hotel india juliet.\n\n" + RULE)
    assert ask(prompt, OfflineJudge("offline-lexical-v2"))[0]["verdict"] == "supported"
    assert ask(prompt, OfflineJudge("offline-lexical-v1"))[0]["verdict"] == "unsupported"


def test_instructions_outside_a_heading_are_not_evidence() -> None:
    prompt = ("Backups are kept for 30 days.\n\n"
              "CLAIMS:\nITEM 1: Backups are kept for 30 days.\n\n" + RULE)
    assert ask(prompt)[0]["verdict"] == "unsupported"


def test_the_answer_under_judgement_is_not_evidence_for_its_own_claims() -> None:
    prompt = ("ANSWER:\nBackups are kept for 30 days.\n\n"
              "CLAIMS:\nITEM 1: Backups are kept for 30 days.\n\n" + RULE)
    assert ask(prompt)[0]["verdict"] == "unsupported"


def test_it_reads_the_whole_prompt_so_a_reference_in_the_prompt_supports_claims() -> None:
    # the property the project is about: any headed section is material, whatever the template meant
    prompt = ("CONTEXT:\n(no passages)\n\nREFERENCE ANSWER:\nBackups are kept for 30 days.\n\n"
              "CLAIMS:\nITEM 1: Backups are kept for 30 days.\n\n" + RULE)
    assert ask(prompt)[0] == {"item": 1, "verdict": "supported", "evidence": "Backups are kept for 30 days."}


def test_relevance_uses_the_verdict_words_the_prompt_names() -> None:
    # claim 1 shares {backup, kept} with the question's {long, backup, kept}: 2/3 >= 0.5
    prompt = ("QUESTION:\nHow long are backups kept?\n\n"
              "CLAIMS:\nITEM 1: Backups are kept for 30 days.\nITEM 2: Exports run nightly.\n\n" + RELEVANCE_RULE)
    assert [v["verdict"] for v in ask(prompt)] == ["relevant", "irrelevant"]


IGNORED = ("Ignore the REFERENCE ANSWER section.\n\n"
           "CONTEXT:\nPASSAGE 1: Exports run nightly.\n\n"
           "REFERENCE ANSWER:\nBackups are kept for 30 days.\n\n"
           "CLAIMS:\nITEM 1: Backups are kept for 30 days.\n\n" + RULE)


def test_an_instruction_to_ignore_a_section_works_for_the_heeded_share_of_items() -> None:
    assert ask(IGNORED, OfflineJudge(heed=1.0))[0]["verdict"] == "unsupported"
    assert ask(IGNORED, OfflineJudge(heed=0.0))[0]["verdict"] == "supported"


def test_support_in_an_unignored_section_is_kept_even_when_the_instruction_is_heeded() -> None:
    prompt = IGNORED.replace("PASSAGE 1: Exports run nightly.", "PASSAGE 1: Backups are kept for 30 days.")
    assert ask(prompt, OfflineJudge(heed=1.0))[0]["verdict"] == "supported"


MIXED = ("CONTEXT:\nPASSAGE 1: Backups are kept for 30 days. Exports run nightly at 02:00 UTC.\n\n"
         "CLAIMS:\nITEM 1: Backups are kept for 30 days.\nITEM 2: Backups are kept for 90 days.\n"
         "ITEM 3: Exports run nightly at 02:00 UTC.\nITEM 4: Invoices are emailed monthly.\n\n" + RULE)


def test_without_noise_every_seed_gives_the_same_verdicts() -> None:
    assert ask(MIXED, seed=1) == ask(MIXED, seed=2) == ask(MIXED, seed=None)
    assert [v["verdict"] for v in ask(MIXED)] == ["supported", "unsupported", "supported", "unsupported"]


def test_noise_is_seeded_by_the_request() -> None:
    judge = OfflineJudge(noise=0.5)
    assert ask(MIXED, judge, seed=3) == ask(MIXED, judge, seed=3)


def test_noise_of_one_flips_every_verdict_and_drops_evidence_of_flipped_supports() -> None:
    flipped = ask(MIXED, OfflineJudge(noise=1.0))
    assert [v["verdict"] for v in flipped] == ["unsupported", "supported", "unsupported", "supported"]
    assert flipped[0]["evidence"] == "" and flipped[2]["evidence"] == ""


def test_reply_reports_word_counts_as_usage_and_its_model_as_fingerprint() -> None:
    judge = OfflineJudge()
    request = JudgeRequest(judge.model, (Message("system", "Be careful."), Message("user", MIXED)))
    reply = judge.complete(request)
    assert reply.usage.prompt_tokens == len(("Be careful.\n\n" + MIXED).split())
    assert reply.usage.completion_tokens == len(reply.text.split())
    assert reply.fingerprint == "offline-lexical-v2"
    assert reply.cached is False


def test_request_key_depends_on_everything_that_decides_the_answer() -> None:
    base = JudgeRequest("m", (Message("user", "x"),), 0.0, 1)
    assert base.key == JudgeRequest("m", (Message("user", "x"),), 0.0, 1).key
    others = [JudgeRequest("n", base.messages, 0.0, 1), JudgeRequest("m", (Message("user", "y"),), 0.0, 1),
              JudgeRequest("m", base.messages, 0.5, 1), JudgeRequest("m", base.messages, 0.0, 2)]
    assert len({base.key, *(r.key for r in others)}) == 5


def test_memory_cache_returns_what_was_put_by_request_key() -> None:
    cache = MemoryCache()
    request = JudgeRequest("m", (Message("user", MIXED),))
    reply = OfflineJudge().complete(request)
    assert cache.get(request.key) is None
    cache.put(request, reply)
    assert cache.get(request.key) == reply
    assert len(cache) == 1


# --- reading real text: the judge reads every rendered field, wherever and however the template puts it ---

FAITHFULNESS = Instrument("faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)


def judged(sample: EvalSample, instrument: Instrument = FAITHFULNESS, judge: OfflineJudge | None = None):
    """Score one sample through the harness, as a run would: the request carries its template."""
    result = score_sample(sample, instrument, judge or OfflineJudge())
    assert result.status == "ok", result.reason
    return result


def sample(answer: str, *contexts: str, ground_truth: str = "", question: str = "How long are backups kept?"):
    return EvalSample("s1", question, answer, tuple(contexts), ground_truth)


def test_a_passage_with_a_blank_line_inside_is_read_whole() -> None:
    # a "[n] URL" header, a blank line, then the text: the text is the evidence
    passage = "[1] https://docs.example.com/backups\n\nBackups are kept for 30 days. Owners get a summary."
    result = judged(sample("Backups are kept for 30 days.", passage))
    assert result.score == 1.0
    assert result.verdicts[0].evidence == "Backups are kept for 30 days."


@pytest.mark.parametrize(("answer", "supported"), [
    ("2006", True),          # a year the passage states
    ("722,664", True),       # a number with a thousands separator, as written
    ("722664", True),        # the same number written without it
    ("In 2006.", True),      # no content word, only the year
    ("2007", False),         # a year the passage does not state
    ("722,665", False),      # a number it does not state
])
def test_a_claim_that_is_only_a_number_or_a_year_is_supported_when_a_passage_states_it(answer: str,
                                                                                      supported: bool) -> None:
    result = judged(sample(answer, "The census of 2006 counted 722,664 residents."))
    assert result.verdicts[0].label is supported


@pytest.mark.parametrize("answer", ["Backups are kept for 30 days [3].", "Backups are kept for 30 days.[3]",
                                    "Backups are kept for 30 days [2, 5]."])
def test_citation_markers_in_a_claim_need_not_appear_in_the_supporting_sentence(answer: str) -> None:
    result = judged(sample(answer, "Backups are kept for 30 days."))
    assert result.verdicts[0].label is True
    assert result.verdicts[0].evidence == "Backups are kept for 30 days."


UNHEADED_LEAK = ("Decide whether each claim of an answer is supported by the retrieved passages.\n"
                 "For reference, the expected answer is: {ground_truth} Use it only if it helps.\n\n"
                 "CONTEXT:\n{contexts}\n\nCLAIMS:\n{items}\n\n" + RULE)


def test_a_field_interpolated_on_an_unheaded_line_is_read_so_the_leak_shows() -> None:
    leaky = Instrument("faithfulness", UNHEADED_LEAK, REPLAY)
    s = sample("Backups are kept for 30 days.", "Exports run nightly.", ground_truth="Backups are kept for 30 days.")
    assert judged(s, leaky).score == 1.0  # the reference, where the template put it, supports the claim
    assert judged(blank(s, ["ground_truth"]), leaky).score == 0.0  # and only the reference does


def test_the_templates_own_words_are_not_evidence_even_on_a_line_with_a_field() -> None:
    template = UNHEADED_LEAK.replace("Use it only if it helps.", "Backups are kept for 30 days, say.")
    s = sample("Backups are kept for 30 days.", "Exports run nightly.", ground_truth="Invoices are monthly.")
    assert judged(s, Instrument("faithfulness", template, REPLAY)).score == 0.0


def test_fields_are_marked_by_the_template_not_by_headings_inside_the_text() -> None:
    # a passage holding a line that looks like a heading, then an ANSWER-like line: still the passage
    passage = "Summary:\nANSWER:\nBackups are kept for 30 days."
    assert judged(sample("Backups are kept for 30 days.", passage)).score == 1.0


@pytest.mark.parametrize(("template", "heed", "supported"), [
    ("Ignore the REFERENCE section.\nReference: {ground_truth}\n\nCONTEXT:\n{contexts}\n\nCLAIMS:\n{items}\n\n",
     1.0, False),   # named by its label on the line
    ("Ignore the REFERENCE section.\nReference: {ground_truth}\n\nCONTEXT:\n{contexts}\n\nCLAIMS:\n{items}\n\n",
     0.0, True),    # the instruction not heeded
    ("Ignore the GROUND TRUTH section.\n{ground_truth}\n\nCONTEXT:\n{contexts}\n\nCLAIMS:\n{items}\n\n",
     1.0, False),   # named by its placeholder
    ("Ignore the GOLD section.\nGOLD:\n{ground_truth}\n\nCONTEXT:\n{contexts}\n\nCLAIMS:\n{items}\n\n",
     1.0, False),   # named by the heading above it
])
def test_an_instruction_to_ignore_a_section_finds_the_field_by_label_placeholder_or_heading(
        template: str, heed: float, supported: bool) -> None:
    s = sample("Backups are kept for 30 days.", "Exports run nightly.", ground_truth="Backups are kept for 30 days.")
    result = judged(s, Instrument("faithfulness", template + RULE, REPLAY), OfflineJudge(heed=heed))
    assert result.verdicts[0].label is supported


def test_the_answer_field_is_not_evidence_for_its_own_claims_wherever_the_template_puts_it() -> None:
    template = "The answer was: {answer}\n\nCONTEXT:\n{contexts}\n\nCLAIMS:\n{items}\n\n" + RULE
    s = sample("Backups are kept for 30 days.", "Exports run nightly.")
    assert judged(s, Instrument("faithfulness", template, PROJECTED)).score == 0.0


def test_the_whole_sample_placeholder_is_read_field_by_field() -> None:
    template = "Here is everything:\n{sample}\n\nCLAIMS:\n{items}\n\n" + RULE
    s = sample("Backups are kept for 30 days. Exports run hourly.", "Exports run nightly.",
               ground_truth="Backups are kept for 30 days.")
    result = judged(s, Instrument("faithfulness", template, REPLAY))
    assert [v.label for v in result.verdicts] == [True, False]  # the reference supports; the answer does not
    assert result.verdicts[0].evidence == "Backups are kept for 30 days."


def test_a_passage_item_with_a_blank_line_is_judged_whole() -> None:
    # context precision judges passages: the text after the header decides relevance
    instrument = Instrument("context_precision", DEFAULT_TEMPLATES["context_precision"], PROJECTED)
    s = sample("x", "[1] https://docs.example.com/a\n\nBackups are kept for 30 days.",
               question="How long are backups kept?")
    assert judged(s, instrument).verdicts[0].label is True


def test_sentences_glued_without_a_space_are_two_sentences() -> None:
    # "...Philadelphia.First for Women...": a claim mixing both is not one sentence's statement
    passage = "Arthur's Magazine was published in Philadelphia.First for Women was published by Bauer Media."
    result = judged(sample("First for Women was published in Philadelphia.", passage))
    assert result.verdicts[0].label is False


def test_without_a_template_passages_run_on_past_blank_lines() -> None:
    prompt = ("CONTEXT:\nPASSAGE 1: [1] https://docs.example.com/backups\n\nBackups are kept for 30 days.\n\n"
              "CLAIMS:\nITEM 1: Backups are kept for 30 days.\n\n" + RULE)
    assert ask(prompt)[0]["verdict"] == "supported"


CONTEXT = "Boston College is a private research university in Chestnut Hill, Massachusetts, founded in 1863."


@pytest.mark.parametrize(("claim", "supported"), [
    ("Boston College is a private research university.", True),          # words, names: all stated
    ("Boston College was founded in 1863.", True),                       # and its number
    ("Boston College was founded in 1864.", False),                      # a number the sentence lacks
    ("Stanford is a private research university in Chestnut Hill.", False),  # share 5/6, a name it lacks
    ("1863", True),                                                      # only a number, stated
    ("1900", False),                                                     # only a number, not stated
    ("Yes.", False),                                                     # nothing to find
    ("Boston College is a private research university in Ohio.", False),  # share 5/6, a name it lacks
    ("A private research university in Chestnut Hill was founded in 1863 by monks.", True),  # share 6/7 >= 0.7
    ("A private research university was founded by three monks and nuns.", False),       # share 3/6 < 0.7
])
def test_support_rule_one_row_per_branch(claim: str, supported: bool) -> None:
    prompt = f"CONTEXT:\nPASSAGE 1: {CONTEXT}\n\nCLAIMS:\nITEM 1: {claim}\n\n" + RULE
    assert (ask(prompt)[0]["verdict"] == "supported") is supported


@pytest.mark.parametrize(("claim", "supported"), [
    ("The series aired on FX.", True),    # a two-letter acronym is a word the sentence states
    ("The series aired on TV.", False),   # and one it does not
])
def test_two_letter_acronyms_are_content_words(claim: str, supported: bool) -> None:
    prompt = f"CONTEXT:\nPASSAGE 1: The series aired on FX in 2010.\n\nCLAIMS:\nITEM 1: {claim}\n\n" + RULE
    assert (ask(prompt)[0]["verdict"] == "supported") is supported
