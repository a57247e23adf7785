"""How the file sinks encode a buffer (``actors.connectors._lines``)."""

from __future__ import annotations

import datetime
import json

from actors.connectors import _lines


def test_json_lines_are_one_document_per_record_that_any_reader_parses() -> None:
    when = datetime.date(2026, 1, 2)
    records = [("a", 1, 0.5), {"k": [1, 2]}, "x", None, when]
    lines = _lines(records, "json").decode().splitlines()
    assert [json.loads(line) for line in lines] == [
        ["a", 1, 0.5],
        {"k": [1, 2]},
        "x",
        None,
        "2026-01-02",
    ]
    assert _lines([], "json") == b""


def test_text_lines_are_each_records_str() -> None:
    assert _lines([("a", 1), 2], "text") == b"('a', 1)\n2\n"
    assert _lines([], "text") == b""
