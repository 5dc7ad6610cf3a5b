"""Shared helpers of the local file tool tests: a harness and a small real output store.

The store is the package's ``ToolOutputCacheStore`` when it is importable, else
:class:`FileBackedStore`, a tiny real file-backed implementation of the ToolOutputStore protocol.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from jupyter_codelia.cache.protocol import ToolOutputStore, normalize_ref_id
from jupyter_codelia.llm.messages import FunctionCall, ToolCall, ToolOutputRef
from jupyter_codelia.standard_tools._sandbox import Sandbox
from jupyter_codelia.standard_tools.files import file_tools
from jupyter_codelia.tools import (
    FunctionTool,
    ToolContext,
    ToolResultData,
    ToolReturn,
    execute_tool_call,
)


class _FileWriter:
    def __init__(self, path: Path, ref_id: str) -> None:
        self._path = path
        self._ref_id = ref_id
        self._handle = open(path, "w", encoding="utf-8", newline="")  # noqa: SIM115 - closed in close()/abort()

    @property
    def ref_id(self) -> str:
        return self._ref_id

    def write(self, text: str) -> None:
        self._handle.write(text)

    def close(self) -> ToolOutputRef:
        self._handle.close()
        text = self._path.read_text(encoding="utf-8")
        return ToolOutputRef(
            id=self._ref_id, byte_size=len(text.encode()), line_count=text.count("\n") + 1
        )

    def abort(self) -> None:
        self._handle.close()
        self._path.unlink(missing_ok=True)


class FileBackedStore:
    """Saves every entry as ``<ref_id>.txt`` in a directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    def save(
        self,
        *,
        tool_call_id: str,
        tool_name: str,
        content: str | list[Any],
        is_error: bool = False,
    ) -> ToolOutputRef:
        ref_id = normalize_ref_id(tool_call_id)
        text = content if isinstance(content, str) else json.dumps(content)
        (self.directory / f"{ref_id}.txt").write_text(text, encoding="utf-8")
        return ToolOutputRef(
            id=ref_id, byte_size=len(text.encode()), line_count=text.count("\n") + 1
        )

    def writer(self, *, tool_call_id: str, tool_name: str) -> _FileWriter:
        ref_id = normalize_ref_id(tool_call_id)
        return _FileWriter(self.directory / f"{ref_id}.txt", ref_id)

    def read(self, ref_id: str) -> str:
        return (self.directory / f"{ref_id}.txt").read_text(encoding="utf-8")


def make_store(directory: Path) -> tuple[ToolOutputStore, Any]:
    """(store, reader) where ``reader(ref_id)`` returns the full saved text."""
    try:
        from jupyter_codelia.cache import ToolOutputCacheStore
    except ImportError:
        store = FileBackedStore(directory)
        return store, store.read
    real = ToolOutputCacheStore(directory)

    def read(ref_id: str) -> str:
        parts = real.read_parts(ref_id)
        assert len(parts) == 1
        return str(parts[0].text)

    return real, read


class FileTools:
    """The file tool family around a sandbox in ``root``, callable by name."""

    def __init__(
        self, root: Path, *, store: ToolOutputStore | None = None, approval_mode: Any = "minimal"
    ) -> None:
        self.root = root
        self.sandbox = Sandbox(root, approval_mode=approval_mode)
        self.tools: dict[str, FunctionTool] = {t.name: t for t in file_tools(self.sandbox, store)}

    async def run(self, name: str, **args: Any) -> Any:
        """The successful result (TextResult/JsonResult/PartsResult) the model reads, without
        the application data a ToolReturn carries beside it; exceptions propagate."""
        result = await self.tools[name].execute_raw(json.dumps(args), ToolContext())
        return result.value if isinstance(result, ToolReturn) else result

    async def data(self, name: str, **args: Any) -> ToolResultData:
        """The application data of a successful call (see ``ToolReturn``)."""
        result = await self.tools[name].execute_raw(json.dumps(args), ToolContext())
        assert isinstance(result, ToolReturn), result
        return result.data

    async def text(self, name: str, **args: Any) -> str:
        result = await self.run(name, **args)
        assert result.type == "text", result
        return str(result.text)

    async def json(self, name: str, **args: Any) -> dict[str, Any]:
        result = await self.run(name, **args)
        assert result.type == "json", result
        return dict(result.value)

    async def error(self, name: str, **args: Any) -> str:
        """The error text the model would see (through the real executor); fails on success."""
        call = ToolCall(
            id=f"call_{uuid.uuid4().hex[:8]}",
            function=FunctionCall(name=name, arguments=json.dumps(args)),
        )
        execution = await execute_tool_call(call, list(self.tools.values()), ToolContext())
        assert execution.message.is_error, execution.message
        content = execution.message.content
        assert isinstance(content, str)
        return content
