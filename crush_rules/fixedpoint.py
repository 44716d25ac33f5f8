"""CRUSH weights are 16.16 fixed point; crushtool text carries them as decimals.

crushtool parses a weight with ``strtof`` and multiplies by 0x10000 in single
precision, then truncates; its decompiler prints ``%.3f``.  So a weight
survives text only if we print it with care, and a weight survives a
decompile -> compile round trip only if it is a "3-decimal" value.
"""

import struct

ONE = 0x10000
# float32 has a 24-bit mantissa: larger fixed-point values cannot be written exactly.
EXACT_LIMIT = 1 << 24


def _float32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


def parse_weight(text: str) -> int:
    """The fixed-point value crushtool stores for a weight written as ``text``."""
    return int(_float32(_float32(float(text)) * ONE))


def from_thousandths(thousandths: int) -> int:
    return parse_weight(f"{thousandths / 1000:.3f}")


def quantize(value: float) -> int:
    """The 3-decimal fixed-point weight nearest ``value`` (a float weight, 1.0 = 0x10000).

    A positive value never becomes 0: a device that should get some data keeps
    the smallest weight the text format can carry.
    """
    if value <= 0:
        return 0
    return from_thousandths(max(1, round(value * 1000)))


def is_round_trip_safe(fixed: int) -> bool:
    """True when crushtool's ``%.3f`` decompile and recompile keep ``fixed``."""
    return from_thousandths(round(fixed * 1000 / ONE)) == fixed


def format_weight(fixed: int) -> str:
    """Text that crushtool compiles back to exactly ``fixed``.

    Raises ValueError when no such text exists (values of 256.0 and more that
    are not multiples of the float32 step).
    """
    if fixed < 0:
        raise ValueError(f"negative weight {fixed}")
    if is_round_trip_safe(fixed):
        return f"{round(fixed * 1000 / ONE) / 1000:.3f}"
    # fixed / 2**16 has at most 16 decimals: print them all, never an exponent.
    text = f"{fixed / ONE:.16f}".rstrip("0")
    if parse_weight(text) != fixed:
        raise ValueError(f"weight {fixed / ONE} cannot be written exactly in crushtool text")
    return text


def nearest_text_weight(fixed: int) -> tuple[str, int]:
    """Text for ``fixed``, or for the nearest value crushtool can parse, and that value.

    Below 256.0 every 16.16 value can be written exactly.  From 256.0 up
    crushtool parses weights as float32 and keeps every 2nd, 4th, ... value
    (EXACT_LIMIT), so a class sum there may be off by up to 2**-15 relative to 1.0.
    """
    try:
        return format_weight(fixed), fixed
    except ValueError:
        text = f"{fixed / ONE:.16f}".rstrip("0")
        return text, parse_weight(text)
