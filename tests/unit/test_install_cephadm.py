"""deploy/install.sh --cephadm-spec, its Python floor check, and the Rook
hostPath patch (tests/unit/test_install.py covers the install itself)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "deploy" / "install.sh"
ROOK_PATCH = ROOT / "deploy" / "rook" / "mgr-sla-module-hostpath.yaml"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
yaml = pytest.importorskip("yaml")


def run(tmp_path: Path, *args: str, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool, body in (("ceph", 'echo "ceph version 20.2.4 (0) tentacle (stable)"'),
                       ("ceph-conf", "exit 1")):
        (bin_dir / tool).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / tool).chmod(0o755)
    full = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", **(env or {}))
    return subprocess.run(["bash", str(INSTALL), *args], capture_output=True, text=True,
                          env=full, timeout=60, check=False)


def spec_of(res: subprocess.CompletedProcess[str]) -> dict:
    assert res.returncode == 0, res.stderr
    [doc] = [d for d in yaml.safe_load_all(res.stdout) if d]
    return doc


def test_cephadm_spec_bind_mounts_the_module(tmp_path: Path) -> None:
    spec = spec_of(run(tmp_path, "--cephadm-spec"))
    assert spec["service_type"] == "mgr"
    assert spec["extra_container_args"] == [
        "--volume=/opt/ceph-sla/sla:/usr/share/ceph/mgr/sla:ro,z"]
    assert "deploy/install.sh --module-path /opt/ceph-sla" in run(tmp_path, "--cephadm-spec").stdout
    custom = spec_of(run(tmp_path, "--cephadm-spec", "--module-path", "/srv/mgr-modules/"))
    assert custom["extra_container_args"] == [
        "--volume=/srv/mgr-modules/sla:/usr/share/ceph/mgr/sla:ro,z"]


def test_cephadm_spec_changes_nothing_and_checks_its_path(tmp_path: Path) -> None:
    target = tmp_path / "modules"
    target.mkdir()
    spec_of(run(tmp_path, "--cephadm-spec", "--module-path", str(target)))
    assert list(target.iterdir()) == []
    for bad in ("relative/dir", "/srv/a:b", "/srv/a b", "/srv/a,b"):
        res = run(tmp_path, "--cephadm-spec", "--module-path", bad)
        assert res.returncode != 0 and "cephadm-spec" in res.stderr, bad
    res = run(tmp_path, "--cephadm-spec", "--uninstall")
    assert res.returncode != 0


_SPEC_CHECK = """
import sys, yaml
from ceph.deployment.service_spec import ServiceSpec
[doc] = [d for d in yaml.safe_load_all(sys.stdin) if d]
spec = ServiceSpec.from_json(doc)
spec.validate()
print(spec.service_name(), spec.extra_container_args)
"""


def test_cephadm_spec_parses_with_cephs_spec_parser(tmp_path: Path) -> None:
    python = "/usr/bin/python3"
    probe = subprocess.run([python, "-c", "import ceph.deployment.service_spec, yaml"],
                           capture_output=True, check=False) if Path(python).exists() else None
    if probe is None or probe.returncode != 0:
        pytest.skip("python3-ceph-common (ceph.deployment) not importable by /usr/bin/python3")
    out = run(tmp_path, "--cephadm-spec").stdout
    res = subprocess.run([python, "-c", _SPEC_CHECK], input=out, capture_output=True,
                         text=True, check=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split()[0] == "mgr" and "/usr/share/ceph/mgr/sla:ro" in res.stdout


def fake_python(tmp_path: Path, version: str) -> Path:
    """An interpreter that reports `version` and fails any version check."""
    major, minor = (int(x) for x in version.split("."))
    py = tmp_path / f"python{version}"
    py.write_text(f'#!{sys.executable}\nimport sys\nsys.version_info = ({major}, {minor}, 0)\n'
                  'exec(sys.argv[2]) if sys.argv[1:2] == ["-c"] else sys.exit(2)\n')
    py.chmod(0o755)
    return py


def test_refuses_a_mgr_python_below_3_9(tmp_path: Path) -> None:
    dest = tmp_path / "mods"
    dest.mkdir()
    res = run(tmp_path, "--module-path", str(dest),
              env={"MGR_PYTHON": str(fake_python(tmp_path, "3.6"))})
    assert res.returncode != 0
    errors = [line for line in res.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and "is Python 3.6" in errors[0] and "3.9 or newer" in errors[0]
    assert not (dest / "sla").exists()


def test_accepts_a_mgr_python_of_3_9(tmp_path: Path) -> None:
    dest = tmp_path / "mods"
    dest.mkdir()
    res = run(tmp_path, "--module-path", str(dest), "--dry-run",
              env={"MGR_PYTHON": str(fake_python(tmp_path, "3.9"))})
    assert res.returncode == 0, res.stderr


def test_rook_patch_mounts_the_same_directory() -> None:
    patch = yaml.safe_load(ROOK_PATCH.read_text())
    pod = patch["spec"]["template"]["spec"]
    [mount] = pod["containers"][0]["volumeMounts"]
    [volume] = pod["volumes"]
    assert pod["containers"][0]["name"] == "mgr"
    assert mount == {"name": volume["name"], "mountPath": "/usr/share/ceph/mgr/sla",
                     "readOnly": True}
    # install.sh --module-path /opt/ceph-sla puts the module where cephadm's spec
    # and this patch both look.
    assert volume["hostPath"] == {"path": "/opt/ceph-sla/sla", "type": "Directory"}


def test_rook_patch_validates_as_a_deployment(tmp_path: Path) -> None:
    kv = pytest.importorskip("kubernetes_validate",
                             reason="kubernetes-validate (PyPI) not installed")
    patch = yaml.safe_load(ROOK_PATCH.read_text())["spec"]["template"]["spec"]
    container = {"name": "mgr", "image": "quay.io/ceph/ceph:v20",
                 "volumeMounts": patch["containers"][0]["volumeMounts"]}
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "rook-ceph-mgr-a", "namespace": "rook-ceph"},
        "spec": {"selector": {"matchLabels": {"app": "rook-ceph-mgr"}},
                 "template": {"metadata": {"labels": {"app": "rook-ceph-mgr"}},
                              "spec": {"containers": [container],
                                       "volumes": patch["volumes"]}}},
    }
    kv.validate(deployment, kv.latest_version(), strict=True)
