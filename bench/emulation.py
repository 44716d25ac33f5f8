"""HDD and SSD speeds for BlueStore OSDs on one machine: the kernel's block throttle.

Every OSD of a mini cluster shares the same CPUs and disk, so device classes
differ only if we make them: each OSD process goes into its own cgroup (v1
`blkio`) whose `blkio.throttle.{read,write}_iops_device` caps the I/Os it may
issue per second to the disk that holds its BlueStore block file. The kernel
holds the excess bios in a queue: an hdd-class OSD then saturates at a known
device rate with the CPU mostly idle, and queueing delay grows with load the
way a real disk's does. Every replica write pays its own device, so a write's
latency is its slowest replica's (the paper's Fig. 4 point).

An OSD with a separate BlueStore DB (minicluster.sh --db-class) has a second
device, a loop device over tmpfs: `limit(..., devices={"7:3": 500})` caps it
apart from the block file's disk, in the same group (the kernel keeps one rule
per device). The loop device's own worker writes to tmpfs, not to a disk, so
nothing of the DB's I/O is charged twice or at the disk's rate.

Tried first and rejected (CEPH-FACTS.md): `osd_debug_inject_dispatch_delay`
sleeps in the messenger threads and stalls heartbeats; Pacific's mClock
`custom` limit holds client ops but spins the op shard thread (40-50 % CPU per
throttled OSD) and lets replica writes through unthrottled.
"""
from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

BLKIO = Path("/sys/fs/cgroup/blkio")
LIMIT_FILES = ("blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device")


class EmulationError(RuntimeError):
    pass


@dataclass(frozen=True)
class DeviceSpeeds:
    """Device I/Os per second per OSD, by device class."""

    hdd_iops: int = 150
    ssd_iops: int = 500

    def iops(self, device_class: str) -> int:
        table = {"hdd": self.hdd_iops, "ssd": self.ssd_iops}
        if device_class not in table:
            raise EmulationError(f"no emulated speed for device class '{device_class}'")
        return table[device_class]


def disk_of(path: Path, sysfs: Path = Path("/sys/dev/block")) -> str:
    """'major:minor' of the whole disk holding `path` (the throttle wants a disk)."""
    st = os.stat(path)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    sysdev = sysfs / dev
    if not sysdev.exists():
        raise EmulationError(
            f"{path} is not on a block device (st_dev {dev}: tmpfs or overlay?); "
            "put the benchmark's directory on a disk with TMPDIR=/var/tmp or similar")
    if (sysdev / "partition").exists():  # a partition: throttle its disk
        dev = (sysdev.resolve().parent / "dev").read_text().strip()
    return dev


def device_number(node: Path) -> str:
    """'major:minor' of a block device node (e.g. a DB's /dev/loopN)."""
    st = os.stat(node)
    if not stat.S_ISBLK(st.st_mode):
        raise EmulationError(f"{node} is not a block device")
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


class BlkioThrottle:
    """One cgroup per OSD under blkio/ceph-sla-bench/<tag>, removed by `remove`."""

    def __init__(self, tag: str, data_dir: Path, root: Path = BLKIO) -> None:
        if not (root / LIMIT_FILES[1]).exists():
            raise EmulationError(
                f"no cgroup v1 blkio throttle at {root} (cgroup v2 only, or no "
                "blkio controller): device emulation needs it")
        self.device = disk_of(data_dir)
        self.base = root / "ceph-sla-bench" / tag

    def limit(self, name: str, pid: int, iops: int,
              devices: Mapping[str, int] | None = None) -> None:
        """Put process `pid` (all its threads) in cgroup `name`, capped at `iops` (0 = none)
        on the disk of the data dir and at devices[dev] on each other device
        ('major:minor', e.g. the OSD's DB loop device)."""
        group = self.base / name
        group.mkdir(parents=True, exist_ok=True)
        caps = {self.device: iops, **(devices or {})}
        for f in LIMIT_FILES:
            for dev, cap in caps.items():
                # one rule per write(2); appending leaves the other devices' rules
                with open(group / f, "a") as fh:
                    fh.write(f"{dev} {cap}\n")
        (group / "cgroup.procs").write_text(f"{pid}\n")

    def serviced(self, name: str, device: str | None = None) -> int:
        """I/Os the group has issued so far (reads + writes) to `device` (default: the disk)."""
        device = device or self.device
        text = (self.base / name / "blkio.throttle.io_serviced").read_text()
        return sum(int(f[2]) for f in (line.split() for line in text.splitlines())
                   if len(f) == 3 and f[0] == device and f[1] in ("Read", "Write"))

    def remove(self, timeout: float = 15.0) -> list[str]:
        """Remove the groups; returns the ones still holding a process at the deadline.

        A group stays busy for a moment after its last process has exited
        (the kernel frees it asynchronously), so EBUSY is retried."""
        deadline = time.monotonic() + timeout
        busy: list[str] = []
        while self.base.exists():
            busy = []
            for group in sorted(g for g in self.base.iterdir() if g.is_dir()):
                try:
                    group.rmdir()
                except OSError as exc:
                    if exc.errno != errno.EBUSY:
                        raise
                    busy.append(group.name)
            if not busy:
                for d in (self.base, self.base.parent):
                    try:
                        d.rmdir()
                    except OSError:
                        break  # other runs' groups: leave them
                break
            if time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        return busy
