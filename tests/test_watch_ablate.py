"""`watch --ablate`: before sending, the ablations a jump's suspects call for, so the alert carries LEAK or CLEAN;
a paid judge only within `--budget` (the message says when the budget kept an ablation from running, and never
says a verdict for it); a verdict that arrives later is one message, not a repeat."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from lib.core import settings
from lib.diagnosis.ablation import CLEAN, INCONCLUSIVE, INSENSITIVE, LEAK, REPLAY_MISMATCH, SENSITIVE
from lib.diagnosis.watch import CLOSE, NEW, UPDATE, verdict_word
from lib.jobs import watch as wj
from lib.store import Store
from tests.support.openai_server import MODEL_ID
from tests.support.watch_history import LEAKY, at, history, night

FLAT = [0.70] * 12


class Keeper:
    """A notifier that keeps what it is given (one channel)."""

    channels = ("keeper://",)

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def send(self, channel: str, title: str, body: str) -> None:
        self.sent.append((title, body))


@pytest.mark.parametrize(("kinds", "mismatch", "word"), [
    ([LEAK, CLEAN], False, LEAK),                   # any leaking cell
    ([LEAK], True, LEAK),                           # a finding against the wiring stands without the replay
    ([INSENSITIVE, CLEAN], False, INSENSITIVE),     # a received field moved nothing
    ([REPLAY_MISMATCH], False, REPLAY_MISMATCH),    # a cell the replay check turned
    ([CLEAN], True, REPLAY_MISMATCH),               # the run's score not reproduced: nothing is cleared
    ([INCONCLUSIVE, CLEAN], False, INCONCLUSIVE),   # a cell decided nothing
    ([CLEAN, SENSITIVE], False, CLEAN),        # every cell as the wiring table expects
    ([], False, INCONCLUSIVE),                      # no cell: nothing said
])
def test_an_ablation_is_one_word_in_the_alert(kinds: list[str], mismatch: bool, word: str):
    assert verdict_word(kinds, mismatch=mismatch) == word


@pytest.fixture(scope="module")
def _flat(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Twelve quiet nights looked at once, judged by the offline judge and by a model (two files)."""
    out = {}
    for name, model in (("offline", "offline-lexical-v2"), ("model", MODEL_ID)):
        path = tmp_path_factory.mktemp(name) / "h.duckdb"
        with Store(path) as store:
            history(store, FLAT, judge_model=model)
        assert wj.look(path, Keeper(), now=at(11.5)).claimed == ()
        out[name] = path
    return out


def test_the_leak_is_sent_with_leak_attached_once(_flat: dict[str, Path], tmp_path: Path):
    db = Path(shutil.copy(_flat["offline"], tmp_path / "h.duckdb"))
    with Store(db) as store:   # the prompt now reads ground_truth: the suspect calls for blanking it
        night(store, 12, 0.92, template=LEAKY, binding="replay")
    keeper = Keeper()
    ablating = wj.Ablating(0, settings.load(environ={}))   # no paid calls: the offline judge is free
    first = wj.look(db, keeper, now=at(12.5), ablating=ablating)
    assert [e.kind for e in first.claimed] == [NEW]
    ((title, body),) = keeper.sent
    assert title.startswith("faithfulness +0.2") and "now reads ground_truth" in title
    assert title.endswith("[LEAK]")
    assert any(line.startswith("- ablation abl-") and "wiring leak" in line for line in body.splitlines()), body
    with Store(db) as store:
        assert [r.status for r in store.ablations().itertuples()] == ["done"]
    # the verdict was told inside the alert: no second message for it, now or later
    assert wj.look(db, keeper, now=at(12.6), ablating=ablating).claimed == ()
    with Store(db) as store:
        night(store, 13, 0.92, template=LEAKY, binding="replay")   # something new: a full look
    assert [e.kind for e in wj.look(db, keeper, now=at(13.5), ablating=ablating).claimed] == []
    assert len(keeper.sent) == 1
    # the fix reverses the episode: its close is told, and the reversing run is no new wiring to ablate (its binding
    # suspect names a field to blank; ablating it sent a CLEAN update beside the close on the demo's night 76)
    with Store(db) as store:
        night(store, 14, 0.70)
    assert [e.kind for e in wj.look(db, keeper, now=at(14.5), ablating=ablating).claimed] == [CLOSE]
    with Store(db) as store:
        assert len(store.ablations()) == 1


def test_a_paid_ablation_over_the_budget_is_not_run_and_its_verdict_later_is_one_update(
        _flat: dict[str, Path], tmp_path: Path, openai_server, monkeypatch: pytest.MonkeyPatch):
    from lib.jobs import run_guarded
    from lib.jobs.watch_ablate import REPEATS
    from lib.judging.build import build_judge

    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    db = Path(shutil.copy(_flat["model"], tmp_path / "h.duckdb"))
    with Store(db) as store:
        night(store, 12, 0.92, template=LEAKY, binding="replay", judge_model=MODEL_ID)
    keeper = Keeper()
    s = settings.load()
    first = wj.look(db, keeper, now=at(12.5), ablating=wj.Ablating(10, s))
    assert [e.kind for e in first.claimed] == [NEW]
    ((title, body),) = keeper.sent
    assert "[" not in title   # no verdict said
    assert ("ablation of faithfulness with ground_truth blanked at night-012 not run: it needs up to "
            in body) and f"calls to {MODEL_ID}, over what is left of --budget 10 (10); no verdict yet" in body
    assert openai_server.n_calls == 0
    # the ablation runs elsewhere (the dashboard, `python -m lib ablate`): its verdict is one message
    from lib.diagnosis.ablation import AblationSpec

    with Store(db) as store:
        spec = AblationSpec("night-012", ("faithfulness",), ("ground_truth",), repeats=REPEATS, judge=MODEL_ID,
                            endpoint=s.endpoint)
        assert run_guarded(store, spec, build_judge(MODEL_ID, s.endpoint, s)).result is not None
    later = wj.look(db, keeper, now=at(12.6), ablating=wj.Ablating(10, s))
    assert [e.kind for e in later.claimed] == [UPDATE]
    assert "ablation of night-012: LEAK" in keeper.sent[-1][0]
    assert wj.look(db, keeper, now=at(12.7) + timedelta(minutes=5)).claimed == ()
    assert len(keeper.sent) == 2
