"""execute_tool_call: every outcome is a well-formed ToolMessage."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from jupyter_codelia.llm.messages import FunctionCall, FunctionToolDefinition, TextPart, ToolCall
from jupyter_codelia.tools import (
    JsonResult,
    PermissionDecision,
    TaskComplete,
    TextResult,
    ToolContext,
    ToolExecution,
    ToolMessage,
    coerce_result,
    define_tool,
    done_tool,
    execute_tool_call,
    find_tool,
    result_content,
    tool_index,
)

STOP_TURN = "Permission request was denied. Turn stopped. Please send your next input to continue."


class AddInput(BaseModel):
    a: int
    b: int = 0


def add_tool() -> Any:
    return define_tool(
        name="add", description="Add", input=AddInput, execute=lambda p, c: p.a + p.b
    )


def call(name: str = "add", arguments: str = '{"a": 2, "b": 3}', call_id: str = "c1") -> ToolCall:
    return ToolCall(id=call_id, function=FunctionCall(name=name, arguments=arguments))


def raising(exc: BaseException) -> Any:
    def execute(params: AddInput, ctx: ToolContext) -> None:
        raise exc

    return define_tool(name="add", description="d", input=AddInput, execute=execute)


def error(text: str, *, name: str = "add") -> ToolMessage:
    return ToolMessage(tool_call_id="c1", tool_name=name, content=text, is_error=True)


@pytest.mark.asyncio
async def test_success_gives_the_result_content() -> None:
    result = await execute_tool_call(call(), [add_tool()])
    assert result == ToolExecution(ToolMessage(tool_call_id="c1", tool_name="add", content="5"))
    assert result.message.is_error is None
    assert result.message.dump() == {
        "role": "tool",
        "tool_call_id": "c1",
        "tool_name": "add",
        "content": "5",
    }


@pytest.mark.asyncio
async def test_first_tool_with_the_name_wins() -> None:
    first = define_tool(name="add", description="d", input=AddInput, execute=lambda p, c: "first")
    assert (await execute_tool_call(call(), [first, add_tool()])).message.content == "first"
    assert find_tool([first], "missing") is None


@pytest.mark.asyncio
async def test_an_index_finds_what_the_sequence_finds() -> None:
    first = define_tool(name="add", description="d", input=AddInput, execute=lambda p, c: "first")
    tools = [first, add_tool(), done_tool()]
    index = tool_index(tools)
    assert list(index) == ["add", "done"]
    for name in ("add", "done", "missing"):
        assert find_tool(index, name) is find_tool(tools, name)
    by_index = await execute_tool_call(call(), index)
    assert by_index == await execute_tool_call(call(), tools)
    assert by_index.message.content == "first"
    unknown = await execute_tool_call(call("subtract"), index)
    assert unknown == ToolExecution(
        error("Error: Unknown tool 'subtract'. Available tools: add, done", name="subtract"),
        outcome="error",
    )
    assert (await execute_tool_call(call("x"), tool_index([]))).message.content == (
        "Error: Unknown tool 'x'. Available tools: (none)"
    )


@pytest.mark.asyncio
async def test_unknown_tool_lists_the_available_ones_and_skips_the_hook() -> None:
    asked: list[str] = []

    async def hook(tool_call: ToolCall, raw: str, ctx: ToolContext) -> PermissionDecision:
        asked.append(tool_call.function.name)
        return PermissionDecision.allow()

    result = await execute_tool_call(
        call("subtract"), [add_tool(), done_tool()], can_execute_tool=hook
    )
    assert result == ToolExecution(
        error("Error: Unknown tool 'subtract'. Available tools: add, done", name="subtract"),
        outcome="error",
    )
    assert asked == []
    empty = await execute_tool_call(call("x"), [])
    assert empty.message.content == "Error: Unknown tool 'x'. Available tools: (none)"


@pytest.mark.asyncio
async def test_argument_errors_become_error_messages() -> None:
    bad_json = await execute_tool_call(call(arguments='{"a": '), [add_tool()])
    assert bad_json.message.is_error is True
    assert isinstance(bad_json.message.content, str)
    assert bad_json.message.content.startswith(
        "Error executing tool: Invalid tool arguments JSON for add: Expecting value: line 1"
    )
    unknown = await execute_tool_call(call(arguments='{"a": 1, "c": 1}'), [add_tool()])
    assert unknown == ToolExecution(
        error(
            "Error executing tool: Tool input validation failed for add: "
            'Unrecognized key: "c" (accepted keys: a, b)'
        ),
        outcome="error",
    )


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("exc", "text"),
    [
        (ValueError("bad value"), "Error executing tool: bad value"),
        (FileNotFoundError(2, "No such file", "x.txt"),
         "Error executing tool: [Errno 2] No such file: 'x.txt'"),
        (RuntimeError(), "Error executing tool: "),
        (TimeoutError("slow"), "Error executing tool: slow"),
    ],
)  # fmt: skip
async def test_tool_exceptions_become_error_messages(exc: Exception, text: str) -> None:
    expected = ToolExecution(error(text), outcome="error")
    assert await execute_tool_call(call(), [raising(exc)]) == expected


@pytest.mark.asyncio
async def test_an_exception_whose_message_cannot_render_still_gives_a_message() -> None:
    class UnprintableError(Exception):
        def __str__(self) -> str:
            raise RuntimeError("broken __str__")

    result = await execute_tool_call(call(), [raising(UnprintableError())])
    assert result == ToolExecution(
        error("Error executing tool: UnprintableError (its message could not be rendered)"),
        outcome="error",
    )


@pytest.mark.asyncio
async def test_an_invalid_return_value_is_reported() -> None:
    tool = define_tool(
        name="add",
        description="d",
        input=AddInput,
        execute=lambda p, c: {"type": "parts", "parts": [{"type": "text", "text": "ok"}]},
    )
    assert (await execute_tool_call(call(), [tool])).message.content == [TextPart(text="ok")]
    unserialisable = define_tool(
        name="add", description="d", input=AddInput, execute=lambda p, c: {1j}
    )
    result = await execute_tool_call(call(), [unserialisable])
    assert result.message.content == "{1j}"  # json fails → str(value)


def returning(value: Any) -> Any:
    return define_tool(name="add", description="d", input=AddInput, execute=lambda p, c: value)


class DictSubclass(dict[str, Any]):
    pass


def circular() -> dict[str, Any]:
    value: dict[str, Any] = {"name": "loop"}
    value["self"] = value
    return value


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "value",
    [
        "text", "", "\ud800 lone surrogate", {"b": 1, "a": "é"},
        {"type": "text", "text": "as dict"}, {"type": "json", "value": None},
        {"type": "text", "text": 5}, {"type": "parts", "parts": []},
        {"set": {1}}, {(1, 2): "tuple key"}, {"nan": float("nan")}, circular(), DictSubclass(a=1),
        7, -2.5, True, None, float("inf"), [1, "x"], [{"type": "text", "text": "a"}], (1, 2),
        JsonResult(value={"z": 1}), TextResult(text="same"),
    ],
)  # fmt: skip
async def test_the_message_content_is_what_coercion_gives(value: Any) -> None:
    # The executor skips the intermediate result for common returns; the content is the same.
    result = await execute_tool_call(call(), [returning(value)])
    assert result.message.is_error is None
    assert result.message.content == result_content(coerce_result(value))


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (10**5000, "Exceeds the limit (4300 digits) for integer string conversion"),
        ({"n": 10**5000}, "Exceeds the limit (4300 digits) for integer string conversion"),
        (
            [{"type": "document", "source": {"data": "eA==", "url": "https://example.com/a.pdf"}}],
            "a document source needs exactly one of data (base64) or url",
        ),
    ],
    ids=["huge int", "dict holding a huge int", "document with two sources"],
)
async def test_a_return_value_that_cannot_become_content_is_an_error(
    value: Any, problem: str
) -> None:
    result = await execute_tool_call(call(), [returning(value)])
    assert result.message.is_error is True
    assert isinstance(result.message.content, str)
    assert result.message.content.startswith(
        "Error executing tool: tool returned an invalid result: "
    )
    assert problem in result.message.content


@pytest.mark.asyncio
async def test_done_ends_the_run_with_its_message() -> None:
    result = await execute_tool_call(
        call("done", '{"message": "All tests pass."}'), [add_tool(), done_tool()]
    )
    assert result == ToolExecution(
        ToolMessage(tool_call_id="c1", tool_name="done", content="Task complete"),
        done=True,
        final_message="All tests pass.",
    )
    missing = await execute_tool_call(call("done", "{}"), [done_tool()])
    assert missing.done is False
    assert missing.message.content == (
        "Error executing tool: Tool input validation failed for done: "
        'missing required field "message"'
    )


def test_done_tool_definition() -> None:
    definition = done_tool().definition
    assert definition.name == "done"
    assert "final message" in definition.description
    assert definition.parameters == {
        "type": "object",
        "properties": {
            "message": {
                "type": "string",
                "description": "Final user-facing message summarising what was done.",
            }
        },
        "required": ["message"],
        "additionalProperties": False,
    }
    complete = TaskComplete("bye")
    assert (str(complete), complete.final_message) == ("Task complete", "bye")
    assert TaskComplete().final_message is None


@pytest.mark.asyncio
async def test_task_complete_from_any_tool_ends_the_run() -> None:
    result = await execute_tool_call(call(), [raising(TaskComplete(None))])
    assert (result.done, result.final_message, result.message.content) == (
        True,
        None,
        "Task complete",
    )


# --- the permission hook ---------------------------------------------------------------------


def hook_returning(decision: PermissionDecision, seen: list[Any]) -> Any:
    async def hook(tool_call: ToolCall, raw: str, ctx: ToolContext) -> PermissionDecision:
        seen.append((tool_call.id, raw, ctx.tool_call_id, ctx.tool_name))
        return decision

    return hook


@pytest.mark.asyncio
async def test_hook_allow_runs_the_tool() -> None:
    seen: list[Any] = []
    hook = hook_returning(PermissionDecision.allow(), seen)
    result = await execute_tool_call(call(), [add_tool()], can_execute_tool=hook)
    assert result.message.content == "5"
    assert seen == [("c1", '{"a": 2, "b": 3}', "c1", "add")]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        (PermissionDecision.deny(), ToolExecution(error("Permission denied"), outcome="denied")),
        (
            PermissionDecision.deny("blocked by deny rule (rm -rf /)"),
            ToolExecution(
                error("Permission denied: blocked by deny rule (rm -rf /)"), outcome="denied"
            ),
        ),
        (
            PermissionDecision.deny("not now, use git stash", stop_turn=False),
            ToolExecution(error("Permission denied: not now, use git stash"), outcome="denied"),
        ),
        (
            PermissionDecision.deny(stop_turn=True),
            ToolExecution(error("Permission denied"), True, STOP_TURN, outcome="denied"),
        ),
        (
            PermissionDecision.deny("user said no", stop_turn=True),
            ToolExecution(
                error("Permission denied: user said no"), True, STOP_TURN, outcome="denied"
            ),
        ),
    ],
)
async def test_hook_denials(decision: PermissionDecision, expected: ToolExecution) -> None:
    ran: list[int] = []
    tool = define_tool(
        name="add", description="d", input=AddInput, execute=lambda p, c: ran.append(1)
    )
    hook = hook_returning(decision, [])
    assert await execute_tool_call(call(), [tool], can_execute_tool=hook) == expected
    assert ran == []


@pytest.mark.asyncio
async def test_a_raising_hook_becomes_an_error_message() -> None:
    async def hook(tool_call: ToolCall, raw: str, ctx: ToolContext) -> PermissionDecision:
        raise OSError("approval service unreachable")

    result = await execute_tool_call(call(), [add_tool()], can_execute_tool=hook)
    assert result == ToolExecution(
        error("Permission check failed: approval service unreachable"), outcome="error"
    )


# --- cancellation propagates ---------------------------------------------------------------


@pytest.mark.asyncio
async def test_cancellation_inside_a_tool_propagates() -> None:
    started = asyncio.Event()

    async def slow(params: AddInput, ctx: ToolContext) -> str:
        started.set()
        await asyncio.sleep(3600)
        return "never"

    tool = define_tool(name="add", description="d", input=AddInput, execute=slow)
    task = asyncio.create_task(execute_tool_call(call(), [tool]))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.asyncio
async def test_cancellation_inside_the_hook_propagates() -> None:
    async def hook(tool_call: ToolCall, raw: str, ctx: ToolContext) -> PermissionDecision:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await execute_tool_call(call(), [add_tool()], can_execute_tool=hook)


# --- tools that implement the protocol directly ------------------------------------------------


class EchoTool:
    """A Tool written by hand (client/MCP adapters do this): no pydantic input model."""

    name = "echo"
    description = "Echo the raw arguments."
    definition = FunctionToolDefinition(
        name="echo", description="Echo the raw arguments.", parameters={"type": "object"}
    )

    async def execute_raw(self, raw_args_json: str, ctx: ToolContext) -> Any:
        if raw_args_json == "boom":
            raise KeyError("boom")
        if raw_args_json == "json":
            return JsonResult(value={"raw": True})
        return TextResult(text=raw_args_json)


@pytest.mark.asyncio
async def test_protocol_tools_run_through_execute_raw() -> None:
    tools = [EchoTool()]
    assert (await execute_tool_call(call("echo", "hi"), tools)).message.content == "hi"
    assert (await execute_tool_call(call("echo", "json"), tools)).message.content == '{"raw":true}'
    failed = await execute_tool_call(call("echo", "boom"), tools)
    assert failed.message == error("Error executing tool: 'boom'", name="echo")


# --- property: never raises, always well-formed ---------------------------------------------

EXCEPTION_TYPES = [
    ValueError,
    TypeError,
    KeyError,
    RuntimeError,
    OSError,
    ZeroDivisionError,
    UnicodeError,
    Exception,
]


# Any string, lone surrogates included, and JSON texts that reach validation and the tool.
any_text = st.text(alphabet=st.characters(exclude_categories=()))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | any_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
    max_leaves=6,
)
json_texts = (
    st.fixed_dictionaries({"a": json_values}, optional={"b": json_values, "message": json_values})
    | json_values
).map(lambda value: json.dumps(value, ensure_ascii=False))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    arguments=any_text | json_texts,
    exc_type=st.sampled_from(EXCEPTION_TYPES),
    message=st.text(),
    tool_name=st.sampled_from(["add", "done", "missing"]),
)
def test_any_arguments_and_any_exception_give_a_well_formed_message(
    arguments: str, exc_type: type[Exception], message: str, tool_name: str
) -> None:
    tools = [raising(exc_type(message)), done_tool()]
    tool_call = ToolCall(id="toolu_x", function=FunctionCall(name=tool_name, arguments=arguments))
    result = asyncio.run(execute_tool_call(tool_call, tools))
    assert isinstance(result, ToolExecution)
    msg = result.message
    assert (msg.tool_call_id, msg.tool_name, msg.role) == ("toolu_x", tool_name, "tool")
    assert isinstance(msg.content, str)
    assert ToolMessage.model_validate(msg.dump()) == msg  # round-trips through its wire form
    if result.done:
        assert tool_name == "done"
        assert msg.content == "Task complete"
        assert msg.is_error is None
    else:
        assert msg.is_error is True
        assert msg.content.startswith(("Error executing tool: ", "Error: Unknown tool "))
