"""The module's own tick duration, as a cumulative histogram (Prometheus style)."""
from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any


class TickHistogram:
    def __init__(self, buckets: Sequence[float]) -> None:
        self._bounds = tuple(sorted(buckets))
        self._counts = [0] * (len(self._bounds) + 1)  # the last one: +Inf
        self._sum = 0.0
        self._lock = threading.Lock()

    def observe(self, seconds: float) -> None:
        with self._lock:
            self._sum += seconds
            for i, bound in enumerate(self._bounds):
                if seconds <= bound:
                    self._counts[i] += 1
                    return
            self._counts[-1] += 1

    def to_dict(self) -> dict[str, Any]:
        """{"count", "sum", "buckets": {upper bound: cumulative count, "+Inf": count}}."""
        with self._lock:
            buckets: dict[str, int] = {}
            running = 0
            for bound, n in zip(self._bounds, self._counts):
                running += n
                buckets[f"{bound:g}"] = running
            running += self._counts[-1]
            buckets["+Inf"] = running
            return {"count": running, "sum": round(self._sum, 6), "buckets": buckets}
