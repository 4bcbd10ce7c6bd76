"""The one place a judge is made: a model name and an endpoint, on the operator's settings.

The offline judges run in-process. Any other model is called on the server the
settings name (OPENAI_BASE_URL) with the settings' key: a spec, a stored run or
a link may name the model, never where the call goes or which key it carries.
"""

from __future__ import annotations

from lib.core.endpoints import OFFLINE, normalise
from lib.core.errors import InputError, TrustError
from lib.core.settings import Settings
from lib.judging.base import Judge
from lib.judging.offline import STAND_IN_NOISE, VARIANTS, OfflineJudge


def build_judge(model: str, endpoint: str, settings: Settings, *, noise: float = STAND_IN_NOISE) -> Judge:
    """The judge `model` at `endpoint` ("offline", or this server's endpoint).

    Args:
        noise: the offline judge's stand-in for a model's run-to-run variation
            (0 for a deterministic instrument, as a split uses).

    Raises:
        TrustError: an offline judge that does not exist, or an endpoint other than the settings'.
    """
    if endpoint == OFFLINE:
        if model not in VARIANTS:
            raise TrustError(f"no offline judge {model!r} (known: {', '.join(VARIANTS)})",
                             setting="EVALDRIFT_JUDGE_MODEL")
        return OfflineJudge(model, noise=noise)
    if normalise(endpoint) != settings.endpoint:
        raise TrustError(f"refused to judge on {endpoint}: this server's judge is at {settings.endpoint}",
                         setting="OPENAI_BASE_URL")
    from lib.judging.openai_judge import OpenAIJudge  # the SDK costs half a second to import: only when used

    return OpenAIJudge(model, base_url=settings.base_url, api_key=settings.api_key, timeout=settings.judge_timeout,
                       concurrency=settings.judge_concurrency)


def endpoint_of(model: str, settings: Settings) -> str:
    """Where a judge of this model name lives: offline for the embedded judges, else the settings' server."""
    return OFFLINE if model in VARIANTS else settings.endpoint


def settings_judge(settings: Settings, *, model: str | None = None, noise: float = STAND_IN_NOISE) -> Judge:
    """The judge the settings name (EVALDRIFT_JUDGE_MODEL), or `model` on the settings' terms."""
    name = model or settings.judge_model
    return build_judge(name, endpoint_of(name, settings), settings, noise=noise)


def judge_for_recorded(settings: Settings, model: str | None) -> Judge:
    """The judge that reproduces a recorded instrument's judge model, on the operator's terms.

    An offline-lexical-* model is the embedded judge without stand-in noise (a
    split compares instruments, not repeats); any other model is called on the
    operator's server.

    Raises:
        InputError: the run recorded no judge model, or a model judge with no server configured.
    """
    if not model:
        raise InputError("the run recorded no judge model (unattributed scores): nothing to re-judge with",
                         field="judge_model")
    if model not in VARIANTS and not (settings.base_url or settings.api_key):
        raise InputError(f"the run was judged by {model!r}: set OPENAI_BASE_URL (and OPENAI_API_KEY) to re-judge "
                         f"with it", field="judge_model")
    return settings_judge(settings, model=model, noise=0.0)
