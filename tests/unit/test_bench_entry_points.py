"""Every benchmark answers --help with the standard library alone, and one
that needs a third-party module it lacks ends in one line naming what to
install (pip install '.[bench]'), not a traceback."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINTS = sorted(str(p.relative_to(ROOT).with_suffix("")).replace("/", ".")
                      for p in (ROOT / "bench").rglob("*.py")
                      if "__main__" in p.read_text())


def stdlib_only(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`python3 -m module args` without site-packages (-S): the standard library only."""
    code = ("import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); "
            "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)")
    return subprocess.run([sys.executable, "-S", "-c", code, str(ROOT), module, *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)


def test_the_entry_points_are_found() -> None:
    assert {"bench.policy_sim", "bench.sla_bench", "bench.tick_bench"} <= set(ENTRY_POINTS)


@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_help_needs_the_standard_library_only(module: str) -> None:
    done = stdlib_only(module, "--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout


def test_a_missing_module_is_one_line_naming_the_install() -> None:
    done = stdlib_only("bench.policy_sim", "--days", "0.01")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "policy_sim: needs numpy: pip install '.[bench]' from a ceph-sla checkout "
        "(or pip install numpy)"]


def test_a_module_option_without_a_value_is_refused_by_name() -> None:
    done = stdlib_only("bench.sla_workloads", "--module-option", "share_past_min_size")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "'share_past_min_size': want KEY=VALUE" in done.stderr


def test_module_options_reach_the_run() -> None:
    from bench import common

    seen = {}

    def run(plan: object, speeds: object, say: object, options: dict[str, str]) -> dict:
        seen.update(options)
        raise common.EmulationError("stop here")
    rc = common.emulated_main(["--module-option", "share_past_min_size=true",
                               "--module-option", "min_gain=0"], who="t", doc="", out="t.json",
                              tools=(), strategy="upmap", smoke_help="", run=run,
                              sizes=(None, None), table=str, module_options=True)
    assert rc == 2 and seen == {"share_past_min_size": "true", "min_gain": "0"}


def test_module_options_are_recorded_with_the_results(tmp_path: Path) -> None:
    from bench import common

    def run(plan: object, speeds: object, say: object, options: dict[str, str]) -> dict:
        return {"elapsed_secs": 1.0}
    out = tmp_path / "r.json"
    rc = common.emulated_main(["--module-option", "share_past_min_size=true", "--out", str(out)],
                              who="t", doc="", out="t.json", tools=(), strategy="upmap",
                              smoke_help="", run=run, sizes=(None, None), table=str,
                              module_options=True)
    assert rc == 0
    assert json.loads(out.read_text())["module_options"] == {"share_past_min_size": "true"}
