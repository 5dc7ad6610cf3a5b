"""The README's "Define your own tools" examples run as written and print what they claim."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from jupyter_codelia.tools import FunctionTool

README = Path(__file__).resolve().parents[2] / "README.md"


def tools_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Define your own tools")
    return text[start : text.index("\n## ", start + 1)]


def test_readme_tool_examples_run_and_print_what_they_claim() -> None:
    blocks = re.findall(r"```python\n(.*?)```", tools_section(), flags=re.DOTALL)
    assert len(blocks) == 2
    namespace: dict[str, object] = {"__name__": "readme_example"}
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        for block in blocks:
            exec(compile(block, str(README), "exec"), namespace)
    printed = output.getvalue().splitlines()
    assert printed == [
        "{'additionalProperties': False, 'properties': {'item': {'description': 'Product name', "
        "'type': 'string'}, 'quantity': {'default': 1, 'minimum': 1, 'type': 'integer'}}, "
        "'required': ['item'], 'type': 'object'}",
        "type='json' value={'item': 'pear', 'total': 3.0}",
        "True Error executing tool: Tool input validation failed for quote: "
        'Unrecognized key: "itm" (accepted keys: item, quantity); missing required field "item"',
        "type='json' value={'item': 'apple', 'total': 9.0}",
    ]
    price = namespace["price"]
    assert isinstance(price, FunctionTool)
    properties = price.definition.parameters["properties"]
    assert properties["quantity"]["description"] == "How many."
    assert "prices" not in properties  # injected, not an argument
