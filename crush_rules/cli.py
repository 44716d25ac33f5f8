"""``sla-crush``: generate, verify, install and plan the SLA CRUSH rules.

Exit codes: 0 done; 1 verification found a failed requirement; 2 refused or
bad input (one line on stderr, nothing written).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from . import rules as R
from .errors import CrushError
from .generate import GenerateOptions, generate, read_map, verify_map
from .live import install, plan_switch, verify_live
from .tools import CephCli, Tools


def _generation_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--normal-class", default="hdd")
    parser.add_argument("--urgent-class", default="ssd")
    parser.add_argument("--failure-domain", default="host")
    parser.add_argument("--size", type=int, default=3)
    parser.add_argument("--pool-id", type=int, nargs="+", default=[],
                        help="normal pools: get the sla_shared weight sets")
    parser.add_argument("--urgent-pool-id", type=int, nargs="+", default=[],
                        help="urgent pools: get the sla_hybrid weight sets")
    parser.add_argument("--release", choices=R.RELEASES, default="pacific")
    parser.add_argument("--root", default="default")


def _cluster_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--conf", help="ceph.conf of the cluster")
    parser.add_argument("--name", help="client name, e.g. client.admin")
    parser.add_argument("--keyring")


def _options(args: argparse.Namespace) -> GenerateOptions:
    return GenerateOptions(
        normal_class=args.normal_class,
        urgent_class=args.urgent_class,
        failure_domain=args.failure_domain,
        size=args.size,
        pool_ids=tuple(args.pool_id),
        urgent_pool_ids=tuple(args.urgent_pool_id),
        release=getattr(args, "release", "pacific"),
        root=args.root,
        pg_num=getattr(args, "pg_num", 256),
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sla-crush", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    gen = sub.add_parser("generate", help="add the SLA rules to a crush map file")
    gen.add_argument("--in", dest="input", required=True, help="crush map, binary or text")
    gen.add_argument("--out", required=True, help="compiled crush map to write")
    gen.add_argument("--text", help="also write the map as text (release syntax)")
    _generation_flags(gen)

    ver = sub.add_parser("verify", help="check requirements 1-5 on a map's PG mappings")
    ver.add_argument("--map", required=True, help="crush map with the SLA rules")
    ver.add_argument("--pg-num", type=int, default=256)
    ver.add_argument("--osdmap", help="a real osdmap (ceph osd getmap): map its pools' PGs")
    _generation_flags(ver)

    ins = sub.add_parser("install", help="generate from the live map and set it")
    _cluster_flags(ins)
    _generation_flags(ins)

    vlive = sub.add_parser("verify-live", help="check the installed rules on the live pools")
    _cluster_flags(vlive)
    _generation_flags(vlive)

    plan = sub.add_parser("plan", help="what switching a live pool to a rule would move")
    plan.add_argument("--pool", required=True)
    plan.add_argument("--to", required=True, dest="to_rule")
    _cluster_flags(plan)
    return parser


def _write_atomically(path: str, data: bytes) -> None:
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=".sla-crush-", dir=target.parent or Path("."))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CrushError(f"cannot read {path}: {exc.strerror}") from exc


def _print(data: object) -> None:
    print(json.dumps(data, indent=2, sort_keys=False))


def run(argv: Sequence[str]) -> int:
    args = _parser().parse_args(argv)
    tools = Tools()
    if args.command == "generate":
        tools.check_available()
        options = _options(args)
        generated = generate(tools, read_map(tools, _read(args.input)), options)
        if not generated.report.ok:
            raise CrushError(f"refused: {generated.report.failures[0]}")
        _write_atomically(args.out, generated.binary)
        if args.text:
            _write_atomically(args.text, generated.text.encode())
        _print({"rule_ids": dict(generated.rule_ids), "seconds": dict(generated.seconds),
                **generated.report.to_dict()})
        return 0
    if args.command == "verify":
        tools.check_available()
        binary = read_map(tools, _read(args.map))
        osdmap = _read(args.osdmap) if args.osdmap else None
        report = verify_map(tools, binary, _options(args), osdmap)
        _print(report.to_dict())
        return 0 if report.ok else 1
    cli = CephCli(args.conf, args.name, args.keyring)
    if args.command == "install":
        result = install(cli, tools, _options(args))
        _print(result.to_dict())
        return 0
    if args.command == "verify-live":
        report = verify_live(cli, tools, _options(args))
        _print(report.to_dict())
        return 0 if report.ok else 1
    _print(plan_switch(cli, tools, args.pool, args.to_rule).to_dict())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except CrushError as exc:
        print(f"sla-crush: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
