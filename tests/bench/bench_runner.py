"""Running a benchmark script as a user does (`python3 -m bench.NAME ...` from
the checkout's root) and checking the provenance block of the JSON it wrote."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import provenance

ROOT = Path(__file__).resolve().parents[2]
PROGRESS = re.compile(r"^[\w-]+: \[ *\d+ s\] ")


def run_bench(module: str, *args: str, timeout: float = 600, env: dict[str, str] | None = None
              ) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run `python3 -m bench.<module> args...` from the root; (the process, seconds)."""
    started = time.monotonic()
    p = subprocess.run([sys.executable, "-m", f"bench.{module}", *args], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=timeout)
    secs = time.monotonic() - started
    assert p.returncode == 0, (f"bench.{module} exited {p.returncode}:\n"
                               + p.stdout[-3000:] + "\n" + p.stderr[-3000:])
    print(f"bench.{module} {' '.join(args)}: {secs:.1f} s")
    for line in p.stdout.splitlines():  # the script's progress ("who: [  12 s] what")
        if PROGRESS.match(line):
            print("   ", line)
    return p, secs


def results(path: Path, module: str, ceph: str, design: str) -> dict[str, Any]:
    """The JSON a script wrote, its provenance checked: complete, this checkout's
    commit, the command that ran, the Ceph release ('pacific', 'none', ...) and design."""
    data = json.loads(path.read_text())
    block = data.get("provenance")
    assert provenance.check(block) == [], block
    assert block["commit"] == provenance.git_commit()
    assert block["command"].startswith(f"python3 -m bench.{module} ") and str(path.parent) in \
        block["command"], block["command"]
    # the exact release string, or a release name ("pacific": "16.2.15 pacific")
    assert block["ceph_release"] == ceph or block["ceph_release"].endswith(f" {ceph}"), \
        block["ceph_release"]
    assert block["placement_design"] == design
    return data


def blkio_groups(prefix: str) -> set[str]:
    """A benchmark's blkio cgroups, named after its work directory (`prefix`, e.g.
    "sla-bench-"): other benchmarks on the machine have their own, and the files
    beside them are the kernel's."""
    from bench.emulation import BLKIO
    groups = BLKIO / "ceph-sla-bench"
    return {g.name for g in groups.iterdir() if g.is_dir() and g.name.startswith(prefix)} \
        if groups.exists() else set()


def own_processes(marker: str) -> list[str]:
    """Command lines of the running processes that mention `marker` (a test's
    own temp dir): what a benchmark left running."""
    out = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in text:
            out.append(text)
    return out
