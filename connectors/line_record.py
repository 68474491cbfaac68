"""The record a line of a ``--rewards-file`` becomes: :data:`JsonlRecord` (a JSON line's,
:mod:`~streamarms.connectors.files`; a table row's, :mod:`~streamarms.connectors.csv_lines`).

>>> JsonlRecord("f", 0, 3, None, b"eu", b'{"reward":1}', None, {"reward": 1}).offset
3
"""

from __future__ import annotations

from collections import namedtuple

__all__ = ["JsonlRecord"]

#: a record of a JSONL file: the fields of kafka-python's ConsumerRecord that streamarms reads, and
#: ``parsed``: the value as parsing the line already gave it (a JSON object parsed by orjson, at most
#: ``decoder._SHORT`` bytes), else ``None`` -- the daemon hands it to the codec, which then does not
#: parse the value a second time
JsonlRecord = namedtuple("JsonlRecord", "topic partition offset timestamp key value headers parsed")
