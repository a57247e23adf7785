"""Java's view of Python values: ``toString``, ``hashCode`` and 32-bit arithmetic.

PyFlink hands records to Java: its print sink writes Java's ``toString`` of them, and its
keyed streams route a key by Java's ``hashCode`` of the key as a Java object (a ``Row``
holding the key: pickled bytes unless a ``key_type`` is given). These functions compute both
from the Python value and what Java type it becomes; the type information classes
(``ckptsim.pyflink.common.typeinfo``) decide which.

Floating point values print as Java 17's ``Double.toString`` / ``Float.toString`` (Flink 2.3
runs on Java 17 here): whole numbers below 2**63 with their exact digits (``123456789f`` is
``1.23456792E8``), other values with the shortest digits that identify them (Java 17 prints
a few of those with more digits, e.g. ``2e23`` as ``1.9999999999999998E23``: not reproduced),
in plain notation from ``1.0E-3`` up to below ``1.0E7`` and in Java's scientific notation
(``1.0E10``) outside it.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable
from decimal import Decimal

_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


def int32(value: int) -> int:
    """``value`` wrapped to a Java ``int`` (two's complement, 32 bits)."""
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def int64(value: int) -> int:
    """``value`` wrapped to a Java ``long``."""
    value &= _MASK64
    return value - (1 << 64) if value & (1 << 63) else value


# --- toString -----------------------------------------------------------------------------------


def _java_digits(digits: str, exponent: int, *, negative: bool) -> str:
    """Java's layout of a decimal ``d.ddd x 10^exponent`` (``digits`` without trailing zeros)."""
    sign = "-" if negative else ""
    if -3 <= exponent < 7:
        if exponent >= 0:
            whole = digits[: exponent + 1].ljust(exponent + 1, "0")
            fraction = digits[exponent + 1 :] or "0"
        else:
            whole, fraction = "0", "0" * (-exponent - 1) + digits
        return f"{sign}{whole}.{fraction}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _special(value: float) -> str | None:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    return None


def _decimal_parts(text: str) -> tuple[str, int]:
    """The significant digits (no trailing zeros) and the exponent of the first digit."""
    _, digits, exp = Decimal(text).as_tuple()
    assert isinstance(exp, int)
    as_text = "".join(map(str, digits)).lstrip("0")
    exponent = len(as_text) - 1 + exp
    return as_text.rstrip("0") or "0", exponent


def _integer_digits(magnitude: float, significant_bits: int) -> tuple[str, int] | None:
    """Java 17's digits of a whole number below 2**63 (``FloatingDecimal``'s fast path: the
    exact integer, less the low digits a value of ``significant_bits`` bits cannot hold,
    rounded half up), or None for other values (which print their shortest digits)."""
    if not magnitude.is_integer() or not 1 <= magnitude < 2.0**63:
        return None
    whole = int(magnitude)
    bin_exp = whole.bit_length() - 1
    p2 = bin_exp - significant_bits - 1
    insignificant = len(str(1 << p2)) - 1 if 1 < p2 < 64 else 0
    if insignificant:
        scale = 10**insignificant
        whole, residue = divmod(whole, scale)
        if residue >= scale // 2:
            whole += 1
    text = str(whole)
    exponent = len(text) - 1 + insignificant
    return text.rstrip("0") or "0", exponent


def double_to_string(value: float) -> str:
    """Java's ``Double.toString`` (as Java 17 prints it, which Flink 2.3 runs on: whole
    numbers below 2**63 exactly, e.g. 2**60 as ``1.15292150460684698E18``; other values with
    their shortest digits)."""
    special = _special(value)
    if special is not None:
        return special
    parts = _integer_digits(abs(value), 53) or _decimal_parts(repr(abs(value)))
    return _java_digits(*parts, negative=value < 0)


def to_float32(value: float) -> float:
    """The 32-bit float nearest to ``value`` (what Java's ``float`` holds), as a Python float."""
    try:
        result: float = struct.unpack(">f", struct.pack(">f", value))[0]
    except OverflowError:  # beyond float32's range: Java rounds to infinity
        return math.copysign(math.inf, value)
    return result


def float_to_string(value: float) -> str:
    """Java's ``Float.toString`` of the 32-bit float ``value`` holds."""
    value = to_float32(value)
    special = _special(value)
    if special is not None:
        return special
    magnitude = abs(value)
    whole = _integer_digits(magnitude, 24)  # Java 17: 123456789f prints 1.23456792E8
    if whole is not None:
        return _java_digits(*whole, negative=value < 0)
    for precision in range(9):  # the shortest decimal that reads back as the same float
        text = f"{magnitude:.{precision}e}"
        if to_float32(float(text)) == magnitude:
            break
    digits, exponent = _decimal_parts(text)
    return _java_digits(digits, exponent, negative=value < 0)


def boolean_to_string(value: bool) -> str:
    return "true" if value else "false"


# --- hashCode -----------------------------------------------------------------------------------


def string_hash(value: str) -> int:
    """``String.hashCode``: over UTF-16 code units."""
    h = 0
    data = value.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & _MASK32
    return int32(h)


def long_hash(value: int) -> int:
    """``Long.hashCode``."""
    bits = value & _MASK64
    return int32(bits ^ (bits >> 32))


def double_hash(value: float) -> int:
    """``Double.hashCode`` (``doubleToLongBits``: one NaN)."""
    bits = (
        0x7FF8000000000000
        if math.isnan(value)
        else struct.unpack(">q", struct.pack(">d", value))[0]
    )
    return long_hash(bits)


def float_hash(value: float) -> int:
    """``Float.hashCode`` (``floatToIntBits``: one NaN)."""
    value = to_float32(value)
    if math.isnan(value):
        return 0x7FC00000
    bits: int = struct.unpack(">i", struct.pack(">f", value))[0]
    return bits


def boolean_hash(value: bool) -> int:
    return 1231 if value else 1237


def bytes_hash(value: bytes) -> int:
    """``Arrays.hashCode(byte[])`` (Java's bytes are signed)."""
    h = 1
    for b in value:
        h = (31 * h + (b - 256 if b > 127 else b)) & _MASK32
    return int32(h)


def big_integer_hash(value: int) -> int:
    """``BigInteger.hashCode``: over the magnitude's 32-bit words, times the sign."""
    magnitude = abs(value)
    words = []
    while magnitude:
        words.append(magnitude & _MASK32)
        magnitude >>= 32
    h = 0
    for word in reversed(words):
        h = (31 * h + word) & _MASK32
    sign = (value > 0) - (value < 0)
    return int32(h * sign)


def big_decimal_hash(value: Decimal) -> int:
    """``BigDecimal.hashCode``: ``31 * unscaledValue.hashCode() + scale``."""
    sign, digits, exp = value.as_tuple()
    assert isinstance(exp, int)
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    return int32(31 * big_integer_hash(unscaled) + (-exp))


def list_hash(hashes: Iterable[int]) -> int:
    """``List.hashCode`` of elements with these hash codes (0 for null)."""
    h = 1
    for code in hashes:
        h = (31 * h + code) & _MASK32
    return int32(h)


def tuple_hash(hashes: Iterable[int]) -> int:
    """Flink's ``TupleN.hashCode`` (fields' hash codes, 0 for null)."""
    h = 0
    for code in hashes:
        h = (31 * h + code) & _MASK32
    return int32(h)


def row_header(kind: int, nulls: list[bool]) -> bytes:
    """The first bytes of Flink's ``RowSerializer``: the kind in the two high bits, then one
    bit per field that is null, eight bits a byte."""
    bits = [bool(kind & 1), bool(kind & 2), *nulls]
    out = bytearray()
    for start in range(0, len(bits), 8):
        byte = 0
        for i, bit in enumerate(bits[start : start + 8]):
            if bit:
                byte |= 0x80 >> i
        out.append(byte)
    return bytes(out)


def string_bytes(value: str) -> bytes:
    """Flink's ``StringSerializer`` (``StringValue.writeString``): the length + 1, then each
    UTF-16 unit, in 7-bit groups (low group first, high bit: more follow)."""
    data = value.encode("utf-16-be")
    out = bytearray()

    def varint(number: int) -> None:
        while number >= 0x80:
            out.append((number | 0x80) & 0xFF)
            number >>= 7
        out.append(number)

    varint(len(data) // 2 + 1)
    for i in range(0, len(data), 2):
        varint(data[i] << 8 | data[i + 1])
    return bytes(out)


def row_hash(kind: int, fields: Iterable[int | None]) -> int:
    """Flink's ``Row.hashCode`` from its kind and its fields' hash codes (None: a null field):
    ``31 * kind`` plus the fields' deep hash, in which a field counts ``31 + hashCode``
    (measured against Flink 2.3: ``Row.of("a")`` hashes to 159, ``Row.of(null)`` to 31,
    ``Row.of("a", "b")`` to 5058)."""
    h = 1
    for code in fields:
        h = (31 * h + (0 if code is None else 31 + code)) & _MASK32
    return int32(31 * kind + h)
