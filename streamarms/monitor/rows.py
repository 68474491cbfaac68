"""The monitor's keys in a checkpoint (issue 13): the columns of :class:`~.table.KeyTable` written as one
binary *row* per key, never as a dict per key.

The ``keys`` section of a snapshot (``ContinuousMonitor.snapshot()``)::

    {"format": "key-rows", "version": 1, "byteorder": "little",
     "fields": [["group", "<i8", 1], ["samples", "<i8", 1], ..., ["rule.stat", "<f8", 12], ...,
                ["seen", "<i8", 1]],        # the monitor's: its member's last record in its group
     "row_bytes": 243, "group_names": ["default", ...],
     "names": ["k0", "k1", ...],                 # the keys, in the table's order
     "rows": ["AAAAAAAA...", ...]}               # per key: base64 of its fields packed in that order

A row packs the key's value of every column (``fields``: name, numpy dtype with its byte order, values
per key), zero-padded to a multiple of 3 bytes (``row_bytes``) so that every row is whole base64
characters: bits are copied, never printed, so a restore is exact (NaN, ``-0.0`` included). A row per key
(not a string per column) because the incremental store (:mod:`streamarms.chunked_checkpoint`) writes
the list elements that changed: a key that got a record changes its row only.

* :class:`KeyRows` is the ``rows`` list as a :class:`~streamarms.json_lazy.LazyArray`: no row exists until
  the snapshot is encoded, then a batch of rows is made at a time from the columns (numpy gathers); the
  snapshot of a million keys holds its ``names`` (references), the slots and the ``seen`` column, ~24 MB,
  instead of ~2.5 GB of dicts. It reads the live columns, so it must be encoded before the monitor takes
  another record or forgets a key (as a checkpoint is: in the loop, or in a forked child): after that it
  raises ``RuntimeError``, never encodes a state that is not the snapshot's. (Reading a key's evidence
  narrows its cached interval, a change that is not counted: the rows then carry the narrowed one, which
  the live monitor continues from too.)
* :func:`load_rows` puts ``names`` and ``rows`` (lists, or lazily parsed arrays) into an empty table a
  batch at a time; a row of the wrong size, bad base64 or a value out of its domain (a state code, a
  group index, a level) is a ``ValueError`` naming the key.

>>> from streamarms.models import make_model
>>> from streamarms.monitor.table import KeyTable
>>> t = KeyTable(make_model("bernoulli"), alpha=0.01, rule=None)
>>> i = t.add("a", "g"); t.samples[i] = 5; t.since[i] = -0.0
>>> sec = key_rows(t, lambda: 0)
>>> len(sec["rows"]), len(sec["rows"][0]) == sec["row_bytes"] // 3 * 4
(1, True)
>>> u = KeyTable(make_model("bernoulli"), alpha=0.01, rule=None)
>>> _ = load_rows(u, sec); u.samples[0], str(u.since[0]), u.group_names
(5, '-0.0', ['g'])
"""

from __future__ import annotations

import base64
import binascii
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any

import numpy as np

from ..json_lazy import LazyArray

if TYPE_CHECKING:
    from .table import KeyTable

__all__ = ["KeyRows", "key_rows", "load_rows", "members_by_seen", "FORMAT", "VERSION"]

FORMAT, VERSION = "key-rows", 1
#: rows made (or read) at a time
BATCH = 8192
#: the stored dtype of each array typecode (little-endian, fixed size)
_STORED = {"q": "<i8", "l": "<i8", "d": "<f8", "b": "i1"}


def spec(table: KeyTable) -> list[tuple[str, array[Any], int]]:
    """``(name, column, values per key)`` of every column of ``table``, in row order."""
    from .columns import EDetectorColumns, WindowColumns
    t = table
    out: list[tuple[str, array[Any], int]] = [
        ("group", t.group, 1), ("samples", t.samples, 1), ("restarts", t.restarts, 1), ("epoch", t.epoch, 1),
        ("state", t.state, 1), ("flagged", t.flagged, 1), ("since", t.since, 1), ("base_lo", t.base_lo, 1),
        ("base_hi", t.base_hi, 1), ("ealpha", t.ealpha, 1)]
    out += [(f"segment.{f}", c, 1) for f, c in zip(t.seg.fields, t.seg.cols)]
    out += [(f"epoch_cs.{f}", c, 1) for f, c in zip(t.ecs.fields, t.ecs.cols)]
    if isinstance(t.rule, EDetectorColumns):
        out += [("rule.stat", t.rule.stat, t.rule.width), ("rule.restarts", t.rule.restarts, 1)]
    elif isinstance(t.rule, WindowColumns):
        out += [("rule.count", t.rule.count, 1), ("rule.restarts", t.rule.restarts, 1)]
    return out


#: columns a snapshot adds to the table's own: ``(name, array)``, one value per key
Extra = Sequence[tuple[str, Any]]


def _columns(table: KeyTable, extra: Extra = ()) -> list[tuple[str, Any, int]]:
    """:func:`spec` of ``table`` followed by the snapshot's ``extra`` columns (one value per key): a row's layout."""
    return [*spec(table), *((n, c, 1) for n, c in extra)]


def _fields(table: KeyTable, extra: Extra = ()) -> list[list[Any]]:
    return [[name, _STORED[col.typecode], per] for name, col, per in _columns(table, extra)]


def _dtype(fields: list[list[Any]]) -> np.dtype[Any]:
    """The packed record of ``fields`` (stored dtypes), zero-padded to whole base64 characters."""
    parts: list[Any] = [(name, code, (per,)) if per > 1 else (name, code) for name, code, per in fields]
    dt = np.dtype(parts)
    pad = -dt.itemsize % 3
    return np.dtype(parts + [("", f"V{pad}")]) if pad else dt


class KeyRows(LazyArray):
    """The ``rows`` of a snapshot, made from the live columns when encoded (module docstring).

    ``version``: returns the monitor's state version; the rows are those of the version at construction,
    so any other raises ``RuntimeError``.
    """

    def __init__(self, table: KeyTable, slots: np.ndarray[Any, Any], version: Callable[[], Any],
                 extra: Extra = ()) -> None:
        super().__init__(len(slots), self._all, " (key rows of the monitor's columns)")
        self.table, self.slots, self._version, self.extra = table, slots, version, list(extra)
        self._at = version()
        self.fields = _fields(table, extra)
        self.dtype = _dtype(self.fields)
        self.chars = self.dtype.itemsize // 3 * 4

    def rows(self, a: int, b: int) -> list[str]:
        """Rows ``a`` to ``b`` (``0 <= a <= b <= len``)."""
        if self._version() != self._at:
            raise RuntimeError("a snapshot of the monitor's keys was encoded after the monitor changed: encode "
                               "(save) a snapshot before the monitor takes another record")
        idx = self.slots[a:b]
        rec = np.zeros(len(idx), dtype=self.dtype)
        for name, col, per in _columns(self.table, self.extra):
            src = np.frombuffer(col, dtype=np.dtype(col.typecode)) if len(col) else np.zeros(0, np.dtype(col.typecode))
            rec[name] = (src.reshape(-1, per) if per > 1 else src)[idx]
            del src  # the column may grow again: no buffer of it may outlive this call
        text = base64.b64encode(rec.tobytes()).decode("ascii")
        n = self.chars
        return [text[j:j + n] for j in range(0, len(text), n)]

    def _all(self) -> Iterator[str]:
        for a in range(0, len(self), BATCH):
            yield from self.rows(a, min(a + BATCH, len(self)))

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            a, b, step = i.indices(len(self))
            if step == 1:
                return self.rows(a, max(a, b))
            return self.rows(0, len(self))[i]
        j = i + len(self) if i < 0 else i
        if not 0 <= j < len(self):
            raise IndexError("KeyRows index out of range")
        return self.rows(j, j + 1)[0]


def key_rows(table: KeyTable, version: Callable[[], Any], extra: Extra = ()) -> dict[str, Any]:
    """The ``keys`` section of a snapshot of ``table`` (module docstring); ``extra``: columns of the
    snapshot's own (by slot) written after the table's."""
    slots = np.fromiter(table.slot.values(), dtype=np.int64, count=len(table.slot))
    rows = KeyRows(table, slots, version, extra)
    return {"format": FORMAT, "version": VERSION, "byteorder": "little", "fields": rows.fields,
            "row_bytes": rows.dtype.itemsize, "group_names": list(table.group_names), "names": list(table.slot),
            "rows": rows}


def load_rows(table: KeyTable, sec: dict[str, Any], extra: tuple[str, ...] = ()) -> dict[str, array[int]]:
    """Put the keys of section ``sec`` into the empty ``table`` (module docstring); ``ValueError`` if the
    section is not this table's layout or is damaged. ``extra``: the names of the snapshot's own ``int64``
    columns (:func:`key_rows`), returned by name (in the table's slot order), unchecked."""
    if sec.get("format") != FORMAT or sec.get("version") != VERSION or sec.get("byteorder") != "little":
        raise ValueError(f"unknown keys format {sec.get('format')!r} version {sec.get('version')!r} (this version "
                         f"reads {FORMAT!r} version {VERSION} and the per-key list of earlier versions)")
    if len(table.slot) or len(table.group):
        raise ValueError("load_rows needs an empty table")
    out = {name: array("q") for name in extra}
    want = _fields(table, list(out.items()))
    if [list(f) for f in sec["fields"]] != want:
        raise ValueError(f"the checkpoint's key columns {sec['fields']} are not this monitor's {want} (another "
                         "model or restart rule)")
    dt = _dtype(want)
    if sec.get("row_bytes") != dt.itemsize:
        raise ValueError(f"the checkpoint's rows have {sec.get('row_bytes')!r} bytes, its fields make {dt.itemsize}")
    for g in sec["group_names"]:
        if not isinstance(g, str):
            raise ValueError(f"group name {g!r} is not a string")
        table.group_index(g)
    if len(table.group_names) != len(sec["group_names"]):
        raise ValueError("a group name appears twice in the checkpoint")
    names, rows = sec["names"], sec["rows"]
    if len(names) != len(rows):
        raise ValueError(f"the checkpoint has {len(names)} key names and {len(rows)} rows")
    cols = spec(table)
    every = _columns(table, list(out.items()))
    chars = dt.itemsize // 3 * 4
    ngroups = len(table.group_names)
    it_names = iter(names)  # shared with the other containers naming the keys (the runner's registry)
    it_rows = rows.iter_raw() if isinstance(rows, LazyArray) else iter(rows)  # each used once: not shared
    while True:
        ks, rs = list(islice(it_names, BATCH)), list(islice(it_rows, BATCH))
        if not ks:
            break
        for k, r in zip(ks, rs):
            if not isinstance(k, str) or not isinstance(r, str) or len(r) != chars:
                raise ValueError(f"key {k!r}: its row is not a string of {chars} base64 characters")
        try:
            rec = np.frombuffer(base64.b64decode("".join(rs), validate=True), dtype=dt)
        except (binascii.Error, ValueError):
            raise ValueError(f"a row of keys {ks[0]!r}..{ks[-1]!r} is not base64") from None
        _check(rec, ks, ngroups, cols)
        first = len(table.group)
        for name, col, _ in every:
            col.frombytes(rec[name].astype(np.dtype(col.typecode)).tobytes())
        slot = table.slot
        for j, k in enumerate(ks, start=first):
            if slot.setdefault(k, j) != j:
                raise ValueError(f"key {k!r} appears twice in the snapshot")
    return out


def _check(rec: np.ndarray[Any, Any], keys: list[str], ngroups: int, cols: list[tuple[str, array[Any], int]]) -> None:
    """``ValueError`` naming the first key with a value outside its field's domain."""
    bad = (rec["group"] < 0) | (rec["group"] >= ngroups) | (rec["state"] < 0) | (rec["state"] > 2)
    bad |= (rec["flagged"] != 0) & (rec["flagged"] != 1)
    ea = rec["ealpha"]
    with np.errstate(invalid="ignore"):
        bad |= ~(np.isnan(ea) | ((ea > 0) & (ea < 1)))
    for name, col, _ in cols:
        if col.typecode in "ql" and name != "group":
            v = rec[name]
            bad |= (v < 0).reshape(len(rec), -1).any(axis=1)
    if bad.any():
        j = int(np.argmax(bad))
        row = {name: rec[name][j].tolist() for name, _, _ in cols}
        raise ValueError(f"key {keys[j]!r}: a value out of range in its row {row}")


def members_by_seen(table: KeyTable, seen: array[int]) -> dict[str, OrderedDict[str, int]]:
    """Each group's members (the keys with ``seen >= 0``) by their last record, least recent first;
    ``ValueError`` if two members of a group have the same."""
    sv = np.frombuffer(seen, dtype=np.int64) if len(seen) else np.zeros(0, np.int64)
    order = np.nonzero(sv >= 0)[0]
    order = order[np.argsort(sv[order], kind="stable")]
    names, gnames, grp = list(table.slot), table.group_names, table.group
    out: dict[str, OrderedDict[str, int]] = {}
    for i, v in zip(order.tolist(), sv[order].tolist()):
        ls = out.get(gnames[grp[i]])
        if ls is None:
            ls = out[gnames[grp[i]]] = OrderedDict()
        elif next(reversed(ls.values())) == v:
            raise ValueError(f"key {names[i]!r}: two members of group {gnames[grp[i]]!r} were last seen at record {v}")
        ls[names[i]] = v
    if (sv < -1).any():
        raise ValueError("a key row has a negative last record (seen)")
    return out
