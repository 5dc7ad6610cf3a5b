"""``define_tool`` and the ``Tool`` protocol.

A tool owns its whole argument pipeline: JSON parsing, validation against a pydantic model,
execution (sync or async) and coercion of the return value, so the agent handles every tool the
same way.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from types import CoroutineType
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, RootModel, ValidationError

from ..llm.messages import FunctionToolDefinition
from ._context import ToolContext
from ._errors import ToolArgumentsError, ToolDefinitionError, ToolInputError
from ._results import TextResult, ToolReturn, coerce_result
from ._risk import UNDECLARED, ToolRisk
from ._schema import input_schema

InputT = TypeVar("InputT", bound=BaseModel)
ToolFunction = Callable[[InputT, ToolContext], Any]
AnyResult = Any  # TextResult | JsonResult | PartsResult, or a ToolReturn of one; kept loose


@runtime_checkable
class Tool(Protocol):
    """Anything the agent can call: a name, a definition for the model and ``execute_raw``."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def definition(self) -> FunctionToolDefinition: ...

    async def execute_raw(self, raw_args_json: str, ctx: ToolContext) -> AnyResult: ...


class FunctionTool:
    """A tool backed by a pydantic input model and a Python function."""

    __slots__ = (
        "_accepted",
        "_validate_json",
        "definition",
        "description",
        "execute",
        "input",
        "name",
        "risk",
    )

    def __init__(
        self,
        *,
        name: str,
        description: str,
        input: type[BaseModel],
        execute: Callable[[Any, ToolContext], Any],
        allow_extra_keys: bool = False,
        risk: ToolRisk = UNDECLARED,
    ) -> None:
        if not name or not name.replace("_", "").replace("-", "").isalnum():
            raise ToolDefinitionError(
                f"Tool name {name!r} must be non-empty and use only letters, digits, '_' and '-'."
            )
        if not (isinstance(input, type) and issubclass(input, BaseModel)):
            raise ToolDefinitionError(f"Tool {name!r}: input must be a pydantic model class.")
        if not callable(execute):
            raise ToolDefinitionError(f"Tool {name!r}: execute must be callable.")
        # A RootModel (a union of object models) cannot carry ``extra`` itself: its member
        # models' own settings decide, and their schemas say so.
        is_root = issubclass(input, RootModel)
        if not allow_extra_keys and not is_root and input.model_config.get("extra") != "forbid":
            input = _forbidding(input)
        self.name = name
        self.description = description
        self.input = input
        self.execute = execute
        self.risk = risk
        self._validate_json = input.__pydantic_validator__.validate_json
        fields = {} if is_root else input.model_fields
        self._accepted = sorted(f.alias or n for n, f in fields.items())
        self.definition = FunctionToolDefinition(
            name=name,
            description=description,
            parameters=input_schema(
                input, forbid_extra=input.model_config.get("extra") == "forbid"
            ),
        )

    def __repr__(self) -> str:
        return f"<FunctionTool {self.name}>"

    def parse_args(self, raw_args_json: str) -> BaseModel:
        """Validate raw JSON arguments; errors are ToolArgumentsError / ToolInputError."""
        if not raw_args_json or raw_args_json.isspace():
            raw_args_json = "{}"
        try:
            parsed: BaseModel = self._validate_json(raw_args_json)
            return parsed
        except ValidationError as exc:
            invalid = [e["msg"] for e in exc.errors() if e["type"] == "json_invalid"]
            if invalid:
                problem = _json_error(raw_args_json, invalid[0])
                raise ToolArgumentsError(
                    f"Invalid tool arguments JSON for {self.name}: {problem}. "
                    "Send the arguments as one JSON object."
                ) from None
            raise ToolInputError(
                f"Tool input validation failed for {self.name}: {self._describe(exc)}"
            ) from None

    def start(self, raw_args_json: str, ctx: ToolContext) -> Any:
        """Parse, validate and call ``execute``: its return value, possibly an awaitable.

        Not a coroutine itself, so the executor's hot path awaits one frame less; valid
        arguments go straight to the validator, and ``parse_args`` only runs to explain a
        failure (or to read blank arguments as ``{}``).
        """
        try:
            parsed = self._validate_json(raw_args_json)
        except ValidationError:
            parsed = self.parse_args(raw_args_json)
        return self.execute(parsed, ctx)

    async def execute_raw(self, raw_args_json: str, ctx: ToolContext) -> AnyResult:
        value = self.start(raw_args_json, ctx)
        if is_pending(value):
            value = await value
        if type(value) is str:
            return TextResult(text=value)
        if type(value) is ToolReturn:
            return ToolReturn(coerce_result(value.value), value.data)
        return coerce_result(value)

    def _describe(self, exc: ValidationError) -> str:
        problems: list[str] = []
        unknown: list[str] = []
        for err in exc.errors(include_url=False):
            loc = err["loc"]
            where = ".".join(str(p) for p in loc)
            if err["type"] == "extra_forbidden":
                if len(loc) == 1:
                    unknown.append(str(loc[0]))
                else:
                    problems.append(f'Unrecognized key: "{where}"')
            elif err["type"] == "missing":
                problems.append(f'missing required field "{where}"')
            elif err["type"] in ("model_type", "model_attributes_type") and not loc:
                problems.append(f"arguments must be a JSON object, got {_json_type(err['input'])}")
            else:
                problems.append(f"{where or '(root)'}: {err['msg']}" if where else err["msg"])
        if unknown:
            keys = ", ".join(f'"{k}"' for k in unknown)
            label = "Unrecognized key" if len(unknown) == 1 else "Unrecognized keys"
            accepted = ", ".join(self._accepted) or "(none)"
            problems.insert(0, f"{label}: {keys} (accepted keys: {accepted})")
        return "; ".join(problems)


# What tools return most; ``inspect.isawaitable`` on them costs several times the tool call.
_NEVER_AWAITABLE = frozenset({str, dict, list, int, float, bool, type(None)})


def is_pending(value: Any) -> bool:
    """Whether a tool function's return value must still be awaited (cheap checks first)."""
    kind = type(value)
    return kind is CoroutineType or (kind not in _NEVER_AWAITABLE and inspect.isawaitable(value))


def _json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, as the model knows it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _json_error(raw: str, validator_message: str) -> str:
    """Python's description of the syntax error (it names line and column), else the
    validator's: for numbers past Python's digit limit, nesting past its recursion limit, or
    JSON that only the validator refuses, ``json`` raises ValueError/RecursionError instead."""
    try:
        json.loads(raw)
    except json.JSONDecodeError as exc:
        return str(exc)
    except (ValueError, RecursionError):
        pass
    return validator_message.removeprefix("Invalid JSON: ")


def _forbidding(model: type[BaseModel]) -> type[BaseModel]:
    """A subclass of ``model`` that rejects unknown keys; config is inherited."""
    namespace = {"model_config": ConfigDict(extra="forbid"), "__module__": model.__module__}
    return type(model.__name__, (model,), namespace)


def define_tool(
    *,
    name: str,
    description: str,
    input: type[InputT],
    execute: Callable[[InputT, ToolContext], Any] | Callable[[InputT, ToolContext], Awaitable[Any]],
    allow_extra_keys: bool = False,
    risk: ToolRisk = UNDECLARED,
) -> FunctionTool:
    """Define a tool from a pydantic input model and ``execute(input, ctx)`` (sync or async).

    Unknown argument keys are rejected unless ``allow_extra_keys`` is true (then the model's own
    ``extra`` setting applies). ``tool.definition.parameters`` is a draft-07 JSON Schema.
    ``risk`` declares what the tool touches and whether calls need approval (undeclared: every
    mode but ``full-access`` asks).
    """
    return FunctionTool(
        name=name,
        description=description,
        input=input,
        execute=execute,
        allow_extra_keys=allow_extra_keys,
        risk=risk,
    )
