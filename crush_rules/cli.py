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
from .ec_generate import parse_ec_pool
from .errors import CrushError
from .generate import GenerateOptions, check_release, generate, read_map, verify_map
from .live import install, plan_switch, verify_live
from .safety import REPORT
from .tools import CephCli, Tools


def _generation_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--normal-class", default=R.DEFAULT_SCOPE.normal_class)
    parser.add_argument("--urgent-class", default=R.DEFAULT_SCOPE.urgent_class)
    parser.add_argument("--failure-domain", default=R.DEFAULT_SCOPE.failure_domain)
    parser.add_argument("--size", type=int, default=R.DEFAULT_SIZE)
    parser.add_argument("--pool-id", type=int, nargs="+", action="extend", default=[],
                        help="normal pools: get the flat sla_shared weight set")
    parser.add_argument("--urgent-pool-id", type=int, nargs="+", action="extend", default=[],
                        help="urgent pools: get the flat sla_hybrid weight set")
    parser.add_argument("--ec-pool", action="append", default=[], metavar="ID:RULE:K+M",
                        help="an erasure-coded normal pool (its id, its own erasure rule, "
                             "its shards per PG): gets sla_ec_RULE and the flat weight set, "
                             "proved to move no shard; repeatable")
    parser.add_argument("--release", default=R.DEFAULT_RELEASE,
                        help=f"text syntax: {', '.join(R.RELEASES)}")
    parser.add_argument("--root", default=R.DEFAULT_SCOPE.root)
    parser.add_argument("--copy-size", type=int, nargs="+", action="extend", default=[],
                        metavar="N",
                        help=f"base size N of a copy rule {R.COPY_PREFIX}N to write and verify "
                             f"(R8); repeatable; {R.MIN_COPY_SIZE}..{R.MAX_COPY_SIZE}; "
                             "default: --size")


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
        release=getattr(args, "release", R.DEFAULT_RELEASE),
        root=args.root,
        pg_num=getattr(args, "pg_num", 256),
        copy_sizes=tuple(args.copy_size) or (args.size,),
        ec_pools=tuple(parse_ec_pool(text) for text in getattr(args, "ec_pool", [])),
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sla-crush", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    gen = sub.add_parser("generate", help="add the SLA rules to a crush map file")
    gen.add_argument("--in", dest="input", required=True, help="crush map, binary or text")
    gen.add_argument("--out", required=True, help="compiled crush map to write")
    gen.add_argument("--text", help="also write the map as text (release syntax)")
    _generation_flags(gen)

    ver = sub.add_parser("verify", help="check requirements R1-R8 on a map's PG mappings")
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


MAX_PG_NUM = 65536


def _check_writable(paths: Sequence[str]) -> None:
    """Every output path can be written: checked before any work or any write."""
    seen: set[Path] = set()
    for path in paths:
        target = Path(path)
        resolved = target.resolve()
        if resolved in seen:
            raise CrushError(f"{path} is given as two outputs; give --out and --text "
                             "different files")
        seen.add(resolved)
        parent = target.parent if str(target.parent) else Path(".")
        if target.is_dir():
            raise CrushError(f"cannot write {path}: it is a directory; give a file name")
        if not parent.is_dir():
            raise CrushError(f"cannot write {path}: directory {parent} does not exist; "
                             "create it or give another path")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise CrushError(f"cannot write {path}: directory {parent} is not writable")
        if target.exists() and not os.access(target, os.W_OK):
            raise CrushError(f"cannot write {path}: the file is not writable")


def _write_all(outputs: Sequence[tuple[str, bytes]]) -> None:
    """Write every output to a temporary file beside it (mode 0644), then rename each."""
    staged: list[tuple[str, Path]] = []
    try:
        for path, data in outputs:
            target = Path(path)
            fd, tmp = tempfile.mkstemp(prefix=".sla-crush-", dir=target.parent or Path("."))
            staged.append((tmp, target))
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o644)
        for tmp, target in staged:
            os.replace(tmp, target)
    except OSError as exc:
        raise CrushError(f"cannot write {exc.filename or 'the output'}: {exc.strerror}") from exc
    finally:
        for tmp, _ in staged:
            try:
                Path(tmp).unlink()
            except FileNotFoundError:
                pass


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
    if args.command in ("generate", "install", "verify-live", "verify"):
        check_release(args.release)
    if args.command == "generate":
        outputs = [args.out] + ([args.text] if args.text else [])
        _check_writable(outputs)
        if not args.pool_id:
            raise CrushError(
                "give --pool-id with the ids of the normal pools (ceph osd pool ls detail): "
                "sla_shared needs each pool's own weight set, and without one it maps like a "
                "plain all-devices rule, which verify rejects"
            )
        tools.check_available()
        options = _options(args)
        generated = generate(tools, read_map(tools, _read(args.input)), options)
        if not generated.report.ok:
            raise CrushError(f"refused: {generated.report.failures[0]}")
        data = [generated.binary] + ([generated.text.encode()] if args.text else [])
        _write_all(list(zip(outputs, data)))
        _print({"rule_ids": dict(generated.rule_ids), "seconds": dict(generated.seconds),
                **generated.report.to_dict()})
        return 0
    if args.command == "verify":
        if not 1 <= args.pg_num <= MAX_PG_NUM:
            raise CrushError(f"--pg-num {args.pg_num} is out of range; use 1 to {MAX_PG_NUM}")
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
    except Exception as exc:  # noqa: BLE001 - no input may end in a traceback
        print(f"sla-crush: internal error ({type(exc).__name__}: {' '.join(str(exc).split())}); "
              f"{REPORT}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
