"""Judges: the protocol and its abilities (base), the offline judge, the OpenAI-compatible judge (openai_judge).

The face holds what a judging needs without a network: the offline judge, its model name and an in-memory call
cache. `lib.judging.openai_judge.OpenAIJudge` is imported from its module, by the code that calls a paid judge: the
openai SDK costs half a second to import, which every CLI call and child process would otherwise pay.
"""

from lib.judging.base import MemoryCache
from lib.judging.offline import DEFAULT_MODEL as OFFLINE_MODEL
from lib.judging.offline import OfflineJudge

__all__ = ["OFFLINE_MODEL", "MemoryCache", "OfflineJudge"]
