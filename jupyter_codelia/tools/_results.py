"""Tool results, their conversion to ToolMessage content, and the application data beside it.

What a tool returns is content for the model. What the application needs of a result (the diff
to draw, the edit a Revert button undoes, the namespace changes an Undo button restores, the job
a call started, how the call ended) is :class:`ToolResultData`, typed, and never sent to the
model: a tool returns ``ToolReturn(value, data=ToolResultData(...))`` (pydantic-ai's
``ToolReturn(return_value, metadata=...)``), the executor hands ``data`` to the agent beside the
message, and the ``tool_result`` event carries it to every UI, so no UI reads the model's text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from .._text import compact_json
from ..llm.messages import ContentPart, ToolMessage, content_parts_adapter, is_content_part


class TextResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    type: Literal["text"] = "text"
    text: str


class JsonResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    type: Literal["json"] = "json"
    value: Any = None


class PartsResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    type: Literal["parts"] = "parts"
    parts: list[ContentPart]


ToolResult = Annotated[TextResult | JsonResult | PartsResult, Field(discriminator="type")]
_RESULT_TYPES = (TextResult, JsonResult, PartsResult)

ToolOutcome = Literal["completed", "error", "denied", "cut_off"]
"""How a call ended: it ran, it failed (or was never found), the permission check refused it, or
the model's output limit cut its arguments off so it was not run."""


class NamespaceChange(BaseModel):
    """One name a python call changed in the kernel namespace (what its Undo restores)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    change: Literal["added", "rebound", "deleted", "mutated"]


class ToolResultData(BaseModel):
    """What the application reads of a call's result, beside the model's content."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    outcome: ToolOutcome = "completed"
    summary: str | None = None
    """One line saying what the call did, for its card ("Wrote 12 bytes to a.py")."""
    diff: str | None = None
    """The change a file or notebook edit made, as a unified diff (possibly a bounded preview)."""
    file_path: str | None = None
    edit_id: str | None = None
    """The notebook edit this call made, which the front end can revert."""
    namespace_changes: list[NamespaceChange] | None = None
    """The names a python call changed, recorded for undo."""
    job_id: str | None = None
    """The background job this call started."""
    cache_ref: str | None = None
    """The output-cache entry that holds this result's full output (the full diff of an edit
    too long to show whole)."""


COMPLETED = ToolResultData()


@dataclass(frozen=True, slots=True)
class ToolReturn:
    """What a tool returns to give the application data beside the model's content: ``value``
    is converted for the model as any return value is; ``data`` never reaches the model."""

    value: Any
    data: ToolResultData


def coerce_result(value: Any) -> TextResult | JsonResult | PartsResult:
    """Turn whatever ``execute`` returned into a ToolResult; the first matching rule wins."""
    if isinstance(value, _RESULT_TYPES):
        return value
    if isinstance(value, str):
        return TextResult(text=value)
    if isinstance(value, dict) and _is_result_dict(value):
        kind = value["type"]
        if kind == "text":
            return TextResult(text=value["text"])
        if kind == "parts":
            return PartsResult(parts=content_parts_adapter.validate_python(value["parts"]))
        return JsonResult(value=value["value"])
    if isinstance(value, list) and all(is_content_part(p) for p in value):
        return PartsResult(parts=content_parts_adapter.validate_python(value))
    if isinstance(value, BaseModel):
        return JsonResult(value=value.model_dump(mode="json"))
    return JsonResult(value=value)


def _is_result_dict(value: dict[str, Any]) -> bool:
    kind = value.get("type")
    if kind == "text":
        return isinstance(value.get("text"), str)
    if kind == "parts":
        parts = value.get("parts")
        return isinstance(parts, list) and all(is_content_part(p) for p in parts)
    if kind == "json":
        return "value" in value
    return False


def result_content(result: TextResult | JsonResult | PartsResult) -> str | list[Any]:
    """ToolMessage content: text → str, json → compact stable JSON, parts → the parts list."""
    if isinstance(result, TextResult):
        return result.text
    if isinstance(result, PartsResult):
        return list(result.parts)
    return _json_content(result.value)


# Returns that coerce_result turns into a JsonResult of themselves, whatever their value.
_PLAIN_JSON_TYPES = frozenset({int, float, bool, type(None)})


def value_content(value: Any) -> str | list[Any]:
    """ToolMessage content for what ``execute`` returned: ``result_content(coerce_result(value))``.

    The executor needs this for every call. The common returns (a str, a dict that is not
    shaped like a result, a number) skip the intermediate result model: building it and the
    pydantic ``isinstance`` checks cost about as much as the JSON encoding itself.
    """
    kind = type(value)
    if kind is str:
        return cast(str, value)
    if (kind is dict and not _is_result_dict(value)) or kind in _PLAIN_JSON_TYPES:
        return _json_content(value)
    return result_content(coerce_result(value))


def _json_content(value: Any) -> str:
    if value is None:
        return "null"
    try:
        return compact_json(value)
    except (TypeError, ValueError):
        return str(value)


def to_tool_message(
    result: TextResult | JsonResult | PartsResult,
    *,
    tool_call_id: str,
    tool_name: str,
    is_error: bool | None = None,
) -> ToolMessage:
    return ToolMessage(
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        content=result_content(result),
        is_error=is_error,
    )
