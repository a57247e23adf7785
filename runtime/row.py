"""``Row`` and ``RowKind``: Flink's row record, as PyFlink spells it (``pyflink.common.Row``);
``TupleRow``: Spark's row record, as PySpark's ``pyspark.sql.Row`` behaves.

A row is an ordered list of field values, optionally with field names, and a kind (insert,
update before/after, delete: the changelog flag of the Table API). Records of a stream typed
``Types.ROW(...)`` / ``Types.ROW_NAMED(...)`` are rows; they travel between tasks and sit in
checkpoints (in-flight data, state), so the class lives here with the job model and
``runtime.serde`` writes it as data (``{"$ckptsim": "row", ...}``), never as pickle.

Behaviour follows PyFlink's ``Row``: fields by position (``row[0]``), by name (``row["id"]``,
``row.id``), ``Row(name="Alice", age=11)`` keeps the keywords' order, ``Row("name", "age")``
is a row "class" whose call makes named rows, equality compares kind, names and values.

``TupleRow`` is what the Spark bridge hands user functions for a DataFrame's rows: a tuple (so
``r[0]``, unpacking, ``==`` with a tuple and sorting work as for any tuple) whose fields also
have names (``r.user``, ``r["user"]``, ``r.asDict()``), as PySpark's ``Row``. The names live on
a class per list of names (``row_class``), not on each row, so a row costs what its tuple
costs. ``runtime.serde`` writes it, and a ``pyspark.sql.Row`` with names, as data
(``{"$ckptsim": "tuple_row", ...}``); a PySpark row comes back from a checkpoint as a
``TupleRow``, which behaves the same.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar


class RowKind(enum.Enum):
    """The kind of change a row stands for; ``str`` is Flink's short form (``+I``, ...)."""

    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3

    def __str__(self) -> str:
        return _SHORT[self.value]

    def short_string(self) -> str:
        return _SHORT[self.value]


_SHORT = ("+I", "-U", "+U", "-D")


def _create_row(fields: Sequence[str] | None, values: Sequence[Any], kind: RowKind) -> Row:
    """What ``Row.__reduce__`` names to rebuild a row (pickle, ``copy``)."""
    row = Row(*values)
    if fields is not None:
        row._fields = list(fields)
    row._row_kind = kind
    return row


class Row:
    """A row: field values by position and, when named, by name; with a ``RowKind``."""

    __slots__ = ("_fields", "_row_kind", "_values")

    _fields: list[str] | None
    _values: list[Any]
    _row_kind: RowKind

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args and kwargs:
            raise ValueError("Can not use both args and kwargs to create Row")
        if kwargs:
            object.__setattr__(self, "_fields", list(kwargs))
            object.__setattr__(self, "_values", list(kwargs.values()))
        else:
            object.__setattr__(self, "_fields", None)
            object.__setattr__(self, "_values", list(args))
        object.__setattr__(self, "_row_kind", RowKind.INSERT)

    # --- PyFlink's methods ----------------------------------------------------------------------

    def as_dict(self, recursive: bool = False) -> dict[str, Any]:
        if self._fields is None:
            raise TypeError("Cannot convert a Row class into dict")

        def conv(obj: Any) -> Any:
            if isinstance(obj, Row):
                return obj.as_dict(True)
            if isinstance(obj, list):
                return [conv(o) for o in obj]
            if isinstance(obj, dict):
                return {k: conv(v) for k, v in obj.items()}
            return obj

        values = [conv(v) for v in self._values] if recursive else self._values
        return dict(zip(self._fields, values, strict=False))

    def get_row_kind(self) -> RowKind:
        return self._row_kind

    def set_row_kind(self, row_kind: RowKind) -> None:
        self._row_kind = row_kind

    def set_field_names(self, field_names: Sequence[str] | None) -> None:
        self._fields = None if field_names is None else list(field_names)

    def get_field_names(self) -> list[str] | None:
        return None if self._fields is None else list(self._fields)

    def get_fields_by_names(self, names: Sequence[str]) -> list[Any]:
        if self._fields is None or list(names) == self._fields:
            return self._values
        missing = sorted(set(names).difference(self._fields))
        if missing:
            raise KeyError(f"Field names {missing} not exist in {self._fields}.")
        return [self._values[self._fields.index(name)] for name in names]

    @staticmethod
    def of_kind(row_kind: RowKind, *args: Any, **kwargs: Any) -> Row:
        row = Row(*args, **kwargs)
        row.set_row_kind(row_kind)
        return row

    # --- the Python protocol --------------------------------------------------------------------

    def __call__(self, *args: Any) -> Row:
        """``Row("name", "age")("Alice", 11)``: a named row with these values."""
        if len(args) > len(self):
            raise ValueError(
                f"Can not create Row with fields {self}, expected {len(self)} values but got {args}"
            )
        return _create_row([str(v) for v in self._values], args, self._row_kind)

    def __contains__(self, item: object) -> bool:
        if self._fields is not None:
            return item in self._fields
        return item in self._values

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, int | slice):
            return self._values[item]
        if self._fields is None or item not in self._fields:
            raise KeyError(item)
        return self._values[self._fields.index(item)]

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, int | slice):
            self._values[key] = value
            return
        if self._fields is None or key not in self._fields:
            raise KeyError(key)
        self._values[self._fields.index(key)] = value

    def __getattr__(self, item: str) -> Any:
        # only called for names that are not slots
        if item.startswith("_"):
            raise AttributeError(item)
        fields = object.__getattribute__(self, "_fields")
        if fields is None or item not in fields:
            raise AttributeError(item)
        return object.__getattribute__(self, "_values")[fields.index(item)]

    def __setattr__(self, key: str, value: Any) -> None:
        if key not in Row.__slots__:
            raise AttributeError(key)
        object.__setattr__(self, key, value)

    def __reduce__(self) -> tuple[Any, ...]:
        return _create_row, (self._fields, tuple(self._values), self._row_kind)

    def __repr__(self) -> str:
        if self._fields is not None:
            pairs = ", ".join(
                f"{k}={v!r}" for k, v in zip(self._fields, self._values, strict=False)
            )
            return f"Row({pairs})"
        return f"<Row({', '.join(repr(v) for v in self._values)})>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Row) or self._row_kind != other._row_kind:
            return False
        if (self._fields is None) != (other._fields is None):
            return False
        if self._fields is None or other._fields is None:
            return self._values == other._values
        if sorted(self._fields) != sorted(other._fields):
            return False
        return all(self[name] == other[name] for name in self._fields)

    def __hash__(self) -> int:
        return hash(tuple(self._values))

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


# --- PySpark's row ------------------------------------------------------------------------------


class TupleRow(tuple):  # type: ignore[type-arg]
    """A tuple with field names, as PySpark's ``Row``: ``TupleRow(user=1, amount=2.5)``.

    Fields by position (``r[0]``, slices, unpacking), by name (``r.user``, ``r["user"]``),
    ``"user" in r`` asks for a field name (as PySpark's), ``asDict()`` / ``as_dict()``;
    equality and hashing are the tuple's (names are not compared, as in PySpark). Rows of one
    list of names share a class (``row_class(names)``), which carries the names.
    """

    __slots__ = ()
    __fields__: ClassVar[tuple[str, ...]] = ()

    def __new__(cls, *values: Any, **named: Any) -> TupleRow:
        if named:
            if values:
                raise ValueError("a TupleRow takes values by position or by name, not both")
            return tuple.__new__(row_class(tuple(named)), named.values())
        if cls.__fields__ and len(values) != len(cls.__fields__):
            raise ValueError(
                f"a row of fields {list(cls.__fields__)} takes {len(cls.__fields__)} values, "
                f"got {len(values)}"
            )
        return tuple.__new__(cls, values)

    @classmethod
    def make(cls, values: Iterable[Any]) -> TupleRow:
        """A row of this class's names with ``values`` (not checked: the fast path)."""
        return tuple.__new__(cls, values)

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, int | slice):
            return tuple.__getitem__(self, item)
        try:
            return tuple.__getitem__(self, self.__fields__.index(item))
        except ValueError:
            raise KeyError(item) from None

    def __getattr__(self, item: str) -> Any:
        # only called for names that are not attributes (tuple's count and index win)
        if item.startswith("__"):
            raise AttributeError(item)
        try:
            return tuple.__getitem__(self, self.__fields__.index(item))
        except ValueError:
            raise AttributeError(
                f"this row has no field {item!r} (its fields: {list(self.__fields__)})"
            ) from None

    def __contains__(self, item: object) -> bool:
        if self.__fields__:
            return item in self.__fields__
        return tuple.__contains__(self, item)

    def asDict(self, recursive: bool = False) -> dict[str, Any]:
        """The row as a dict by field name (``recursive``: nested rows, and rows in lists and
        dicts, too)."""
        if not self.__fields__ and len(self):
            raise TypeError("a row without field names cannot become a dict")

        def conv(obj: Any) -> Any:
            if isinstance(obj, TupleRow) and obj.__fields__:
                return obj.asDict(True)
            if isinstance(obj, list):
                return [conv(o) for o in obj]
            if isinstance(obj, dict):
                return {k: conv(v) for k, v in obj.items()}
            return obj

        values = [conv(v) for v in self] if recursive else list(self)
        return dict(zip(self.__fields__, values, strict=True))

    as_dict = asDict

    def __repr__(self) -> str:
        if self.__fields__:
            pairs = ", ".join(f"{k}={v!r}" for k, v in zip(self.__fields__, self, strict=True))
            return f"Row({pairs})"
        return f"<Row({', '.join(repr(v) for v in self)})>"

    def __reduce__(self) -> tuple[Any, ...]:
        return _tuple_row, (self.__fields__, tuple(self))


_ROW_CLASSES: dict[tuple[str, ...], type[TupleRow]] = {(): TupleRow}


def row_class(fields: Sequence[str]) -> type[TupleRow]:
    """The ``TupleRow`` class of rows with these field names (one class per list of names)."""
    names = tuple(fields)
    known = _ROW_CLASSES.get(names)
    if known is not None:
        return known
    if not all(isinstance(name, str) for name in names):
        raise TypeError(f"field names are strings, got {list(names)!r}")
    namespace: dict[str, Any] = {"__slots__": (), "__fields__": names}
    for index, name in enumerate(names):
        # a field read by name as fast as by position (``operator.itemgetter``, as a named
        # tuple's); a name a tuple or a row already has (``count``, ``asDict``) stays theirs
        if name.isidentifier() and not hasattr(TupleRow, name) and name not in namespace:
            namespace[name] = property(operator.itemgetter(index), doc=f"field {name!r}")
    made = type("TupleRow", (TupleRow,), namespace)
    return _ROW_CLASSES.setdefault(names, made)


def _tuple_row(fields: Sequence[str], values: Iterable[Any]) -> TupleRow:
    """What ``TupleRow.__reduce__`` names to rebuild a row (pickle, ``copy``)."""
    return row_class(fields).make(values)


__all__ = ["Row", "RowKind", "TupleRow", "row_class"]
