"""The offline judge: lexical entailment over the whole prompt, deterministic, honest about being a stand-in."""

from __future__ import annotations

import json

import pytest

from lib.judges import Judge, JudgeRequest, Message, OfflineJudge
from lib.judges.base import MemoryCache

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
