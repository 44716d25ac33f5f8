"""Which strategy an auto pool's next switch to shared uses.

Both strategies keep a pool on sla_isolated_normal at its own size while it
is isolated: the same rule, size and weight sets, so the same mapping of
every PG. The module may therefore change an auto pool's strategy while the
pool is isolated without moving a byte, and does so at each cost refresh:
of the strategies that fit (the pool meets their conditions, isolation
within max_isolation_secs, room on the urgent region, no limit of the
module found against it), it takes the one with the best expected gain
(measured once known, the model until then). It leaves the current one only
for a gain STRATEGY_MARGIN better, so two strategies of about the same gain
do not take turns. A gain re-measured (its measurement older than
gain_retry_secs, the prior speaking again) is re-measured by the fitting
strategy that places the fewest bytes: a trial share by move, not a whole
new copy. A pool set with `--strategy` keeps its strategy.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .gain import ExpectedGain, MeasuredGain

STRATEGY_MARGIN = 1.1


@dataclass(frozen=True)
class StrategyOption:
    """One strategy for one pool: its expected gain, and why it cannot be
    used now (None: it can)."""

    strategy: str
    gain: ExpectedGain
    blocked: str | None = None
    place_bytes: float = 0.0  # what a switch to shared places on the urgent region


@dataclass(frozen=True)
class StrategyChoice:
    strategy: str  # the strategy the pool's next switch to shared uses
    auto: bool  # chosen by the module (False: set by --strategy)
    why: str
    options: tuple[StrategyOption, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "auto": self.auto, "why": self.why,
                "options": {o.strategy: {"gain": o.gain.gain, "source": o.gain.source,
                                         "measured": _measured(o.gain.measured),
                                         "blocked": o.blocked} for o in self.options}}


def _measured(m: MeasuredGain | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {"gain": m.gain, "low": m.low, "high": None if math.isinf(m.high) else m.high}


def choose_strategy(current: str, auto: bool, options: Sequence[StrategyOption],
                    mix_known: bool = True) -> StrategyChoice:
    """The strategy for the pool's next switch to shared, and why.
    `mix_known`: the pool's read/write mix was measured; until it is, a
    fitting strategy stays (the models would only compare an assumed mix)."""
    if not auto:
        return StrategyChoice(current, False, "set by --strategy", tuple(options))
    fit = [o for o in options if o.blocked is None]
    if not mix_known and any(o.strategy == current for o in fit):
        return StrategyChoice(current, True, "no client ops measured yet: the pool keeps "
                              "its strategy until its read/write mix is known", tuple(options))
    if not fit:
        return StrategyChoice(current, True, "no strategy fits: " + "; ".join(
            f"{o.strategy}: {o.blocked}" for o in options), tuple(options))
    best = max(fit, key=lambda o: (o.gain.gain, o.strategy == current))
    mine = next((o for o in fit if o.strategy == current), None)
    if mine is not None and best.gain.gain < mine.gain.gain * STRATEGY_MARGIN:
        best = mine
    trial = ""
    cheapest = min(fit, key=lambda o: (o.place_bytes, o.strategy != current))
    if best.gain.stale and cheapest.place_bytes < best.place_bytes:
        trial = (f"; {best.strategy}'s gain re-measured by a trial share of "
                 f"{cheapest.strategy} ({cheapest.place_bytes / 2**30:.2f} GiB placed, not "
                 f"{best.place_bytes / 2**30:.2f} GiB)")
        best = cheapest
    others = [f"{o.strategy} {o.gain.gain:.2f}x ({o.gain.source})" if o.blocked is None
              else f"{o.strategy}: {o.blocked}" for o in options if o is not best]
    why = f"expected gain {best.gain.gain:.2f}x ({best.gain.source})"
    if others:
        why += "; " + "; ".join(others)
    why += trial
    return StrategyChoice(best.strategy, True, why, tuple(options))
