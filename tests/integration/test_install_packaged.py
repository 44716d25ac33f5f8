"""deploy/install.sh against the packaged mgr: the module copied into
/usr/share/ceph/mgr (no links, no module path setting), a mgr that loads it
from there, and an uninstall that leaves the packaged directory as it was."""
from __future__ import annotations

import fcntl
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cephcluster import ROOT, Cluster

pytestmark = pytest.mark.integration

PACKAGED = Path("/usr/share/ceph/mgr")


@pytest.fixture
def installed() -> Iterator[Path]:
    # Two test runs on one machine share /usr/share/ceph/mgr: take turns.
    with open("/run/lock/ceph-sla-install-test.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        target = PACKAGED / "sla"
        if target.exists() and not (target / ".ceph-sla-installed").exists():
            pytest.fail(f"{target} exists and was not made by deploy/install.sh; not touching it")
        before = sorted(p.name for p in PACKAGED.iterdir())
        out = subprocess.run(["bash", str(ROOT / "deploy/install.sh")], capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "ceph mgr module enable sla" in out.stdout
        try:
            yield target
        finally:
            out = subprocess.run(["bash", str(ROOT / "deploy/install.sh"), "--uninstall"],
                                 capture_output=True, text=True, timeout=120)
            assert out.returncode == 0, out.stderr
            assert not target.exists()
            assert sorted(p.name for p in PACKAGED.iterdir()) == [n for n in before if n != "sla"]


@pytest.mark.skipif(os.environ.get("SLA_RELEASE", "pacific") != "pacific",
                    reason="install.sh targets the host's packaged mgr (Pacific)")
def test_installed_module_loads_from_the_packaged_path(installed: Path, tmp_path: Path) -> None:
    assert (installed / "module.py").is_file()
    assert (installed / "crush_rules" / "__init__.py").is_file()
    cluster = Cluster.up(tmp_path / "c", osds=6, packaged_modules=True)
    try:
        assert "mgr module path" not in (cluster.path / "ceph.conf").read_text()
        cluster.enable_sla()
        assert cluster.sla_status()["mode"] == "isolated"
        # the vendored crush_rules is what `rules apply` runs
        out = cluster.ceph("sla", "rules", "apply", timeout=300)
        assert "sla CRUSH rules" in out
        assert "sla_shared" in cluster.json("osd", "crush", "rule", "ls")
    finally:
        cluster.down()
