"""A fake ``ceph`` CLI that serves a real osdmap, for install / verify_live / plan_switch."""

from __future__ import annotations

import subprocess
import sys

from crush_rules import CephCli, Tools

FAKE_CEPH = r'''#!@PYTHON@
"""Just enough of the ceph CLI: osd getmap, osd setcrushmap (compare-and-swap), pg ls-by-pool."""
import json, shutil, subprocess, sys
from pathlib import Path
state = Path(@STATE@)
args = sys.argv[1:]
while args and args[0] in ("--conf", "--name", "--keyring"):
    args = args[2:]
osdmap = state / "osdmap"
if args[:2] == ["osd", "getmap"]:
    shutil.copy(osdmap, args[3])
elif args[:2] == ["osd", "setcrushmap"]:
    dump = subprocess.run(["osdmaptool", str(osdmap), "--dump", "json"], capture_output=True,
                          text=True).stdout
    version = json.loads(dump[dump.index("{"):])["crush_version"]
    if int(args[4]) != version:
        print(f"prior_version {args[4]} != crush version {version}", file=sys.stderr)
        sys.exit(1)
    subprocess.run(["osdmaptool", str(osdmap), "--import-crush", args[3]], check=True,
                   capture_output=True)
    with open(state / "calls", "a") as log:
        log.write(" ".join(args[:2] + args[4:]) + "\n")
elif args[:2] == ["pg", "ls-by-pool"]:
    print(json.dumps({"pg_stats": [{"pgid": f"1.{i:x}", "stat_sum": {"num_bytes": 1000}}
                                   for i in range(64)]}))
else:
    sys.exit(f"fake ceph: unsupported {args}")
'''


def make_cluster(tmp_path, crush: bytes):
    """(cli, tools, state dir): pool 1 'rbd' (64 PGs, size 3) on 8 up+in OSDs with ``crush``."""
    tools = Tools()
    osdmap = tmp_path / "osdmap"
    subprocess.run(["osdmaptool", str(osdmap), "--createsimple", "8", "--with-default-pool",
                    "--pg-bits", "3", "--pgp-bits", "3"], check=True, capture_output=True)
    (tmp_path / "crush.bin").write_bytes(crush)
    subprocess.run(["osdmaptool", str(osdmap), "--import-crush", str(tmp_path / "crush.bin"),
                    "--mark-up-in"], check=True, capture_output=True)
    ceph = tmp_path / "ceph"
    ceph.write_text(
        FAKE_CEPH.replace("@PYTHON@", sys.executable).replace("@STATE@", repr(str(tmp_path)))
    )
    ceph.chmod(0o755)
    return CephCli(conf="/dev/null", ceph_bin=str(ceph)), tools, tmp_path
