"""What a server asks of us during a connection, answered for the call that is running.

A server may ask for the roots it may work in, for a person's input (an elicitation form or
link), for a completion of the agent's model (sampling); it sends progress, log lines and news
that its tools, resources or prompts changed. Each question goes to the latest call in progress
on that server (its :class:`CallScope`: the calling run's context and host, on the run's own
loop); with no call running, or no host that can reach a person, it is declined.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...tools import ToolContext
from ...tools._host import CompletionRefusedError, CompletionRequest, PersonQuestion, RunHost
from ...tools.events import ToolProgressEvent

log = logging.getLogger("jupyter_codelia.mcp")


@dataclass
class CallScope:
    """A call in progress: where its progress, log lines and questions go (on its own loop)."""

    ctx: ToolContext
    loop: asyncio.AbstractEventLoop
    host: RunHost | None

    def send(self, event: Any) -> None:
        self.loop.call_soon_threadsafe(self.ctx.send, event)

    async def on_host(self, coro: Any) -> Any:
        """Await ``coro`` (a RunHost call) on the caller's loop, from the MCP loop."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))


@dataclass
class Listing:
    """What a server offers, as last listed (``stale``: it said the list changed)."""

    tools: list[Any] = field(default_factory=list)
    resources: list[Any] = field(default_factory=list)
    templates: list[Any] = field(default_factory=list)
    prompts: list[Any] = field(default_factory=list)
    stale: bool = False


class ServerAsks:
    """The client callbacks of one server's session (mixed into ``McpServer``)."""

    name: str
    roots: list[Path]
    listing: Listing
    updated_resources: set[str]
    _scopes: list[CallScope]

    def _scope(self) -> CallScope | None:
        return self._scopes[-1] if self._scopes else None

    async def _ask(self, question: PersonQuestion) -> Any:
        scope = self._scope()
        if scope is None or scope.host is None:
            return None
        return await scope.on_host(scope.host.ask_person(question))

    async def _elicit(self, context: Any, params: Any) -> Any:
        import mcp_types as types

        url = getattr(params, "url", None)
        question = PersonQuestion(
            kind="elicitation",
            source=f"MCP server {self.name!r}",
            title=f"MCP server {self.name!r} asks" + (" you to open a link" if url else ""),
            message=params.message,
            url=url,
            fields=None if url else getattr(params, "requested_schema", None),
        )
        answer = await self._ask(question)
        if answer is None or answer.action == "cancel":
            return types.ElicitResult(action="cancel" if answer else "decline")
        if answer.action == "decline":
            return types.ElicitResult(action="decline")
        content = None if url else coerce_form(answer.content or {}, question.fields or {})
        return types.ElicitResult(action="accept", content=content)

    async def _sample(self, context: Any, params: Any) -> Any:
        import mcp_types as types

        scope = self._scope()
        if scope is None or scope.host is None:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message="sampling needs a person's approval, and nobody can answer here",
            )
        refusal = await scope.on_host(scope.host.completion_refusal())
        if refusal is not None:  # the run's budget is spent: no need to ask the person
            return types.ErrorData(code=types.INVALID_REQUEST, message=refusal)
        messages = [(m.role, _sampling_text(m)) for m in params.messages]
        shown = "\n".join(f"{role}: {text}" for role, text in messages)
        system = f"System prompt: {params.system_prompt}\n" if params.system_prompt else ""
        answer = await self._ask(
            PersonQuestion(
                kind="sampling",
                source=f"MCP server {self.name!r}",
                title=f"MCP server {self.name!r} asks to use the model",
                message=f"{system}{shown}\n(up to {params.max_tokens} tokens)",
            )
        )
        if answer is None or answer.action != "accept":
            return types.ErrorData(code=types.INVALID_REQUEST, message="the person declined")
        try:
            reply = await scope.on_host(
                scope.host.complete(
                    CompletionRequest(
                        messages=messages, system=params.system_prompt, max_tokens=params.max_tokens
                    )
                )
            )
        except CompletionRefusedError as exc:
            return types.ErrorData(code=types.INVALID_REQUEST, message=str(exc))
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(text=reply.text),
            model=reply.model,
            stop_reason=reply.stop_reason,
        )

    async def _list_roots(self, context: Any) -> Any:
        import mcp_types as types

        return types.ListRootsResult(
            roots=[types.Root(uri=root.resolve().as_uri(), name=root.name) for root in self.roots]
        )

    async def _log(self, params: Any) -> None:
        scope = self._scope()
        data = params.data if isinstance(params.data, str) else _json(params.data)
        if scope is not None:
            scope.send(
                ToolProgressEvent(
                    tool_call_id=scope.ctx.tool_call_id, message=data, level=params.level
                )
            )
        else:
            log.info("MCP server %s [%s] %s", self.name, params.level, data)

    async def _on_message(self, message: Any) -> None:
        import mcp_types as types

        if isinstance(
            message,
            (
                types.ToolListChangedNotification,
                types.ResourceListChangedNotification,
                types.PromptListChangedNotification,
            ),
        ):
            self.listing.stale = True
        elif isinstance(message, types.ResourceUpdatedNotification):
            self.updated_resources.add(message.params.uri)


def _sampling_text(message: Any) -> str:
    blocks = message.content if isinstance(message.content, list) else [message.content]
    return "".join(getattr(b, "text", None) or f"[{b.type}]" for b in blocks)


def _json(value: Any) -> str:
    from ..._text import compact_json

    return compact_json(value)


def coerce_form(values: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Typed form values from what a person typed (``"3"`` → 3 for an integer field, ...)."""
    properties = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for key, value in values.items():
        kind = (properties.get(key) or {}).get("type")
        if isinstance(value, str):
            text = value.strip()
            if kind == "integer":
                value = int(text)
            elif kind == "number":
                value = float(text)
            elif kind == "boolean":
                value = text.lower() in ("y", "yes", "true", "1", "on")
            elif kind == "array":
                value = [item.strip() for item in text.split(",") if item.strip()]
        out[key] = value
    return out
