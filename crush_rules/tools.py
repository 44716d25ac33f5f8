"""The only module that runs programs: crushtool, osdmaptool and the ceph CLI.

Everything else in the package works on text, JSON and mappings in memory.
Each call uses a private temporary directory, so concurrent callers (CLI,
mgr module threads) never share files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .errors import CrushError

# CRUSH_ITEM_NONE: a hole in an indep mapping.
_ITEM_NONE = 2147483647
_RAW_LINE = re.compile(r"^(\d+)\.([0-9a-f]+)\s+raw \(\[([-\d,]*)\], p-?\d+\)\s+up \(\[([-\d,]*)\]")
_TIMEOUT = 600


def _osds(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v and int(v) != _ITEM_NONE]


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


@dataclass(frozen=True)
class PgMapping:
    """One PG's OSDs: ``raw`` is what CRUSH drew, ``up`` after upmaps and down OSDs."""

    raw: tuple[int, ...]
    up: tuple[int, ...]


def _run(argv: Sequence[str], what: str, cwd: str | None = None) -> str:
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, errors="replace", timeout=_TIMEOUT,
            cwd=cwd, check=False,
        )
    except FileNotFoundError as exc:
        raise CrushError(f"{argv[0]} not found: install ceph-common (or ceph-base)") from exc
    except subprocess.TimeoutExpired as exc:
        raise CrushError(f"{what} timed out after {_TIMEOUT} s") from exc
    if done.returncode != 0:
        detail = _first_line(done.stderr) or _first_line(done.stdout) or f"exit {done.returncode}"
        raise CrushError(f"{what} failed: {detail}")
    return done.stdout


@dataclass(frozen=True)
class Tools:
    """crushtool and osdmaptool (paths overridable by SLA_CRUSHTOOL / SLA_OSDMAPTOOL)."""

    crushtool: str = "crushtool"
    osdmaptool: str = "osdmaptool"

    def __post_init__(self) -> None:
        if self.crushtool == "crushtool" and os.environ.get("SLA_CRUSHTOOL"):
            object.__setattr__(self, "crushtool", os.environ["SLA_CRUSHTOOL"])
        if self.osdmaptool == "osdmaptool" and os.environ.get("SLA_OSDMAPTOOL"):
            object.__setattr__(self, "osdmaptool", os.environ["SLA_OSDMAPTOOL"])

    def check_available(self) -> None:
        for tool in (self.crushtool, self.osdmaptool):
            if shutil.which(tool) is None:
                raise CrushError(f"{tool} not found: install ceph-common (or ceph-base)")

    # -- crushtool ---------------------------------------------------------

    def compile(self, text: str) -> bytes:
        with tempfile.TemporaryDirectory(prefix="sla-crush-") as tmp:
            src, out = Path(tmp, "map.txt"), Path(tmp, "map.bin")
            src.write_text(text)
            try:
                _run([self.crushtool, "-c", str(src), "-o", str(out)], "crushtool -c")
            except CrushError as exc:
                message = str(exc).replace(f"{src}:", "line ")
                raise CrushError(f"crush map does not compile: {message}") from exc
            return out.read_bytes()

    def decompile(self, binary: bytes) -> str:
        with tempfile.TemporaryDirectory(prefix="sla-crush-") as tmp:
            src = Path(tmp, "map.bin")
            src.write_bytes(binary)
            return _run([self.crushtool, "-d", str(src)], "crushtool -d")

    def dump(self, binary: bytes) -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="sla-crush-") as tmp:
            src = Path(tmp, "map.bin")
            src.write_bytes(binary)
            out = _run([self.crushtool, "-i", str(src), "--dump", "-f", "json"], "crushtool --dump")
        try:
            parsed: dict[str, Any] = json.loads(out)
        except json.JSONDecodeError as exc:
            raise CrushError("crushtool --dump printed no JSON") from exc
        return parsed

    def rule_mappings(self, binary: bytes, rule: int, num_rep: int, seeds: int,
                      pool: int) -> list[str]:
        """Each placement seed's OSDs under `rule` (crushtool --test, x hashed with
        the pool id as the pool's PGs are; the compat weight set drawn with)."""
        with tempfile.TemporaryDirectory(prefix="sla-crush-") as tmp:
            src = Path(tmp, "map.bin")
            src.write_bytes(binary)
            out = _run([self.crushtool, "-i", str(src), "--test", "--rule", str(rule),
                        "--num-rep", str(num_rep), "--min-x", "0", "--max-x", str(seeds - 1),
                        "--pool-id", str(pool), "--show-mappings"], "crushtool --test")
        # "CRUSH rule 9 x 0 [1,4,2147483647]": the rule id differs, the rest must not
        return [line.split(" x ", 1)[1] for line in out.splitlines() if " x " in line]

    # -- osdmaptool --------------------------------------------------------

    def simple_osdmap(self, max_osd: int, min_pgs: int, size: int) -> bytes:
        """An osdmap with pool 1 (rule 0, ``size`` replicas) of at least ``min_pgs`` PGs.

        createsimple makes pg_num = max_osd << pg_bits; PGs below a smaller
        pg_num hash exactly as in a pool of that pg_num, so callers keep the
        first ``pg_num`` of them.
        """
        bits = 0
        while (max_osd << bits) < min_pgs:
            bits += 1
        with tempfile.TemporaryDirectory(prefix="sla-crush-") as tmp:
            out = Path(tmp, "osdmap")
            _run(
                [self.osdmaptool, str(out), "--createsimple", str(max(1, max_osd)),
                 "--with-default-pool", "--pg-bits", str(bits), "--pgp-bits", str(bits),
                 f"--osd_pool_default_size={size}", "--clobber"],
                "osdmaptool --createsimple",
                cwd=tmp,
            )
            return out.read_bytes()

    def osdmap_dump(self, osdmap: bytes) -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="sla-crush-") as tmp:
            src = Path(tmp, "osdmap")
            src.write_bytes(osdmap)
            out = _run([self.osdmaptool, str(src), "--dump", "json"], "osdmaptool --dump", cwd=tmp)
        start = out.find("{")
        try:
            parsed: dict[str, Any] = json.loads(out[start:])
        except json.JSONDecodeError as exc:
            raise CrushError("osdmaptool --dump printed no JSON") from exc
        return parsed

    def export_crush(self, osdmap: bytes) -> bytes:
        with tempfile.TemporaryDirectory(prefix="sla-crush-") as tmp:
            src, out = Path(tmp, "osdmap"), Path(tmp, "crush.bin")
            src.write_bytes(osdmap)
            _run([self.osdmaptool, str(src), "--export-crush", str(out)],
                 "osdmaptool --export-crush", cwd=tmp)
            return out.read_bytes()

    def map_pgs(
        self,
        osdmap: bytes,
        crush: bytes | None,
        pool: int,
        *,
        mark_up_in: bool,
        pg_num: int | None = None,
    ) -> dict[int, PgMapping]:
        """PG seed -> mapping of the PGs of ``pool``, optionally under another crush map.

        pg_num maps only the first pg_num PGs (the pool's pgp_num must be at
        least that, or PGs past pgp_num repeat earlier ones).
        """
        with tempfile.TemporaryDirectory(prefix="sla-crush-") as tmp:
            src = Path(tmp, "osdmap")
            src.write_bytes(osdmap)
            argv = [self.osdmaptool, str(src)]
            if crush is not None:
                Path(tmp, "crush.bin").write_bytes(crush)
                argv += ["--import-crush", str(Path(tmp, "crush.bin"))]
            if mark_up_in:
                argv.append("--mark-up-in")
            argv += ["--test-map-pgs-dump-all", "--pool", str(pool)]
            if pg_num is not None:
                argv += ["--pg_num", str(pg_num)]
            out = _run(argv, "osdmaptool --test-map-pgs-dump-all", cwd=tmp)
        result: dict[int, PgMapping] = {}
        for line in out.splitlines():
            match = _RAW_LINE.match(line.strip())
            if match and int(match.group(1)) == pool:
                result[int(match.group(2), 16)] = PgMapping(
                    tuple(_osds(match.group(3))), tuple(_osds(match.group(4)))
                )
        if not result:
            raise CrushError(f"osdmaptool mapped no PGs of pool {pool}")
        return result


class Cluster(Protocol):
    """What install / verify_live ask of a cluster (CephCli, or the mgr's mon commands)."""

    def get_osdmap(self) -> bytes: ...

    def set_crushmap(self, binary: bytes, prior_version: int) -> None: ...


@dataclass(frozen=True)
class CephCli:
    """The ``ceph`` command line, for a live cluster."""

    conf: str | None = None
    name: str | None = None
    keyring: str | None = None
    ceph_bin: str = "ceph"
    timeout: int = field(default=60)

    def _argv(self, args: Sequence[str]) -> list[str]:
        argv = [self.ceph_bin]
        if self.conf:
            argv += ["--conf", self.conf]
        if self.name:
            argv += ["--name", self.name]
        if self.keyring:
            argv += ["--keyring", self.keyring]
        return argv + list(args)

    def run(self, *args: str) -> str:
        return _run(self._argv(args), "ceph " + " ".join(args[:3]))

    def json(self, *args: str) -> Any:
        out = self.run(*args, "-f", "json")
        try:
            return json.loads(out)
        except json.JSONDecodeError as exc:
            raise CrushError(f"ceph {' '.join(args)} printed no JSON") from exc

    def get_osdmap(self) -> bytes:
        """The current osdmap; it carries the crush map and its crush_version."""
        with tempfile.TemporaryDirectory(prefix="sla-crush-") as tmp:
            out = Path(tmp, "osdmap")
            self.run("osd", "getmap", "-o", str(out))
            return out.read_bytes()

    def set_crushmap(self, binary: bytes, prior_version: int) -> None:
        """Compare-and-swap: the monitor refuses (EPERM) if the crush version moved on."""
        with tempfile.TemporaryDirectory(prefix="sla-crush-") as tmp:
            src = Path(tmp, "crush.bin")
            src.write_bytes(binary)
            self.run("osd", "setcrushmap", "-i", str(src), str(prior_version))

    def pg_bytes(self, pool: str) -> dict[int, int]:
        """PG seed -> bytes stored in that PG (one replica)."""
        data = self.json("pg", "ls-by-pool", pool)
        stats = data.get("pg_stats", []) if isinstance(data, dict) else data
        result: dict[int, int] = {}
        for pg in stats:
            seed = int(str(pg["pgid"]).split(".", 1)[1], 16)
            result[seed] = int(pg.get("stat_sum", {}).get("num_bytes", 0))
        return result
