"""How an answer travels from a student's kernel to the grader: plain JSON, never pickle.

The grader injects this module's source into the student's kernel before any student code runs (as a
fresh module under a random name, see :mod:`h100lab.grading.grader`); :func:`encode` there turns the
value of a graded expression into JSON text, and :func:`decode` in the grader's own process turns it
back into plain values for :func:`h100lab.grading.registry.compare`.

What travels: ``None``, ``bool``, ``int``, ``float`` (NaN and infinities too), ``str``, ``bytes``,
``complex``; lists, tuples (NamedTuples arrive as tuples), dicts; sets; NumPy and ml_dtypes arrays and scalars (through
``tolist()``); ``range``; ``...`` (the unanswered stub); dataclass instances and enum members (rebuilt in
the grader only for classes of the ``h100lab`` package, otherwise a dataclass arrives as a dict of its
fields). Other mappings travel as dicts. Anything else is refused with a message naming its type. Every builtin the encoder uses is
bound when the module is created (default arguments), so student code that later rebinds ``json.dumps``
or ``builtins.isinstance`` does not change what is sent.

This module imports only the standard library at top level: it must run in a bare kernel.
"""
from __future__ import annotations

import collections.abc as _abc
import dataclasses as _dataclasses
import enum as _enum
import json as _json

__all__ = ["encode", "decode", "WireError", "MAX_BYTES", "MAX_NODES", "MARK"]

MAX_BYTES = 1 << 20      # the longest JSON an answer may take (1 MiB); reference answers are small
MAX_NODES = 200_000      # values in one answer (items of lists, dicts, arrays)
MAX_DEPTH = 64           # nesting depth
MARK = "__h100lab__"     # key of the marker dicts that carry non-JSON types

# Bound once, when the module is created: later rebinding of builtins or json by student code is not seen.
_dumps = _json.dumps
_fields, _Enum, _Mapping = _dataclasses.fields, _enum.Enum, _abc.Mapping
_type, _isinstance, _len, _getattr, _hasattr, _sorted, _repr, _all = (
    type, isinstance, len, getattr, hasattr, sorted, repr, all)
_bool, _int, _float, _str, _complex, _bytes, _bytearray = bool, int, float, str, complex, bytes, bytearray
_list, _tuple, _dict, _set, _frozenset, _range = list, tuple, dict, set, frozenset, range
_Exception, _Ellipsis = Exception, Ellipsis


class WireError(ValueError):
    """An answer that cannot travel (unsupported type, too large, too deep)."""


def _conv(v, depth, count):
    count[0] += 1
    if count[0] > MAX_NODES:
        raise WireError(f"the answer has more than {MAX_NODES} values")
    if depth > MAX_DEPTH:
        raise WireError(f"the answer is nested more than {MAX_DEPTH} levels deep")
    t = _type(v)
    if v is None or t is _bool or t is _int or t is _float or t is _str:
        return v
    if v is _Ellipsis:
        return {MARK: "ellipsis"}
    mod = _getattr(t, "__module__", "") or ""
    if mod.split(".")[0] in ("numpy", "ml_dtypes") and _hasattr(v, "tolist"):
        out = v.tolist()
        if _type(out) is t:  # a NumPy type whose tolist() gives itself back (e.g. datetime64)
            raise WireError(f"an answer of type {mod}.{t.__name__} cannot be graded")
        return _conv(out, depth + 1, count)
    if _isinstance(v, _Enum):
        return {MARK: "enum", "module": mod, "qualname": t.__qualname__, "name": _str(v.name),
                "value": _conv(v.value, depth + 1, count)}
    if _isinstance(v, _bool):
        return _bool(v)
    if _isinstance(v, (_list, _tuple, _range)):
        if _len(v) > MAX_NODES:
            raise WireError(f"the answer has more than {MAX_NODES} values")
        items = [_conv(x, depth + 1, count) for x in v]
        return {MARK: "tuple", "items": items} if _isinstance(v, _tuple) else items
    if _isinstance(v, (_dict, _Mapping)):
        keys = _list(v.keys())
        if _all(_type(k) is _str for k in keys) and MARK not in keys:
            return {k: _conv(v[k], depth + 1, count) for k in keys}
        return {MARK: "dict", "items": [[_conv(k, depth + 1, count), _conv(v[k], depth + 1, count)] for k in keys]}
    if _isinstance(v, (_set, _frozenset)):
        items = [_conv(x, depth + 1, count) for x in v]
        return {MARK: "set", "items": _sorted(items, key=_repr)}
    if _isinstance(v, (_bytes, _bytearray)):
        return {MARK: "bytes", "hex": _bytes(v).hex()}
    if _isinstance(v, _complex):
        return {MARK: "complex", "re": _float(v.real), "im": _float(v.imag)}
    if _isinstance(v, _int):
        return _int(v)
    if _isinstance(v, _float):
        return _float(v)
    if _isinstance(v, _str):
        return _str(v)
    if _hasattr(t, "__dataclass_fields__") and not _isinstance(v, _type):
        return {MARK: "dataclass", "module": mod, "qualname": t.__qualname__,
                "fields": {f.name: _conv(_getattr(v, f.name), depth + 1, count) for f in _fields(v)}}
    where = f"{mod}." if mod and mod != "builtins" else ""
    raise WireError(f"an answer of type {where}{t.__qualname__} cannot be graded: "
                    "give numbers, strings, lists, dicts or arrays")


def encode(value, nonce):
    """JSON text ``{"nonce": nonce, "ok": true, "value": ...}`` or ``{"nonce", "ok": false, "error": ...}``.

    Runs in the student's kernel. Never raises for a bad value: the error travels instead.
    """
    try:
        payload = {"nonce": nonce, "ok": True, "value": _conv(value, 0, [0])}
        text = _dumps(payload, allow_nan=True)
        if _len(text) > MAX_BYTES:
            raise WireError(f"the answer is over {MAX_BYTES} bytes as JSON; reference answers are small")
    except _Exception as exc:  # noqa: BLE001 - everything becomes a message for the gradebook
        if _isinstance(exc, WireError) and exc.args:
            msg = _str(exc.args[0])
        else:
            msg = f"{_type(exc).__name__} while reading the answer: {exc}"
        text = _dumps({"nonce": nonce, "ok": False, "error": msg[:500]})
    return text


def _hashable(x):
    if isinstance(x, list):
        return tuple(_hashable(v) for v in x)
    if isinstance(x, dict):
        return tuple((k, _hashable(v)) for k, v in x.items())
    return x


def _rebuild(kind: str, d: dict):
    """The ``h100lab`` dataclass or enum a marker names, or None when it is not one of the package's."""
    import dataclasses
    import importlib

    module = d.get("module", "")
    if not (module == "h100lab" or module.startswith("h100lab.")):
        return None
    try:
        obj = importlib.import_module(module)
        for part in str(d.get("qualname", "")).split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    if kind == "enum":
        import enum

        if isinstance(obj, type) and issubclass(obj, enum.Enum) and d.get("name") in obj.__members__:
            return obj[d["name"]]
        return None
    if not (isinstance(obj, type) and dataclasses.is_dataclass(obj)):
        return None
    inst = object.__new__(obj)
    names = {f.name for f in dataclasses.fields(obj)}
    if set(d["fields"]) != names:
        return None
    for k, v in d["fields"].items():
        object.__setattr__(inst, k, decode(v))
    return inst


def decode(obj):
    """The Python value of JSON data made by :func:`encode` (the ``value`` member); runs in the grader."""
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    kind = obj.get(MARK)
    if kind is None:
        return {k: decode(v) for k, v in obj.items()}
    if kind == "ellipsis":
        return Ellipsis
    if kind == "dict":
        return {_hashable(decode(k)): decode(v) for k, v in obj["items"]}
    if kind == "tuple":
        return tuple(decode(v) for v in obj["items"])
    if kind == "set":
        return {_hashable(decode(v)) for v in obj["items"]}
    if kind == "bytes":
        return bytes.fromhex(obj["hex"])
    if kind == "complex":
        return complex(obj["re"], obj["im"])
    if kind == "enum":
        rebuilt = _rebuild("enum", obj)
        return rebuilt if rebuilt is not None else decode(obj["value"])
    if kind == "dataclass":
        rebuilt = _rebuild("dataclass", obj)
        return rebuilt if rebuilt is not None else {k: decode(v) for k, v in obj["fields"].items()}
    raise WireError(f"unknown marker {kind!r} in an answer")
