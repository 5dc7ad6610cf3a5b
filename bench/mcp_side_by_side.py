"""``/codelia/mcp`` side by side with the Jupyter MCP Server, in one run (not a test).

One ``jupyter server`` on loopback with both extensions enabled (jupyter_codelia's
``/codelia/mcp`` and jupyter-mcp-server's ``/mcp``), one 500-cell notebook with one kernel
session; both are driven by the same official MCP SDK client (streamable HTTP, the server's
token):

1. **Reading the whole notebook**: ours ``notebook_read`` with ``start=0, end=500`` against
   theirs ``read_notebook`` with ``response_format="detailed", limit=0``; medians over
   ``--rounds`` calls and the ratio ours / theirs. Target: <= 1.0.
2. **Running code that prints one line**: ours ``python`` against theirs ``execute_code`` (both
   run code in the notebook's kernel), and the notebook's last cell (``print('one line')``) by
   ours ``notebook_run`` (no tab open: the server runs it, see notebook_without_tab.py) against
   theirs ``execute_cell``. Target: <= 1.0.
3. **A figure**: what each returns for a matplotlib plot (content block types).
4. **A long cell**: the 10-minute cell scaled down to ``--long-seconds`` (75 s). Ours: a
   ``python`` call waits at most 50 s for the code and then hands it on as a background job,
   for any cell length, so a 75 s cell exercises the same path a 10-minute one does; the
   result is picked up with ``job_wait``. Theirs: ``execute_code`` interrupts the kernel when its
   ``timeout`` runs out (default 120 s, so a 10-minute cell is 5x over it); scaled by the same
   factor, the 75 s cell is run with ``timeout=15``. Survived means the code ran to its end
   and the agent got its last line.

Our notebook reads run last: a series stops at its first failed call and the report says why
(a call the kernel never answers leaves that kernel busy for the calls after it).

The Jupyter MCP Server must be importable by this interpreter but is not one of our
dependencies: install it into a venv of its own on top of ours and run the bench with that
venv's Python (the server is started with ``sys.executable``)::

    python3 -m venv .venv-jms
    echo "import site; site.addsitedir('<.venv's site-packages>')" \
        > .venv-jms/lib/python3.11/site-packages/zz_base.pth
    .venv-jms/bin/pip install jupyter-mcp-server==2.2.4
    .venv-jms/bin/python bench/mcp_side_by_side.py [--rounds 30] [--long-seconds 75]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import re
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from _jupyter import jupyter_launch
from _results import add_json_flag, emit, record

TOKEN = "bench-token"
RATIO_TARGET = 1.0
NOTEBOOK = "side_by_side.ipynb"
CELLS = 500
PRINT_LINE = "print('one line')"
FIGURE = (
    "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\n"
    "plt.plot([1, 3, 2])\nplt.show()"
)
OUR_CALL_SECONDS = 50.0  # jupyter_codelia.server.mcp_endpoint.CALL_SECONDS
THEIR_DEFAULT_TIMEOUT = 120  # jupyter_mcp_server.config execution_timeout
REAL_LONG_SECONDS = 600


def _notebook() -> dict[str, Any]:
    """500 cells as a working notebook has them: markdown headings, code with short outputs;
    the last cell prints one line."""
    cells: list[dict[str, Any]] = []
    for index in range(CELLS - 1):
        if index % 5 == 0:
            cells.append(
                {
                    "id": f"c{index}",
                    "cell_type": "markdown",
                    "metadata": {},
                    "source": f"## Step {index // 5}\nWhat this part of the analysis does.",
                }
            )
            continue
        cells.append(
            {
                "id": f"c{index}",
                "cell_type": "code",
                "execution_count": index,
                "metadata": {},
                "source": f"value_{index} = {index} * 2\nprint(value_{index})",
                "outputs": [{"output_type": "stream", "name": "stdout", "text": f"{index * 2}\n"}],
            }
        )
    cells.append(
        {
            "id": "print-cell",
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "source": PRINT_LINE,
            "outputs": [],
        }
    )
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def _kinds(result: Any) -> str:
    return ", ".join(
        block.type + (f" ({block.mime_type})" if block.type == "image" else "")
        for block in result.content
    )


@asynccontextmanager
async def _client(url: str, name: str) -> AsyncIterator[Any]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp_types import Implementation

    http = create_mcp_http_client(headers={"Authorization": f"token {TOKEN}"})
    try:
        async with (
            streamable_http_client(url, http_client=http) as (read, write, *_),
            ClientSession(read, write, client_info=Implementation(name=name, version="1")) as s,
        ):
            await s.initialize()
            yield s
    finally:
        await http.aclose()


class CallFailedError(Exception):
    """A tool call answered with an error: that series stops, and the report says why."""


def _check(result: Any, expected: str) -> str:
    text = _text(result)
    if result.is_error or expected not in text:
        raise CallFailedError(text[-300:])
    return text


async def _median_ms(
    numbers: dict[str, Any], key: str, rounds: int, call: Callable[[], Awaitable[Any]]
) -> None:
    """The median of ``rounds`` calls under ``key``; or, at the first failed call, the error
    and how long that call took under ``key + "_failed"``."""
    spent: list[float] = []
    for index in range(rounds + 3):  # the first three warm imports, caches, the subshell
        started = time.perf_counter()
        try:
            await call()
        except CallFailedError as failed:
            numbers[f"{key}_failed"] = (
                f"call {index + 1} failed after {time.perf_counter() - started:.1f} s "
                f"({len(spent)} timed before it): {failed}"
            )
            return
        if index >= 3:
            spent.append(time.perf_counter() - started)
    numbers[key] = statistics.median(spent) * 1000


async def measure(url: str, rounds: int, long_seconds: float) -> dict[str, Any]:
    nb = {"notebook_path": NOTEBOOK}
    numbers: dict[str, Any] = {}
    async with (
        _client(f"{url}/codelia/mcp", "bench-ours") as ours,
        _client(f"{url}/mcp", "bench-theirs") as theirs,
    ):
        used = await theirs.call_tool(
            "use_notebook", {"notebook_name": "bench", "notebook_path": NOTEBOOK}
        )
        assert not used.is_error, _text(used)
        numbers["their_use_notebook"] = _text(used)[:300]

        async def our_read() -> None:
            # A reply is capped at the model's budget (the rest stays in the output cache,
            # by ref): the agent pages on from the last cell it got until it has them all.
            start, calls, chars = 0, 0, 0
            while True:
                result = await ours.call_tool("notebook_read", {**nb, "start": start, "end": CELLS})
                text = _check(result, "")
                calls, chars = calls + 1, chars + len(text)
                if "[tool output truncated" not in text:
                    break
                start = max(int(found) for found in re.findall(r"--- cell #(\d+)", text))
            _check(result, PRINT_LINE)
            numbers["our_read_chars"], numbers["our_read_calls"] = chars, calls

        async def their_read() -> None:
            result = await theirs.call_tool(
                "read_notebook",
                {"notebook_name": "bench", "response_format": "detailed", "limit": 0},
            )
            numbers["their_read_chars"] = len(_check(result, "one line"))

        async def our_print() -> None:
            result = await ours.call_tool("python", {**nb, "code": PRINT_LINE})
            _check(result, "one line")

        async def their_code() -> None:
            result = await theirs.call_tool("execute_code", {"code": PRINT_LINE})
            _check(result, "one line")

        async def their_cell() -> None:
            result = await theirs.call_tool("execute_cell", {"cell_index": CELLS - 1})
            _check(result, "one line")

        async def our_cell() -> None:
            result = await ours.call_tool("notebook_run", {**nb, "cell_ids": ["print-cell"]})
            _check(result, "one line")

        await _median_ms(numbers, "our_print_ms", rounds, our_print)
        await _median_ms(numbers, "our_cell_ms", rounds, our_cell)
        await _median_ms(numbers, "their_code_ms", rounds, their_code)
        await _median_ms(numbers, "their_cell_ms", rounds, their_cell)

        figure = await ours.call_tool("python", {**nb, "code": FIGURE})
        numbers["our_figure"] = _kinds(figure)
        numbers["our_figure_text"] = _text(figure)[:200]
        figure = await theirs.call_tool("execute_code", {"code": FIGURE})
        numbers["their_figure"] = _kinds(figure)
        numbers["their_figure_text"] = _text(figure)[:200]

        # The long cell: it prints a last line only if it ran to its end.
        long_code = f"import time\ntime.sleep({long_seconds})\nprint('ran to the end')"
        started = time.perf_counter()
        first = await ours.call_tool("python", {**nb, "code": long_code})
        numbers["our_long_first_s"] = time.perf_counter() - started
        numbers["our_long_first"] = _text(first)[:300]
        job = re.search(r"job-\d+", _text(first))
        survived = "ran to the end" in _text(first)
        if job is not None:
            waited = await ours.call_tool(
                "job_wait", {**nb, "job_id": job.group(0), "timeout_seconds": 45}
            )
            survived = "ran to the end" in _text(waited)
            numbers["our_long_wait"] = _text(waited)[:300]
        numbers["our_long_s"] = time.perf_counter() - started
        numbers["our_long_survived"] = survived

        scaled = round(THEIR_DEFAULT_TIMEOUT * long_seconds / REAL_LONG_SECONDS)
        numbers["their_scaled_timeout"] = scaled
        started = time.perf_counter()
        answer = await theirs.call_tool("execute_code", {"code": long_code, "timeout": scaled})
        numbers["their_long_s"] = time.perf_counter() - started
        numbers["their_long"] = _text(answer)[-300:]
        numbers["their_long_survived"] = "ran to the end" in _text(answer)

        # Last: a failed read of ours leaves the kernel busy (see the report).
        await _median_ms(numbers, "their_read_ms", rounds, their_read)
        await _median_ms(numbers, "our_read_ms", rounds, our_read)
    return numbers


def _compare(numbers: dict[str, Any], label: str, ours: str, theirs: str, tools: str) -> None:
    def shown(key: str) -> str:
        if key in numbers:
            return f"median {numbers[key]:.1f} ms"
        return f"FAILED, {numbers.get(f'{key}_failed', 'not run')}"

    print(f"{label} ({tools}): ours {shown(ours)}; theirs {shown(theirs)}")
    if ours in numbers and theirs in numbers:
        ratio = numbers[ours] / numbers[theirs]
        met = "met" if ratio <= RATIO_TARGET else "NOT met"
        print(f"  ratio ours/theirs {ratio:.2f} (target <= {RATIO_TARGET:g}: {met})")
        record(f"side_by_side_{ours}_over_{theirs}", ratio)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--long-seconds", type=float, default=75.0)
    add_json_flag(parser)
    args = parser.parse_args()
    if importlib.util.find_spec("jupyter_mcp_server") is None:
        sys.exit(
            "jupyter-mcp-server is not importable by this Python: run the bench with the "
            "Python of a venv that has it (see the module docstring)."
        )
    from importlib.metadata import version

    launcher = jupyter_launch()
    env = {"JUPYTER_CODELIA_APPROVAL_MODE": "full-access"}  # our python calls run unasked
    with launcher.jupyter_server(TOKEN, env_extra=env) as server:
        (server.root / NOTEBOOK).write_text(json.dumps(_notebook()))
        server.session(NOTEBOOK)
        numbers = asyncio.run(measure(server.url, args.rounds, args.long_seconds))
    print(
        f"jupyter-mcp-server {version('jupyter-mcp-server')}, jupyter-codelia "
        f"{version('jupyter-codelia')}; {CELLS}-cell notebook, one kernel, {args.rounds} rounds"
    )
    _compare(
        numbers,
        f"reading all {CELLS} cells",
        "our_read_ms",
        "their_read_ms",
        "notebook_read start=0 end=500, paged on / read_notebook detailed limit=0",
    )
    if "our_read_calls" in numbers and "their_read_chars" in numbers:
        print(
            f"  replies: ours {numbers['our_read_chars']} chars in {numbers['our_read_calls']} "
            f"calls, theirs {numbers['their_read_chars']} chars in one"
        )
    _compare(
        numbers, "code printing one line", "our_print_ms", "their_code_ms", "python / execute_code"
    )
    _compare(
        numbers,
        "a notebook cell printing one line",
        "our_cell_ms",
        "their_cell_ms",
        "notebook_run / execute_cell",
    )
    print(
        f"a matplotlib figure: ours [{numbers['our_figure']}], theirs [{numbers['their_figure']}]"
    )
    print(
        f"a {args.long_seconds:g} s cell (a {REAL_LONG_SECONDS // 60}-minute one scaled): ours "
        f"answered after {numbers['our_long_first_s']:.1f} s "
        f"(a job: {'our_long_wait' in numbers}), its end after "
        f"{numbers['our_long_s']:.1f} s: {'survived' if numbers['our_long_survived'] else 'LOST'}; "
        f"theirs with timeout={numbers['their_scaled_timeout']} s (their {THEIR_DEFAULT_TIMEOUT} s "
        f"default, scaled the same) answered after {numbers['their_long_s']:.1f} s: "
        f"{'survived' if numbers['their_long_survived'] else 'interrupted'}"
    )
    print(f"  ours said first: {numbers['our_long_first']!r}")
    print(f"  theirs said: {numbers['their_long']!r}")
    print(f"  figure, ours said: {numbers['our_figure_text']!r}")
    print(f"  figure, theirs said: {numbers['their_figure_text']!r}")
    emit(args)


if __name__ == "__main__":
    main()
