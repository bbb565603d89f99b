"""JSON-lines files read by Arrow's parser, for loaders that build columns.

:func:`read_jsonl_table` gives the rows :func:`~realitycheck.datasets._io.read_jsonl`
yields, as a table of the named text fields, without a Python object per line.
It only answers for a plain file, where both readers agree: UTF-8, one JSON
object per line, each line opening with ``{`` (no byte-order mark, no blank
line, so row ``i`` is line ``i + 1``), every named field present as a string,
no key repeated. For any other file it returns ``None``, and the caller reads
the file with :func:`~realitycheck.datasets._io.read_jsonl`, which accepts
blank lines and names the line and field of any error.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.json as pa_json

__all__ = ["read_jsonl_table"]


def _plain_lines(data: bytes) -> int | None:
    """The number of lines of ``data``, or None unless it is UTF-8 and every line opens with ``{``.

    Lines as :func:`~realitycheck.datasets._io.split_lines` cuts them (at LF).
    A line that opens with ``{`` is not blank, so
    :func:`~realitycheck.datasets._io.read_jsonl` parses
    every line; a byte-order mark, a blank line or a line that opens with
    anything else (even whitespace) makes the caller read line by line.
    """
    try:
        data.decode("utf-8")  # Arrow's parser does not check the fields it skips
    except UnicodeDecodeError:
        return None
    breaks = data.count(b"\n") - data.endswith(b"\n")
    if not data.startswith(b"{") or data.count(b"\n{") != breaks:
        return None
    return breaks + 1


def read_jsonl_table(path: Path, fields: Sequence[str]) -> pa.Table | None:
    """The text ``fields`` of every line of a plain JSON-lines file, or ``None``.

    Args:
        path: The file.
        fields: The fields to read; each must be a string on every line.

    Returns:
        One row per line (row ``i`` is line ``i + 1``) with one string column per
        field; ``None`` when the file is not plain (see the module docstring),
        to be read line by line instead.
    """
    data = path.read_bytes()
    schema = pa.schema([(name, pa.string()) for name in fields])
    options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    try:
        table = pa_json.read_json(io.BytesIO(data), parse_options=options)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if table.num_rows != _plain_lines(data) or any(c.null_count for c in table.columns):
        return None
    return table.select(list(fields)).combine_chunks()
