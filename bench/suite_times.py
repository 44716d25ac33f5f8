"""docs/benchmarks/suite.json from the test suite's own timing: deploy/run-tests.sh
times each tox environment and, run with SLA_RECORD_SUITE=1, calls

    python3 -m bench.suite_times --total SECS --cpu SECS --lane "lint unit" \
        --lane integration ... --then bench --out docs/benchmarks/suite.json \
        lint=8.1 unit=54.0 ...

Writes {"provenance": {...}, "envs": {"lint": secs, ...}, "lanes": [["lint",
"unit"], ...], "then": ["bench"], "cpu_busy_secs": secs, "total_secs": secs}:
the lanes ran side by side, the `then` environments after them, one by one;
cpu_busy_secs is the whole machine's busy CPU time over the run. The Ceph
release names the host's and each release root's the suite ran on.
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import argparse
import json
import subprocess
import sys
from pathlib import Path

from bench import provenance

ROOT = Path(__file__).resolve().parents[1]
MEASURED_BY = "bash deploy/run-tests.sh"
ROOT_RELEASES = ("reef", "tentacle")


def env_secs(pairs: list[str]) -> dict[str, float]:
    """{"lint": 8.1} from ["lint=8.1"]; ValueError naming a malformed pair."""
    out: dict[str, float] = {}
    for pair in pairs:
        name, sep, secs = pair.partition("=")
        try:
            value = float(secs)
        except ValueError:
            value = -1.0
        if not sep or not name or value < 0:
            raise ValueError(f"not ENV=SECONDS: {pair!r}")
        out[name] = value
    return out


def releases() -> str:
    """The host's Ceph release, then each release root's that is built."""
    found = [provenance.ceph_release()]
    for release in ROOT_RELEASES:
        p = subprocess.run(["bash", str(ROOT / "deploy" / "release-root.sh"), "path", release],
                           capture_output=True, text=True, timeout=60)
        root = p.stdout.strip().splitlines()[-1] if p.returncode == 0 and p.stdout.strip() \
            else ""
        if root:
            found.append(provenance.ceph_release(["chroot", root, "ceph", "--version"]))
    known = [r for r in found if r != provenance.UNKNOWN]
    return " + ".join(known) if known else provenance.UNKNOWN


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("envs", nargs="+", help="ENV=SECONDS, in the order they ran")
    ap.add_argument("--total", type=float, required=True, help="the whole run's seconds")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "suite.json")
    ap.add_argument("--command", default=MEASURED_BY, help="the command that was timed")
    ap.add_argument("--lane", action="append", default=[],
                    help="environments of one lane, space-separated (lanes ran side by side)")
    ap.add_argument("--then", action="append", default=[],
                    help="an environment run after the lanes (repeat, in order)")
    ap.add_argument("--cpu", type=float, required=True,
                    help="the machine's busy CPU seconds over the run")
    args = ap.parse_args(argv)
    try:
        envs = env_secs(args.envs)
    except ValueError as exc:
        ap.error(str(exc))
    lanes = [lane.split() for lane in args.lane] or [[env] for env in envs]
    unknown = sorted(({e for lane in lanes for e in lane} | set(args.then)) - set(envs))
    if unknown:
        ap.error(f"no time given for {', '.join(unknown)}")
    result = {"provenance": provenance.provenance(
        "bench.suite_times", sys.argv[1:] if argv is None else argv, releases(),
        provenance.CURRENT_DESIGN, measured_by=args.command),
        "envs": envs, "lanes": lanes, "then": args.then, "cpu_busy_secs": args.cpu,
        "total_secs": args.total}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
