"""The kernel tools on real objects, run in-process against a plain namespace dict."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from PIL import Image

from jupyter_codelia.llm.messages import FunctionCall, ImagePart, TextPart, ToolCall
from jupyter_codelia.notebook.kernel_tools.namespace import kernel_tools
from jupyter_codelia.tools import ToolContext, execute_tool_call


def _tools(ns: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {t.name: t for t in kernel_tools(namespace=ns, **kw)}


async def _call(tool: Any, **args: Any) -> Any:
    return await tool.execute_raw(json.dumps(args), ToolContext())


@pytest.mark.asyncio
async def test_python_shares_namespace_and_returns_streams_and_result() -> None:
    ns: dict[str, Any] = {"base": 40}
    tools = _tools(ns)
    result = await _call(
        tools["python"],
        code="import sys\nprint('hello')\nprint('warn', file=sys.stderr)\n"
        "answer = base + 2\nanswer",
    )
    assert result.type == "text"
    assert "[stdout]\nhello" in result.text
    assert "[stderr]\nwarn" in result.text
    assert "[result]\n42" in result.text
    assert ns["answer"] == 42


@pytest.mark.asyncio
async def test_python_reports_traceback_with_source_line() -> None:
    tools = _tools({})
    result = await _call(tools["python"], code="x = 1\ny = x / 0\n")
    assert "[error]" in result.text
    assert "ZeroDivisionError: division by zero" in result.text
    assert "y = x / 0" in result.text
    # Our own wrapper frames are not shown to the model.
    assert "_execute.py" not in result.text


@pytest.mark.asyncio
async def test_python_syntax_error_is_reported_not_raised() -> None:
    result = await _call(_tools({})["python"], code="def broken(:\n")
    assert "[error]" in result.text
    assert "SyntaxError" in result.text


@pytest.mark.asyncio
async def test_python_no_output() -> None:
    result = await _call(_tools({})["python"], code="z = 3")
    assert result.text == "(no output)"


@pytest.mark.asyncio
async def test_python_timeout_stops_the_code() -> None:
    ns: dict[str, Any] = {}
    result = await _call(
        _tools(ns)["python"],
        code="n = 0\nwhile True:\n    n += 1\n",
        timeout_seconds=0.5,
    )
    assert "[timeout] stopped after" in result.text
    assert "Execution stopped" in result.text
    assert ns["n"] > 0


@pytest.mark.asyncio
async def test_python_top_level_await() -> None:
    result = await _call(
        _tools({})["python"], code="import asyncio\nawait asyncio.sleep(0)\n'awaited'"
    )
    assert "[result]\n'awaited'" in result.text


@pytest.mark.asyncio
async def test_python_matplotlib_figure_comes_back_as_png_image_part() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns: dict[str, Any] = {}
    code = (
        "import matplotlib.pyplot as plt\n"
        "fig, ax = plt.subplots(figsize=(3, 2))\n"
        "ax.plot([1, 2, 3], [1, 4, 9])\n"
        "print('plotted')\n"
    )
    result = await _call(_tools(ns)["python"], code=code)
    assert result.type == "parts"
    text, image = result.parts
    assert isinstance(text, TextPart)
    assert "[stdout]\nplotted" in text.text
    assert "[images] 1 image(s)" in text.text
    assert isinstance(image, ImagePart)
    png = image.data_bytes()
    assert png is not None
    with Image.open(io.BytesIO(png)) as decoded:
        assert decoded.format == "PNG"
        assert decoded.width > 100
    # The figure is closed so it does not show up again at the end of the cell.
    assert plt.get_fignums() == []


@pytest.mark.asyncio
async def test_list_variables_describes_pandas_numpy_and_plain_objects() -> None:
    import numpy as np
    import pandas as pd

    ns: dict[str, Any] = {
        "df": pd.DataFrame({"city": ["a", "b", "c"], "sales": [1.5, 2.5, None]}),
        "arr": np.arange(12).reshape(3, 4),
        "names": ["x", "y"],
        "_private": 1,
        "np": np,
        "In": [],
    }
    text = await _call(_tools(ns)["list_variables"])
    lines = text.text.splitlines()
    assert [line.split(":")[0] for line in lines] == ["arr", "df", "names"]
    assert "pandas.DataFrame" in text.text
    assert "3 rows x 2 columns [city, sales]" in text.text
    assert "numpy.ndarray" in text.text
    assert "shape (3, 4), dtype int64" in text.text
    assert "len 2" in text.text
    filtered = await _call(_tools(ns)["list_variables"], pattern="d*")
    assert filtered.text.startswith("df:")
    none = await _call(_tools(ns)["list_variables"], pattern="zzz*")
    assert none.text == "No user variables matching 'zzz*' in the notebook namespace."


@pytest.mark.asyncio
async def test_inspect_variable_dataframe_array_and_function() -> None:
    import numpy as np
    import pandas as pd

    def scale(values: list[float], factor: float = 2.0) -> list[float]:
        """Multiply every value."""
        return [v * factor for v in values]

    ns: dict[str, Any] = {
        "df": pd.DataFrame({"city": ["a", "b", "c"], "sales": [1.5, 2.5, None]}),
        "arr": np.array([1.0, 2.0, 3.0]),
        "scale": scale,
    }
    tools = _tools(ns)
    frame = (await _call(tools["inspect_variable"], name="df", rows=2)).text
    assert "type: pandas.DataFrame" in frame
    assert "shape: 3 rows x 2 columns" in frame
    assert "sales: float64" in frame
    assert "null counts: {'sales': 1}" in frame
    assert "head(2):" in frame
    assert "memory:" in frame
    array = (await _call(tools["inspect_variable"], name="arr")).text
    assert "min: " in array
    assert "mean: 2.0" in array
    function = (await _call(tools["inspect_variable"], name="scale")).text
    assert "signature: scale(values: 'list[float]', factor: 'float' = 2.0)" in function
    assert "doc: Multiply every value." in function
    attr = (await _call(tools["inspect_variable"], name="arr.shape")).text
    assert "(3,)" in attr


@pytest.mark.asyncio
async def test_inspect_variable_errors_are_actionable() -> None:
    tools = _tools({"Data": 1})
    call = ToolCall(
        id="t1", function=FunctionCall(name="inspect_variable", arguments='{"name": "data"}')
    )
    execution = await execute_tool_call(call, list(tools.values()))
    assert execution.message.is_error
    assert execution.message.content == (
        "Error executing tool: No variable named 'data' in the notebook namespace. "
        "Did you mean 'Data'? Call list_variables to see what exists."
    )
    bad = ToolCall(
        id="t2", function=FunctionCall(name="inspect_variable", arguments='{"name": "a[0]"}')
    )
    execution = await execute_tool_call(bad, list(tools.values()))
    assert "'a[0]' is not a variable name" in str(execution.message.content)
    attr = ToolCall(
        id="t3", function=FunctionCall(name="inspect_variable", arguments='{"name": "Data.nope"}')
    )
    execution = await execute_tool_call(attr, list(tools.values()))
    assert "'Data' has no attribute 'nope'" in str(execution.message.content)


@pytest.mark.asyncio
async def test_python_rejects_unknown_keys_and_bad_timeout() -> None:
    tools = _tools({})
    call = ToolCall(
        id="t1", function=FunctionCall(name="python", arguments='{"code": "1", "cmd": "x"}')
    )
    execution = await execute_tool_call(call, list(tools.values()))
    assert 'Unrecognized key: "cmd"' in str(execution.message.content)
    call = ToolCall(
        id="t2",
        function=FunctionCall(name="python", arguments='{"code": "1", "timeout_seconds": -1}'),
    )
    execution = await execute_tool_call(call, list(tools.values()))
    assert "timeout_seconds" in str(execution.message.content)


def test_kernel_tools_needs_a_namespace() -> None:
    with pytest.raises(ValueError, match="pass shell= or namespace="):
        kernel_tools()


@pytest.mark.asyncio
async def test_user_prints_outside_the_tool_thread_are_not_captured(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import asyncio

    ns: dict[str, Any] = {}
    tools = _tools(ns)
    task = asyncio.create_task(
        _call(tools["python"], code="import time\nfor i in range(5):\n    time.sleep(0.02)\n'x'")
    )
    await asyncio.sleep(0.03)
    print("from the main thread")
    result = await task
    assert "from the main thread" not in result.text
    assert "from the main thread" in capsys.readouterr().out


@pytest.mark.asyncio
async def test_python_output_is_bounded() -> None:
    from jupyter_codelia.notebook.kernel_tools._execute import MAX_STREAM_CHARS

    result = await _call(
        _tools({})["python"],
        code=f"print('x' * {MAX_STREAM_CHARS + 10})\n'y' * {MAX_STREAM_CHARS + 7}",
    )
    assert f"[note] output cut at {MAX_STREAM_CHARS} characters per stream" in result.text
    assert result.text.endswith("… [9 more characters]")  # 7 + the repr's two quotes
    assert len(result.text) < 3 * MAX_STREAM_CHARS


@pytest.mark.asyncio
async def test_python_attaches_a_bounded_number_of_figures_each_fitted() -> None:
    """One call once returned 40 figures; a huge displayed image would pass the API's 5 MiB."""
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np

    code = (
        "import matplotlib.pyplot as plt\n"
        "plt.rcParams['figure.max_open_warning'] = 0\n"
        "plt.figure(figsize=(26, 19), dpi=100); plt.axis('off'); plt.imshow(noise)\n"
        "for i in range(39):\n"
        "    plt.figure(figsize=(2, 2)); plt.plot([0, i])\n"
    )
    noise = np.random.default_rng(7).integers(0, 256, (1900, 2600, 3), dtype=np.uint8)
    result = await _call(_tools({"noise": noise})["python"], code=code)
    text, *images = result.parts
    assert len(images) == 8
    assert "[images] 8 image(s) attached below" in text.text
    assert "[images] figure 1: Downsized from " in text.text
    assert (
        "[images] 32 more figure(s) not attached: one result attaches at most 8 images of "
        "12 MiB together. Ask for fewer at a time."
    ) in text.text
    first = images[0].image_url.url
    assert len(first.split(",", 1)[1]) <= 5 * 1024 * 1024  # the API's limit, base64
    with Image.open(io.BytesIO(images[0].data_bytes())) as shown:
        assert max(shown.size) <= 1568


def _noisy_png(width: int, height: int) -> bytes:
    """Random pixels: a PNG that does not compress (about 3 bytes per pixel)."""
    import numpy as np

    pixels = np.random.default_rng(7).integers(0, 256, (height, width, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG", compress_level=1)
    return buffer.getvalue()
