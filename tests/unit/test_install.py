"""Tests of deploy/install.sh against temporary module paths (never /usr/share/ceph)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "deploy" / "install.sh"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def fake_ceph(bin_dir: Path, version: str | None) -> None:
    """A `ceph` on PATH that only answers --version (None: ceph missing/failing)."""
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "ceph"
    if version is None:
        script.write_text("#!/bin/sh\nexit 127\n")
    else:
        script.write_text(
            "#!/bin/sh\n"
            f'[ "$1" = --version ] && echo "ceph version {version} (0000) x (stable)" && exit 0\n'
            "exit 1\n"
        )
    script.chmod(0o755)
    # ceph-conf must not find a real cluster's config either.
    conf = bin_dir / "ceph-conf"
    conf.write_text("#!/bin/sh\nexit 1\n")
    conf.chmod(0o755)


def run(
    tmp_path: Path, *args: str, version: str | None = "18.2.7", check: bool = True
) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    fake_ceph(bin_dir, version)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    res = subprocess.run(
        ["bash", str(INSTALL), *args], capture_output=True, text=True, env=env, timeout=60,
        check=False,
    )
    if check:
        assert res.returncode == 0, res.stdout + res.stderr
    return res


def tree(path: Path) -> dict[str, str]:
    """Relative path -> sha256 (files) or 'dir', to compare whole installs."""
    out = {}
    for p in sorted(path.rglob("*")):
        rel = str(p.relative_to(path))
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture()
def source(tmp_path: Path) -> Path:
    """A minimal ceph-sla source tree (the real one is tested separately)."""
    src = tmp_path / "src"
    (src / "mgr_sla").mkdir(parents=True)
    (src / "crush_rules").mkdir()
    (src / "mgr_sla" / "__init__.py").write_text("from .module import Module  # noqa\n")
    (src / "mgr_sla" / "module.py").write_text("class Module: pass\n")
    (src / "mgr_sla" / "__pycache__").mkdir()
    (src / "mgr_sla" / "__pycache__" / "module.cpython-311.pyc").write_bytes(b"junk")
    (src / "crush_rules" / "__init__.py").write_text("")
    (src / "crush_rules" / "gen.py").write_text("RULES = []\n")
    (src / "setup.py").write_text('setup(\n    name="ceph-sla",\n    version="0.1.0",\n)\n')
    return src


def test_install_layout_idempotence_and_uninstall(tmp_path: Path, source: Path) -> None:
    mp = tmp_path / "mgr"
    mp.mkdir()
    (mp / "balancer").mkdir()  # another module must be left alone

    res = run(tmp_path, "--module-path", str(mp), "--source", str(source))
    dest = mp / "sla"
    assert (dest / "__init__.py").read_text() == (source / "mgr_sla" / "__init__.py").read_text()
    assert (dest / "module.py").is_file()
    assert (dest / "crush_rules" / "gen.py").is_file()
    assert not list(dest.rglob("__pycache__")) and not list(dest.rglob("*.pyc"))
    assert "version=0.1.0" in (dest / ".ceph-sla-installed").read_text()
    mode = stat.S_IMODE((dest / "module.py").stat().st_mode)
    assert mode & 0o044 == 0o044  # the ceph user must be able to read it
    assert "Ceph release: 18 (reef)" in res.stdout
    # Every mgr must be restarted before enable: the monitors refuse a module a
    # standby lacks, and `ceph mgr fail` restarts the active one only.
    steps = ["systemctl restart ceph-mgr.target", "ceph mgr module enable sla",
             "ceph sla rules apply", "ceph sla status"]
    assert [res.stdout.index(step) for step in steps] == sorted(
        res.stdout.index(step) for step in steps)
    assert "ceph mgr fail" not in res.stdout
    first = tree(mp)

    run(tmp_path, "--module-path", str(mp), "--source", str(source))
    assert tree(mp) == first  # same result, no leftovers (.sla.new/.sla.old)
    assert sorted(p.name for p in mp.iterdir()) == ["balancer", "sla"]

    # A file removed from the source disappears on reinstall (no stale modules).
    (source / "crush_rules" / "gen.py").unlink()
    run(tmp_path, "--module-path", str(mp), "--source", str(source))
    assert not (dest / "crush_rules" / "gen.py").exists()

    res = run(tmp_path, "--uninstall", "--module-path", str(mp))
    assert not dest.exists() and (mp / "balancer").is_dir()
    assert_uninstall_steps(res.stdout)
    res = run(tmp_path, "--uninstall", "--module-path", str(mp))
    assert "nothing to uninstall" in res.stdout


def assert_uninstall_steps(text: str) -> None:
    """`ceph sla release` first (the pools go back while the module runs), then
    disable, then the rules, options and store keys: the order of install.md."""
    steps = ["ceph sla release", "ceph mgr module disable sla", "ceph osd crush rule rm",
             "ceph config rm mgr", "ceph config-key rm"]
    where = [text.find(step) for step in steps]
    assert -1 not in where and where == sorted(where), text
    assert "crush_rule <rule>" not in text  # the old advice that stranded the pools


def test_uninstall_steps_match_install_md() -> None:
    """install.sh prints the same cluster steps as docs/install.md#uninstalling."""
    doc = (ROOT / "docs" / "install.md").read_text()
    section = doc[doc.index("## Uninstalling"):]
    block = section[section.index("```") + 3:]
    block = block[: block.index("```")]
    script = INSTALL.read_text().replace("$MODULE_NAME", "sla")
    commands = [line.strip() for line in block.splitlines()
                if line.strip().startswith("ceph ")]
    assert commands[0] == "ceph sla release"
    for command in commands:
        assert command in script, command
    assert_uninstall_steps(block)


def test_readme_undo_is_release_first_and_matches_install_md() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## How to undo it"):]
    block = section[section.index("```") + 3:]
    block = block[: block.index("```")]
    assert_uninstall_steps(block)
    doc = (ROOT / "docs" / "install.md").read_text()
    for line in block.splitlines():
        command = line.split("#")[0].strip()
        if command.startswith("ceph "):
            assert command in doc, command


def test_version_is_printed_and_matches_the_module(tmp_path: Path) -> None:
    res = run(tmp_path, "--version")
    version = re.search(r'version="([^"]+)"', (ROOT / "setup.py").read_text())
    assert version is not None and res.stdout.strip() == f"ceph-sla {version.group(1)}"
    init = (ROOT / "mgr_sla" / "__init__.py").read_text()
    module = re.search(r'^__version__ = "([^"]+)"', init, re.MULTILINE)
    if module is None:
        pytest.skip("mgr_sla/__init__.py has no __version__ yet")
    assert module.group(1) == version.group(1), "setup.py and mgr_sla.__version__ differ"


def test_dry_run_changes_nothing(tmp_path: Path, source: Path) -> None:
    mp = tmp_path / "mgr"
    mp.mkdir()
    res = run(tmp_path, "--dry-run", "--module-path", str(mp), "--source", str(source))
    assert "would run: cp -R" in res.stdout
    assert list(mp.iterdir()) == []
    run(tmp_path, "--module-path", str(mp), "--source", str(source))
    before = tree(mp)
    res = run(tmp_path, "--dry-run", "--uninstall", "--module-path", str(mp))
    assert "would run: rm -rf" in res.stdout and tree(mp) == before


def test_refuses_ceph_older_than_pacific(tmp_path: Path, source: Path) -> None:
    mp = tmp_path / "mgr"
    mp.mkdir()
    res = run(tmp_path, "--module-path", str(mp), "--source", str(source),
              version="15.2.17", check=False)
    assert res.returncode != 0
    assert "too old" in res.stderr and "16 (Pacific)" in res.stderr
    assert list(mp.iterdir()) == []


@pytest.mark.parametrize(("version", "name"), [("16.2.15", "pacific"), ("19.2.1", "squid"),
                                               ("20.2.4", "tentacle")])
def test_release_names(tmp_path: Path, source: Path, version: str, name: str) -> None:
    mp = tmp_path / "mgr"
    mp.mkdir()
    res = run(tmp_path, "--module-path", str(mp), "--source", str(source), version=version)
    assert f"({name})" in res.stdout


def test_missing_ceph_only_warns(tmp_path: Path, source: Path) -> None:
    mp = tmp_path / "mgr"
    mp.mkdir()
    res = run(tmp_path, "--module-path", str(mp), "--source", str(source), version=None)
    assert "cannot check the Ceph release" in res.stderr
    assert (mp / "sla" / "__init__.py").is_file()


def test_foreign_directory_is_not_touched(tmp_path: Path, source: Path) -> None:
    mp = tmp_path / "mgr"
    (mp / "sla").mkdir(parents=True)
    (mp / "sla" / "mine.py").write_text("x = 1\n")
    res = run(tmp_path, "--module-path", str(mp), "--source", str(source), check=False)
    assert res.returncode != 0 and "not installed by" in res.stderr
    res = run(tmp_path, "--uninstall", "--module-path", str(mp), check=False)
    assert res.returncode != 0 and (mp / "sla" / "mine.py").is_file()


def test_bad_arguments(tmp_path: Path) -> None:
    res = run(tmp_path, "--bogus", check=False)
    assert res.returncode != 0 and "unknown argument" in res.stderr
    res = run(tmp_path, "--module-path", str(tmp_path / "missing"), check=False)
    assert res.returncode != 0


def test_real_source_tree(tmp_path: Path) -> None:
    if not (ROOT / "mgr_sla" / "__init__.py").is_file() or not (
        ROOT / "crush_rules" / "__init__.py"
    ).is_file():
        pytest.skip("mgr_sla/ or crush_rules/ not complete yet")
    mp = tmp_path / "mgr"
    mp.mkdir()
    run(tmp_path, "--module-path", str(mp))
    dest = mp / "sla"
    for src in (ROOT / "mgr_sla").rglob("*.py"):
        if "__pycache__" in src.parts:
            continue
        assert (dest / src.relative_to(ROOT / "mgr_sla")).read_bytes() == src.read_bytes()
    for src in (ROOT / "crush_rules").rglob("*.py"):
        if "__pycache__" in src.parts:
            continue
        assert (dest / "crush_rules" / src.relative_to(ROOT / "crush_rules")).is_file()
    # the subpackages too: the mgr imports them from the installed copy
    assert (dest / "shell" / "metrics.py").is_file()
    assert (dest / "core" / "upmap" / "planner.py").is_file()
    # and the metrics' exposition library with its licence: nothing to add on the host
    vendored = dest / "_vendor" / "prometheus_client"
    assert (vendored / "exposition.py").is_file() and (vendored / "LICENSE").is_file()


# --- deployment files that cannot run here (no container engine, no k8s) ---


def _yaml_docs(path: Path) -> list[dict]:
    yaml = pytest.importorskip("yaml")
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


# Parsed with Ceph's own ServiceSpec (python3-ceph-common), in the system
# interpreter that has it; prints the device filters as JSON.
_SPEC_CHECK = """
import json, sys, yaml
from ceph.deployment.service_spec import ServiceSpec
[doc] = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
spec = ServiceSpec.from_json(doc)
spec.validate()
sel = lambda s: None if s is None else {"rotational": s.rotational, "limit": s.limit}
print(json.dumps({"data": sel(spec.data_devices), "db": sel(spec.db_devices)}))
"""


@pytest.mark.parametrize("name", ["osd-spec-hdd-data-ssd-db.yaml", "osd-spec-ssd.yaml"])
def test_osd_specs_parse_with_cephs_spec_parser(name: str) -> None:
    path = ROOT / "deploy" / "cephadm" / name
    [doc] = _yaml_docs(path)
    assert doc["service_type"] == "osd"
    python = "/usr/bin/python3"
    probe = subprocess.run(
        [python, "-c", "import ceph.deployment.service_spec, yaml"],
        capture_output=True, check=False,
    ) if Path(python).exists() else None
    if probe is None or probe.returncode != 0:
        pytest.skip("python3-ceph-common (ceph.deployment) not importable by /usr/bin/python3")
    res = subprocess.run(
        [python, "-c", _SPEC_CHECK, str(path)], capture_output=True, text=True, check=False
    )
    assert res.returncode == 0, res.stderr
    devices = json.loads(res.stdout)
    if name == "osd-spec-hdd-data-ssd-db.yaml":
        assert devices["data"]["rotational"] in (1, True)
        assert devices["db"] == {"rotational": 0, "limit": 1}
    else:
        assert devices["data"]["rotational"] in (0, False) and devices["db"] is None


def test_containerfile_installs_module_like_install_sh() -> None:
    text = (ROOT / "deploy" / "cephadm" / "Containerfile").read_text()
    assert re.search(r"^ARG CEPH_IMAGE=quay\.io/ceph/ceph:v\d+\.\d+\.\d+$", text, re.MULTILINE)
    assert "ARG MIN_PYTHON=3.9" in text
    assert "FROM ${CEPH_IMAGE}" in text
    assert "COPY mgr_sla/ /usr/share/ceph/mgr/sla/" in text
    assert "COPY crush_rules/ /usr/share/ceph/mgr/sla/crush_rules/" in text


def test_rook_cephcluster_patch_leaves_the_module_list_alone() -> None:
    """A merge patch replaces a list whole: the CephCluster patch must not carry
    spec.mgr.modules (it would drop the modules enabled there), and says that
    its image change restarts every daemon."""
    path = ROOT / "deploy" / "rook" / "cephcluster-sla.yaml"
    [doc] = _yaml_docs(path)
    assert doc["kind"] == "CephCluster"
    assert doc["spec"]["cephVersion"]["image"]
    assert "mgr" not in doc["spec"]
    assert "restart" in path.read_text() and "EVERY" in path.read_text()
    kinds = [d["kind"] for d in _yaml_docs(ROOT / "deploy" / "rook" / "sla-metrics-monitor.yaml")]
    assert kinds == ["Service", "ServiceMonitor"]


def test_rook_module_patch_appends_sla() -> None:
    patch = json.loads((ROOT / "deploy" / "rook" / "enable-sla-module.json").read_text())
    assert patch == [{"op": "add", "path": "/spec/mgr/modules/-",
                      "value": {"name": "sla", "enabled": True}}]
    # The same patch applied to a CephCluster with modules keeps them all.
    modules = [{"name": "pg_autoscaler", "enabled": True}, {"name": "rook", "enabled": True}]
    after = [*modules, patch[0]["value"]]
    assert after[: len(modules)] == modules and after[-1]["name"] == "sla"


# Every image tag the install docs and deploy files give as an example.
_TAG = re.compile(r"(?:quay\.io/ceph/ceph|ceph/ceph-sla):(v\d[\w.]*)|CEPH_TAG=(v\d[\w.]*)")


def test_image_tags_agree_across_docs_and_deploy_files() -> None:
    """The image built is the image used: one example tag everywhere."""
    files = [ROOT / "docs" / "install.md", ROOT / "deploy" / "cephadm" / "Containerfile",
             ROOT / "deploy" / "rook" / "cephcluster-sla.yaml"]
    tags = {}
    for path in files:
        found = {a or b for a, b in _TAG.findall(path.read_text())}
        assert found, path
        tags[path.name] = found
    assert len(set().union(*tags.values())) == 1, tags
    # the docs' commands use the one variable, so build and use cannot drift
    doc = (ROOT / "docs" / "install.md").read_text()
    assert "ceph-sla:$CEPH_TAG" in doc and "ceph/ceph:$CEPH_TAG" in doc
