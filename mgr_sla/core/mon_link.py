"""Whether the monitors answer the module's commands: a small state machine.

librados blocks a mon command for as long as the monitors have no quorum
(the binding ignores its timeout, and the mgr's `rados_mon_op_timeout` is 0),
so the shell gives each command a deadline of its own (shell/mon_deadline.py)
and tells this machine when one passed. From then on the monitors are
"silent": every command fails at once, without reaching librados, until a
probe (one cheap read at a time, every PROBE_EVERY_SECS at most) answers and
the tick settles the state. The tick settles it, not the probe's thread: a
tick or a command that was half way through when the monitors went silent
must not carry on with commands it decided before (each outage counts in
`outages`, so a batch on its own thread can tell it was planned before one).
Pure: times come from the caller.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

PROBE_EVERY_SECS = 5.0
PROBE_COMMAND = "osd stat"  # answered by any mon in quorum, from its own map
HEALTH_CODE = "SLA_MON_UNREACHABLE"


def clock_time(t: float) -> str:
    """HH:MM:SS of a wall-clock time, as the operator reads the mgr's log."""
    return time.strftime("%H:%M:%S", time.localtime(t))


@dataclass(frozen=True)
class Silence:
    """The first command of an outage that got no answer in time."""

    since: float
    command: str
    timeout: float


class MonLink:
    def __init__(self) -> None:
        self.silence: Silence | None = None
        self.outages = 0  # times the monitors went silent since the module started
        self._probing = False
        self._probe_at: float | None = None  # the last probe's start (this outage)
        self._answered = False  # a probe answered: the next settle clears the silence

    @property
    def answering(self) -> bool:
        return self.silence is None

    def timed_out(self, now: float, command: str, timeout: float) -> None:
        """A command got no answer within its deadline. A probe's answer from
        before it no longer counts: the next probe must answer after it."""
        if self.silence is None:
            self.silence = Silence(now, command, timeout)
            self.outages += 1
            self._probe_at = None  # the first probe goes at the next tick
        self._answered = False

    def refusal(self) -> str | None:
        """Why a command fails at once (None: it may go to the monitors)."""
        if self.silence is None:
            return None
        return (f"waiting for the monitors: no answer since {clock_time(self.silence.since)} "
                f"('{self.silence.command}' got none within {self.silence.timeout:g} s); the "
                f"module probes them every {PROBE_EVERY_SECS:g} s and sends nothing until "
                "they answer")

    def probe_due(self, now: float) -> bool:
        return (self.silence is not None and not self._probing
                and (self._probe_at is None or now - self._probe_at >= PROBE_EVERY_SECS))

    def probe_started(self, now: float) -> None:
        self._probing, self._probe_at = True, now

    def probe_ended(self, answered: bool) -> None:
        self._probing = False
        if answered and self.silence is not None:
            self._answered = True

    def settle(self) -> bool:
        """At a tick, under its act lock: True when a probe answered since the
        last timeout, and the monitors count as answering again."""
        if self.silence is None or not self._answered:
            return False
        self.silence, self._answered, self._probe_at = None, False, None
        return True

    def describe(self) -> str:
        """`ceph sla status`'s `monitors`."""
        if self.silence is None:
            return "answering"
        return (f"waiting for the monitors since {clock_time(self.silence.since)} "
                f"('{self.silence.command}' got no answer within {self.silence.timeout:g} s)")

    def health(self) -> tuple[str, list[str]] | None:
        """HEALTH_CODE's summary and detail while silent. The mgr cannot send
        it to silent monitors; it is set anyway, so that it shows once they
        answer if it still applies (the tick clears it when a probe answers)."""
        if self.silence is None:
            return None
        return (f"sla: the monitors have not answered since {clock_time(self.silence.since)};"
                " the module sends no command", [
                    f"'{self.silence.command}' got no answer within {self.silence.timeout:g} s",
                    f"the module measures and answers 'ceph sla status'; it sends nothing "
                    f"until a probe ('{PROBE_COMMAND}') answers, then plans afresh from the "
                    "map it reads then"])
