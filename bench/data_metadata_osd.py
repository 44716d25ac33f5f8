"""What data_metadata reads from the OSDs and from fio: an admin socket's
command and reply, BlueFS's REAL bytes per file kind from `bluefs stats`, the
BlueFS/BlueStore space counters of `perf dump`, the DB and SST fractions
between two of them, and the write figures of a one-job fio report.
"""
from __future__ import annotations

import json
import re
import socket
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MB = 1_000_000
_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_SIZE = re.compile(r"(\d+(?:\.\d+)?) (B|KiB|MiB|GiB|TiB)\b")


def bluefs_real(text: str) -> dict[str, int]:
    """Bytes in use per BlueFS file kind (LOG: BlueFS's journal, WAL: RocksDB's logs,
    DB: its SST files, SLOW) from the REAL column of `bluefs stats`'s usage matrix.

    The other columns are space allocated per device, in 1 MiB units on a DB device.
    {} when there is no matrix (BlueFS on the one shared device)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("DEV/LEV")), None)
    if start is None or "REAL" not in lines[start].split():
        return {}
    col = lines[start].split().index("REAL") - 1  # sizes start after the row's label
    out: dict[str, int] = {}
    for line in lines[start + 1:]:
        fields = line.split()
        if not fields or fields[0] not in ("LOG", "WAL", "DB", "SLOW"):
            break  # TOTAL, then the MAXIMUMS table
        sizes = _SIZE.findall(line)
        if len(sizes) > col:
            out[fields[0]] = round(float(sizes[col][0]) * _UNITS[sizes[col][1]])
    return out


def osd_space(dumps: Mapping[int, Mapping[str, Any]],
              bluefs: Mapping[int, Mapping[str, int]] | None = None) -> dict[str, Any]:
    """Summed BlueFS/BlueStore space counters of `perf dump`s (by OSD id), and the
    SST bytes of bluefs_real()s (None unless every OSD has them)."""
    out: dict[str, Any] = {"db_used_bytes": 0, "slow_used_bytes": 0, "wal_used_bytes": 0,
                           "stored_bytes": 0, "allocated_bytes": 0}
    for dump in dumps.values():
        fs, bs = dump.get("bluefs", {}), dump.get("bluestore", {})
        out["db_used_bytes"] += int(fs.get("db_used_bytes", 0))
        out["slow_used_bytes"] += int(fs.get("slow_used_bytes", 0))
        out["wal_used_bytes"] += int(fs.get("wal_used_bytes", 0))
        out["stored_bytes"] += int(bs.get("bluestore_stored", 0))
        out["allocated_bytes"] += int(bs.get("bluestore_allocated", 0))
    real = [bluefs.get(o, {}) for o in dumps] if bluefs is not None else []
    out["sst_bytes"] = sum(r["DB"] for r in real) if real and all("DB" in r for r in real) \
        else None
    return out


def db_fraction(before: Mapping[str, Any], after: Mapping[str, Any]) -> float | None:
    """BlueFS DB bytes in use (db_used_bytes) per BlueStore stored byte added between
    two osd_space()s. Spillover (BlueFS data on the slow device) counts as DB.
    None if nothing was stored."""
    stored = after["stored_bytes"] - before["stored_bytes"]
    db = (after["db_used_bytes"] + after["slow_used_bytes"]
          - before["db_used_bytes"] - before["slow_used_bytes"])
    return round(db / stored, 4) if stored > 0 else None


def sst_fraction(before: Mapping[str, Any], after: Mapping[str, Any]) -> float | None:
    """RocksDB SST bytes per BlueStore stored byte added between two osd_space()s."""
    stored = after["stored_bytes"] - before["stored_bytes"]
    if stored <= 0 or before.get("sst_bytes") is None or after.get("sst_bytes") is None:
        return None
    return round((after["sst_bytes"] - before["sst_bytes"]) / stored, 5)


def fio_writes(report: Mapping[str, Any]) -> dict[str, float]:
    """Writes/s, MB/s and latency (submit to completion: p50, p99, mean in ms) of a
    one-job fio JSON report run with --lat_percentiles=1; the ramp time is excluded."""
    jobs = report["jobs"]
    if len(jobs) != 1:
        raise ValueError(f"expected one fio job, got {len(jobs)}")
    job, w = jobs[0], jobs[0]["write"]
    if not w["total_ios"]:
        raise RuntimeError(f"fio completed no writes (job {job.get('jobname')}, "
                           f"error {job.get('error')})")
    secs = max(job["job_runtime"] / 1000.0, 1e-3)
    pct = w["lat_ns"]["percentile"]
    return {"ops_per_sec": w["total_ios"] / secs, "mb_per_sec": w["io_bytes"] / secs / MB,
            "p50_ms": pct["50.000000"] / 1e6, "p99_ms": pct["99.000000"] / 1e6,
            "mean_ms": w["lat_ns"]["mean"] / 1e6, "ops": w["total_ios"], "secs": secs}


def asok_reply(data: bytes, text: bool = False) -> Any:
    """An admin socket's reply: a 4-byte big-endian length, then that much JSON
    (or, with text, whatever the command printed)."""
    if len(data) < 4:
        raise RuntimeError("no reply from the admin socket")
    (length,) = struct.unpack(">I", data[:4])
    body = data[4:4 + length]
    if len(body) < length:
        raise RuntimeError(f"admin socket reply cut short: {len(body)} of {length} bytes")
    return body.decode(errors="replace") if text else json.loads(body)


def asok_command(path: Path, prefix: str, timeout: float = 30, text: bool = False) -> Any:
    """A daemon's admin socket command (what `ceph daemon` does, without a CLI start);
    text: the reply as it is (commands such as `bluefs stats` print no JSON)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        s.sendall(json.dumps({"prefix": prefix, "format": "json"}).encode() + b"\0")
        data = b""
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            data += chunk
            if len(data) >= 4 and len(data) >= 4 + struct.unpack(">I", data[:4])[0]:
                break
    return asok_reply(data, text)
