"""The mode decision: urgent activity against a high/low threshold band.

Pure: plain data in, plain data out, no Ceph. Seed 003's min-max band is the
answer to oscillation: the switch to isolated is immediate (it protects the
SLA), the switch back to shared waits until urgent activity has stayed below
the low threshold for the whole dwell time, so load that hovers around the
thresholds keeps the cluster isolated instead of flapping.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from .latency import Slo


class Mode(str, enum.Enum):
    ISOLATED = "isolated"
    SHARED = "shared"

    def other(self) -> Mode:
        """The mode a switch from this one goes to."""
        return Mode.SHARED if self is Mode.ISOLATED else Mode.ISOLATED


class ThresholdError(ValueError):
    """A threshold pair that cannot be used; the message names the problem."""


@dataclass(frozen=True)
class Thresholds:
    high_iops: float
    low_iops: float

    @staticmethod
    def parse(high: object, low: object | None = None, low_fraction: float = 0.5) -> Thresholds:
        """Validate operator input; `low` defaults to `low_fraction` of `high`."""
        high_f = _positive_number("high threshold", high)
        low_f = high_f * low_fraction if low is None else _positive_number("low threshold", low)
        if low_f > high_f:
            raise ThresholdError(
                f"low threshold {low_f:g} is above the high threshold {high_f:g}: "
                "the low one must be <= the high one"
            )
        return Thresholds(high_f, low_f)


def _positive_number(what: str, value: object) -> float:
    if isinstance(value, bool):
        raise ThresholdError(f"{what} must be a number of IOPS, not {value!r}")
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ThresholdError(f"{what} must be a number of IOPS, not {value!r}") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ThresholdError(f"{what} must be a finite number, not {value!r}")
    if number <= 0:
        raise ThresholdError(f"{what} must be > 0, not {number:g}")
    return number


@dataclass(frozen=True)
class DecisionState:
    """What the decision remembers between ticks (persisted by the module)."""

    mode: Mode
    mode_since: float
    quiet_since: float | None = None  # start of the current run below the low threshold
    high_since: float | None = None  # start of the current run at or above the high one


@dataclass(frozen=True)
class ModeDecision:
    target: Mode
    switch: bool
    reason: str
    state: DecisionState  # the state to keep for the next tick


def decide(
    state: DecisionState,
    urgent_iops: float | None,
    now: float,
    thresholds: Thresholds,
    min_dwell_secs: float,
    pinned: Mode | None = None,
    isolating: bool = False,
    sustain_secs: float = 0.0,
    urgent_latency_ms: float | None = None,
    slo: Slo | None = None,
) -> ModeDecision:
    """The mode the normal pools should be in now.

    `urgent_iops` is None when no rate is known yet (just started, no stats):
    the current mode is kept, since acting on no data is how flapping starts.
    `isolating` is True while the data of a switch to isolated is still
    moving: the quiet time only starts once isolation is in place, because
    that backfill shares the urgent OSDs and holds the urgent clients' own
    rate down (seen in bench/sla_bench.py: an urgent client starved by the
    switch looked quiet, and the module shared again under it).
    """
    if pinned is not None:
        reason = f"pinned to {pinned.value} by the operator"
        return _outcome(state, pinned, now, reason, quiet_since=None)
    if urgent_iops is None:
        return ModeDecision(state.mode, False, "no urgent activity measured yet", state)
    # The latency objective (seed 003's band): above the SLO counts as high
    # activity even below the IOPS threshold; shared again only once latency
    # is also below the band's lower edge.
    latency = urgent_latency_ms if slo is not None and slo.on else None
    over_slo = latency is not None and slo is not None and latency > slo.latency_ms
    cool = latency is None or slo is None or latency < slo.low_fraction * slo.latency_ms
    if urgent_iops >= thresholds.high_iops or over_slo:
        return _high(state, urgent_iops, now, thresholds, sustain_secs, urgent_latency_ms, slo)
    if urgent_iops >= thresholds.low_iops or not cool:
        # Inside the band: keep the mode, and the quiet run is broken.
        return _outcome(state, state.mode, now,
                        _band_reason(urgent_iops, urgent_latency_ms, slo, cool),
                        quiet_since=None)
    if isolating and state.mode is Mode.ISOLATED:
        return _outcome(state, Mode.ISOLATED, now,
                        "isolation still moving data: the quiet time starts when it is done",
                        quiet_since=None)
    return _quiet(state, urgent_iops, now, thresholds, min_dwell_secs)


def _high(state: DecisionState, urgent_iops: float, now: float, thresholds: Thresholds,
          sustain_secs: float, urgent_latency_ms: float | None, slo: Slo | None
          ) -> ModeDecision:
    """Urgent activity (or latency) high: isolate, once it lasted sustain_secs."""
    high_since = state.high_since if state.high_since is not None else now
    held_for = now - high_since
    if urgent_iops >= thresholds.high_iops:
        what = (f"urgent activity {urgent_iops:.0f} IOPS >= high threshold "
                f"{thresholds.high_iops:g}")
    else:
        assert slo is not None and urgent_latency_ms is not None
        what = (f"urgent latency {urgent_latency_ms:.1f} ms (p{slo.percentile:g} of "
                f"per-period means) > SLO {slo.latency_ms:g} ms at {urgent_iops:.0f} IOPS")
    if state.mode is Mode.SHARED and held_for < sustain_secs:
        # a one-sample spike does not isolate: it must last sustain_secs
        reason = f"{what} for {held_for:.0f} of {sustain_secs:g} s"
        return ModeDecision(state.mode, False, reason,
                            replace(state, quiet_since=None, high_since=high_since))
    return _outcome(state, Mode.ISOLATED, now, what, quiet_since=None, high_since=high_since)


def _band_reason(urgent_iops: float, urgent_latency_ms: float | None, slo: Slo | None,
                 cool: bool) -> str:
    if cool:
        return f"urgent activity {urgent_iops:.0f} IOPS inside the threshold band"
    assert slo is not None and urgent_latency_ms is not None
    return (f"urgent latency {urgent_latency_ms:.1f} ms inside the SLO band "
            f"({slo.low_fraction * slo.latency_ms:g}-{slo.latency_ms:g} ms)")


def _quiet(state: DecisionState, urgent_iops: float, now: float, thresholds: Thresholds,
           min_dwell_secs: float) -> ModeDecision:
    """Urgent activity below the low threshold: shared once it stayed there
    for the dwell."""
    quiet_since = state.quiet_since if state.quiet_since is not None else now
    if state.mode is Mode.SHARED:
        return _outcome(state, Mode.SHARED, now, "urgent activity low", quiet_since)
    quiet_for = now - quiet_since
    if quiet_for >= min_dwell_secs:
        reason = (
            f"urgent activity {urgent_iops:.0f} IOPS < low threshold {thresholds.low_iops:g} "
            f"for {quiet_for:.0f} s (dwell {min_dwell_secs:g} s)"
        )
        return _outcome(state, Mode.SHARED, now, reason, quiet_since)
    reason = f"urgent activity low for {quiet_for:.0f} s of the {min_dwell_secs:g} s dwell"
    return _outcome(state, Mode.ISOLATED, now, reason, quiet_since)


def _outcome(
    state: DecisionState, target: Mode, now: float, reason: str, quiet_since: float | None,
    high_since: float | None = None,
) -> ModeDecision:
    if target is state.mode:
        return ModeDecision(target, False, reason, replace(state, quiet_since=quiet_since,
                                                           high_since=high_since))
    return ModeDecision(target, True, reason, DecisionState(target, now, quiet_since,
                                                            high_since))



def held(decision: ModeDecision, previous: DecisionState) -> DecisionState:
    """The state to keep when a decided switch could not be applied (a gate
    blocked it): still in the old mode, but the quiet run keeps counting."""
    return replace(previous, quiet_since=decision.state.quiet_since)
