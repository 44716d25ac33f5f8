"""The tests' side of harness/ceph_command_server.py: `ceph` commands over one
long-lived connection, with the CLI's output, falling back to the CLI for what
the server does not take (tell, files in or out, another user's keyring)."""
from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

SERVER = Path(__file__).resolve().with_name("ceph_command_server.py")
# CLI options that change who connects or where output goes: those calls run the CLI
CLI_ONLY = {"-o", "-i", "-n", "-k", "--name", "--keyring", "--id", "--user", "-c", "--conf",
            "--cluster", "-s", "-w", "--watch", "--status", "-h", "--help", "--in-file",
            "--out-file", "--connect-timeout"}
CLI_ONLY_WORDS = {"tell", "daemon"}  # sent to daemons, not to the mon or mgr
START_SECS = 60


def split_format(args: tuple[str, ...]) -> tuple[list[str], str | None] | None:
    """The command words and the -f/--format value; None if the CLI must run it."""
    argv: list[str] = []
    fmt = None
    it = iter(args)
    for a in it:
        if a in ("-f", "--format"):
            fmt = next(it, None)
        elif a.startswith("--format="):
            fmt = a.split("=", 1)[1]
        elif a in CLI_ONLY or a.split("=", 1)[0] in CLI_ONLY:
            return None
        else:
            argv.append(a)
    if not argv or argv[0] in CLI_ONLY_WORDS:
        return None
    return argv, fmt


class CommandChannel:
    """A command server process for one cluster; None answers mean 'run the CLI'."""

    def __init__(self, prefix: list[str], conf: str) -> None:
        self.prefix, self.conf = prefix, conf
        self.proc: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()
        self.unavailable_until = 0.0

    def _start(self) -> bool:
        if time.monotonic() < self.unavailable_until:
            return False
        self.proc = subprocess.Popen(
            [*self.prefix, "/usr/bin/python3", str(SERVER), self.conf], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        if self._read(START_SECS) is None:
            self.close()
            self.unavailable_until = time.monotonic() + 30  # no cluster yet: the CLI says why
            return False
        return True

    def _read(self, timeout: float) -> dict[str, Any] | None:
        assert self.proc and self.proc.stdout
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else None

    def run(self, argv: list[str], fmt: str | None,
            timeout: float) -> subprocess.CompletedProcess[str] | None:
        with self.lock:
            if (self.proc is None or self.proc.poll() is not None) and not self._start():
                return None
            assert self.proc and self.proc.stdin
            try:
                self.proc.stdin.write((json.dumps({"argv": argv, "format": fmt}) + "\n").encode())
                self.proc.stdin.flush()
            except BrokenPipeError:
                self.close()
                return None
            reply = self._read(timeout)
            if reply is None:
                exited = self.proc.poll() is not None
                self.close()  # a command still running there: that process is done
                if exited:
                    return None
                raise subprocess.TimeoutExpired(["ceph", *argv], timeout)
        if "fallback" in reply:
            return None
        return subprocess.CompletedProcess(["ceph", *argv], reply["rc"], reply["out"],
                                           reply["err"])

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        if proc.stdout:
            proc.stdout.close()


_CHANNELS: dict[str, CommandChannel] = {}


def channel_for(prefix: list[str], conf: str) -> CommandChannel:
    """One channel per cluster, shared by every handle on it."""
    if conf not in _CHANNELS:
        _CHANNELS[conf] = CommandChannel(prefix, conf)
    return _CHANNELS[conf]


def close_channel(conf: str) -> None:
    ch = _CHANNELS.pop(conf, None)
    if ch:
        with ch.lock:
            ch.close()


@atexit.register
def _close_all() -> None:
    for conf in list(_CHANNELS):
        close_channel(conf)
