"""Model-facing JSON Schema for a tool's input model.

pydantic emits JSON Schema 2020-12 with titles, ``$defs`` and ``anyOf [X, null]`` for every
``X | None = None`` field. Providers and models want compact draft-07: this module inlines
``$ref``s (recursive models keep a resolvable ``definitions`` section), drops titles, turns
"may be omitted" optionals (those with a default) into plain ``X`` and keeps ``null`` for
required ``X | None`` fields and for fields marked :data:`Nullable`.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

NULLABLE_MARK = "x-codelia-nullable"
DRAFT_07 = "http://json-schema.org/draft-07/schema#"

Nullable: dict[str, Any] = {"json_schema_extra": {NULLABLE_MARK: True}}
"""Pass as ``Field(**Nullable)`` to say that ``null`` is a meaningful value of an optional field."""

_NULL = {"type": "null"}


def input_schema(model: type[BaseModel], *, forbid_extra: bool) -> dict[str, Any]:
    """The draft-07 schema sent to the model for ``model``'s validation (input) mode."""
    raw = model.model_json_schema(mode="validation", ref_template="#/$defs/{model}")
    defs: dict[str, Any] = raw.pop("$defs", {})
    recursive = _recursive_defs(defs)
    schema: dict[str, Any] = _clean(_inline(raw, defs, recursive, ()))
    if recursive:
        schema["definitions"] = {
            name: _clean(_inline(defs[name], defs, recursive, (name,)))
            for name in sorted(recursive)
        }
    if forbid_extra and schema.get("type") == "object":
        schema["additionalProperties"] = False
    _object_root(schema)
    schema.pop("$schema", None)
    return schema


def _recursive_defs(defs: dict[str, Any]) -> set[str]:
    """Names of definitions that reach themselves through ``$ref`` (they cannot be inlined)."""
    graph = {name: _refs_in(body) for name, body in defs.items()}
    recursive: set[str] = set()
    for start in graph:
        stack, seen = list(graph[start]), set()
        while stack:
            node = stack.pop()
            if node == start:
                recursive.add(start)
                break
            if node in seen or node not in graph:
                continue
            seen.add(node)
            stack.extend(graph[node])
    return recursive


def _refs_in(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            found.add(ref.removeprefix("#/$defs/"))
        for value in node.values():
            found |= _refs_in(value)
    elif isinstance(node, list):
        for value in node:
            found |= _refs_in(value)
    return found


def _inline(node: Any, defs: dict[str, Any], recursive: set[str], path: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inline(v, defs, recursive, path) for v in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        if name in recursive:
            target: dict[str, Any] = {"$ref": f"#/definitions/{name}"}
        else:
            target = _inline(copy.deepcopy(defs[name]), defs, recursive, (*path, name))
        if not siblings:
            return target
        if "$ref" in target:
            # draft-07 ignores siblings of $ref: wrap instead of merging.
            return {**_inline(siblings, defs, recursive, path), "allOf": [target]}
        return {**target, **_inline(siblings, defs, recursive, path)}
    return {k: _inline(v, defs, recursive, path) for k, v in node.items()}


def _clean(node: Any) -> Any:
    """Drop titles and discriminator metadata, fold omittable optionals, map draft-2020 words."""
    if isinstance(node, list):
        return [_clean(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _clean(_fold_optional(prop)) for name, prop in value.items()}
        elif key in ("title", "discriminator"):
            continue
        elif key == "prefixItems":
            out["items"] = _clean(value)
        elif key == "items" and "prefixItems" in node:
            out["additionalItems"] = _clean(value)
        elif key in ("$defs", "definitions"):
            out[key] = {k: _clean(v) for k, v in value.items()}
        else:
            out[key] = _clean(value)
    return out


def _fold_optional(prop: Any) -> Any:
    """``anyOf [X, null]`` of a field with a default → ``X``, unless it is marked nullable.

    A required ``X | None`` field keeps its ``null``: validation accepts it, and the model has
    no other way to say "none" for a field it must send.
    """
    if not isinstance(prop, dict):
        return prop
    prop = dict(prop)
    nullable = bool(prop.pop(NULLABLE_MARK, False))
    variants = prop.get("anyOf")
    if not isinstance(variants, list) or _NULL not in variants:
        return prop
    others = [v for v in variants if v != _NULL]
    if nullable or "default" not in prop:
        prop["anyOf"] = [*others, _NULL]
        return prop
    if prop.get("default", ...) is None:
        del prop["default"]
    del prop["anyOf"]
    if len(others) == 1 and isinstance(others[0], dict):
        return {**others[0], **prop}
    prop["anyOf"] = others
    return prop


def _object_root(schema: dict[str, Any]) -> None:
    """Providers require ``type: object`` at the root, also for unions of objects.

    Anthropic also rejects ``anyOf``/``oneOf``/``allOf`` at the root, so a union of object
    schemas is merged into one object: every variant's properties (a property whose schemas
    differ becomes an ``anyOf`` of them, constants an ``enum``), required only where every
    variant requires it. Validation stays with the pydantic model, which still checks that
    the arguments match one variant.
    """
    if "type" in schema:
        return
    for word in ("anyOf", "oneOf"):
        variants = schema.get(word)
        if isinstance(variants, list) and variants:
            if all(isinstance(v, dict) and v.get("type") == "object" for v in variants):
                del schema[word]
                schema.update(_merge_objects(variants))
            return


def _merge_objects(variants: list[dict[str, Any]]) -> dict[str, Any]:
    options: dict[str, list[Any]] = {}
    for variant in variants:
        for name, prop in variant.get("properties", {}).items():
            seen = options.setdefault(name, [])
            if prop not in seen:
                seen.append(prop)
    required = [
        name for name in options if all(name in variant.get("required", ()) for variant in variants)
    ]
    merged: dict[str, Any] = {
        "type": "object",
        "properties": {name: _one_of(schemas) for name, schemas in options.items()},
    }
    if required:
        merged["required"] = required
    if all(variant.get("additionalProperties") is False for variant in variants):
        merged["additionalProperties"] = False
    return merged


def _one_of(schemas: list[Any]) -> Any:
    if len(schemas) == 1:
        return schemas[0]
    consts = [s.get("const", ...) for s in schemas if isinstance(s, dict)]
    types = {s.get("type") for s in schemas if isinstance(s, dict)}
    if len(consts) == len(schemas) and ... not in consts and len(types) == 1:
        return {"type": types.pop(), "enum": consts}
    return {"anyOf": schemas}
