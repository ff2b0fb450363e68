"""Typed trial results: a dataclass that ``run_trial`` returns, stored as plain JSON data and rebuilt from it.

A trial's result is written to its file as plain data (:func:`analysis.core.results.to_jsonable` turns a dataclass
into a dict of its fields, in field order). When a record is assembled, :func:`from_data` rebuilds the type that
``run_trial`` is annotated to return, recursively, from the type hints of its fields: nested dataclasses,
``list[X]``, ``tuple[X, ...]``, ``tuple[X, Y]``, ``dict[str, X]``, ``X | None``, ``float``, ``int``, ``str``,
``bool`` and ``Any`` (kept as stored). A stored value that does not fit its declared type is refused with the path
of the field, so that a trial file written by other code cannot be read as this code's result.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, Union


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _is_dataclass_type(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def result_type(function: Any) -> Any:
    """The dataclass (or union of dataclasses, one per kind of trial) that ``function`` is annotated to return, or
    None (a plain dict or no annotation)."""
    tp = typing.get_type_hints(function).get("return")
    if typing.get_origin(tp) in (Union, types.UnionType):
        return tp if all(_is_dataclass_type(a) for a in typing.get_args(tp)) else None
    return tp if _is_dataclass_type(tp) else None


OMIT_NONE = {"omit_none": True}  # field metadata: a None value is left out of the stored data (a key some trials lack)


def stored_as(key: str) -> dict[str, str]:
    """Field metadata: the field is stored under ``key`` (a name Python does not allow, such as 'lambda')."""
    return {"key": key}


def _key(f: dataclasses.Field[Any]) -> str:
    return str(f.metadata.get("key", f.name))


def fields_of(value: Any) -> dict[str, Any]:
    """The fields of a dataclass instance as a dict, in order, their values as they are (not copied or converted);
    each under its stored key (:func:`stored_as`), and a None field marked :data:`OMIT_NONE` left out: the layout in
    which :func:`analysis.core.results.to_jsonable` stores them."""
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        raise ValueError(f"value must be a dataclass instance; got {type(value).__name__}")
    return {_key(f): getattr(value, f.name) for f in dataclasses.fields(value)
            if not (f.metadata.get("omit_none") and getattr(value, f.name) is None)}


def _fail(path: str, tp: Any, value: Any) -> ValueError:
    return ValueError(f"{path}: stored {type(value).__name__} {str(value)[:60]!r} does not fit {tp}")


def from_data(tp: Any, value: Any, path: str = "result") -> Any:
    """``value`` (plain JSON data, non-finite floats already floats) rebuilt as type ``tp`` (see the module)."""
    if tp is Any or tp is object:
        return value
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return from_data(rest[0], value, path)
        reasons = []
        for a in rest:  # the first member the value fits
            try:
                return from_data(a, value, path)
            except ValueError as err:
                reasons.append(f"{getattr(a, '__name__', a)}: {err}")
        raise ValueError(f"{path}: fits no member of {tp}; " + "; ".join(reasons))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise _fail(path, tp, value)
        hints = _hints(tp)
        fields = [f for f in dataclasses.fields(tp) if f.init]
        keys = {_key(f): f for f in fields}
        unknown = sorted(set(value) - set(keys))
        if unknown:
            raise ValueError(f"{path}: fields {', '.join(unknown)} are not in {tp.__name__}")
        missing = [k for k, f in keys.items() if k not in value and f.default is dataclasses.MISSING
                   and f.default_factory is dataclasses.MISSING]
        if missing:
            raise ValueError(f"{path}: {tp.__name__} needs fields {', '.join(missing)}")
        return tp(**{f.name: from_data(hints[f.name], value[k], f"{path}.{k}") for k, f in keys.items() if k in value})
    if origin in (list, tuple, dict):
        if origin is dict:
            if not isinstance(value, dict):
                raise _fail(path, tp, value)
            val = args[1] if args else Any
            return {k: from_data(val, v, f"{path}[{k!r}]") for k, v in value.items()}
        if not isinstance(value, list):
            raise _fail(path, tp, value)
        if origin is list:
            item = args[0] if args else Any
            return [from_data(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_data(args[0], v, f"{path}[{i}]") for i, v in enumerate(value))
        if args and len(args) != len(value):
            raise _fail(path, tp, value)
        return tuple(from_data(a, v, f"{path}[{i}]") for i, (a, v) in enumerate(zip(args, value))) if args \
            else tuple(value)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _fail(path, tp, value)
        return value  # an int stays an int (int is a float to a type checker), so records keep their data
    if tp in (int, str, bool):
        if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
            raise _fail(path, tp, value)
        return value
    raise ValueError(f"{path}: type {tp} cannot be read back from a trial file")

