"""A client at a set rate: 4 KiB ops on a pool at OPS per second, all
writes, or READS of them reads (of objects it writes first).

`rados bench` writes as fast as the cluster takes it, which on a 2-core test
machine is the cluster's whole CPU (about 2 CPU-seconds per second); the tests
only need urgent activity well above the module's threshold, so this writes at
a paced rate over a fixed set of objects (memstore keeps every byte in RAM).

    python3 harness/paced_writer.py CEPH_CONF POOL OPS SECS [READS]
"""
from __future__ import annotations

import signal
import sys
import time

import rados  # type: ignore[import-not-found]

OBJECTS = 256
PAYLOAD = b"u" * 4096


def main() -> int:
    conf, pool, ops, secs = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    reads = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    handle = rados.Rados(conffile=conf, name="client.admin")
    handle.connect(timeout=30)
    ioctx = handle.open_ioctx(pool)
    try:
        if reads > 0:  # something to read
            for i in range(OBJECTS):
                ioctx.write_full(f"paced_{i}", PAYLOAD)
        start = time.monotonic()
        n = 0
        while time.monotonic() - start < secs:
            # reads spread evenly: op n reads when the running count of reads steps up
            if int((n + 1) * reads) > int(n * reads):
                ioctx.read(f"paced_{n % OBJECTS}", len(PAYLOAD))
            else:
                ioctx.write_full(f"paced_{n % OBJECTS}", PAYLOAD)
            n += 1
            # on schedule, not after each write: a slow write is caught up after
            ahead = start + n / ops - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
    finally:
        ioctx.close()
        handle.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
