"""`ceph sla advise`: the shell around advise.py and usage.py.

The tick records the urgent IOPS into a UsageHistory (hourly buckets) that
is written to the mon store every USAGE_SAVE_SECS, so a failover loses at
most that much. Per-OSD capacity per device class comes from `ceph sla advise
--calibrate` (`osd bench` with 4 KiB writes, as mClock calibrates OSDs), kept
in the store, or else from Ceph's mClock capacity options, and says which.
"""
import errno
import json
import re
import statistics
import time
from typing import Any, Callable, Optional

from mgr_module import HandleCommandResult

from ..core.advise import AdviseError, AdviseInputs, Measured, advise
from ..core.report import render_advice
from ..core.settings import Settings
from ..core.state import Role
from ..core.upmap.pg_plan import target_urgent_share
from ..core.usage import UsageError, UsageHistory
from ..crush_rules.rules import DEFAULT_SIZE
from .commands_io import OutputFormat, refuse, reply
from .device_latency import CALIBRATION_KEY
from .mgr_port import MgrPort, TimedResult
from .state_store import StateStore

USAGE_KEY = "usage"
USAGE_SAVE_SECS = 300.0
# osd bench with 4 KiB blocks at random offsets of prewritten objects, as
# mClock runs it at OSD start to measure osd_mclock_max_capacity_iops, but
# smaller: 512 writes, not its 3,000, over 8 objects of 4 MiB, not 100 (the
# OSD writes them all before it starts the clock: 400 MiB per OSD benched).
# A mean over 512 overwrites is as good for a ratio of classes, and a slow or
# busy device (50 IOPS, each write a few device I/Os with BlueStore's WAL)
# answers in a minute, not in ten.
BENCH = {"prefix": "bench", "count": 512 * 4096, "size": 4096, "object_size": 4194304,
         "object_num": 8}
# An OSD whose bench has not answered by then counts as failed (a hung OSD
# would hold the command, and the mgr's command thread, for ever): its class
# takes the other OSD's figure, or else the mClock option, and says why.
BENCH_ANSWER_SECS = 300.0
BENCH_OSDS_PER_CLASS = 2
# Ceph's defaults of osd_mclock_max_capacity_iops_{hdd,ssd}, if the mgr cannot read them
MCLOCK_DEFAULTS = {"hdd": 315.0, "ssd": 21500.0}
# The paper's Fig. 12 (HDD block with its block.db on SSD over HDD only), used
# for the data/metadata verdict until a layout is measured on the cluster
PAPER_DB_SPEEDUP = Measured(2.0, "the paper's Fig. 12 (HDD+SSD about 2x HDD only); this "
                                 "project's measurement: docs/benchmarks.md")


class Advisor:
    """`ceph sla advise` and the urgent usage record it reads."""

    def __init__(self, mgr: MgrPort, store: StateStore,
                 settings: Callable[[], Settings]) -> None:
        self._mgr = mgr
        self._store = store
        self._settings = settings
        self._usage: Optional[UsageHistory] = None
        self._usage_saved_at = 0.0

    def _usage_history(self) -> UsageHistory:
        if self._usage is None:
            text = self._mgr.get_store(USAGE_KEY)
            try:
                self._usage = UsageHistory.from_json(text)
            except UsageError as e:
                self._mgr.log.error("sla: %s: starting a new urgent usage history", e)
                self._usage = UsageHistory()
            self._usage_saved_at = time.time()
        return self._usage

    def record_usage(self, now: float, urgent_iops: Optional[float]) -> Optional[str]:
        """Count this tick's urgent rate; the history's text when it is due
        to be written (the caller writes it without the module lock)."""
        if urgent_iops is None:
            return None
        usage = self._usage_history()
        usage.add(now, urgent_iops)
        if now - self._usage_saved_at < USAGE_SAVE_SECS:
            return None
        self._usage_saved_at = now
        return usage.to_json()

    def advise(self, cost_ratio: Optional[float], calibrate: bool, fmt: OutputFormat,
               extra: Optional[Callable[[], dict[str, Any]]] = None) -> HandleCommandResult:
        """The advice; `extra` adds the per-pool switch costs (the module's)."""
        if calibrate:
            try:
                self._calibrate()
            except (RuntimeError, ValueError, TypeError) as e:
                return refuse(errno.EIO, f"calibration failed: {e}")
        try:
            advice = advise(self._advise_inputs(cost_ratio))
        except AdviseError as e:
            return refuse(errno.EINVAL, str(e))
        data, text = advice.to_dict(), render_advice(advice)
        if extra is not None:
            costs = extra()
            data["pools"] = costs["pools"]
            text += costs["text"]
        return reply(fmt, data, text)

    def _advise_inputs(self, cost_ratio: Optional[float]) -> AdviseInputs:
        settings = self._settings()
        osd_map, crush = self._mgr.get("osd_map"), self._mgr.get("osd_map_crush")
        regions = settings.region_spec().regions(osd_map, crush)
        up_in = {int(o["osd"]) for o in osd_map.get("osds", []) if o.get("up") and o.get("in")}
        urgent = sorted(o for o in regions.of_class(settings.urgent_class) if o in up_in)
        normal = sorted(o for o in regions.of_class(settings.normal_class) if o in up_in)
        with self._store.lock:
            state = self._store.state()
            usage = self._usage_history()
            peak, quiet, hours = usage.peak(), usage.quiet_rate(), usage.hours()
            roles = dict(state.roles)
            last = next((r.time_to_isolation_secs for r in reversed(state.history)
                         if r.time_to_isolation_secs is not None), None)
        sizes = {r: [int(p["size"]) for p in osd_map.get("pools", [])
                     if int(p["pool"]) in roles and roles[int(p["pool"])].role is r]
                 for r in Role}
        # urgent writes land on the urgent OSDs at the urgent pools' size
        size = max(sizes[Role.URGENT], default=DEFAULT_SIZE)
        normal_size = max(sizes[Role.NORMAL], default=DEFAULT_SIZE)
        df = {int(p["id"]): p.get("stats", {})
              for p in (self._mgr.get("df") or {}).get("pools", [])}
        normal_bytes = sum(float(df.get(p, {}).get("bytes_used", 0))
                           for p, r in roles.items() if r.role is Role.NORMAL)
        stats = {int(o["osd"]): o for o in (self._mgr.get("osd_stats") or {}).get("osd_stats", [])}
        free = sum(float(stats[o].get("kb", 0) - stats[o].get("kb_used", 0)) * 1024
                   for o in urgent if o in stats)
        total = sum(float(stats[o].get("kb", 0)) * 1024 for o in urgent if o in stats)
        calibration = self._stored_calibration()
        urgent_iops = self._osd_iops(settings.urgent_class, calibration)
        normal_iops = self._osd_iops(settings.normal_class, calibration)
        ssd_speedup = Measured(urgent_iops.value / normal_iops.value,
                               f"{settings.urgent_class} over {settings.normal_class} "
                               "per-OSD IOPS above") if normal_iops.value > 0 else None
        return AdviseInputs(
            urgent_osds=len(urgent), normal_osds=len(normal),
            urgent_osd_iops=urgent_iops, normal_osd_iops=normal_iops,
            urgent_peak_iops=peak, quiet_rate_iops=quiet, history_hours=hours,
            size=size, threshold_iops=settings.threshold_iops,
            threshold_low_iops=settings.threshold_low_iops,
            min_dwell_secs=settings.min_dwell_secs, last_switch_secs=last,
            normal_bytes=normal_bytes if any(r.role is Role.NORMAL for r in roles.values())
            else None,
            urgent_free_bytes=free if urgent else None,
            urgent_total_bytes=total if urgent else None,
            urgent_share=target_urgent_share(regions, normal_size) if urgent else None,
            nearfull_ratio=float(osd_map.get("nearfull_ratio") or 0.85),
            ssd_hdd_cost_ratio=cost_ratio, hdd_ssd_db_speedup=PAPER_DB_SPEEDUP,
            ssd_speedup=ssd_speedup)

    def _osd_iops(self, device_class: str, calibration: dict[str, Any]) -> Measured:
        """The class's per-OSD 4 KiB write IOPS: measured by --calibrate, else
        Ceph's mClock capacity option for the class (an assumption, said so)."""
        measured = calibration.get("classes", {}).get(device_class) or {}
        if measured.get("iops"):
            when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(calibration.get("time", 0)))
            osds = ", ".join(f"osd.{o}" for o in measured["osds"])
            return Measured(float(measured["iops"]),
                            f"osd bench 4 KiB on {osds}, median, {when} UTC")
        kind = "hdd" if device_class == "hdd" else "ssd"
        option = f"osd_mclock_max_capacity_iops_{kind}"
        try:
            value = float(self._mgr.get_ceph_option(option))
        except Exception:  # an option this release does not have
            value = MCLOCK_DEFAULTS[kind]
        why = (f"osd bench failed ({measured['failed']})" if measured.get("failed")
               else "not measured ('ceph sla advise --calibrate' measures)")
        return Measured(value, f"{why}: Ceph's {option} ({value:g})")

    def _stored_calibration(self) -> dict[str, Any]:
        try:
            data = json.loads(self._mgr.get_store(CALIBRATION_KEY) or "{}")
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def _calibrate(self) -> None:
        """osd bench on up to BENCH_OSDS_PER_CLASS up OSDs of each sla class,
        all at once; the median per class goes to the store."""
        settings = self._settings()
        osd_map = self._mgr.get("osd_map")
        regions = settings.region_spec().regions(osd_map, self._mgr.get("osd_map_crush"))
        up = {int(o["osd"]) for o in osd_map.get("osds", []) if o.get("up")}
        picked = {cls: sorted(o for o in regions.of_class(cls) if o in up)[:BENCH_OSDS_PER_CLASS]
                  for cls in (settings.normal_class, settings.urgent_class)}
        results: dict[int, TimedResult] = {}
        for osds in picked.values():
            for osd in osds:
                results[osd] = TimedResult()
                self._mgr.send_command(results[osd], "osd", str(osd),
                                       json.dumps({**BENCH, "format": "json"}), "")
        deadline = time.monotonic() + BENCH_ANSWER_SECS
        classes: dict[str, Any] = {}
        for cls, osds in picked.items():
            iops: list[float] = []
            measured: list[int] = []
            failed: list[str] = []
            for osd in osds:
                reply = results[osd].wait(max(0.0, deadline - time.monotonic()))
                try:
                    if reply is None:
                        raise RuntimeError(f"osd.{osd} bench did not answer in "
                                           f"{BENCH_ANSWER_SECS:g} s")
                    iops.append(_bench_iops(osd, *reply))
                    measured.append(osd)
                except (RuntimeError, ValueError, TypeError) as e:
                    # e.g. Tentacle's memstore refuses the bench's cache flush:
                    # the class falls back to the mClock option, and says why
                    failed.append(str(e))
            if iops:
                classes[cls] = {"iops": round(statistics.median(iops), 1),
                                "osds": measured,
                                "samples": [round(v, 1) for v in iops]}
            elif failed:
                classes[cls] = {"failed": failed[0][:200]}
        if not classes:
            raise RuntimeError("no up OSD of classes " + ", ".join(picked))
        self._mgr.set_store(CALIBRATION_KEY, json.dumps({"time": time.time(), "classes": classes}))


def _bench_iops(osd: int, rc: int, out: str, err: str) -> float:
    """IOPS from `osd bench`'s reply: its JSON (`iops`, or bytes written /
    block size / seconds, at the top or one level down, as releases differ)
    or, failing that, the "... N IOPS" of its plain text."""
    if rc != 0:
        raise RuntimeError(f"osd.{osd} bench: {err.strip() or rc}")
    for text in (out, err):
        try:
            data = json.loads(text)
        except ValueError:
            continue
        for d in [data] + [v for v in data.values() if isinstance(v, dict)] \
                if isinstance(data, dict) else []:
            if "iops" in d:
                return float(d["iops"])
            if {"bytes_written", "blocksize", "elapsed_sec"} <= set(d):
                return (float(d["bytes_written"]) / float(d["blocksize"])
                        / float(d["elapsed_sec"]))
    found = re.search(r"([0-9.]+)\s*(k?)\s*IOPS", f"{out} {err}", re.IGNORECASE)
    if found:
        return float(found.group(1)) * (1000.0 if found.group(2) else 1.0)
    raise RuntimeError(f"osd.{osd} bench: no IOPS in its reply: {(out or err)[:200]!r}")
