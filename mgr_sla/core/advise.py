"""`ceph sla advise`: is the urgent region big enough, and what to set.

Sizes the urgent device class (e.g. the ssd OSDs) from the urgent pools'
recorded IOPS (mgr_sla/core/usage.py) and a per-OSD capacity, checks whether shared
mode would overfill it, and derives the thresholds and dwell from the rules of
docs/policy-simulation.md "Recommended defaults". Every figure carries a
`basis` saying where it came from: advice an operator cannot check is advice
they should not follow. Pure: plain data in, plain data out, no Ceph.

The op model: a client write costs `size` OSD writes (one per replica, spread
over the OSDs by CRUSH), a client read costs 1 OSD op (on the primary). So a
client op costs `read_fraction + (1 - read_fraction) * size` OSD ops; the
default read fraction 0 (all writes) is the worst case.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from .checks import number_in, whole
from .switch_cost import room_under

THRESHOLD_SHARE = 0.05  # high threshold: about 5% of the urgent client capacity
LATE_SHARE = 0.20  # a high threshold at 20% of capacity isolates too late
LOW_FRACTION = 0.5  # low threshold: half of high ...
QUIET_LOW_FACTOR = 2.0  # ... but at least 2x the quiet-hours urgent rate
QUIET_HIGH_FACTOR = 4.0  # high raised to this when 2x quiet reaches it
DWELL_SECS = 7200.0
SLOW_SWITCH_SECS = 3600.0  # past this no adaptive setting beats fixed isolation
DB_FRACTION = 0.04  # block.db size / block size (BlueStore docs: >= 4% for RGW)


class AdviseError(ValueError):
    """Inputs that cannot be advised on; the message names the field."""


@dataclass(frozen=True)
class Measured:
    """A figure and where it came from, e.g. (850, "ceph tell osd.N bench, 4 KiB,
    median of 3 OSDs") or (2.95, "paper, Fig. 12")."""

    value: float
    basis: str


@dataclass(frozen=True)
class AdviseInputs:
    """What `advise` needs. Rates are client IOPS unless named OSD IOPS.

    `urgent_peak_iops`, `quiet_rate_iops`, `history_hours`: from UsageHistory
    (peak(), quiet_rate(), hours()). `threshold_low_iops` 0 means half of high,
    as in the module. `normal_bytes`: all replicas of the normal pools (raw
    bytes, as `ceph df` USED); `urgent_share`: the share of those replicas
    shared mode puts on urgent OSDs. `*_speedup`: throughput over HDD only
    (`ssd_ssd_db_speedup`: SSD data with block.db on another, faster SSD).
    """

    urgent_osds: int
    normal_osds: int
    urgent_osd_iops: Measured
    normal_osd_iops: Measured
    urgent_peak_iops: float | None = None
    quiet_rate_iops: float | None = None
    history_hours: int = 0
    size: int = 3
    read_fraction: float = 0.0
    headroom: float = 0.3
    threshold_iops: float | None = None
    threshold_low_iops: float | None = None
    min_dwell_secs: float | None = None
    last_switch_secs: float | None = None
    normal_bytes: float | None = None
    urgent_free_bytes: float | None = None
    urgent_total_bytes: float | None = None
    urgent_share: float | None = None
    nearfull_ratio: float = 0.85
    normal_peak_iops: float | None = None
    ssd_hdd_cost_ratio: float | None = None
    hdd_ssd_db_speedup: Measured | None = None
    ssd_speedup: Measured | None = None
    ssd_ssd_db_speedup: Measured | None = None
    db_fraction: float = DB_FRACTION

    def __post_init__(self) -> None:
        for name in ("urgent_osds", "normal_osds", "history_hours"):
            _whole(name, getattr(self, name), 0)
        _whole("size", self.size, 1)
        for name in ("urgent_osd_iops", "normal_osd_iops"):
            _number(name, _measured(name, getattr(self, name)).value, low=0.0, low_open=True)
        _number("read_fraction", self.read_fraction, 0.0, 1.0)
        _number("headroom", self.headroom, 0.0, 1.0, high_open=True)
        _number("nearfull_ratio", self.nearfull_ratio, 0.0, 1.0, low_open=True)
        _number("db_fraction", self.db_fraction, 0.0, 1.0, high_open=True)
        for name in ("urgent_peak_iops", "quiet_rate_iops", "threshold_low_iops",
                     "min_dwell_secs", "last_switch_secs", "normal_bytes",
                     "urgent_free_bytes", "urgent_total_bytes", "normal_peak_iops"):
            if getattr(self, name) is not None:
                _number(name, getattr(self, name), low=0.0)
        if self.urgent_share is not None:
            _number("urgent_share", self.urgent_share, 0.0, 1.0)
        if self.threshold_iops is not None:
            _number("threshold_iops", self.threshold_iops, low=0.0, low_open=True)
        if self.ssd_hdd_cost_ratio is not None:
            _number("ssd_hdd_cost_ratio", self.ssd_hdd_cost_ratio, low=0.0, low_open=True)
        for name in ("hdd_ssd_db_speedup", "ssd_speedup", "ssd_ssd_db_speedup"):
            figure = getattr(self, name)
            if figure is not None:
                _number(name, _measured(name, figure).value, low=0.0, low_open=True)

    @property
    def op_cost(self) -> float:
        """OSD ops per client op: reads 1, writes `size`."""
        return self.read_fraction + (1.0 - self.read_fraction) * self.size


def _measured(name: str, value: object) -> Measured:
    if not isinstance(value, Measured):
        raise AdviseError(f"{name}: must be a Measured(value, basis), not {value!r}")
    return value


@dataclass(frozen=True)
class Layout:
    """One OSD layout's performance per cost. cost_per_gb: per GB of usable
    data, HDD = 1; speedup: throughput over HDD only (None: not measured)."""

    name: str
    speedup: float | None
    cost_per_gb: float
    perf_per_cost: float | None
    basis: str


@dataclass(frozen=True)
class DataMetadata:
    cost_ratio: float
    db_fraction: float
    layouts: tuple[Layout, ...]
    winner: str
    basis: str


@dataclass(frozen=True)
class Advice:
    urgent_osds: int
    urgent_osds_needed: int | None
    verdict: str  # "enough", "too few: add N", "no history yet"
    urgent_osds_basis: str
    urgent_client_capacity_iops: float
    urgent_client_capacity_basis: str
    normal_client_capacity_iops: float
    normal_client_capacity_basis: str
    shared_overfill: bool | None
    shared_overfill_basis: str
    threshold_iops: float | None
    threshold_iops_basis: str
    threshold_low_iops: float | None
    threshold_low_iops_basis: str
    min_dwell_secs: float
    min_dwell_secs_basis: str
    current_threshold_iops: float | None
    current_threshold_low_iops: float | None
    current_min_dwell_secs: float | None
    data_metadata: DataMetadata | None
    data_metadata_basis: str
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["notes"] = list(self.notes)
        if out["data_metadata"] is not None:
            out["data_metadata"]["layouts"] = list(out["data_metadata"]["layouts"])
        return out


def advise(inputs: AdviseInputs) -> Advice:
    """Sizing, overfill check, thresholds, dwell and layout for one cluster."""
    notes: list[str] = []
    needed, verdict, needed_basis = _needed(inputs, notes)
    urgent_cap, urgent_cap_basis = _client_capacity(
        inputs, inputs.urgent_osds, inputs.urgent_osd_iops, "urgent")
    normal_cap, normal_cap_basis = _client_capacity(
        inputs, inputs.normal_osds, inputs.normal_osd_iops, "normal")
    overfill, overfill_basis = _shared_overfill(inputs)
    high, high_basis, low, low_basis = _thresholds(inputs, urgent_cap, notes)
    dwell, dwell_basis = _dwell(inputs, notes)
    layout, layout_basis = _data_metadata(inputs)
    current_low = inputs.threshold_low_iops
    if current_low == 0 and inputs.threshold_iops is not None:
        current_low = inputs.threshold_iops * LOW_FRACTION  # 0: half of high
    quiet = inputs.quiet_rate_iops
    if current_low is not None and quiet is not None and current_low < QUIET_LOW_FACTOR * quiet:
        notes.append(f"the current low threshold {current_low:g} is below 2x the quiet-hours "
                     f"urgent rate {quiet:.0f} IOPS: the module shares at night rarely or never")
    return Advice(
        urgent_osds=inputs.urgent_osds, urgent_osds_needed=needed, verdict=verdict,
        urgent_osds_basis=needed_basis,
        urgent_client_capacity_iops=urgent_cap, urgent_client_capacity_basis=urgent_cap_basis,
        normal_client_capacity_iops=normal_cap, normal_client_capacity_basis=normal_cap_basis,
        shared_overfill=overfill, shared_overfill_basis=overfill_basis,
        threshold_iops=high, threshold_iops_basis=high_basis,
        threshold_low_iops=low, threshold_low_iops_basis=low_basis,
        min_dwell_secs=dwell, min_dwell_secs_basis=dwell_basis,
        current_threshold_iops=inputs.threshold_iops, current_threshold_low_iops=current_low,
        current_min_dwell_secs=inputs.min_dwell_secs,
        data_metadata=layout, data_metadata_basis=layout_basis, notes=tuple(notes),
    )


def _cost_words(inputs: AdviseInputs) -> str:
    if inputs.read_fraction == 0:
        return f"x size {inputs.size} (writes: one OSD op per replica)"
    return (f"x {inputs.op_cost:g} OSD ops per client op ({inputs.read_fraction:.0%} reads "
            f"at 1, writes at size {inputs.size})")


def _ceil(x: float) -> int:
    """ceil that ignores float noise: 980 x 3 / (700 x 0.7) is 6.000000000000001."""
    return math.ceil(x - 1e-9)


def _needed(inputs: AdviseInputs, notes: list[str]) -> tuple[int | None, str, str]:
    """ceil(urgent peak x op cost / (per-OSD IOPS x (1 - headroom))), and never
    fewer than `size` OSDs: one per replica."""
    peak = inputs.urgent_peak_iops
    if peak is None or inputs.history_hours == 0:
        return None, "no history yet", ("no urgent IOPS recorded yet: the module records "
                                        "them every tick; ask again after a day or more")
    per_osd = inputs.urgent_osd_iops.value * (1.0 - inputs.headroom)
    exact = peak * inputs.op_cost / per_osd
    needed = max(_ceil(exact), inputs.size)
    basis = (f"urgent peak {peak:.0f} IOPS over {inputs.history_hours} h of history "
             f"{_cost_words(inputs)} / (1 - {inputs.headroom:g} headroom) / "
             f"{inputs.urgent_osd_iops.value:g} IOPS per urgent OSD "
             f"({inputs.urgent_osd_iops.basis}) = {exact:.2f} -> {_ceil(exact)}")
    if needed > _ceil(exact):
        basis += f", raised to size {inputs.size} (one OSD per replica)"
    if inputs.history_hours < 24:
        notes.append(f"only {inputs.history_hours} h of urgent history: a whole day's peak "
                     "may not be in it yet")
    if inputs.urgent_osds >= needed:
        return needed, "enough", basis
    return needed, f"too few: add {needed - inputs.urgent_osds}", basis


def _client_capacity(inputs: AdviseInputs, osds: int, per_osd: Measured,
                     what: str) -> tuple[float, str]:
    """osds x per-OSD IOPS / op cost: the client IOPS the class can carry."""
    capacity = osds * per_osd.value / inputs.op_cost
    return capacity, (f"{osds} {what} OSDs x {per_osd.value:g} IOPS ({per_osd.basis}) / "
                      f"{inputs.op_cost:g} OSD ops per client op")


def _shared_overfill(inputs: AdviseInputs) -> tuple[bool | None, str]:
    """Overfills if either known check fails; None if neither can be made.

    Capacity: normal_bytes x urgent_share > nearfull_ratio x urgent total - used
    (summed over the urgent OSDs: the gate `urgent_capacity` checks the
    fullest one before each switch; the nearfull margin covers imbalance).
    IOPS: quiet rate x op cost + normal peak x (1 - read_fraction) x size x
    urgent_share > urgent OSDs x per-OSD IOPS x (1 - headroom). Shared mode runs
    in quiet hours, hence the quiet urgent rate; the normal peak is the worst
    case; normal reads cost the urgent OSDs nothing, since the primary never
    moves to them (normal inclusion).
    """
    share = inputs.urgent_share
    if share is None:
        return None, "not checked: the urgent share of normal replicas is unknown"
    checks: list[bool] = []
    parts: list[str] = []
    free, total = inputs.urgent_free_bytes, inputs.urgent_total_bytes
    if inputs.normal_bytes is not None and free is not None and total is not None:
        added = inputs.normal_bytes * share
        room = room_under(inputs.nearfull_ratio, total, total - free)
        checks.append(added > room)
        parts.append(f"capacity: normal replicas {_bytes(inputs.normal_bytes)} x urgent share "
                     f"{share:.0%} = {_bytes(added)} {'>' if added > room else '<='} "
                     f"{inputs.nearfull_ratio:g} x {_bytes(total)} urgent - "
                     f"{_bytes(total - free)} used = {_bytes(room)}")
    else:
        parts.append("capacity: not checked (normal bytes or urgent space unknown)")
    quiet, normal_peak = inputs.quiet_rate_iops, inputs.normal_peak_iops
    if quiet is not None and normal_peak is not None:
        urgent_load = quiet * inputs.op_cost
        normal_load = normal_peak * (1.0 - inputs.read_fraction) * inputs.size * share
        usable = inputs.urgent_osds * inputs.urgent_osd_iops.value * (1.0 - inputs.headroom)
        over = urgent_load + normal_load > usable
        checks.append(over)
        writes = ("" if inputs.read_fraction == 0
                  else f" x {1.0 - inputs.read_fraction:g} writes")
        parts.append(f"IOPS: urgent quiet {quiet:.0f} x {inputs.op_cost:g} + normal peak "
                     f"{normal_peak:.0f}{writes} x size {inputs.size} x {share:.0%} = "
                     f"{urgent_load + normal_load:.0f} OSD IOPS {'>' if over else '<='} "
                     f"{inputs.urgent_osds} x {inputs.urgent_osd_iops.value:g} x "
                     f"(1 - {inputs.headroom:g}) = {usable:.0f}")
    else:
        parts.append("IOPS: not checked (quiet urgent rate or normal peak unknown)")
    return (any(checks) if checks else None), "; ".join(parts)


def _thresholds(inputs: AdviseInputs, client_capacity: float,
                notes: list[str]) -> tuple[float | None, str, float | None, str]:
    """High: 5% of the urgent client capacity. Low: half of high, at least 2x
    the quiet-hours rate; if 2x quiet reaches high, high becomes 4x quiet."""
    if client_capacity <= 0:
        why = "no urgent OSDs: no capacity to size the thresholds on"
        return None, why, None, why
    high = max(1.0, float(round(THRESHOLD_SHARE * client_capacity)))
    high_basis = (f"{THRESHOLD_SHARE:.0%} of the urgent client capacity {client_capacity:.0f} "
                  f"IOPS of the {inputs.urgent_osds} urgent OSDs now")
    quiet = inputs.quiet_rate_iops
    if quiet is None:
        return high, high_basis, high * LOW_FRACTION, (
            "half of high; no quiet-hours rate yet, so not checked against it")
    floor = QUIET_LOW_FACTOR * quiet
    if floor >= high:
        raised = float(math.ceil(QUIET_HIGH_FACTOR * quiet))
        notes.append(f"the quiet-hours urgent rate {quiet:.0f} IOPS is at least half of {high:g} "
                     f"(5% of capacity): a band there cannot sit above the quiet rate and the "
                     f"module would rarely share; high raised to 4x quiet = {raised:g}")
        if raised > LATE_SHARE * client_capacity:
            notes.append(f"4x quiet is {raised / client_capacity:.0%} of the urgent client "
                         "capacity, past the 20% that isolates too late on a ramp "
                         "(docs/policy-simulation.md): consider 'ceph sla mode isolated'")
        return raised, (f"4x the quiet-hours rate {quiet:.0f} IOPS (2x quiet {floor:g} >= "
                        f"{high:g}, 5% of capacity)"), float(math.ceil(floor)), (
            f"2x the quiet-hours rate {quiet:.0f} IOPS (= half of high)")
    half = high * LOW_FRACTION
    if half < floor:
        return high, high_basis, float(math.ceil(floor)), (
            f"half of high would be {half:g}, raised to 2x the quiet-hours rate {quiet:.0f} IOPS")
    return high, high_basis, half, f"half of high (>= 2x the quiet-hours rate {quiet:.0f} IOPS)"


def _dwell(inputs: AdviseInputs, notes: list[str]) -> tuple[float, str]:
    """7200 s, and at least one switch's duration."""
    basis = (f"{DWELL_SECS:.0f} s: the dwell bounds switches, bytes moved and exposed night "
             "bursts (docs/policy-simulation.md)")
    switch = inputs.last_switch_secs
    if switch is None:
        return DWELL_SECS, basis + "; no switch duration measured yet: keep it above one switch"
    if switch > SLOW_SWITCH_SECS:
        notes.append(f"a switch took {switch:.0f} s: past about an hour no threshold or dwell "
                     "beats fixed isolation (docs/policy-simulation.md); consider "
                     "'ceph sla mode isolated'")
    if switch > DWELL_SECS:
        return switch, f"the last switch's {switch:.0f} s (longer than {DWELL_SECS:.0f} s)"
    return DWELL_SECS, basis + f"; >= the last switch's {switch:.0f} s"


def _data_metadata(inputs: AdviseInputs) -> tuple[DataMetadata | None, str]:
    """Performance per cost = speedup over HDD only / cost per GB of data, with
    HDD at 1 and SSD at r per GB, block.db at db_fraction of block:
    hdd 1, ssd r, hdd+ssd db 1 + f r, ssd+ssd db r (1 + f). Replication costs
    every layout alike, so it cancels out."""
    r, f = inputs.ssd_hdd_cost_ratio, inputs.db_fraction
    missing = [name for name, v in (("ssd_hdd_cost_ratio", r),
                                    ("hdd_ssd_db_speedup", inputs.hdd_ssd_db_speedup),
                                    ("ssd_speedup", inputs.ssd_speedup)) if v is None]
    if r is None or inputs.hdd_ssd_db_speedup is None or inputs.ssd_speedup is None:
        return None, ("no verdict: " + ", ".join(missing) + " not given; measure the "
                      "throughput of each layout on your workload (e.g. rados bench on a "
                      "pool of each) and give the SSD:HDD price per GB")
    ssd_db = inputs.ssd_ssd_db_speedup
    rows = [("hdd", Measured(1.0, "the reference"), 1.0, "1"),
            ("ssd", inputs.ssd_speedup, r, f"{r:g}"),
            ("hdd+ssd db", inputs.hdd_ssd_db_speedup, 1.0 + f * r, f"1 + {f:g} x {r:g}"),
            ("ssd+ssd db", ssd_db, r * (1.0 + f), f"{r:g} x (1 + {f:g})")]
    layouts = tuple(
        Layout(name, None if m is None else m.value, cost,
               None if m is None else m.value / cost,
               ("speedup not measured: left out" if m is None
                else f"{m.value:g}x ({m.basis}) / cost {words} per GB"))
        for name, m, cost, words in rows)
    best = max((la for la in layouts if la.perf_per_cost is not None),
               key=lambda la: la.perf_per_cost or 0.0)
    basis = (f"SSD:HDD price per GB {r:g}:1, block.db at {f:.0%} of block (BlueStore docs: "
             f"1-4% of block, at least 4% for RGW); best performance per cost: {best.name} "
             f"({best.perf_per_cost:.2f} per HDD-only unit)")
    return DataMetadata(r, f, layouts, best.name, basis), basis


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n:.0f} B"
        n /= 1024
    return f"{n:.1f} PiB"  # not reached


def _whole(name: str, value: object, low: int) -> None:
    whole(name, value, low, AdviseError)


def _number(name: str, value: object, low: float | None = None, high: float | None = None,
            low_open: bool = False, high_open: bool = False) -> None:
    number_in(name, value, AdviseError, low, high, low_open, high_open)
