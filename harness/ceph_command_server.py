"""One librados connection that answers `ceph` commands for the tests.

The `ceph` CLI spends about 0.4 s of CPU per call on starting Python, loading
its modules and connecting; the tests poll status every fraction of a second
on a 2-core machine, so most of their CPU went there. This process connects
once and validates and sends each command exactly as the CLI does (the same
ceph_argparse of the same release, the same targets and output), so a test
sees the same bytes and return codes.

Runs under the cluster's release (the host's python3, or the one in a release
root), reading JSON lines from stdin: {"argv": [...], "format": "json"|null,
}; answering {"rc", "out", "err"} or {"fallback": reason} when
a command is one it does not take (the caller then runs the CLI).

    python3 harness/ceph_command_server.py CEPH_CONF
"""
from __future__ import annotations

import contextlib
import errno
import io
import json
import sys
from typing import Any

import rados  # type: ignore[import-not-found]
from ceph_argparse import CephPrefix, json_command, parse_json_funcsigs, validate_command  # type: ignore[import-not-found]


class Commands:
    """The cluster's command signatures, indexed by their first word."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.by_word: dict[str, dict[str, Any]] = {}
        self.refresh()

    def refresh(self) -> None:
        ret, outbuf, outs = json_command(self.handle, prefix="get_command_descriptions",
                                         timeout=60)
        if ret != 0:
            raise RuntimeError(f"get_command_descriptions: {ret} {outs}")
        self.by_word = {}
        for key, cmd in parse_json_funcsigs(outbuf.decode(), "cli").items():
            words = [d.instance.prefix for d in cmd["sig"] if isinstance(d.instance, CephPrefix)]
            if words:
                self.by_word.setdefault(words[0], {})[key] = cmd

    def validate(self, argv: list[str]) -> dict[str, Any]:
        # validate_command tries every signature with a deep copy each: only
        # those that start with the command's first word can match
        candidates = self.by_word.get(argv[0], {}) if argv else {}
        with contextlib.redirect_stderr(io.StringIO()):
            return validate_command(candidates, argv) if candidates else {}


def answer(commands: Commands, request: dict[str, Any]) -> dict[str, Any]:
    argv = list(request["argv"])
    valid = commands.validate(argv)
    if not valid:
        commands.refresh()  # a module enabled since may have brought new commands
        valid = commands.validate(argv)
    if not valid:
        return {"fallback": "not a valid command here"}
    target = valid.get("target", ("mon", ""))
    if target[0] not in ("mon", "mon-mgr"):
        return {"fallback": f"target {target[0]}"}
    fmt = request.get("format")
    if fmt:
        valid["format"] = fmt
    try:
        ret, outbuf, outs = json_command(commands.handle, target=target, argdict=valid)
    except Exception as e:  # sent, maybe applied: report it, never send it twice
        return {"rc": errno.EIO, "out": "", "err": f"{type(e).__name__}: {e}\n"}
    out = ("\n" if fmt and fmt.startswith("json") else "") + outbuf.decode(errors="replace")
    if ret < 0:
        return {"rc": -ret, "out": out,
                "err": f"Error {errno.errorcode.get(-ret, 'Unknown')}: {outs}\n"}
    return {"rc": ret, "out": out, "err": f"{outs}\n" if outs else ""}


def main() -> int:
    handle = rados.Rados(conffile=sys.argv[1], name="client.admin")
    handle.conf_set("client_mount_timeout", "20")
    handle.connect(timeout=20)
    commands = Commands(handle)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        try:
            reply = answer(commands, json.loads(line))
        except Exception as e:  # not sent: the caller runs the CLI, which reports it its way
            reply = {"fallback": f"{type(e).__name__}: {e}"}
        print(json.dumps(reply), flush=True)
    handle.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
