"""The CRUSH part: a synthetic map, the SLA rules from crush_rules, PG mappings.

The map is crushtool text from crush_rules.synthetic; crush_rules.generate
adds the SLA rules and flat weight sets (shared for the normal pool id,
hybrid for the urgent pool id) and verifies them. sla_shared maps like the
isolated rule; shared mode's urgent replicas are the module's pg_upmap_items,
planned here by the module's own planner (mgr_sla.core.upmap.planner) on those mappings.
The PG mappings come from ``osdmaptool --test-map-pgs-dump-all`` on a synthetic osdmap (crush_rules'
own way: pool 1 of ``osdmaptool --createsimple``, its rule id given the steps
under test and the pool's weight sets).  The normal pool is PGs 0..N-1 of
that pool and the urgent pool PGs N..N+M-1: distinct placement seeds, as two
pools would have.  Results are cached on disk, keyed by the map text, PG
counts and the Ceph tools' version.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from crush_rules import rules as R
from crush_rules import synthetic
from crush_rules.crushmap import crushmap_from_dump
from crush_rules.crushtext import parse_blocks, with_exact_weights
from crush_rules.generate import GenerateOptions, generate, read_map, synthetic_osdmap
from crush_rules.sampling import Pool, map_rule
from crush_rules.tools import Tools
from crush_rules.topology import analyse
from mgr_sla.core.upmap.planner import plan_pool
from mgr_sla.core.upmap.regions import OsdPlace, Regions

NORMAL_POOL_ID = 1
URGENT_POOL_ID = 2
CACHE_VERSION = 2


@dataclass(frozen=True)
class MapSpec:
    hosts: int = 100
    hdd_per_host: int = 10
    ssd_per_host: int = 2
    hdd_weight: float = 1.0
    ssd_weight: float = 1.0
    normal_pgs: int = 32768
    urgent_pgs: int = 8192
    size: int = 3

    @property
    def osds(self) -> int:
        return self.hosts * (self.hdd_per_host + self.ssd_per_host)

    def host_list(self) -> list[synthetic.Host]:
        host = [("hdd", self.hdd_weight)] * self.hdd_per_host
        host += [("ssd", self.ssd_weight)] * self.ssd_per_host
        return [list(host) for _ in range(self.hosts)]


def pow2_pgs(osds: int, per_osd: int, size: int) -> int:
    """The power of two nearest osds x per_osd / size (what the autoscaler aims at)."""
    want = max(1.0, osds * per_osd / size)
    low = 1 << (int(want).bit_length() - 1)
    return low * 2 if want / low > 1.5 else low


def spec_for(osds: int, hdd_per_host: int, ssd_per_host: int, pgs_per_osd: int = 100,
             hdd_weight: float = 1.0, ssd_weight: float = 1.0, size: int = 3) -> MapSpec:
    per_host = hdd_per_host + ssd_per_host
    hosts = max(size, -(-osds // per_host))
    return MapSpec(hosts, hdd_per_host, ssd_per_host, hdd_weight, ssd_weight,
                   pow2_pgs(hosts * hdd_per_host, pgs_per_osd, size),
                   pow2_pgs(hosts * ssd_per_host, pgs_per_osd, size), size)


@dataclass(frozen=True)
class ClusterMappings:
    spec: MapSpec
    device_class: tuple[str, ...]  # per OSD id
    normal_isolated: np.ndarray  # (normal_pgs, size) under sla_isolated_normal
    normal_shared: np.ndarray  # under sla_shared with the pool's weight sets
    urgent_isolated: np.ndarray  # (urgent_pgs, size) under sla_isolated_urgent
    normal_default: np.ndarray  # both pools under the stock replicated_rule
    urgent_default: np.ndarray
    info: dict[str, Any]  # rule ids, verification summary, timings


def _tools_version(tools: Tools) -> str:
    try:
        out = subprocess.run([tools.osdmaptool, "--version"], capture_output=True, text=True,
                             timeout=30, check=False)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, IndexError):
        return "unknown"


def _array(mapped: dict[int, tuple[int, ...]], seeds: range, size: int, what: str) -> np.ndarray:
    rows = [mapped[s] for s in seeds]
    short = sum(1 for r in rows if len(r) != size)
    if short:
        raise RuntimeError(f"{what}: {short} PGs have fewer than {size} OSDs")
    return np.array(rows, dtype=np.int32)


def build(spec: MapSpec, tools: Tools, cache_dir: Path | None) -> ClusterMappings:
    text = synthetic.crush_text(spec.host_list())
    key_data = {"v": CACHE_VERSION, "spec": asdict(spec), "text": text,
                "tools": _tools_version(tools)}
    key = hashlib.sha256(json.dumps(key_data, sort_keys=True).encode()).hexdigest()[:20]
    if cache_dir is not None:
        cached = _load(cache_dir / f"mappings-{key}.npz", spec)
        if cached is not None:
            return cached
    result = _mappings(spec, tools, text, str(key_data["tools"]))
    if cache_dir is not None:
        _save(cache_dir / f"mappings-{key}.npz", result)
    return result


def _mappings(spec: MapSpec, tools: Tools, text: str, tools_version: str) -> ClusterMappings:
    """Generate the rules on the map of `text` and map both pools with osdmaptool."""
    started = time.monotonic()
    binary = read_map(tools, text.encode())
    options = GenerateOptions(size=spec.size, pool_ids=(NORMAL_POOL_ID,),
                              urgent_pool_ids=(URGENT_POOL_ID,), pg_num=1024)
    generated = generate(tools, binary, options)
    if not generated.report.ok:
        raise RuntimeError("generated rules do not verify: " + "; ".join(generated.report.failures))
    generated_at = time.monotonic()
    crush = crushmap_from_dump(tools.dump(generated.binary))
    blocks = with_exact_weights(parse_blocks(tools.decompile(generated.binary)), crush)
    n, m = spec.normal_pgs, spec.urgent_pgs
    osdmap = synthetic_osdmap(tools, crush, spec.size, n + m)
    placement = options.scope()

    def mapped(rule: str, pgs: int, args: Any) -> dict[int, tuple[int, ...]]:
        return map_rule(tools, blocks, osdmap, Pool(1, 0, pgs), R.rule_steps(rule, placement),
                        args, synthetic=True)

    shared_args = crush.choose_args.get(NORMAL_POOL_ID)
    iso_n = mapped(R.ISOLATED_NORMAL, n, shared_args)
    shared_n = with_upmaps(mapped(R.SHARED, n, shared_args), crush, options)
    iso_u = mapped(R.ISOLATED_URGENT, n + m, crush.choose_args.get(URGENT_POOL_ID))
    # stock replicated_rule: take the root, chooseleaf host; no weight sets
    default = mapped(R.SHARED, n + m, None)
    size = spec.size
    classes = tuple(crush.devices.get(o) or "?" for o in range(spec.osds))
    pair = generated.report.pair
    info = {
        "rule_ids": dict(generated.rule_ids),
        "verify_ok": generated.report.ok,
        "verify_warnings": list(generated.report.warnings),
        "shared_urgent_share": round(sum(
            classes[o] == "ssd" for up in shared_n.values() for o in up) / (n * size), 4),
        "target_urgent_share": generated.report.target_urgent_share,
        "verify_movement_efficiency": pair.movement_efficiency if pair else None,
        "generate_secs": round(generated_at - started, 2),
        "mapping_secs": round(time.monotonic() - generated_at, 2),
        "tools": tools_version,
    }
    return ClusterMappings(
        spec, classes,
        _array(iso_n, range(n), size, R.ISOLATED_NORMAL),
        _array(shared_n, range(n), size, R.SHARED),
        _array(iso_u, range(n, n + m), size, R.ISOLATED_URGENT),
        _array(default, range(n), size, "replicated_rule"),
        _array(default, range(n, n + m), size, "replicated_rule"),
        info,
    )


def with_upmaps(mapped: dict[int, tuple[int, ...]], crush: Any, options: GenerateOptions
                ) -> dict[int, tuple[int, ...]]:
    """The shared-mode up sets: the module's planner applied to CRUSH's mapping."""
    topo = analyse(crush, options.scope(), options.size)
    osds = {}
    for d in topo.domains:
        for osd, weight in crush.device_weights_under(d.id).items():
            osds[osd] = OsdPlace(crush.devices.get(osd) or "", d.id, weight / 0x10000)
    regions = Regions(options.normal_class, options.urgent_class, osds)
    up = {f"{NORMAL_POOL_ID}.{seed:x}": list(osds_) for seed, osds_ in mapped.items()}
    plan = plan_pool(NORMAL_POOL_ID, up, {}, regions, options.size, "shared")
    out = {}
    for seed, row in mapped.items():
        pairs = dict(plan.wanted.get(f"{NORMAL_POOL_ID}.{seed:x}", ()))
        out[seed] = tuple(pairs.get(o, o) for o in row)
    return out


_ARRAYS = ("normal_isolated", "normal_shared", "urgent_isolated", "normal_default",
           "urgent_default")


def _save(path: Path, m: ClusterMappings) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"device_class": list(m.device_class), "info": m.info}
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, meta=np.array(json.dumps(meta)),
                        **{name: getattr(m, name) for name in _ARRAYS})
    os.replace(tmp, path)


def _load(path: Path, spec: MapSpec) -> ClusterMappings | None:
    if not path.exists():
        return None
    with np.load(path) as data:
        meta = json.loads(str(data["meta"]))
        arrays = {name: np.array(data[name]) for name in _ARRAYS}
    info = dict(meta["info"], cached=True)
    return ClusterMappings(spec, tuple(meta["device_class"]), info=info, **arrays)


