"""A client that checks the pools keep answering: one 4 KiB write and read
of its own object per pool every INTERVAL seconds, each pool in its own
thread, and on SIGTERM one JSON line on stdout: per pool the ops done and the
longest an op took, an op still waiting counted from its start.

    python3 harness/op_probe.py CEPH_CONF POOL [POOL ...]
"""
from __future__ import annotations

import json
import signal
import sys
import threading
import time

import rados  # type: ignore[import-not-found]

INTERVAL = 1.0
PAYLOAD = b"p" * 4096


class Pool:
    def __init__(self, handle: rados.Rados, name: str) -> None:
        self.name = name
        self.ioctx = handle.open_ioctx(name)
        self.ops = 0
        self.longest = 0.0
        self.started: float | None = None  # the op under way, if any

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.started = time.monotonic()
            self.ioctx.write_full("sla_probe", PAYLOAD)
            self.ioctx.read("sla_probe", len(PAYLOAD))
            took = time.monotonic() - self.started
            self.started = None
            self.ops += 1
            self.longest = max(self.longest, took)
            stop.wait(INTERVAL)

    def report(self) -> dict[str, float]:
        waiting = time.monotonic() - self.started if self.started is not None else 0.0
        return {"ops": self.ops, "longest_secs": round(max(self.longest, waiting), 2),
                "waiting_secs": round(waiting, 2)}


def main() -> int:
    conf, names = sys.argv[1], sys.argv[2:]
    handle = rados.Rados(conffile=conf, name="client.admin")
    handle.connect(timeout=30)
    pools = [Pool(handle, n) for n in names]
    stop = threading.Event()
    for pool in pools:
        threading.Thread(target=pool.run, args=(stop,), daemon=True).start()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    print("ready", flush=True)
    done.wait()
    stop.set()
    print(json.dumps({p.name: p.report() for p in pools}), flush=True)
    return 0  # an op that hangs keeps its thread: the process exits without it


if __name__ == "__main__":
    sys.exit(main())
