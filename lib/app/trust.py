"""Who decides where the key goes and what code runs: the server's operator, never a stored spec.

A stored ablation spec (in the database, reached by a URL) names a judge, an
endpoint and maybe an external scorer. Before the dashboard runs it again
(Resume, Retry), `review_spec` compares it with the server's settings:

- an external scorer runs only when EVALDRIFT_SCORERS names it;
- an offline judge runs as recorded (it calls nothing);
- a model judge recorded for this server's endpoint runs as recorded;
- one recorded for another endpoint is re-run on this server's judge only
  after the user confirms (a new spec, so a new ablation: judgings from the
  other endpoint are never mixed in).

`server_judge` builds the judge from the settings alone (the spec's endpoint
is never dialled) and refuses a spec that `review_spec` would not run as is,
so a job that bypasses the page is refused too.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from lib.core.endpoints import OFFLINE, normalise
from lib.core.errors import TrustError
from lib.core.settings import Settings
from lib.diagnosis.ablation import AblationSpec
from lib.judging.base import Judge
from lib.judging.build import build_judge
from lib.judging.offline import VARIANTS

RUN = "run"            # run the spec as recorded
CONFIRM = "confirm"    # run `spec` (the stored one moved to this server's judge) once the user confirms
REFUSE = "refuse"      # do not run; `sentence` says why


@dataclass(frozen=True)
class Review:
    """What the server will do with a stored spec.

    Attributes:
        action: RUN, CONFIRM or REFUSE.
        spec: the spec to run (None when refused).
        sentence: for the user: the difference to confirm, or why it is refused.
    """

    action: str
    spec: AblationSpec | None
    sentence: str = ""


def server_endpoint(spec: AblationSpec, settings: Settings) -> str:
    """Where this server would judge `spec`: offline for an offline judge, else the configured endpoint."""
    return OFFLINE if spec.judge in VARIANTS and spec.endpoint == OFFLINE else settings.endpoint


def review_spec(spec: AblationSpec, settings: Settings) -> Review:
    """Decide whether a stored spec runs here as recorded, on this server's judge after a confirmation, or not."""
    if spec.scorer is not None:
        if spec.scorer in settings.scorers:
            return Review(RUN, spec)
        return Review(REFUSE, None, f"This ablation ran the external scorer `{spec.scorer}`, which this server "
                      "does not allow: the dashboard runs only the scorers its operator lists in "
                      "EVALDRIFT_SCORERS. Run it from the command line (`python -m lib ablate --scorer ...`) "
                      "or ask the operator to add it.")
    if spec.endpoint == OFFLINE:
        if spec.judge in VARIANTS:
            return Review(RUN, spec)
        return Review(REFUSE, None, f"This ablation names {spec.judge!r} as an offline judge, and there is no "
                      f"such offline judge (known: {', '.join(VARIANTS)}).")
    here = settings.endpoint
    if normalise(spec.endpoint) == here:
        return Review(RUN, spec)
    moved = dataclasses.replace(spec, endpoint=here)
    return Review(CONFIRM, moved, f"This ablation was recorded for the judge {spec.judge!r} at {spec.endpoint}; "
                  f"this server's judge is at {here}. Running it here judges every sample again on this "
                  f"server's judge, as a new ablation ({moved.ablation_id}): the judgings made at "
                  f"{spec.endpoint} are kept apart, never mixed in.")


def server_judge(spec: AblationSpec, settings: Settings) -> Judge | None:
    """The judge for `spec`, built from the server's settings alone (None for an allowed external scorer).

    Raises:
        TrustError: the spec asks for a scorer not on the allow-list, or for an endpoint other than the
            server's (review_spec says what to do instead).
    """
    review = review_spec(spec, settings)
    if review.action != RUN:
        raise TrustError(review.sentence if review.action == REFUSE else
                         f"refused to run an ablation recorded for {spec.endpoint} on {settings.endpoint} "
                         "without the user's confirmation", setting="OPENAI_BASE_URL")
    if spec.scorer is not None:
        return None
    return build_judge(spec.judge, spec.endpoint, settings)
