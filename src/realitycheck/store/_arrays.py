"""Arrow arrays from and to numpy and Python values, without importing pandas.

pyarrow (26) imports pandas, when it is installed, the first time it converts
anything: ``pa.array`` of a list or of a numpy array, ``pa.scalar``, a Python
value handed to a compute function, ``Array.to_numpy``. That import takes
about half a second, longer than a whole label stage of ROUGE-L on 22,000
answers, so the label and detect stages convert through these functions,
which build arrays from their buffers and read buffers back. Each returns the
same array (or values) as the pyarrow call it stands for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["from_numpy", "from_texts", "scalar", "to_numpy"]

_TYPES = {
    np.dtype(np.bool_): pa.bool_(),
    np.dtype(np.int32): pa.int32(),
    np.dtype(np.int64): pa.int64(),
    np.dtype(np.float64): pa.float64(),
}


_NUMPY: dict[pa.DataType, np.dtype[Any]] = {
    pa.bool_(): np.dtype(np.bool_),
    **{pa.type_for_alias(n): np.dtype(n) for n in ("int8", "int16", "int32", "int64")},
    **{pa.type_for_alias(f"u{n}"): np.dtype(f"u{n}") for n in ("int8", "int16", "int32")},
    pa.uint64(): np.dtype(np.uint64),
    pa.float32(): np.dtype(np.float32),
    pa.float64(): np.dtype(np.float64),
}


def _bits(values: np.ndarray) -> pa.Buffer:
    return pa.py_buffer(np.packbits(np.asarray(values, dtype=bool), bitorder="little"))


def from_numpy(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    """``pa.array(values, mask=~valid)``: a bool, int32, int64 or float64 array; null if not valid.

    Raises:
        TypeError: ``values`` is not one-dimensional or of another dtype.
    """
    values = np.ascontiguousarray(values)
    kind = _TYPES.get(values.dtype)
    if kind is None or values.ndim != 1:
        raise TypeError(f"Expected a 1-D bool, int32, int64 or float64 array. Got {values.dtype}.")
    data = _bits(values) if kind == pa.bool_() else pa.py_buffer(values)
    if valid is None:
        return pa.Array.from_buffers(kind, len(values), [None, data], null_count=0)
    valid = np.asarray(valid, dtype=bool)
    nulls = int(len(valid) - np.count_nonzero(valid))
    return pa.Array.from_buffers(kind, len(values), [_bits(valid), data], null_count=nulls)


def from_texts(texts: Sequence[str | None]) -> pa.Array:
    """``pa.array(texts, pa.string())``: a string array, null where a text is ``None``."""
    try:
        joined = "".join(texts)  # type: ignore[arg-type]
    except TypeError:  # a None among the texts
        joined = None
    if joined is not None and joined.isascii():
        # One byte per character: the lengths are the offsets, one encode does it all.
        lengths = np.fromiter(map(len, texts), np.int64, len(texts))  # type: ignore[arg-type]
        return _strings(lengths, joined.encode("ascii"), None)
    encoded = [b"" if t is None else t.encode("utf-8") for t in texts]
    lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
    valid = np.fromiter((t is not None for t in texts), bool, len(encoded))
    return _strings(lengths, b"".join(encoded), None if valid.all() else valid)


def _strings(lengths: np.ndarray, data: bytes, valid: np.ndarray | None) -> pa.Array:
    """A string array of the UTF-8 ``data`` cut at ``lengths`` (bytes), null where not valid."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > np.iinfo(np.int32).max:
        buffers = [None if valid is None else _bits(valid), pa.py_buffer(offsets)]
        large = pa.Array.from_buffers(
            pa.large_string(), len(lengths), [*buffers, pa.py_buffer(data)]
        )
        return large.cast(pa.string())
    nulls = 0 if valid is None else int(len(valid) - np.count_nonzero(valid))
    buffers = [None if valid is None else _bits(valid), pa.py_buffer(offsets.astype(np.int32))]
    return pa.Array.from_buffers(
        pa.string(), len(lengths), [*buffers, pa.py_buffer(data)], null_count=nulls
    )


def scalar(value: str | bool | int | float) -> pa.Scalar:
    """``pa.scalar(value)``: a string, bool, int64 or float64 scalar."""
    if isinstance(value, str):
        return from_texts([value])[0]
    return from_numpy(np.array([value]))[0]


def to_numpy(array: pa.Array | pa.ChunkedArray, fill: Any = None) -> np.ndarray:
    """``array.fill_null(fill).to_numpy()`` of a bool, integer or float array.

    Raises:
        TypeError: The array is of another type.
        ValueError: The array has nulls and no ``fill`` is given.
    """
    whole = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    n, start = len(whole), whole.offset
    kind = _NUMPY.get(whole.type)
    if kind is None:
        raise TypeError(f"Expected a bool, integer or float array. Got {whole.type}.")
    if n == 0:
        return np.zeros(0, dtype=kind)
    validity, data = whole.buffers()[:2]
    if kind == np.bool_:
        bits = np.unpackbits(np.frombuffer(data, np.uint8), bitorder="little")
        values = bits[start : start + n].astype(bool)
    else:
        values = np.frombuffer(data, kind)[start : start + n].copy()
    if whole.null_count:
        if fill is None:
            raise ValueError(f"The array has {whole.null_count} nulls; give a fill value.")
        bits = np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")
        values[~bits[start : start + n].astype(bool)] = fill
    return values
