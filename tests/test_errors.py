"""Every error jupyter-codelia raises on purpose is a CodeliaError, so callers branch on types."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import jupyter_codelia
from jupyter_codelia.errors import CodeliaError

# Control flow, not errors: cancellation, the done tool's signal, an abandoned worker thread,
# the kernel interrupt re-raised after a blocking run (a KeyboardInterrupt, never an Exception).
NOT_ERRORS = {"RunCancelled", "TaskComplete", "ExecutionAbandoned", "RunInterrupted"}
# Jupyter AI's persona: only Jupyter AI imports it, and without Jupyter AI its import fails on
# purpose (the persona manager then skips it); it defines no error class.
ONLY_IMPORTED_BY_THEIR_HOST = {"jupyter_codelia.acp.persona"}


def _exception_classes() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(jupyter_codelia.__path__, "jupyter_codelia."):
        if info.name in ONLY_IMPORTED_BY_THEIR_HOST:
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[f"{module.__name__}.{name}"] = value
    return [found[key] for key in sorted(found)]


@pytest.mark.parametrize("cls", _exception_classes(), ids=lambda c: c.__qualname__)
def test_every_public_error_is_a_codelia_error(cls: type[BaseException]) -> None:
    if cls.__name__ in NOT_ERRORS:
        assert not issubclass(cls, CodeliaError)
        return
    assert issubclass(cls, CodeliaError), f"{cls.__module__}.{cls.__name__} is not a CodeliaError"


def test_errors_keep_the_builtin_base_callers_catch() -> None:
    from jupyter_codelia.agent import AgentRunError, RunAlreadyActiveError
    from jupyter_codelia.session import SessionNotFound

    assert issubclass(SessionNotFound, KeyError)
    assert issubclass(RunAlreadyActiveError, AgentRunError)
    assert RunAlreadyActiveError().kind == "busy"
