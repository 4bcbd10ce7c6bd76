"""The words evaldrift uses that a newcomer may not know, each in one line: the pages' hover help and the
README's Glossary are both this table (tests/test_docs.py checks the README carries every line)."""

from __future__ import annotations

from lib.diagnosis import trends

GLOSSARY: dict[str, str] = {
    "instrument": "What did the measuring: the judge model, its prompt template (by hash), the binding and the "
                  "scoring library. A change of instrument moves a score without any change to the system.",
    "comparable segment": "A stretch of runs measured with one instrument; scores compare within it, and a jump at "
                          "its boundary is a jump across instruments.",
    "binding": "How a template's fields are filled: projected (from the metric's typed view, only the fields it may "
               "receive: our harness) or replay (from the whole sample, as a historical harness did: how an "
               "ablation reproduces a leak). \"replay -> projected\" means the run switched from the one to the other.",
    "run-to-run spread": trends.HELP[trends.RUN_SPREAD],
    "jump threshold": trends.HELP[trends.JUMP_THRESHOLD],
    "judge repeat spread": trends.HELP[trends.JUDGE_SPREAD],
    "episode": "A jump and the later jump that reverses it (leak in, leak out), shown as one incident.",
    "split": "The 2x2 test of a jump between two runs: each run's outputs judged with each run's instrument, which "
             "divides the move into what the instrument changed and what the outputs changed.",
    "ablation": "Blank a field, re-judge the same samples with and without it (paired), repeat for a noise band, "
                "and see whether the metric moves.",
    "arm": "One condition of an ablation: the field(s) blanked (fields joined by + are blanked together). The joint "
           "arm blanks all of a metric's must-never-receive fields at once; a swap arm (swap:ground_truth) gives "
           "each sample another sample's value of the field; the positive control (support) gives the items "
           "perfect support, to show the judge reads its inputs.",
    "invariant": "What a correctly wired metric does when a field it must never receive is blanked: it does not "
                 "move. Sensitive: it moves, because the field is one it reads.",
    "four readings": "Faithfulness as wired, without the reference, without the passages, and without both.",
    "if independent": "1 - (1 - without the reference)(1 - without the passages): what passages and reference "
                      "would support together if they were independent sources of support; 'as wired' minus it "
                      "is the gap.",
    "judging": "One sample scored for one metric, in one arm, in one repeat. Excluded: a sample the metric cannot "
               "meaningfully score, set aside before any call. Cached: answered from the call cache, no new call.",
    "McNemar exact p": "The chance of at least this lopsided a split between verdicts flipped to positive and to "
                       "negative if flips in either direction were equally likely (an exact binomial test).",
    "canary": "A pinned set of answers whose correct facts only the reference states: faithfulness on them rises "
              "the day the reference leaks into the judge.",
    "lint finding": "A stored template that reads a field its metric must never receive.",
}


def help_for(*terms: str) -> str:
    """The one-line definitions of `terms`, for a widget's help= (Markdown: one paragraph each)."""
    return "  \n".join(f"**{t}**: {GLOSSARY[t]}" for t in terms)


def glossary_markdown() -> str:
    """The README's Glossary list, generated from GLOSSARY."""
    return "\n".join(f"- **{t}**: {d}" for t, d in GLOSSARY.items())
