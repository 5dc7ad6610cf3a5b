"""Running model-written Python in the user's namespace: capture, timeout and cancellation.

The code runs on a fresh daemon thread so the agent's event loop (and with it the panel, the Stop
button and approvals) stays responsive, and so a runaway snippet can be abandoned after its
timeout. Output is captured per thread: ``print`` from the user's own cells running meanwhile
keeps going to the notebook, only the tool thread's writes are collected, and those of the
threads it starts (a thread remembers the capture of the thread that started it).

:func:`run_steps` is the same idea for short steps that may run user code on the agent's behalf
(namespace undo's fingerprints and copies): a daemon thread under a time limit the awaiting loop
never waits past, with one blocked step abandoned so the others still get their turn.
"""

from __future__ import annotations

import ast
import asyncio
import collections
import ctypes
import inspect
import io
import itertools
import linecache
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .._shell import KernelShell

MAX_STREAM_CHARS = 200_000
"""Per-stream cap of captured text: the output cache handles big outputs, memory must not grow."""

_GRACE_SECONDS = 2.0
SNIPPET_FILENAME_PREFIX = "<codelia-python-"
"""The file name of every snippet's code objects (tracebacks, a stuck job's line)."""
_counter = itertools.count(1)
KEPT_SNIPPET_SOURCES = 200
"""Snippets whose source stays in ``linecache`` (for tracebacks through functions they
defined, shown later); older ones are dropped, so a long session does not keep every one."""
_snippet_sources: collections.deque[str] = collections.deque()
_snippet_lock = threading.Lock()
# The attribute a thread started by a capturing thread carries: that thread's capture.
_INHERITED = "_codelia_capture"

UNFINISHED: Any = object()
"""A step :func:`run_steps` did not finish in its time."""


class ExecutionAbandoned(Exception):  # noqa: N818 - injected into the worker, not an error class
    """Raised inside the tool's thread when its timeout passes or the run is cancelled.

    Made in that thread when it is raised there, so making one records that the stop arrived
    (code that catches it and runs on can be told from code stuck in native code).
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        _delivered.add(threading.get_ident())


_delivered: set[int] = set()


class WriteBuffer(Protocol):
    """Writes of one thread kept for a forward without a lock or a call per write.

    ``items`` takes ``str`` (stdout) and 1-tuples ``(text,)`` (stderr); the owner takes them in
    order when it is read and on :meth:`spill`; :meth:`retire` takes the rest when the thread
    stops writing here.
    """

    items: list[Any]

    def spill(self) -> None: ...

    def retire(self) -> None: ...


class CaptureForward(Protocol):
    """Where a capture's output goes once a background job owns the snippet."""

    def buffered(self) -> WriteBuffer | None:
        """A buffer for the capturing thread's writes (None: every write goes to write())."""
        ...

    def write(self, stream: str, text: str) -> None: ...

    def display(self, data: dict[str, Any]) -> None: ...

    def finished(self, capture: Capture) -> None: ...


@dataclass
class Capture:
    """What one snippet produced; after :meth:`adopt` new output goes to the adopter instead."""

    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    stdout_chars: int = 0
    stderr_chars: int = 0
    truncated: bool = False
    displays: list[dict[str, Any]] = field(default_factory=list)
    result: Any = None
    has_result: bool = False
    error: str | None = None
    timed_out: bool = False
    still_running: bool = False
    ended: bool = False
    forward: CaptureForward | None = None
    thread: threading.Thread | None = None
    started_threads: weakref.WeakSet[threading.Thread] = field(default_factory=weakref.WeakSet)
    """Threads the code started (they write into this capture too)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def adopt(self, forward: CaptureForward) -> bool:
        """Send all further output, and the end, to ``forward``; False if the code already ended."""
        with self._lock:
            if self.ended:
                return False
            self.forward = forward
            return True

    def end(self) -> None:
        with self._lock:
            self.ended = True
            forward = self.forward
        if forward is not None:
            forward.finished(self)

    def display(self, data: dict[str, Any]) -> None:
        with self._lock:
            forward = self.forward
            if forward is None:
                self.displays.append(dict(data))
                return
        forward.display(data)

    def write(self, stream: str, text: str) -> None:
        # Once adopted, every write goes on without the lock: ``forward`` is set only once,
        # and a job's output can take a hundred thousand small prints a second.
        forward = self.forward
        if forward is None:
            with self._lock:
                forward = self.forward
                if forward is None:
                    self._keep(stream, text)
                    return
        forward.write(stream, text)

    def _keep(self, stream: str, text: str) -> None:
        chars = self.stdout_chars if stream == "stdout" else self.stderr_chars
        room = MAX_STREAM_CHARS - chars
        if room <= 0:
            self.truncated = True
            return
        if len(text) > room:
            text = text[:room]
            self.truncated = True
        if stream == "stdout":
            self.stdout.append(text)
            self.stdout_chars += len(text)
        else:
            self.stderr.append(text)
            self.stderr_chars += len(text)


#: Spill a thread's buffered writes to their owner after this many.
SPILL_WRITES = 2048
# The write buffers of capturing threads whose capture a job owns, by thread id: set and
# removed by the thread itself (inside ``_routed``), so a reused thread id never finds one.
_buffers: dict[int, WriteBuffer] = {}


def _fast_write(stdout: bool) -> Any:
    """``write`` of a routed stream whose fast path, for a job's thread, is one append: print
    makes several writes per call and a job may print a hundred thousand lines, so what the
    path looks up is bound once (as defaults) and stdout/stderr are told apart here, not by a
    test per write."""

    def write(
        self: _RoutedStream,
        text: str,
        _buffer_of: Callable[[int], WriteBuffer | None] = _buffers.get,
        _thread_id: Callable[[], int] = threading.get_ident,
        _len: Callable[[Any], int] = len,
    ) -> int:
        buffer = _buffer_of(_thread_id())
        if buffer is None:
            return self._route_write(text)
        items = buffer.items
        items.append(text if stdout else (text,))
        if _len(items) >= SPILL_WRITES:
            buffer.spill()
        return _len(text)

    return write


class _RoutedStream(io.TextIOBase):
    """Sends writes from registered threads to their Capture, everything else to ``original``."""

    def __init__(self, original: Any, name: str) -> None:
        super().__init__()
        self.original = original
        self.name = name
        self.routes: dict[int, Capture] = {}

    def _route_write(self, text: str) -> int:
        ident = threading.get_ident()
        capture = self.routes.get(ident)
        if capture is None:
            capture = _inherited()
            if capture is None:
                return int(self.original.write(text) or 0)
        elif capture.forward is not None:
            buffer = capture.forward.buffered()
            if buffer is not None:
                # From now on this thread's writes take the fast path.
                _buffers[ident] = buffer
                buffer.items.append(text if self.name == "stdout" else (text,))
                return len(text)
        capture.write(self.name, str(text))
        return len(text)

    def flush(self) -> None:
        if _route(self.routes) is None:
            self.original.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.original, attr)


class _RoutedStdout(_RoutedStream):
    write = _fast_write(stdout=True)


class _RoutedStderr(_RoutedStream):
    write = _fast_write(stdout=False)


class _RoutedDisplayPublisher:
    """Wraps IPython's display publisher so ``display()`` in the tool thread is captured."""

    def __init__(self, original: Any) -> None:
        self.original = original
        self.routes: dict[int, Capture] = {}

    def publish(self, data: dict[str, Any], metadata: Any = None, *args: Any, **kw: Any) -> None:
        capture = _route(self.routes)
        if capture is None:
            self.original.publish(data, metadata, *args, **kw)
            return
        buffer = _buffers.get(threading.get_ident())
        if buffer is not None:
            buffer.spill()  # what it printed before the display comes before it
        capture.display(data)

    def clear_output(self, *args: Any, **kw: Any) -> None:
        if _route(self.routes) is None:
            self.original.clear_output(*args, **kw)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.original, attr)


def _route(routes: dict[int, Capture]) -> Capture | None:
    """The capture of the current thread, or of the capturing thread that started it."""
    capture = routes.get(threading.get_ident())
    return capture if capture is not None else _inherited()


def _inherited() -> Capture | None:
    """The capture handed to the current thread by the capturing thread that started it."""
    capture: Capture | None = getattr(threading.current_thread(), _INHERITED, None)
    if capture is not None and capture.ended and capture.forward is None:
        return None  # a foreground call that returned: its leftovers print as before
    return capture


_routing_lock = threading.Lock()
_thread_start = threading.Thread.start


def _start_inheriting_route(thread: threading.Thread) -> None:
    """``Thread.start`` that hands the starting thread's capture to the new thread first."""
    capture = _capture_of_current_thread()
    if capture is not None:
        setattr(thread, _INHERITED, capture)
        capture.started_threads.add(thread)
    _thread_start(thread)


def _capture_of_current_thread() -> Capture | None:
    stream = sys.stdout
    return _route(stream.routes) if isinstance(stream, _RoutedStream) else None


@contextmanager
def _routed(capture: Capture, shell: KernelShell | None) -> Iterator[None]:
    """Route the current thread's stdout, stderr and displays into ``capture``."""
    ident = threading.get_ident()
    with _routing_lock:
        # Installed once, never removed: threads started while nothing captures are untouched.
        threading.Thread.start = _start_inheriting_route  # type: ignore[method-assign,assignment]
        stdout = sys.stdout if isinstance(sys.stdout, _RoutedStream) else None
        if stdout is None:
            stdout = _RoutedStdout(sys.stdout, "stdout")
            sys.stdout = stdout
        stderr = sys.stderr if isinstance(sys.stderr, _RoutedStream) else None
        if stderr is None:
            stderr = _RoutedStderr(sys.stderr, "stderr")
            sys.stderr = stderr
        publisher: _RoutedDisplayPublisher | None = None
        if shell is not None:
            current = shell.display_pub
            if isinstance(current, _RoutedDisplayPublisher):
                publisher = current
            else:
                publisher = _RoutedDisplayPublisher(current)
                shell.display_pub = publisher
            publisher.routes[ident] = capture
        stdout.routes[ident] = capture
        stderr.routes[ident] = capture
    try:
        yield
    finally:
        buffer = _buffers.pop(ident, None)
        if buffer is not None:
            buffer.retire()
        with _routing_lock:
            stdout.routes.pop(ident, None)
            stderr.routes.pop(ident, None)
            # Restore the originals once no tool thread is capturing, so the kernel's own
            # streams are back in place between calls.
            if not stdout.routes and sys.stdout is stdout:
                sys.stdout = stdout.original
            if not stderr.routes and sys.stderr is stderr:
                sys.stderr = stderr.original
            if publisher is not None and shell is not None:  # a publisher only with a shell
                publisher.routes.pop(ident, None)
                if not publisher.routes and shell.display_pub is publisher:
                    shell.display_pub = publisher.original


def _compile(code: str, filename: str) -> tuple[Any, Any]:
    """Compile ``code`` into (body, last expression or None), IPython's 'last_expr' style."""
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = ast.parse(code, filename=filename, mode="exec")
    last = None
    tail = tree.body[-1] if tree.body else None
    if isinstance(tail, ast.Expr):
        tree.body.pop()
        expr = ast.Expression(tail.value)
        last = compile(expr, filename, "eval", flags=flags)
    body = compile(tree, filename, "exec", flags=flags)
    return body, last


def _evaluate(code_obj: Any, namespace: dict[str, Any]) -> Any:
    value = eval(code_obj, namespace)
    if inspect.iscoroutine(value) and code_obj.co_flags & inspect.CO_COROUTINE:
        # Top-level await: the thread has no loop of its own, so give it a private one.
        return asyncio.run(value)
    return value


def _format_error(exc: BaseException, filename: str) -> str:
    """The traceback from the snippet's own frames on (our wrapper frames are noise)."""
    frames = traceback.extract_tb(exc.__traceback__)
    start = next((i for i, f in enumerate(frames) if f.filename == filename), len(frames))
    lines = ["Traceback (most recent call last):\n"]
    lines += traceback.format_list(frames[start:])
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines).rstrip("\n")


def _register_source(filename: str, code: str) -> None:
    """Let tracebacks show the offending lines: the newest ``KEPT_SNIPPET_SOURCES`` snippets."""
    with _snippet_lock:
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        _snippet_sources.append(filename)
        while len(_snippet_sources) > KEPT_SNIPPET_SOURCES:
            linecache.cache.pop(_snippet_sources.popleft(), None)


def _run(code: str, namespace: dict[str, Any], shell: KernelShell | None, capture: Capture) -> None:
    filename = f"{SNIPPET_FILENAME_PREFIX}{next(_counter)}>"
    _register_source(filename, code)
    with _routed(capture, shell):
        try:
            body, last = _compile(code, filename)
            _evaluate(body, namespace)
            if last is not None:
                value = _evaluate(last, namespace)
                if value is not None:
                    capture.result = value
                    capture.has_result = True
        except SyntaxError as exc:
            capture.error = "".join(traceback.format_exception_only(type(exc), exc)).rstrip()
        except ExecutionAbandoned:
            capture.error = "Execution stopped (timeout or cancellation)."
        except BaseException as exc:
            capture.error = _format_error(exc, filename)


def _inject(thread: threading.Thread) -> None:
    """Raise ExecutionAbandoned inside ``thread`` at its next bytecode."""
    if thread.ident is None or not thread.is_alive():
        return
    raise_in_thread(thread.ident, ExecutionAbandoned)


def raise_in_thread(ident: int, exc_type: type[BaseException] | None) -> None:
    """Raise ``exc_type`` in the thread ``ident`` at its next bytecode; None withdraws one
    that was set and has not been raised yet."""
    exc = ctypes.py_object(exc_type) if exc_type is not None else None
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), exc)


def start_thread(
    code: str,
    namespace: dict[str, Any],
    shell: KernelShell | None,
    capture: Capture,
    on_end: Any = None,
    name: str = "codelia-python",
) -> threading.Thread:
    """Run ``code`` on a new daemon thread into ``capture``; ``on_end()`` runs after it ends."""

    def target() -> None:
        try:
            _run(code, namespace, shell, capture)
        finally:
            capture.end()
            if on_end is not None:
                on_end()

    thread = threading.Thread(target=target, name=name, daemon=True)
    capture.thread = thread
    thread.start()
    return thread


def stop_thread(capture: Capture) -> None:
    """Ask the code running into ``capture`` to stop at its next Python step."""
    if capture.thread is not None:
        if capture.thread.ident is not None:
            _delivered.discard(capture.thread.ident)
        _inject(capture.thread)


def stop_arrived(capture: Capture) -> bool:
    """Whether the last :func:`stop_thread` reached the code (it may have caught it)."""
    thread = capture.thread
    return thread is not None and thread.ident in _delivered


async def run_code(
    code: str,
    namespace: dict[str, Any],
    *,
    shell: KernelShell | None = None,
    timeout: float,
    detach_on_timeout: bool = False,
) -> Capture:
    """Run ``code`` in ``namespace`` on a worker thread; stop it after ``timeout`` seconds.

    With ``detach_on_timeout`` the code is left running instead (``capture.timed_out`` set,
    ``capture.ended`` false) so the caller can hand it to a background job with
    :meth:`Capture.adopt`. Cancelling the awaiting task stops the code and re-raises.
    """
    capture = Capture()
    loop = asyncio.get_running_loop()
    finished = loop.create_future()

    def settle() -> None:
        if not loop.is_closed():
            loop.call_soon_threadsafe(_settle, finished)

    thread = start_thread(code, namespace, shell, capture, settle)
    try:
        await asyncio.wait_for(asyncio.shield(finished), timeout)
    except asyncio.TimeoutError:
        capture.timed_out = True
        if detach_on_timeout:
            return capture
        _inject(thread)
        try:
            await asyncio.wait_for(asyncio.shield(finished), _GRACE_SECONDS)
        except asyncio.TimeoutError:
            # Blocked in C code (sleep, I/O): it will stop at its next bytecode.
            capture.still_running = True
    except asyncio.CancelledError:
        _inject(thread)
        raise
    return capture


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


@dataclass
class StepFailed:
    """A step of :func:`run_steps` that raised ``error``."""

    error: Exception


RESERVE_PER_STEP = 0.005
"""Time :func:`run_steps` keeps back for each step still waiting (at most half of all), so
one step that blocks cannot use up the time of the steps after it; also the time of its own a
step has before it is abandoned, however late it started."""


class _StepThread:
    """Runs ``steps[first:]`` on a daemon thread into ``results`` until told to stop."""

    def __init__(
        self,
        steps: Sequence[Callable[[], Any]],
        first: int,
        results: list[Any],
        notify: Callable[[], None],
        name: str,
    ) -> None:
        self.steps = steps
        self.position = first  # the step running or next to run; len(steps) once all ran
        self.started: float | None = None  # when the step at ``position`` began; None: not yet
        self.results = results
        self.notify = notify
        self.lock = threading.Lock()
        self.stopped = False
        self.alive = True
        self.thread = threading.Thread(target=self._target, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for index in range(self.position, len(self.steps)):
            with self.lock:
                if self.stopped:
                    return
                self.position, self.started = index, time.monotonic()
            self.notify()
            try:
                value = self.steps[index]()
            except ExecutionAbandoned:
                return
            except Exception as exc:
                value = StepFailed(exc)
            with self.lock:
                if self.stopped:
                    return
                self.results[index] = value
                self.position, self.started = index + 1, None
        self.notify()

    def _finish(self) -> None:
        with self.lock:
            self.alive = False
        self.notify()

    def _target(self) -> None:
        try:
            self._run()
        except ExecutionAbandoned:
            pass
        # The stop is raised at most once, and may land here, after the steps: finish anyway.
        while True:
            try:
                self._finish()
                return
            except ExecutionAbandoned:
                continue

    def stop(self) -> int:
        """Stop at the next Python step; returns the position it stopped at."""
        with self.lock:
            self.stopped = True
            # Only while the thread runs: a finished thread's id may already be another's.
            if self.alive:
                _inject(self.thread)
            return self.position


async def run_steps(
    steps: Sequence[Callable[[], Any]], seconds: float, *, name: str = "codelia-steps"
) -> list[Any]:
    """Run ``steps`` one after another on a daemon thread for at most ``seconds``.

    Returns one entry per step: what it returned, a :class:`StepFailed`, or :data:`UNFINISHED`
    when it did not finish in time. The awaiting loop never waits longer than ``seconds``, even
    when a step blocks in native code. A step that runs into the time kept back for the steps
    after it (:data:`RESERVE_PER_STEP` each) and has had :data:`RESERVE_PER_STEP` of its own is
    abandoned: its thread is told to stop (it does at its next Python step, and what it
    finishes later is dropped) and the rest go on on a fresh thread. A step that starts late,
    because the one before it was abandoned or the machine is busy, is not abandoned for
    being late alone: giving it up would cost a fresh thread, and so the time of the next.
    """
    results: list[Any] = [UNFINISHED] * len(steps)
    if not steps:
        return results
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    progress = asyncio.Event()

    def notify() -> None:
        if not loop.is_closed():
            loop.call_soon_threadsafe(progress.set)

    worker = _StepThread(steps, 0, results, notify, name)
    try:
        while True:
            progress.clear()
            with worker.lock:
                position, started, alive = worker.position, worker.started, worker.alive
            if position >= len(steps) or not alive:
                break
            now = loop.time()
            if now >= deadline:
                worker.stop()
                break
            if started is None:  # between steps, or the thread not running yet: it notifies
                give_up_at = deadline
            else:
                reserve = min((len(steps) - position - 1) * RESERVE_PER_STEP, seconds / 2)
                own = started + RESERVE_PER_STEP
                give_up_at = min(max(deadline - reserve, own), deadline)
            if now < give_up_at:
                try:
                    await asyncio.wait_for(progress.wait(), give_up_at - now)
                except asyncio.TimeoutError:
                    pass
                continue
            stopped_at = worker.stop()
            # The step over its time is given up; one reached just now has not had its turn.
            resume = stopped_at + 1 if stopped_at == position else stopped_at
            if resume >= len(steps) or loop.time() >= deadline:
                break
            worker = _StepThread(steps, resume, results, notify, name)
    except asyncio.CancelledError:
        worker.stop()
        raise
    with worker.lock:
        return list(results)
