"""Where a results file comes from: the "provenance" block every benchmark
writes at the top level of its JSON.

    {"commit": "<40-hex sha or 'unknown'>", "date": "<ISO 8601 UTC>",
     "command": "<the exact command line>",
     "machine": {"cores": int, "memory_gib": float, "os": "Debian 12 bookworm"},
     "ceph_release": "16.2.15 pacific" (or "none" for pure-CPU benchmarks),
     "placement_design": one of DESIGNS}

Files measured before provenance existed carry what is known, "unknown" for
the rest and a "note" saying so (check() accepts that, and only with a note).
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
UNKNOWN = "unknown"
NO_CEPH = "none"
# 'upmap': flat weight sets + the module's pg_upmap_items; 'positional': the
# older per-position weight sets (removed); 'copy': the extra copy that comes
# and goes with the pool's size; 'ec': an erasure-coded pool's rule swap and
# shard entries; 'n/a': no SLA placement in the measurement.
DESIGNS = ("upmap", "positional", "copy", "upmap+copy", "ec", "n/a")
# The design a normal pool's strategy ('ceph sla pool set POOL normal --strategy S')
# places it with in shared mode.
DESIGN_OF_STRATEGY = {"move": "upmap", "copy": "copy", "ec": "ec"}
# The design the benchmarks use unless told otherwise (their --strategy move).
CURRENT_DESIGN = DESIGN_OF_STRATEGY["move"]
KEYS = ("commit", "date", "command", "machine", "ceph_release", "placement_design")
MACHINE_KEYS = ("cores", "memory_gib", "os")
_VERSION = re.compile(r"ceph version (\S+) \([0-9a-f]+\) (\w+)")
_SHA = re.compile(r"[0-9a-f]{40}")


def git_commit(root: Path = ROOT) -> str:
    """HEAD of the checkout the benchmark runs from ('unknown' outside git)."""
    try:
        p = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                           text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return UNKNOWN
    sha = p.stdout.strip()
    return sha if p.returncode == 0 and _SHA.fullmatch(sha) else UNKNOWN


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def command(module: str, argv: Sequence[str], env: Mapping[str, str] = os.environ) -> str:
    """The command line that runs `module` (e.g. 'bench.tick_bench') with `argv`,
    and the release its clusters run when that is not the host's (SLA_RELEASE)."""
    release = env.get("SLA_RELEASE", "")
    prefix = [f"SLA_RELEASE={release}"] if release and release != "pacific" else []
    return shlex.join([*prefix, "python3", "-m", module, *argv])


def memory_gib(meminfo: str) -> float | str:
    """MemTotal of /proc/meminfo's text, in GiB."""
    m = re.search(r"^MemTotal:\s+(\d+) kB", meminfo, re.MULTILINE)
    return round(int(m.group(1)) / 2**20, 1) if m else UNKNOWN


def os_name(os_release: str) -> str:
    """'Debian 12 bookworm' from /etc/os-release's text."""
    fields: dict[str, str] = {}
    for line in os_release.splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            fields[key.strip()] = value.strip().strip('"')
    name = fields.get("NAME", "").split(" ")[0] or fields.get("ID", "").capitalize()
    parts = [p for p in (name, fields.get("VERSION_ID"), fields.get("VERSION_CODENAME")) if p]
    return " ".join(parts) if parts else fields.get("PRETTY_NAME", UNKNOWN)


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def machine() -> dict[str, Any]:
    return {"cores": os.cpu_count() or UNKNOWN, "memory_gib": memory_gib(_read("/proc/meminfo")),
            "os": os_name(_read("/etc/os-release")) if _read("/etc/os-release") else UNKNOWN}


def parse_ceph_version(text: str) -> str:
    """'16.2.15 pacific' from `ceph --version`'s line ('unknown' if it is not one)."""
    m = _VERSION.search(text)
    return f"{m.group(1)} {m.group(2)}" if m else UNKNOWN


def ceph_release(argv: Sequence[str] = ("ceph", "--version")) -> str:
    """The release of the Ceph tools `argv` runs (a cluster's: Cluster.tool("ceph",
    "--version"), which goes into its release root where it has one)."""
    try:
        p = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return UNKNOWN
    return parse_ceph_version(p.stdout + p.stderr)


def provenance(module: str, argv: Sequence[str], ceph: str, design: str,
               measured_by: str | None = None) -> dict[str, Any]:
    """The block for a results file written now by `python3 -m module argv...`;
    ceph: the release (ceph_release(), or NO_CEPH); design: one of DESIGNS;
    measured_by: the command that measured, when it is not that one (a script
    that records what a shell script timed)."""
    if design not in DESIGNS:
        raise ValueError(f"placement design {design!r} is not one of {DESIGNS}")
    return {"commit": git_commit(), "date": utc_now(),
            "command": measured_by or command(module, argv),
            "machine": machine(), "ceph_release": ceph, "placement_design": design}


def _iso_utc(value: str) -> bool:
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    offset = parsed.utcoffset()
    return offset is not None and offset.total_seconds() == 0


def _machine_values(mach: Mapping[str, Any]) -> list[str]:
    out = []
    for key in ("cores", "memory_gib"):
        value = mach.get(key, UNKNOWN)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if value != UNKNOWN and not (number and value > 0
                                     and (key != "cores" or isinstance(value, int))):
            out.append(f"machine.{key} {value!r} is not a positive number")
    value = mach.get("os", UNKNOWN)
    if not (isinstance(value, str) and value):
        out.append(f"machine.os {value!r} is not a name")
    return out


def check(block: Any) -> list[str]:
    """What a provenance block lacks or gets wrong ([] when it is complete)."""
    if not isinstance(block, Mapping):
        return ["no provenance block"]
    problems = [f"no {key}" for key in KEYS if key not in block]
    unknown = [k for k in KEYS if block.get(k) == UNKNOWN]
    commit, date = block.get("commit"), block.get("date")
    if commit is not None and commit != UNKNOWN and not (
            isinstance(commit, str) and _SHA.fullmatch(commit)):
        problems.append(f"commit {commit!r} is not a 40-hex sha")
    if date is not None and date != UNKNOWN and not (isinstance(date, str) and _iso_utc(date)):
        problems.append(f"date {date!r} is not ISO 8601 UTC")
    for key in ("command", "ceph_release"):
        if key in block and not (isinstance(block[key], str) and block[key]):
            problems.append(f"{key} {block[key]!r} is not a string")
    design = block.get("placement_design")
    if design is not None and design not in (*DESIGNS, UNKNOWN):
        problems.append(f"placement_design {design!r} is not one of {DESIGNS}")
    mach = block.get("machine")
    if "machine" in block:
        if not isinstance(mach, Mapping):
            problems.append("machine is not an object")
        else:
            problems += [f"no machine.{key}" for key in MACHINE_KEYS if key not in mach]
            unknown += [f"machine.{k}" for k in MACHINE_KEYS if mach.get(k) == UNKNOWN]
            problems += _machine_values(mach)
    if unknown and not block.get("note"):
        problems.append(f"{', '.join(unknown)} unknown without a note saying why")
    return problems
