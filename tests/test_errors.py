"""Every error jupyter-codelia raises on purpose is a CodeliaError, so callers branch on types."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

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


def _hierarchy() -> str:
    """The tree of every error class, as errors.py's docstring draws it."""
    classes = [cls for cls in _exception_classes() if issubclass(cls, CodeliaError)]

    def lines(parent: type[BaseException], depth: int) -> list[str]:
        builtin = [b.__name__ for b in parent.__bases__ if b.__module__ == "builtins"]
        where = parent.__module__.removeprefix("jupyter_codelia.")
        base = f" ({', '.join(builtin)})" if builtin and depth else ""
        out = [f"{'  ' * depth}* {parent.__name__}{base} — {where}"]
        children = sorted((c for c in classes if parent in c.__bases__), key=lambda c: c.__name__)
        for child in children:
            out += lines(child, depth + 1)
        return out

    return "\n".join("    " + line for line in lines(CodeliaError, 0))


def test_the_errors_docstring_draws_every_error_class() -> None:
    import jupyter_codelia.errors

    drawn = _hierarchy()
    assert drawn in (jupyter_codelia.errors.__doc__ or ""), (
        "errors.py's docstring is out of date with the error classes; the tree is:\n" + drawn
    )


# A third party's message is all there is to go on: the Anthropic SDK raises a bare TypeError
# when it finds no credentials.
MESSAGE_TESTS_ALLOWED = {"llm/anthropic/_errors.py"}


def _is_message_of_an_exception(node: ast.expr) -> bool:
    """``str(x)`` or ``str(x).lower()``: the text of something, compared with ``in``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "str"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id in ("exc", "error", "err", "e")
    )


def test_no_code_branches_on_an_error_message() -> None:
    package = Path(jupyter_codelia.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        if str(path.relative_to(package)) in MESSAGE_TESTS_ALLOWED:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # Names that hold a message (``text = str(exc)``) count as the message.
        held = {
            target.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign) and _is_message_of_an_exception(node.value)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Compare)
                and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
                and any(
                    _is_message_of_an_exception(side)
                    or (isinstance(side, ast.Name) and side.id in held)
                    for side in node.comparators
                )
            ):
                found.append(f"{path.relative_to(package)}:{node.lineno}")
    assert not found, f"branching on an error's message (catch a type instead): {found}"
