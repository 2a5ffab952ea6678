"""A JSON Schema validator for the subset of JSON Schema (draft 2020-12) that the harness's own schemas use
(docs/results-schema.json, the node verdict's schema in harness/records/fleet.py): type, const, enum, properties,
required, additionalProperties (true, false or a schema), items, minimum, pattern, $ref to "#/$defs/<name>" and
oneOf. The `jsonschema` package is no dependency of the harness nor of its test extra, so a CI machine need not have
it; a keyword outside the subset raises SchemaError rather than being ignored, so a schema that outgrows this
validator fails loudly instead of passing everything (tests/test_fleet_formats.py checks it against jsonschema
where that is installed).
"""
from __future__ import annotations

import re

_KEYWORDS = {"type", "const", "enum", "properties", "required", "additionalProperties", "items", "minimum",
             "pattern", "$ref", "oneOf", "$defs", "$schema", "$id", "title", "description"}
_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


class SchemaError(ValueError):
    """The schema uses a keyword this validator does not implement."""


def _is(value, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name not in _TYPES:
        raise SchemaError(f"unknown type {name!r}")
    return isinstance(value, _TYPES[name])


def errors(value, schema: dict, root: dict | None = None, path: str = "$") -> list[str]:
    """Every way `value` breaks `schema`, one line each naming the JSON path; [] when it is valid."""
    root = schema if root is None else root
    if schema is True or schema == {}:
        return []
    if schema is False:
        return [f"{path}: not allowed"]
    unknown = set(schema) - _KEYWORDS
    if unknown:
        raise SchemaError(f"schema keyword(s) {sorted(unknown)} at {path} are outside the supported subset")
    out: list[str] = []
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise SchemaError(f"only local #/$defs/ references are supported, not {ref!r}")
        out += errors(value, root["$defs"][ref[len("#/$defs/"):]], root, path)
    if "oneOf" in schema:
        matched = [i for i, sub in enumerate(schema["oneOf"]) if not errors(value, sub, root, path)]
        if len(matched) != 1:
            out.append(f"{path}: matches {len(matched)} of the oneOf alternatives, not exactly one")
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is(value, n) for n in names):
            return out + [f"{path}: {type(value).__name__} {_short(value)} is not of type {'/'.join(names)}"]
    if "const" in schema and not _same(value, schema["const"]):
        out.append(f"{path}: {_short(value)} is not {schema['const']!r}")
    if "enum" in schema and not any(_same(value, e) for e in schema["enum"]):
        out.append(f"{path}: {_short(value)} is not one of {schema['enum']}")
    if "minimum" in schema and _is(value, "number") and value < schema["minimum"]:
        out.append(f"{path}: {value} is below the minimum {schema['minimum']}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        out.append(f"{path}: {_short(value)} does not match {schema['pattern']!r}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", ()):
            if name not in value:
                out.append(f"{path}: required field {name!r} is missing")
        extra = schema.get("additionalProperties", True)
        for name, v in value.items():
            if name in props:
                out += errors(v, props[name], root, f"{path}.{name}")
            elif extra is False:
                out.append(f"{path}: field {name!r} is not in the schema")
            elif isinstance(extra, dict):
                out += errors(v, extra, root, f"{path}.{name}")
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            out += errors(v, schema["items"], root, f"{path}[{i}]")
    return out


def _same(a, b) -> bool:
    """JSON equality: 1 is not true (Python's 1 == True is)."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
