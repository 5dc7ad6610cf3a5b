"""The model-facing JSON Schema of define_tool.

Each schema must be valid draft-07, acceptable to Anthropic as an ``input_schema``, and agree
with the pydantic model: instances the model accepts validate against the schema.
"""

from __future__ import annotations

import enum
import json
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator
from pydantic import BaseModel, ConfigDict, Field, RootModel

from jupyter_codelia.tools import Nullable, define_tool


def schema_of(model: type[BaseModel], **options: Any) -> dict[str, Any]:
    return define_tool(
        name="t", description="d", input=model, execute=lambda p, c: "", **options
    ).definition.parameters


def walk(node: Any) -> list[dict[str, Any]]:
    """Every object inside a schema, the root included."""
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found += walk(value)
    elif isinstance(node, list):
        for value in node:
            found += walk(value)
    return found


def resolve_pointer(schema: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/"), f"non-local $ref {ref}"
    node: Any = schema
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def assert_anthropic_input_schema(schema: dict[str, Any]) -> None:
    """The structural rules the Anthropic Messages API enforces on ``tools[].input_schema``."""
    json.dumps(schema, allow_nan=False)  # plain JSON only
    assert schema.get("type") == "object", "input_schema.type must be 'object'"
    for word in ("oneOf", "anyOf", "allOf"):
        assert word not in schema, f"input_schema does not support {word} at the top level"
    assert isinstance(schema.get("properties", {}), dict)
    Draft7Validator.check_schema(schema)
    for node in walk(schema):
        ref = node.get("$ref")
        if isinstance(ref, str):
            assert isinstance(resolve_pointer(schema, ref), dict)
        assert "$defs" not in node, "draft-07 uses definitions"


# --- models ----------------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Flat(BaseModel):
    name: str = Field(min_length=1, description="Who")
    count: int = Field(ge=0)
    ratio: float = Field(default=0.5, gt=0, le=1)
    code: str = Field(default="ab", pattern=r"^[a-z]+$")
    mode: Literal["fast", "slow"] = "fast"
    color: Color = Color.RED
    verbose: bool = False
    limit: int | None = None
    cursor: str | None = Field(default=None, **Nullable)
    tags: list[str] = []


class Point(BaseModel):
    x: int
    y: int = 0


class Nested(BaseModel):
    origin: Point
    path: list[Point] = Field(min_length=1)
    labels: dict[str, int] = {}
    extra_point: Point | None = None


class TodoItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: str = Field(min_length=1)
    active_form: str = Field(alias="activeForm")
    status: Literal["pending", "in_progress", "completed"] = "pending"


class Todos(BaseModel):
    todos: list[TodoItem]


class Circle(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["circle"]
    radius: float = Field(gt=0)


class Square(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["square"]
    side: float = Field(gt=0)


class Shapes(BaseModel):
    shape: Annotated[Circle | Square, Field(discriminator="kind")]
    size: int | str = 1


class Tree(BaseModel):
    name: str
    children: list[Tree] = []


class Forest(BaseModel):
    trees: list[Tree]
    biggest: Tree | None = None


class ShapeArgs(RootModel[Annotated[Circle | Square, Field(discriminator="kind")]]):
    pass


ALL_MODELS: list[type[BaseModel]] = [Flat, Nested, Todos, Shapes, Tree, Forest, ShapeArgs]


# --- shape of the schema -----------------------------------------------------------------------


@pytest.mark.parametrize("model", ALL_MODELS, ids=lambda m: m.__name__)
def test_every_schema_is_draft7_and_anthropic_shaped(model: type[BaseModel]) -> None:
    schema = schema_of(model)
    assert_anthropic_input_schema(schema)
    assert all("title" not in node for node in walk(schema) if "type" in node or "$ref" in node)
    assert "$schema" not in schema


def test_flat_schema_exactly() -> None:
    assert schema_of(Flat) == {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "count"],
        "properties": {
            "name": {"type": "string", "minLength": 1, "description": "Who"},
            "count": {"type": "integer", "minimum": 0},
            "ratio": {"type": "number", "default": 0.5, "exclusiveMinimum": 0, "maximum": 1},
            "code": {"type": "string", "default": "ab", "pattern": "^[a-z]+$"},
            "mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast"},
            "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
            "verbose": {"type": "boolean", "default": False},
            # Omittable optional: the plain type, no null variant and no "default": null.
            "limit": {"type": "integer"},
            # Marked Nullable: null stays, as the last variant.
            "cursor": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "tags": {"type": "array", "items": {"type": "string"}, "default": []},
        },
    }


class RequiredNullable(BaseModel):
    model_config = ConfigDict(extra="forbid")
    parent: int | None
    note: Annotated[str | None, Field(description="Why")]
    later: int | None = 3


def test_a_required_optional_field_keeps_null_and_only_defaults_fold_it() -> None:
    schema = schema_of(RequiredNullable)
    assert schema["required"] == ["parent", "note"]
    assert schema["properties"] == {
        "parent": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "Why"},
        "later": {"type": "integer", "default": 3},
    }
    # What validation accepts, the schema allows.
    instance = {"parent": None, "note": None}
    RequiredNullable.model_validate(instance)
    Draft7Validator(schema).validate(instance)


def test_nested_models_are_inlined() -> None:
    schema = schema_of(Nested)
    point = {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}},
        "required": ["x"],
    }
    assert schema["properties"]["origin"] == point
    assert schema["properties"]["path"] == {"type": "array", "items": point, "minItems": 1}
    assert schema["properties"]["extra_point"] == point
    assert schema["properties"]["labels"] == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
        "default": {},
    }
    assert "definitions" not in schema
    assert schema["required"] == ["origin", "path"]


def test_aliases_are_the_wire_names() -> None:
    item = schema_of(Todos)["properties"]["todos"]["items"]
    assert list(item["properties"]) == ["content", "activeForm", "status"]
    assert item["required"] == ["content", "activeForm"]
    assert item["additionalProperties"] is False


def test_unions_keep_their_variants() -> None:
    properties = schema_of(Shapes)["properties"]
    assert [v["properties"]["kind"] for v in properties["shape"]["oneOf"]] == [
        {"type": "string", "const": "circle"},
        {"type": "string", "const": "square"},
    ]
    assert properties["size"] == {"anyOf": [{"type": "integer"}, {"type": "string"}], "default": 1}


def test_recursive_models_stay_resolvable() -> None:
    schema = schema_of(Forest)
    assert schema["properties"]["trees"]["items"] == {"$ref": "#/definitions/Tree"}
    assert schema["properties"]["biggest"] == {"$ref": "#/definitions/Tree"}
    tree = schema["definitions"]["Tree"]
    assert tree["properties"]["children"]["items"] == {"$ref": "#/definitions/Tree"}
    root_recursive = schema_of(Tree)
    assert root_recursive["type"] == "object"
    assert root_recursive["properties"]["children"]["items"] == {"$ref": "#/definitions/Tree"}


def test_a_root_union_becomes_one_object_without_top_level_oneof() -> None:
    assert schema_of(ShapeArgs) == {
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": ["circle", "square"]},
            "radius": {"type": "number", "exclusiveMinimum": 0},
            "side": {"type": "number", "exclusiveMinimum": 0},
        },
        "required": ["kind"],
        "additionalProperties": False,
    }


def test_allow_extra_keys_keeps_the_models_own_setting() -> None:
    assert "additionalProperties" not in schema_of(Point, allow_extra_keys=True)
    assert schema_of(Point)["additionalProperties"] is False
    assert schema_of(TodoItem, allow_extra_keys=True)["additionalProperties"] is False


def test_definition_fields() -> None:
    tool = define_tool(name="add", description="Add.", input=Point, execute=lambda p, c: 1)
    assert tool.definition.name == "add"
    assert tool.definition.description == "Add."
    assert tool.definition.strict is False
    assert tool.definition.type == "function"


# --- generated instances agree with the schema -------------------------------------------------

words = st.text(alphabet="abcdefghij", min_size=1, max_size=6)
ints = st.integers(min_value=-(10**6), max_value=10**6)


def optional_keys(required: dict[str, Any], optional: dict[str, Any]) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries(required, optional=optional)


flat_instances = optional_keys(
    {"name": st.text(min_size=1, max_size=10), "count": st.integers(min_value=0)},
    {
        "ratio": st.floats(min_value=0, max_value=1, exclude_min=True),
        "code": st.from_regex(r"^[a-z]+$", fullmatch=True),
        "mode": st.sampled_from(["fast", "slow"]),
        "color": st.sampled_from(["red", "blue"]),
        "verbose": st.booleans(),
        "limit": ints,
        "cursor": st.none() | st.text(max_size=5),
        "tags": st.lists(st.text(max_size=4), max_size=3),
    },
)
points = optional_keys({"x": ints}, {"y": ints})
nested_instances = optional_keys(
    {"origin": points, "path": st.lists(points, min_size=1, max_size=3)},
    {"labels": st.dictionaries(words, ints, max_size=3), "extra_point": points},
)
todo_items = optional_keys(
    {"content": st.text(min_size=1, max_size=8), "activeForm": st.text(max_size=8)},
    {"status": st.sampled_from(["pending", "in_progress", "completed"])},
)
todos_instances = st.fixed_dictionaries({"todos": st.lists(todo_items, max_size=3)})
shapes = st.fixed_dictionaries(
    {"kind": st.just("circle"), "radius": st.floats(min_value=0.1, max_value=1e6)}
) | st.fixed_dictionaries(
    {"kind": st.just("square"), "side": st.floats(min_value=0.1, max_value=1e6)}
)
shapes_instances = optional_keys({"shape": shapes}, {"size": ints | words})
trees: st.SearchStrategy[Any] = st.recursive(
    st.fixed_dictionaries({"name": words}),
    lambda children: st.fixed_dictionaries(
        {"name": words, "children": st.lists(children, max_size=3)}
    ),
    max_leaves=8,
)
forest_instances = optional_keys({"trees": st.lists(trees, max_size=3)}, {"biggest": trees})

CASES: list[tuple[type[BaseModel], st.SearchStrategy[Any]]] = [
    (Flat, flat_instances),
    (Nested, nested_instances),
    (Todos, todos_instances),
    (Shapes, shapes_instances),
    (Tree, trees),
    (Forest, forest_instances),
    (ShapeArgs, shapes),
]


@pytest.mark.parametrize(("model", "instances"), CASES, ids=lambda c: getattr(c, "__name__", ""))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_instances_the_model_accepts_validate_against_the_schema(
    model: type[BaseModel], instances: st.SearchStrategy[Any], data: st.DataObject
) -> None:
    tool = define_tool(name="t", description="d", input=model, execute=lambda p, c: "")
    instance = data.draw(instances)
    tool.parse_args(json.dumps(instance))  # the strategy only makes valid arguments
    Draft7Validator(tool.definition.parameters).validate(instance)
    # The model's own dump is valid too once omitted optionals are left out again (they are
    # None in the model, absent on the wire).
    parsed = tool.input.model_validate(instance)
    dumped = parsed.model_dump(mode="json", by_alias=True, exclude_none=True)
    Draft7Validator(tool.definition.parameters).validate(dumped)


@pytest.mark.parametrize(
    ("model", "instance"),
    [
        (Flat, {"name": "a", "count": 1, "nope": 1}),
        (Flat, {"count": 1}),
        (Flat, {"name": "", "count": 1}),
        (Flat, {"name": "a", "count": -1}),
        (Flat, {"name": "a", "count": 1, "ratio": 0}),
        (Flat, {"name": "a", "count": 1, "code": "AB"}),
        (Flat, {"name": "a", "count": 1, "mode": "medium"}),
        (Nested, {"origin": {"x": 1}, "path": []}),
        (Todos, {"todos": [{"content": "a", "active_form": "b"}]}),
        (Shapes, {"shape": {"kind": "circle", "side": 1}}),
        (Forest, {"trees": [{"name": "a", "children": [{"children": []}]}]}),
    ],
)
def test_instances_both_reject(model: type[BaseModel], instance: dict[str, Any]) -> None:
    tool = define_tool(name="t", description="d", input=model, execute=lambda p, c: "")
    assert not Draft7Validator(tool.definition.parameters).is_valid(instance)
    with pytest.raises(Exception, match="Tool input validation failed for t"):
        tool.parse_args(json.dumps(instance))


def test_every_built_in_tool_schema_is_anthropic_shaped(tmp_path: Path) -> None:
    from jupyter_codelia.standard_tools import standard_tools

    tools = list(standard_tools(tmp_path, cache_dir=tmp_path / "cache"))
    assert {"done", "read", "write", "edit", "apply_patch", "todo_new", "shell"} <= {
        t.name for t in tools
    }
    for built_in in tools:
        parameters = built_in.definition.parameters
        assert_anthropic_input_schema(parameters)
        # Built-in tools reject unknown keys.
        assert parameters.get("additionalProperties") is False, built_in.name
