"""ToolContext and dependency injection: resolve, overrides, caching, signal."""

from __future__ import annotations

import asyncio
import logging
import threading
from datetime import datetime, timezone

import pytest
from pydantic import BaseModel

from jupyter_codelia.llm.messages import FunctionCall, ToolCall
from jupyter_codelia.tools import (
    CancelSignal,
    DependencyKey,
    PermissionDecision,
    RunCancelled,
    ToolContext,
    define_tool,
    execute_tool_call,
)


class Counter:
    """A factory that records how often it built a value."""

    def __init__(self, prefix: str = "db") -> None:
        self.prefix = prefix
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        return f"{self.prefix}-{self.calls}"


class NoInput(BaseModel):
    pass


def call(name: str = "use_db", call_id: str = "c1") -> ToolCall:
    return ToolCall(id=call_id, function=FunctionCall(name=name, arguments="{}"))


def test_a_context_needs_no_arguments() -> None:
    ctx = ToolContext()
    assert ctx.signal is None
    assert ctx.deps == {}
    assert ctx.overrides == {}
    assert ctx.logger.name == "jupyter_codelia.tools"
    now = ctx.now()
    assert now.tzinfo is timezone.utc
    ctx.check_cancelled()  # no signal: nothing to raise
    ctx.send({"type": "ignored"})  # no sink: dropped
    ctx.deps["mine"] = 1
    assert ToolContext().deps == {}  # every context gets its own dicts
    assert repr(ctx.fork(tool_call_id="c1", tool_name="t")) == (
        "ToolContext(tool_call_id='c1', tool_name='t', signal=None, deps=['mine'], overrides=[])"
    )


@pytest.mark.asyncio
async def test_resolve_creates_once_per_context_sync_and_async() -> None:
    sync_factory = Counter()

    async def async_create() -> str:
        await asyncio.sleep(0)
        return "async-value"

    sync_key: DependencyKey[str] = DependencyKey("db", sync_factory)
    async_key: DependencyKey[str] = DependencyKey("remote", async_create)
    ctx = ToolContext()
    assert await ctx.resolve(sync_key) == "db-1"
    assert await ctx.resolve(sync_key) == "db-1"
    assert await ctx.resolve(async_key) == "async-value"
    assert sync_factory.calls == 1
    assert await ctx.fork().resolve(sync_key) == "db-2"  # a fork has its own cache


@pytest.mark.asyncio
async def test_overrides_by_id_replace_create_sync_or_async() -> None:
    real = Counter("real")

    async def fake_async() -> str:
        return "fake-async"

    key: DependencyKey[str] = DependencyKey("db", real)
    assert await ToolContext(overrides={"db": lambda: "fake"}).resolve(key) == "fake"
    assert await ToolContext(overrides={"db": fake_async}).resolve(key) == "fake-async"
    assert await ToolContext(overrides={"other": lambda: "x"}).resolve(key) == "real-1"
    assert await ToolContext(deps={"db": "from-deps"}).resolve(key) == "from-deps"
    assert real.calls == 1


@pytest.mark.asyncio
async def test_concurrent_resolves_of_one_key_create_once() -> None:
    started = 0
    release = asyncio.Event()

    async def slow_create() -> object:
        nonlocal started
        started += 1
        await release.wait()
        return object()

    key: DependencyKey[object] = DependencyKey("slow", slow_create)
    ctx = ToolContext()
    tasks = [asyncio.create_task(ctx.resolve(key)) for _ in range(5)]
    await asyncio.sleep(0)
    release.set()
    values = await asyncio.gather(*tasks)
    assert started == 1
    assert all(v is values[0] for v in values)


@pytest.mark.asyncio
async def test_a_failing_create_is_not_cached() -> None:
    attempts = 0

    def flaky() -> str:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise ConnectionError("database is starting")
        return "connected"

    key: DependencyKey[str] = DependencyKey("db", flaky)
    ctx = ToolContext()
    with pytest.raises(ConnectionError, match="database is starting"):
        await ctx.resolve(key)
    assert await ctx.resolve(key) == "connected"


@pytest.mark.asyncio
async def test_each_call_through_the_executor_gets_fresh_dependencies() -> None:
    factory = Counter()
    key: DependencyKey[str] = DependencyKey("db", factory)

    async def use_db(params: NoInput, ctx: ToolContext) -> str:
        first = await ctx.resolve(key)
        second = await ctx.resolve(key)
        assert first == second
        return f"{ctx.tool_name}/{ctx.tool_call_id}: {first}"

    tool = define_tool(name="use_db", description="d", input=NoInput, execute=use_db)
    base = ToolContext()
    one = await execute_tool_call(call(call_id="c1"), [tool], base)
    two = await execute_tool_call(call(call_id="c2"), [tool], base)
    assert one.message.content == "use_db/c1: db-1"
    assert two.message.content == "use_db/c2: db-2"
    assert factory.calls == 2


@pytest.mark.asyncio
async def test_the_permission_hook_gets_its_own_fresh_context() -> None:
    factory = Counter()
    key: DependencyKey[str] = DependencyKey("db", factory)
    seen: list[str] = []

    async def hook(tool_call: ToolCall, raw: str, ctx: ToolContext) -> PermissionDecision:
        seen.append(await ctx.resolve(key))
        return PermissionDecision.allow()

    async def use_db(params: NoInput, ctx: ToolContext) -> str:
        return await ctx.resolve(key)

    tool = define_tool(name="use_db", description="d", input=NoInput, execute=use_db)
    result = await execute_tool_call(call(), [tool], ToolContext(), can_execute_tool=hook)
    assert seen == ["db-1"]
    assert result.message.content == "db-2"


@pytest.mark.asyncio
async def test_fork_shares_everything_but_the_cache_and_call_identity() -> None:
    events: list[object] = []
    signal = CancelSignal()
    log = logging.getLogger("test.tools")
    fixed = datetime(2026, 1, 2, tzinfo=timezone.utc)
    ctx = ToolContext(
        signal=signal,
        logger=log,
        now=lambda: fixed,
        deps={"d": 1},
        overrides={"o": lambda: 2},
        emit=events.append,
    )
    child = ctx.fork(tool_call_id="c9", tool_name="t")
    assert (child.signal, child.logger, child.now(), child.deps, child.overrides) == (
        signal,
        log,
        fixed,
        {"d": 1},
        ctx.overrides,
    )
    assert (child.tool_call_id, child.tool_name) == ("c9", "t")
    child.send({"type": "todos.updated"})
    assert events == [{"type": "todos.updated"}]
    grandchild = child.fork()
    assert (grandchild.tool_call_id, grandchild.tool_name) == (None, None)
    assert grandchild.deps is ctx.deps and grandchild.emit == ctx.emit
    assert (ctx.tool_call_id, ctx.tool_name) == (None, None)  # forking leaves the parent alone


# --- cancellation signal ------------------------------------------------------------------------


def test_cancel_signal_flags_and_calls_back_once() -> None:
    signal = CancelSignal()
    calls: list[str] = []
    remove = signal.add_callback(lambda: calls.append("first"))
    signal.add_callback(lambda: calls.append("second"))
    remove()
    ctx = ToolContext(signal=signal)
    ctx.check_cancelled()
    signal.cancel("user pressed stop")
    signal.cancel("again")
    assert signal.is_set()
    assert signal.reason == "user pressed stop"
    assert calls == ["second"]
    with pytest.raises(RunCancelled, match="user pressed stop"):
        ctx.check_cancelled()
    signal.add_callback(lambda: calls.append("late"))  # already cancelled: runs at once
    assert calls == ["second", "late"]


@pytest.mark.asyncio
async def test_cancel_from_another_thread_wakes_waiters() -> None:
    signal = CancelSignal()
    waiter = asyncio.create_task(signal.wait())
    await asyncio.sleep(0)
    thread = threading.Thread(target=signal.cancel, args=("interrupt",))
    thread.start()
    await asyncio.wait_for(waiter, timeout=30)
    thread.join()
    await signal.wait()  # returns at once once cancelled


@pytest.mark.asyncio
async def test_a_tool_observing_the_signal_cancels_the_call() -> None:
    signal = CancelSignal()

    async def long_job(params: NoInput, ctx: ToolContext) -> str:
        assert ctx.signal is not None
        signal.cancel("stop")
        ctx.check_cancelled()
        return "unreachable"

    tool = define_tool(name="use_db", description="d", input=NoInput, execute=long_job)
    with pytest.raises(RunCancelled, match="stop"):
        await execute_tool_call(call(), [tool], ToolContext(signal=signal))
