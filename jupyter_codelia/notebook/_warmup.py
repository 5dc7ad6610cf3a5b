"""Paying the first run's cold start early: heavy imports on a background thread.

``%load_ext`` must stay fast, so it imports nothing heavy; but a person then spends seconds
typing the first prompt, and without this the first ``%%codelia`` would pay for the Anthropic
SDK, the pydantic models, the widgets, markdown, pygments, the price table and the first
agent inside the run. :func:`start` loads them on a daemon thread right after the extension is
loaded, sending nothing and showing nothing (invalid settings just end it early: the run reports
them); :func:`wait` is called before a run, so a run never imports concurrently with the
warm-up (no half-initialised modules seen from two threads).

Under *Run All* the first ``%%codelia`` starts right after ``%load_ext``, while the warm-up is
still going (the Anthropic SDK alone imports ~1,500 modules, seconds on a busy machine). That
cell paints at once anyway: :class:`Loading` shows what is being loaded, with plain display
data (nothing heavy is imported for it), and the run's panel then replaces it in place.
"""

from __future__ import annotations

import importlib
import logging
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .run.runner import NotebookAgent

log = logging.getLogger("jupyter_codelia.notebook")

WARM_MODULES = (
    "anthropic",
    "jupyter_codelia.llm.anthropic",
    "jupyter_codelia.agent",
    "jupyter_codelia.agent.permissions",
    "jupyter_codelia.session",
    "jupyter_codelia.cache",
    "jupyter_codelia.standard_tools",
    "jupyter_codelia.standard_tools.files",
    "numpy",  # read and read_line count lines with it (its import takes ~50 ms)
    "jupyter_codelia.standard_tools.output_cache",
    "jupyter_codelia.standard_tools.todos",
    "jupyter_codelia.standard_tools.web",
    "jupyter_codelia.standard_tools.shell",
    "jupyter_codelia.notebook.kernel_tools",
    "jupyter_codelia.notebook.run.runner",
    "jupyter_codelia.notebook.ui.panel",
    "pygments.lexers.python",
    "pygments.lexers.shell",
    "pygments.formatters.html",
    "jupyter_codelia.testing",  # the run asks whether the offline demo is in charge
    "anyio._backends._asyncio",  # the SDK's HTTP pool picks its async backend on first send
    "opentelemetry.propagate",  # the SDK's tracing loads the propagators on first send
)

# What the warm-up is loading, in words a person reads while the first cell waits.
_STEPS = {
    "anthropic": "the Anthropic SDK",
    "jupyter_codelia.agent": "the agent",
    "jupyter_codelia.standard_tools": "the tools",
    "jupyter_codelia.notebook.ui.panel": "the cell panel",
    "pygments.lexers.python": "the code highlighter",
}

_lock = threading.Lock()
_thread: threading.Thread | None = None
_step = "codelia"


def start(notebook_agent: Callable[[], NotebookAgent]) -> None:
    """Begin warming on a daemon thread (once per process); ``notebook_agent`` makes the agent."""
    global _thread
    with _lock:
        if _thread is not None:
            return
        _thread = threading.Thread(
            target=_warm, args=(notebook_agent,), name="codelia-warmup", daemon=True
        )
        _thread.start()


def wait(timeout: float | None = None) -> None:
    """Block until the warm-up (if started) has finished."""
    thread = _thread
    if thread is not None and thread is not threading.current_thread():
        thread.join(timeout)


def running() -> bool:
    thread = _thread
    return thread is not None and thread.is_alive() and thread is not threading.current_thread()


class Loading:
    """The cell's output while the first run waits for the warm-up: painted at once, updated
    with what is loading, and replaced in place by the run's panel (``display_id``)."""

    INTERVAL = 0.25

    def __init__(self) -> None:
        self.display_id = uuid.uuid4().hex
        self._shown = ""

    def show(self) -> None:
        from IPython.display import display

        self._shown = _step
        display(self._bundle(), raw=True, display_id=self.display_id)

    def wait(self) -> None:
        """Wait for the warm-up, saying what it loads whenever that changes."""
        from IPython.display import update_display

        thread = _thread
        while thread is not None and thread.is_alive():
            thread.join(self.INTERVAL)
            if _step != self._shown:
                self._shown = _step
                update_display(self._bundle(), raw=True, display_id=self.display_id)

    def clear(self) -> None:
        """The run did not start (a usage error): leave no "loading" line behind."""
        from IPython.display import update_display

        update_display({"text/plain": ""}, raw=True, display_id=self.display_id)

    def _bundle(self) -> dict[str, str]:
        text = f"codelia: starting, loading {self._shown}… (once per kernel)"
        return {
            "text/plain": text,
            "text/html": '<div class="codelia-loading" style="font-size:12px;'
            "color:var(--jp-ui-font-color2,#555);border:1px solid var(--jp-border-color2,#ddd);"
            f'padding:4px 8px">{text}</div>',
        }


def _warm(notebook_agent: Callable[[], NotebookAgent]) -> None:
    global _step
    for name in WARM_MODULES:
        _step = _STEPS.get(name, _step)
        try:
            importlib.import_module(name)
        except Exception:  # a broken optional import shows up, with its message, in the run
            log.debug("warm-up import of %s failed", name, exc_info=True)
    _step = "the first agent"
    try:
        from .ui import renderers

        renderers.markdown_to_html("*warm*")  # builds the markdown parser once
        renderers.diff_to_html("+warm\n")
        for language in ("python", "bash"):  # compiling a lexer's rules costs ~0.1 s each
            renderers.code_to_html("warm = 1", language)
        _warm_sdk_client()
        _warm_tool_schemas()
        agent = notebook_agent()
        agent.prebuild()  # settings errors are reported by the first run
        settings = agent.settings()
        _warm_pricing(settings.model, settings.provider)
        from .._redact import redact_secrets

        redact_secrets("warm")  # builds the redactor from the environment's secrets
    except Exception:
        log.debug("warm-up of the renderers, the SDK or the agent failed", exc_info=True)


def _warm_pricing(model: str, provider: str) -> None:
    """Look the model up once: loading the price database (~3,000 entries) costs ~0.2 s CPU."""
    from ..llm import pricing
    from ..llm.messages import ChatInvokeUsage

    pricing.context_limit(model, provider)
    pricing.cost_usd(ChatInvokeUsage(model=model, input_tokens=1, output_tokens=1), provider)


def _warm_tool_schemas() -> None:
    """Build (and drop) the standard tools once: pydantic caches the schema pieces they share."""
    import tempfile

    from ..standard_tools import standard_tools

    with tempfile.TemporaryDirectory(prefix="codelia-warmup-") as scratch:
        standard_tools(scratch, cache_dir=scratch)


def _warm_sdk_client() -> None:
    """Build (and drop) an SDK client: its lazily loaded resources are imported now."""
    from anthropic import AsyncAnthropic

    client = AsyncAnthropic(api_key="warm-up-only", base_url="http://127.0.0.1:9")
    _ = client.messages
