"""The @tool decorator: input model from the signature, docstring descriptions, injection."""

from __future__ import annotations

from typing import Literal

import pytest

from jupyter_codelia.llm.messages import FunctionCall, ToolCall
from jupyter_codelia.tools import (
    DependencyKey,
    Depends,
    FunctionTool,
    ToolContext,
    ToolDefinitionError,
    execute_tool_call,
    tool,
)
from jupyter_codelia.tools._decorator import parse_docstring


class Database:
    def __init__(self, name: str) -> None:
        self.name = name
        self.rows = {"alice": 3, "bob": 5}


DB_KEY: DependencyKey[Database] = DependencyKey("db", lambda: Database("production"))


@tool
async def lookup_user(
    username: str,
    ctx: ToolContext,
    field: Literal["rows", "name"] = "rows",
    db: Database = Depends(DB_KEY),
) -> str:
    """Look a user up in the database.

    Args:
        username: Login name of the user,
            exactly as stored.
        field: Which attribute to report.
    """
    assert ctx.tool_name == "lookup_user"
    value = db.rows[username] if field == "rows" else db.name
    return f"{username}: {value} ({ctx.tool_call_id})"


def call(arguments: str, name: str = "lookup_user") -> ToolCall:
    return ToolCall(id="c7", function=FunctionCall(name=name, arguments=arguments))


def test_the_schema_comes_from_the_signature_and_docstring() -> None:
    assert isinstance(lookup_user, FunctionTool)
    assert lookup_user.name == "lookup_user"
    assert lookup_user.description == "Look a user up in the database."
    assert lookup_user.definition.parameters == {
        "type": "object",
        "properties": {
            "username": {
                "type": "string",
                "description": "Login name of the user, exactly as stored.",
            },
            "field": {
                "type": "string",
                "enum": ["rows", "name"],
                "default": "rows",
                "description": "Which attribute to report.",
            },
        },
        "required": ["username"],
        "additionalProperties": False,
    }


@pytest.mark.asyncio
async def test_context_and_dependencies_are_injected() -> None:
    result = await execute_tool_call(call('{"username": "bob"}'), [lookup_user])
    assert result.message.content == "bob: 5 (c7)"


@pytest.mark.asyncio
async def test_overrides_replace_a_dependency_by_id() -> None:
    ctx = ToolContext(overrides={"db": lambda: Database("test-db")})
    result = await execute_tool_call(
        call('{"username": "bob", "field": "name"}'), [lookup_user], ctx
    )
    assert result.message.content == "bob: test-db (c7)"


@pytest.mark.asyncio
async def test_injected_parameters_are_not_arguments() -> None:
    result = await execute_tool_call(call('{"username": "bob", "db": "x"}'), [lookup_user])
    assert result.message.content == (
        "Error executing tool: Tool input validation failed for lookup_user: "
        'Unrecognized key: "db" (accepted keys: field, username)'
    )


@pytest.mark.asyncio
async def test_sync_functions_and_explicit_name_and_description() -> None:
    @tool(name="multiply", description="Multiply two numbers.")
    def times(a: int, b: int = 2) -> int:
        return a * b

    assert (times.name, times.description) == ("multiply", "Multiply two numbers.")
    assert times.definition.parameters["required"] == ["a"]
    result = await execute_tool_call(call('{"a": 21}', name="multiply"), [times])
    assert result.message.content == "42"


def test_without_a_docstring_the_name_describes_the_tool() -> None:
    @tool
    def list_files(path: str) -> list[str]:
        return [path]

    assert list_files.description == "list files"
    assert "description" not in list_files.definition.parameters["properties"]["path"]


def test_variadic_parameters_are_rejected() -> None:
    def spread(*names: str) -> str:
        return ""

    with pytest.raises(ToolDefinitionError, match=r"@tool spread: \*args/\*\*kwargs are not"):
        tool(spread)


def test_parse_docstring_sections() -> None:
    summary, params = parse_docstring(
        """Do the thing.

        More detail.

        Args:
            path (str): Where to look.
            *extra: Ignored name prefix.
            depth: How deep,
                counted from the root.

        Returns:
            Nothing useful.
        """
    )
    assert summary == "Do the thing.\n\nMore detail.\n\nReturns:\n    Nothing useful."
    assert params == {
        "path": "Where to look.",
        "extra": "Ignored name prefix.",
        "depth": "How deep, counted from the root.",
    }
    assert parse_docstring(None) == ("", {})
