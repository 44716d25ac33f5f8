"""Checks of plain input values, each failing with a message that names the
value and what it must be. Pure."""
from __future__ import annotations

import math
from typing import Callable


def whole(name: str, value: object, low: int, error: Callable[[str], Exception]) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise error(f"{name}: must be a whole number, not {value!r}")
    if value < low:
        raise error(f"{name}: must be >= {low}, not {value}")


def number_in(name: str, value: object, error: Callable[[str], Exception],
              low: float | None = None, high: float | None = None,
              low_open: bool = False, high_open: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise error(f"{name}: must be a number, not {value!r}")
    if not math.isfinite(value):
        raise error(f"{name}: must be finite, not {value!r}")
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        close = ")" if high_open or high is None else "]"
        interval = f"{'(' if low_open else '['}{lo}, {hi}{close}"
        raise error(f"{name}: must be in {interval}, not {value:g}")
