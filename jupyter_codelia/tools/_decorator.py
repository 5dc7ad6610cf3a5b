"""``@tool``: build a tool's input model from a function signature (sugar over define_tool).

Parameters annotated ``ToolContext`` receive the call's context; parameters whose default is
``Depends(key)`` receive ``await ctx.resolve(key)``; every other parameter becomes a field of the
input model, described by the docstring's ``Args:`` section.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, create_model

from ._context import Depends, ToolContext
from ._define import FunctionTool
from ._errors import ToolDefinitionError
from ._risk import UNDECLARED, ToolRisk

_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and per-argument descriptions."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    current: str | None = None
    in_args = False
    header_indent = args_indent = 0
    for line in lines:
        if _ARGS_HEADER.match(line):
            in_args, current = True, None
            header_indent = len(line) - len(line.lstrip())
            continue
        if in_args:
            if not line.strip():
                current = None
                continue
            indent = len(line) - len(line.lstrip())
            match = _ARG_LINE.match(line)
            if indent <= header_indent:
                # The next section ("Returns:") or prose: the argument list has ended.
                in_args = False
                summary.append(line)
            elif match and (current is None or indent <= args_indent):
                args_indent = indent
                current = match.group(1).lstrip("*")
                params[current] = match.group(2).strip()
            elif current is not None and indent > args_indent:
                params[current] = f"{params[current]} {line.strip()}".strip()
            else:
                in_args = False
                summary.append(line)
            continue
        summary.append(line)
    return "\n".join(summary).strip(), params


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, risk: ToolRisk = UNDECLARED
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    risk: ToolRisk = UNDECLARED,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a (sync or async) function into a tool; see the module docstring."""

    def build(func: Callable[..., Any]) -> FunctionTool:
        return _tool_from_function(func, name=name, description=description, risk=risk)

    return build(fn) if fn is not None else build


def _tool_from_function(
    func: Callable[..., Any], *, name: str | None, description: str | None, risk: ToolRisk
) -> FunctionTool:
    doc_summary, doc_params = parse_docstring(func.__doc__)
    hints = get_type_hints(func, include_extras=True)
    signature = inspect.signature(func)
    fields: dict[str, Any] = {}
    ctx_params: list[str] = []
    dep_params: dict[str, Depends] = {}
    for pname, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(f"@tool {func.__name__}: *args/**kwargs are not supported.")
        annotation = hints.get(pname, Any)
        if annotation is ToolContext:
            ctx_params.append(pname)
            continue
        if isinstance(param.default, Depends):
            dep_params[pname] = param.default
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (annotation, Field(default, description=doc_params.get(pname)))
    model_name = "".join(part.title() for part in func.__name__.split("_")) + "Input"
    input_model: type[BaseModel] = create_model(
        model_name, __config__=ConfigDict(extra="forbid"), **fields
    )
    is_async = inspect.iscoroutinefunction(func)
    field_names = list(fields)

    async def execute(parsed: BaseModel, ctx: ToolContext) -> Any:
        kwargs: dict[str, Any] = {n: getattr(parsed, n) for n in field_names}
        for pname in ctx_params:
            kwargs[pname] = ctx
        for pname, dep in dep_params.items():
            kwargs[pname] = await ctx.resolve(dep.key)
        if is_async:
            return await func(**kwargs)
        return func(**kwargs)

    return FunctionTool(
        name=name or func.__name__,
        description=description or doc_summary or func.__name__.replace("_", " "),
        input=input_model,
        execute=execute,
        risk=risk,
    )
