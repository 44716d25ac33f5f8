"""The PG limit each urgent OSD runs with: mon_max_pg_per_osd and
osd_max_pg_per_osd_hard_ratio as the OSD itself has them (`ceph tell osd.N
config get`), which is what OSD::maybe_wait_for_max_pg compares with. The
mgr's own value, or the mon's config database, miss what was set at runtime
(`ceph tell 'osd.*' config set ...`) or in an OSD host's ceph.conf.

The OSDs are asked in a background thread every READ_SECS (and at once for
an OSD not asked yet): two small commands per urgent OSD, never from the
tick. Until an OSD is first asked its limit is not known (the admission
then shares nothing new); an OSD that does not answer (it is down, or the
mgr may not tell it) gets the value of the config database for that OSD,
and failing that the mgr's own; the basis says which. The normal OSDs that
isolation brings PGs back to are read with the same commands, a bounded few
at a time (normal_limits.py).
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable

from ..core.pg_slots import PgLimit
from .mgr_port import MgrPort, TimedResult

READ_SECS = 30.0
SEND_BATCH = 64  # OSDs asked at once (2,000 urgent OSDs: 4,000 commands in all)
ANSWER_SECS = 10.0  # an OSD that does not answer this fast is asked again next time
KEYS = ("mon_max_pg_per_osd", "osd_max_pg_per_osd_hard_ratio")


def parse_value(key: str, out: str) -> float | None:
    """A `config get` reply: JSON ({"KEY": "VALUE"}) or plain text."""
    text = out.strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = text
    if isinstance(data, dict):
        data = data.get(key)
    try:
        return float(str(data).strip())
    except (TypeError, ValueError):
        return None


class OsdLimits:
    def __init__(self, mgr: MgrPort) -> None:
        self._mgr = mgr
        self._lock = threading.Lock()
        self._read: dict[int, tuple[PgLimit, float]] = {}  # osd -> (limit, when)
        self._silent: set[int] = set()  # asked, no answer: the fallback stands in
        self._thread: threading.Thread | None = None
        self.version = 0  # bumped when a read value changes: the admission looks again

    def limits(self, osds: Iterable[int], up: frozenset[int]) -> dict[int, PgLimit]:
        """Each OSD's limit as last read (a fallback for one that did not
        answer, none for one not asked yet); asks the up ones whose value is
        older than READ_SECS, in the background."""
        now = time.monotonic()
        wanted = sorted(osds)
        with self._lock:
            read, silent = dict(self._read), set(self._silent)
        due = [o for o in wanted if o in up and (o not in read or now - read[o][1] > READ_SECS)]
        if due:
            self.ask(due)
        fallback: PgLimit | None = None
        out = {}
        for osd in wanted:
            if osd in read:
                out[osd] = read[osd][0]
                continue
            if osd in up and osd not in silent:
                continue  # not asked yet: not known
            fallback = fallback or self._fallback()
            if fallback is not None:
                out[osd] = self._config_db(osd) or fallback
        return out

    def known(self) -> dict[int, tuple[PgLimit, float]]:
        """Each OSD's own limit as last read, and when (time.monotonic())."""
        with self._lock:
            return dict(self._read)

    def stand_in(self, osd: int) -> PgLimit | None:
        """The limit to count with until the OSD's own is read: the config
        database's value for it, else the mgr's own (None: neither readable)."""
        return self._config_db(osd) or self._fallback()

    def ask(self, osds: list[int], name: str = "sla-osd-limits") -> bool:
        """Ask these OSDs in the background; False while a read is running
        (nothing asked)."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return False
            self._thread = threading.Thread(target=self._ask, args=(osds,), name=name,
                                            daemon=True)
            self._thread.start()
            return True

    def _ask(self, osds: list[int]) -> None:
        pending = {}
        for i, osd in enumerate(osds):
            if i and i % SEND_BATCH == 0:
                time.sleep(0.005)  # the tick's thread takes the interpreter meanwhile
            for key in KEYS:
                result = TimedResult()
                try:
                    self._mgr.send_command(result, "osd", str(osd), json.dumps(
                        {"prefix": "config get", "var": key, "format": "json"}), "")
                except Exception as e:  # e.g. an OSD id the mgr does not know
                    self._mgr.log.debug("sla: osd.%d config get %s: %s", osd, key, e)
                    continue
                pending[(osd, key)] = result
        deadline = time.monotonic() + ANSWER_SECS
        values: dict[int, dict[str, float]] = {}
        for (osd, key), result in pending.items():
            reply = result.wait(max(0.0, deadline - time.monotonic()))
            if reply is None or reply[0] != 0:
                continue
            value = parse_value(key, reply[1] or reply[2])
            if value is not None:
                values.setdefault(osd, {})[key] = value
        now = time.monotonic()
        with self._lock:
            for osd in osds:
                if set(values.get(osd, {})) != set(KEYS) and osd not in self._read:
                    if osd not in self._silent:
                        self.version += 1
                    self._silent.add(osd)
            for osd, got in values.items():
                if set(got) != set(KEYS):
                    continue
                self._silent.discard(osd)
                limit = PgLimit(int(got[KEYS[0]]), got[KEYS[1]], "the OSD")
                old = self._read.get(osd)
                if old is None or old[0] != limit:
                    self.version += 1
                self._read[osd] = (limit, now)

    def _fallback(self) -> PgLimit | None:
        """The mgr's own values (what every daemon runs with unless told otherwise)."""
        try:
            return PgLimit(int(self._mgr.get_ceph_option(KEYS[0])),
                           float(self._mgr.get_ceph_option(KEYS[1])), "the mgr's value")
        except Exception:  # not readable: no limit known, no projection
            return None

    def _config_db(self, osd: int) -> PgLimit | None:
        try:
            return PgLimit(int(self._mgr.get_foreign_ceph_option(f"osd.{osd}", KEYS[0])),
                           float(self._mgr.get_foreign_ceph_option(f"osd.{osd}", KEYS[1])),
                           "the config database")
        except Exception:  # an older mgr, or a mon that does not answer: the mgr's value
            return None

    def forget(self) -> None:
        """Ask every OSD again at the next read (tests; a mgr told the values changed)."""
        with self._lock:
            self._read, self._silent = {}, set()
            self.version += 1

    def wait(self, timeout: float) -> None:
        """For tests and shutdown: wait for a running read to end."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
