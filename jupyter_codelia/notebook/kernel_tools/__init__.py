"""The tools that work on the live namespace: ``python``, ``list_variables`` and
``inspect_variable``, with their executor, value descriptions, namespace undo and python
background jobs."""

from .namespace import kernel_tools

__all__ = ["kernel_tools"]
