"""define_tool and execute_raw: parsing, validation, execution and result coercion."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from jupyter_codelia.agent._permission_hook import parse_tool_args
from jupyter_codelia.llm.messages import ImagePart, TextPart
from jupyter_codelia.tools import (
    FunctionTool,
    JsonResult,
    PartsResult,
    TextResult,
    ToolArgumentsError,
    ToolContext,
    ToolDefinitionError,
    ToolInputError,
    coerce_result,
    define_tool,
    result_content,
    to_tool_message,
)


class AddInput(BaseModel):
    a: int
    b: int = 0


class TodoInput(BaseModel):
    content: str
    active_form: str = Field(alias="activeForm")


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: int


class Outer(BaseModel):
    inner: Inner
    mode: Literal["a", "b"] = "a"


def returning(value: Any, model: type[BaseModel] = AddInput) -> FunctionTool:
    return define_tool(name="t", description="d", input=model, execute=lambda p, c: value)


async def run(tool: FunctionTool, raw: str = "{}") -> Any:
    return await tool.execute_raw(raw, ToolContext())


# --- execution ---------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_sync_and_async_functions_receive_the_parsed_input_and_context() -> None:
    seen: list[Any] = []

    def sync_add(params: AddInput, ctx: ToolContext) -> int:
        seen.append(ctx)
        return params.a + params.b

    async def async_add(params: AddInput, ctx: ToolContext) -> int:
        await asyncio.sleep(0)
        return params.a + params.b

    ctx = ToolContext()
    for fn in (sync_add, async_add):
        tool = define_tool(name="add", description="Add", input=AddInput, execute=fn)
        assert await tool.execute_raw('{"a": 2, "b": 3}', ctx) == JsonResult(value=5)
    assert seen == [ctx]


@pytest.mark.asyncio
async def test_a_sync_function_returning_an_awaitable_is_awaited() -> None:
    async def later() -> str:
        return "done"

    tool = define_tool(name="t", description="d", input=AddInput, execute=lambda p, c: later())
    assert await run(tool, '{"a": 1}') == TextResult(text="done")


class Later:
    """An awaitable that is neither a coroutine nor a future."""

    def __await__(self) -> Any:
        yield from asyncio.sleep(0).__await__()
        return {"from": "custom awaitable"}


class NotAwaitable(dict[str, Any]):
    """A dict subclass: a plain value, whatever its type."""


@pytest.mark.asyncio
async def test_every_kind_of_awaitable_is_awaited_and_nothing_else() -> None:
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    future.set_result("from future")
    assert await run(returning(future), '{"a": 1}') == TextResult(text="from future")
    assert await run(returning(Later()), '{"a": 1}') == JsonResult(
        value={"from": "custom awaitable"}
    )
    plain = NotAwaitable(a=1)
    assert await run(returning(plain), '{"a": 1}') == JsonResult(value={"a": 1})


@pytest.mark.asyncio
async def test_empty_arguments_mean_an_empty_object() -> None:
    class Defaults(BaseModel):
        n: int = 7

    assert await run(returning("ok", Defaults), "") == TextResult(text="ok")
    with pytest.raises(ToolInputError, match='missing required field "x"'):
        await run(returning("ok", Inner), "  ")


@pytest.mark.asyncio
async def test_lax_validation_coerces_numeric_strings() -> None:
    tool = define_tool(name="add", description="d", input=AddInput, execute=lambda p, c: p.a)
    assert await run(tool, '{"a": "5"}') == JsonResult(value=5)


@pytest.mark.asyncio
async def test_aliases_are_the_accepted_wire_names() -> None:
    tool = define_tool(name="todo", description="d", input=TodoInput, execute=lambda p, c: p)
    result = await run(tool, '{"content": "write", "activeForm": "writing"}')
    assert result == JsonResult(value={"content": "write", "active_form": "writing"})


@pytest.mark.asyncio
async def test_tool_exceptions_propagate_unchanged() -> None:
    def fail(params: AddInput, ctx: ToolContext) -> None:
        raise LookupError("no such row")

    tool = define_tool(name="t", description="d", input=AddInput, execute=fail)
    with pytest.raises(LookupError, match="no such row"):
        await run(tool, '{"a": 1}')


# --- argument errors the model can act on -----------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            '{"a": 1',
            "Invalid tool arguments JSON for add: Expecting ',' delimiter: line 1 column 8",
        ),
        ('{"a": 1,}', "Invalid tool arguments JSON for add: Expecting property name enclosed in"),
        ("{'a': 1}", "Invalid tool arguments JSON for add: Expecting property name enclosed in"),
        ("not json", "Invalid tool arguments JSON for add: Expecting value: line 1 column 1"),
    ],
)
async def test_bad_json_says_where(raw: str, message: str) -> None:
    tool = define_tool(name="add", description="d", input=AddInput, execute=lambda p, c: 0)
    with pytest.raises(ToolArgumentsError) as info:
        await run(tool, raw)
    assert str(info.value).startswith(message)
    assert str(info.value).endswith("Send the arguments as one JSON object.")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ('{"a": ' + "1" * 5000, "number out of range at line 1 column 4308"),
        ('{"a": ' + "1" * 5000 + "}", "number out of range at line 1 column 4308"),
        ('{"a": ' + "[" * 100_000, "recursion limit exceeded at line 1 column 207"),
        ('{"a": ' + "[" * 5000 + "]" * 5000 + "}", "recursion limit exceeded at line 1 column"),
    ],
    ids=["digits-invalid", "digits-valid", "deep-invalid", "deep-valid"],
)
async def test_json_past_pythons_limits_gets_the_documented_error(raw: str, problem: str) -> None:
    tool = define_tool(name="add", description="d", input=AddInput, execute=lambda p, c: 0)
    with pytest.raises(ToolArgumentsError) as info:
        await run(tool, raw)
    assert str(info.value).startswith(f"Invalid tool arguments JSON for add: {problem}")
    assert str(info.value).endswith("Send the arguments as one JSON object.")
    assert parse_tool_args(raw) is None


NOT_OBJECT = "Tool input validation failed for add: arguments must be a JSON object"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{}", 'Tool input validation failed for add: missing required field "a"'),
        (
            '{"a": 1, "c": 2}',
            'Tool input validation failed for add: Unrecognized key: "c" (accepted keys: a, b)',
        ),
        (
            '{"a": 1, "c": 2, "d": 3}',
            'Tool input validation failed for add: Unrecognized keys: "c", "d" '
            "(accepted keys: a, b)",
        ),
        (
            '{"a": "x"}',
            "Tool input validation failed for add: a: Input should be a valid integer, "
            "unable to parse string as an integer",
        ),
        (
            "[1, 2]",
            f"{NOT_OBJECT}, got array",
        ),
        ("5", f"{NOT_OBJECT}, got number"),
        ("true", f"{NOT_OBJECT}, got boolean"),
        ("null", f"{NOT_OBJECT}, got null"),
        (
            '"a"',
            f"{NOT_OBJECT}, got string",
        ),
    ],
)
async def test_validation_errors_say_what_to_fix(raw: str, message: str) -> None:
    tool = define_tool(name="add", description="d", input=AddInput, execute=lambda p, c: 0)
    with pytest.raises(ToolInputError) as info:
        await run(tool, raw)
    assert str(info.value) == message


@pytest.mark.asyncio
async def test_unknown_and_missing_keys_use_wire_names() -> None:
    tool = define_tool(name="todo", description="d", input=TodoInput, execute=lambda p, c: 0)
    with pytest.raises(ToolInputError) as info:
        await run(tool, '{"content": "x", "active_form": "y"}')
    assert str(info.value) == (
        'Tool input validation failed for todo: Unrecognized key: "active_form" '
        '(accepted keys: activeForm, content); missing required field "activeForm"'
    )


@pytest.mark.asyncio
async def test_nested_errors_name_their_location() -> None:
    tool = define_tool(name="o", description="d", input=Outer, execute=lambda p, c: 0)
    with pytest.raises(ToolInputError) as info:
        await run(tool, '{"inner": {"x": 1, "y": 2}, "mode": "c"}')
    assert str(info.value) == (
        'Tool input validation failed for o: Unrecognized key: "inner.y"; '
        "mode: Input should be 'a' or 'b'"
    )
    with pytest.raises(ToolInputError, match=r'missing required field "inner\.x"'):
        await run(tool, '{"inner": {}}')


@pytest.mark.asyncio
async def test_custom_field_messages_are_kept() -> None:
    from pydantic import field_validator

    class Hashed(BaseModel):
        digest: str

        @field_validator("digest")
        @classmethod
        def _hex(cls, value: str) -> str:
            if len(value) != 4:
                raise ValueError("digest must be 4 hex digits; read the file again")
            return value

    tool = define_tool(name="h", description="d", input=Hashed, execute=lambda p, c: 0)
    with pytest.raises(ToolInputError, match="digest must be 4 hex digits; read the file again"):
        await run(tool, '{"digest": "12"}')


@pytest.mark.asyncio
async def test_allow_extra_keys_opts_out_of_rejecting_unknown_keys() -> None:
    tool = define_tool(
        name="t", description="d", input=AddInput, execute=lambda p, c: p.a, allow_extra_keys=True
    )
    assert await run(tool, '{"a": 1, "zzz": 2}') == JsonResult(value=1)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"name": "bad name"}, "Tool name 'bad name' must be non-empty and use only letters"),
        ({"name": ""}, "Tool name '' must be non-empty"),
        ({"input": dict}, "Tool 'ok': input must be a pydantic model class."),
        ({"input": AddInput(a=1)}, "Tool 'ok': input must be a pydantic model class."),
        ({"execute": "not callable"}, "Tool 'ok': execute must be callable."),
    ],
)
def test_definition_errors(options: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {
        "name": "ok",
        "description": "d",
        "input": AddInput,
        "execute": lambda p, c: 0,
    }
    with pytest.raises(ToolDefinitionError) as info:
        define_tool(**{**arguments, **options})
    assert str(info.value).startswith(message)


# --- return value coercion --------------------------------------------------------------------


class Report(BaseModel):
    title: str
    rows: int | None = None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain text", TextResult(text="plain text")),
        ("", TextResult(text="")),
        ([], PartsResult(parts=[])),
        ([{"type": "text", "text": "a"}], PartsResult(parts=[TextPart(text="a")])),
        ([TextPart(text="b")], PartsResult(parts=[TextPart(text="b")])),
        ({"type": "text", "text": "as dict"}, TextResult(text="as dict")),
        ({"type": "json", "value": [1, 2]}, JsonResult(value=[1, 2])),
        ({"type": "parts", "parts": []}, PartsResult(parts=[])),
        ({"type": "text", "text": 5}, JsonResult(value={"type": "text", "text": 5})),
        ({"type": "other"}, JsonResult(value={"type": "other"})),
        ({"a": 1}, JsonResult(value={"a": 1})),
        ([1, "x"], JsonResult(value=[1, "x"])),
        ([{"type": "text"}], JsonResult(value=[{"type": "text"}])),
        (Report(title="t"), JsonResult(value={"title": "t", "rows": None})),
        (42, JsonResult(value=42)),
        (None, JsonResult(value=None)),
        (TextResult(text="same"), TextResult(text="same")),
    ],
)
@pytest.mark.asyncio
async def test_return_values_are_coerced(value: Any, expected: Any) -> None:
    assert coerce_result(value) == expected
    assert await run(returning(value), '{"a": 1}') == expected


@pytest.mark.parametrize(
    ("result", "content"),
    [
        (TextResult(text="hi"), "hi"),
        (JsonResult(value={"b": 1, "a": "é"}), '{"b":1,"a":"é"}'),
        (JsonResult(value=None), "null"),
        (JsonResult(value=[1.5, True, None]), "[1.5,true,null]"),
        (JsonResult(value={1, 2}.__class__), "<class 'set'>"),
        (PartsResult(parts=[]), []),
    ],
)
def test_result_content(result: Any, content: Any) -> None:
    assert result_content(result) == content


def test_parts_stay_structured_in_the_tool_message() -> None:
    image = ImagePart.from_bytes(b"\x89PNG", "image/png")
    result = PartsResult(parts=[TextPart(text="plot:"), image])
    message = to_tool_message(result, tool_call_id="toolu_1", tool_name="plot")
    assert message.content == [TextPart(text="plot:"), image]
    assert message.tool_call_id == "toolu_1"
    assert message.tool_name == "plot"
    assert message.is_error is None
    assert message.dump() == {
        "role": "tool",
        "tool_call_id": "toolu_1",
        "tool_name": "plot",
        "content": [
            {"type": "text", "text": "plot:"},
            {
                "type": "image_url",
                "image_url": {"url": "data:image/png;base64,iVBORw==", "media_type": "image/png"},
            },
        ],
    }


def test_to_tool_message_for_text_and_json() -> None:
    text = to_tool_message(TextResult(text="ok"), tool_call_id="c", tool_name="t", is_error=True)
    assert (text.content, text.is_error) == ("ok", True)
    data = to_tool_message(
        JsonResult(value={"z": [1, {"y": None}]}), tool_call_id="c", tool_name="t"
    )
    assert data.content == '{"z":[1,{"y":null}]}'
