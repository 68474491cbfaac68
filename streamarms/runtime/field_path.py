"""A field of a JSON value by name, a nested one by a dotted path: :class:`FieldPath` (``--reward-field``,
``--key-field``).

Logs nest their fields (``{"http": {"status": 503}, "host": {"name": "h1"}}``: Elastic Common Schema,
OpenTelemetry, most structured loggers), and some write the same field flat under its dotted name
(``{"http.status": 503}``). A field name with dots reads either: the object's own key of that name if it
has one, else the nested field the path names (``http.status``: the ``status`` of the ``http`` object).
A name without dots is the object's key, as always. A path through something that is not an object
(``{"http": 5}``) names no field: the field is missing, as when a key is absent.

>>> status = FieldPath("http.status")
>>> status({"http": {"status": 503}}), status({"http.status": 200}), status.get({"http": 5})
(503, 200, None)
>>> FieldPath("reward")({"reward": 1})
1
"""

from __future__ import annotations

from typing import Any

__all__ = ["FieldPath"]


class FieldPath:
    """The field ``name`` of a JSON object (module docstring): calling it gives the field's value and raises
    :class:`KeyError` when the object has no such field, as ``obj[name]`` does for a plain name; :meth:`get`
    gives ``default`` instead.

    >>> FieldPath("a.b.c")({"a": {"b": {"c": [1]}}})
    [1]
    >>> FieldPath("a.b")({"a": {}})
    Traceback (most recent call last):
    ...
    KeyError: 'a.b'
    """

    __slots__ = ("name", "parts")

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"a field needs a name, got {name!r}")
        self.name = name
        #: the path's steps, for a name with dots (``None``: the object's own key only)
        self.parts: tuple[str, ...] | None = tuple(name.split(".")) if "." in name else None
        if self.parts is not None and not all(self.parts):
            raise ValueError(f"field path {name!r} has an empty step (a dot at its start or end, or two dots in a row)")

    @property
    def nested(self) -> bool:
        """Whether the name is a path (has dots)."""
        return self.parts is not None

    def __call__(self, obj: dict[str, Any]) -> Any:
        try:
            return obj[self.name]
        except KeyError:
            if self.parts is None:
                raise
        x: Any = obj
        for step in self.parts:
            if type(x) is not dict or step not in x:
                raise KeyError(self.name)
            x = x[step]
        return x

    def get(self, obj: dict[str, Any], default: Any = None) -> Any:
        try:
            return self(obj)
        except KeyError:
            return default

    def __repr__(self) -> str:
        return f"FieldPath({self.name!r})"
