"""The module's options as one typed value, read once per change.

`SETTINGS_SPECS` is the one home of every option: name, type, bounds and
help; its default is the field default of `Settings`, and the placement
defaults (device classes, failure domain) come from crush_rules so that
`sla-crush` and the module cannot disagree. The shell builds MODULE_OPTIONS
from the specs and reads a `Settings` in `config_notify` (as pg_autoscaler
and progress do), so a tick never reads options one by one nor casts them.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable

from ..crush_rules.rules import DEFAULT_SCOPE, DEFAULT_SIZE
from .decision import Thresholds
from .latency import Slo
from .maps import RegionSpec

__all__ = ["DEFAULT_SCOPE", "DEFAULT_SIZE", "SETTINGS_SPECS", "Settings"]
STRATEGY_CHOICES = ("auto", "copy", "move")
GAIN_PRIORS = ("devices", "model")


@dataclass(frozen=True)
class Settings:
    threshold_iops: float = 100.0
    threshold_low_iops: float = 0.0  # 0: half of threshold_iops (Thresholds.parse)
    min_dwell_secs: float = 7200.0
    interval_secs: float = 1.0
    # 0: every OSD report already averages the ops over mgr_stats_period (the
    # rate window), so a sustain below that window filters no spike and only
    # adds its length to the reaction
    sustain_secs: float = 0.0
    rate_window_secs: float = 5.0
    max_misplaced_ratio: float = -1.0
    slo_latency_ms: float = 0.0
    slo_percentile: float = 75.0
    slo_low_fraction: float = 0.5
    slo_window_secs: float = 60.0
    max_switches_per_day: int = 48
    # a switch to shared changes pools a step at a time: at most this many of
    # their PGs re-peer at once (a whole pool when it alone has more)
    max_step_pgs: int = 512
    step_wait_secs: float = 5.0
    active: bool = True
    dry_run: bool = False
    normal_class: str = DEFAULT_SCOPE.normal_class
    urgent_class: str = DEFAULT_SCOPE.urgent_class
    failure_domain: str = DEFAULT_SCOPE.failure_domain
    metrics_addr: str = "::"  # Ceph's prometheus module default
    metrics_port: int = 9284
    # librados ignores a mon command's timeout and the mgr sets none: the
    # module keeps these deadlines itself (shell/mon_deadline.py)
    mon_command_timeout_secs: float = 30.0
    mon_map_timeout_secs: float = 60.0
    max_isolation_secs: float = 60.0
    default_strategy: str = "auto"
    # a normal pool is shared only when it is expected to gain at least this
    # (its measured gain once known, the strategy's model until then)
    min_gain: float = 1.05
    gain_retry_secs: float = 7 * 86400.0
    gain_window_secs: float = 30.0
    gain_prior: str = "devices"
    max_urgent_drive_writes: float = 0.3
    # shared mode may leave a PG fewer than min_size members on the normal
    # class: more on the urgent OSDs, but such PGs stop with the urgent class
    share_past_min_size: bool = False

    @classmethod
    def read(cls, get: Callable[[str], Any]) -> Settings:
        """Every option through `get` (get_module_option), cast to its
        field's type; an unset option (None) takes the default."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = get(f.name)
            if raw is None:
                continue
            values[f.name] = _CASTS[str(f.type)](raw)
        return cls(**values)

    def thresholds(self) -> Thresholds:
        """Raises ThresholdError when the pair set by `ceph config set` is invalid."""
        low = self.threshold_low_iops
        return Thresholds.parse(self.threshold_iops, low if low > 0 else None)

    def slo(self) -> Slo:
        return Slo(self.slo_latency_ms, self.slo_percentile, self.slo_low_fraction)

    def region_spec(self) -> RegionSpec:
        return RegionSpec(self.failure_domain, self.normal_class, self.urgent_class,
                          self.share_past_min_size)


def _bool(raw: Any) -> bool:
    if isinstance(raw, str):
        return raw.strip().lower() in ("true", "1", "yes", "on")
    return bool(raw)


_CASTS: dict[str, Callable[[Any], Any]] = {"float": float, "int": int, "bool": _bool, "str": str}


@dataclass(frozen=True)
class OptionSpec:
    name: str
    type: str  # a Ceph Option type: float, secs, int, bool, str
    desc: str
    min: float | None = None
    max: float | None = None
    # the values a str option takes: the mon refuses any other at `config set`
    enum_allowed: tuple[str, ...] | None = None

    def fields(self) -> dict[str, Any]:
        """Keyword arguments of mgr_module.Option (compat.option drops the
        ones a release does not know)."""
        default = getattr(Settings(), self.name)
        if self.type == "secs":
            # Ceph parses a secs default as a time span: "60.0" is not one, and
            # `ceph config help` / `config get` would show the option as 0
            default = int(default)
        out: dict[str, Any] = {"type": self.type, "default": default,
                               "runtime": True, "desc": self.desc}
        if self.min is not None:
            out["min"] = self.min
        if self.max is not None:
            out["max"] = self.max
        if self.enum_allowed is not None:
            out["enum_allowed"] = list(self.enum_allowed)
        return out


SETTINGS_SPECS = (
    OptionSpec("threshold_iops", "float",
               "urgent client IOPS at or above which normal pools are isolated", min=0.0),
    OptionSpec("threshold_low_iops", "float",
               "urgent IOPS below which normal pools may share all OSDs "
               "(0: half of threshold_iops)", min=0.0),
    OptionSpec("min_dwell_secs", "secs",
               "how long urgent activity must stay below the low threshold before normal "
               "pools go back to shared", min=0),
    OptionSpec("interval_secs", "secs",
               "how often the module measures and decides (a quiet tick reads counters "
               "only: map work happens once per OSD map epoch)", min=1),
    OptionSpec("sustain_secs", "secs",
               "urgent IOPS (or latency above the objective) must stay above this long "
               "before normal pools are isolated (0: at once; each OSD report already "
               "averages over mgr_stats_period, so only values above rate_window_secs "
               "filter a burst)", min=0),
    OptionSpec("rate_window_secs", "secs", "window of the per-pool op rate", min=1),
    OptionSpec("max_misplaced_ratio", "float",
               "no switch to shared, no upmap placement while more objects are misplaced "
               "(-1: the balancer's target_max_misplaced_ratio)", min=-1.0, max=1.0),
    OptionSpec("slo_latency_ms", "float",
               "latency objective of the urgent pools in ms (0: off): above it normal pools "
               "are isolated whatever the urgent IOPS", min=0.0),
    OptionSpec("slo_percentile", "float",
               "percentile of the per-period mean latencies that the objective applies to "
               "(EAFC: 75)", min=1.0, max=100.0),
    OptionSpec("slo_low_fraction", "float",
               "back to shared only below this fraction of the objective (the band's lower "
               "edge)", min=0.0, max=1.0),
    OptionSpec("slo_window_secs", "secs",
               "window of the per-period latencies the percentile is taken over", min=5),
    OptionSpec("max_switches_per_day", "int",
               "no switch to shared after this many switches in 24 hours (isolation is never "
               "capped; 0: no cap)", min=0),
    OptionSpec("max_step_pgs", "int",
               "a switch to shared changes normal pools in steps of at most this many PGs "
               "(pools one after another; a larger pool is a step of its own; 0: all at "
               "once); isolation is never paced", min=0),
    OptionSpec("step_wait_secs", "secs",
               "at least this long between two steps of a switch to shared (the OSDs report "
               "their PGs' states every mgr_stats_period); a step also waits for the PGs of "
               "the last one to be active", min=0),
    OptionSpec("active", "bool",
               "switch modes and place pools ('ceph sla on|off'); off: measure and report only"),
    OptionSpec("dry_run", "bool", "decide and report, but change no pool"),
    OptionSpec("normal_class", "str", "device class of the normal region"),
    OptionSpec("urgent_class", "str", "device class of the urgent region"),
    OptionSpec("failure_domain", "str", "CRUSH type that replicas never share"),
    OptionSpec("metrics_addr", "str", "address of the Prometheus endpoint (Ceph's prometheus "
               "module default)"),
    OptionSpec("metrics_port", "int", "port of the Prometheus endpoint (0: no endpoint)",
               min=0, max=65535),
    OptionSpec("mon_command_timeout_secs", "secs",
               "a mon command (or state write) the monitors do not answer within this long "
               "fails, and the module then sends nothing until a probe answers (no quorum)",
               min=1),
    OptionSpec("mon_map_timeout_secs", "secs",
               "the same for the commands that carry a whole map (osd getmap, osd "
               "setcrushmap)", min=1),
    OptionSpec("max_isolation_secs", "secs",
               "a normal pool is never shared when isolating it again would take longer than "
               "this (the switch-cost model's estimate: 'ceph sla plan')", min=1),
    OptionSpec("default_strategy", "str",
               "strategy of 'ceph sla pool set POOL normal' without --strategy: copy (size "
               "toggle), move (pg_upmap_items), or auto (the module picks, at each switch to "
               "shared, the strategy with the best expected gain that fits; 'ceph sla plan')",
               enum_allowed=STRATEGY_CHOICES),
    OptionSpec("min_gain", "float",
               "a normal pool is shared only when it is expected to serve its clients at least "
               "this many times faster shared than isolated: its gain measured by the module "
               "once known, the strategy's model until then ('ceph sla plan'); a pinned "
               "'ceph sla mode shared' shares whatever the gain; 0: every pool, whatever its gain "
               "or the time placing it takes", min=0),
    OptionSpec("gain_retry_secs", "secs",
               "a measured gain counts this long after its last shared period (a pool kept "
               "isolated for a low gain is tried again on the model after it), and only while "
               "its 95% interval is clear of min_gain",
               min=60),
    OptionSpec("gain_window_secs", "secs",
               "the measured gain's window: a normal pool's ops and latency are summed over "
               "this long, and each placement needs two windows of a kind before it counts",
               min=5, max=600),
    OptionSpec("gain_prior", "str",
               "what a pool's expected gain rests on until it is measured: devices (the work "
               "model with each region's read and write service time and the normal region's "
               "load, from the OSDs' perf counters, so urgent devices slower than the normal "
               "ones keep pools isolated before any switch) or model (the work model alone)",
               enum_allowed=GAIN_PRIORS),
    OptionSpec("max_urgent_drive_writes", "float",
               "bytes the switches to shared may write onto the urgent OSDs per day, in drive "
               "writes of the urgent region's raw capacity (0.3: 30% of its raw bytes a day); a "
               "normal pool whose sharing would pass it stays isolated until the last 24 hours' "
               "switches leave room; a pinned 'ceph sla mode shared' shares anyway; 0: no limit",
               min=0),
    OptionSpec("share_past_min_size", "bool",
               "shared mode may put so many members of a normal PG (move: replicas, ec: shards) "
               "on urgent OSDs that fewer than the pool's min_size stay on the normal class: "
               "more on the urgent OSDs, but those PGs stop serving I/O while the urgent OSDs "
               "are down ('ceph sla status' counts them); off: every normal PG stays active "
               "with the whole urgent class stopped"),
)
