"""AnthropicChat.ainvoke vs a bare SDK stream to the same ScriptedAnthropicServer.

Both sides stream the same reply for the same history; the bare side gets the request dicts
ready-made, AnthropicChat serialises the history, adds cache breakpoints,
forwards every text delta to a callback and converts the result. It prints the ratio
provider/bare and the provider's added milliseconds per call for histories of 10 and 1,000
messages and for a reply of 2,000 text deltas. Target: ratio <= 1.25 at 1,000 messages.

    python bench/anthropic_provider.py [--calls 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.llm.messages import AssistantMessage, ToolMessage, UserMessage
from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text

KEY = "bench-key-000000"
SENTENCE = "The quarterly revenue table has twelve rows and a dip in March. "


def history(n: int) -> list[Any]:
    messages: list[Any] = []
    for i in range(n // 2):
        messages.append(UserMessage(content=f"question {i}: " + SENTENCE * 4))
        messages.append(AssistantMessage(content=f"answer {i}: " + SENTENCE * 4))
    messages.append(UserMessage(content="and now?"))
    return messages


async def timed_pair(
    first: Callable[[], Awaitable[Any]], second: Callable[[], Awaitable[Any]], calls: int
) -> tuple[float, float]:
    """Median ms of each, sampled alternately so machine noise hits both alike."""
    await first()  # warm the connection and import paths
    await second()
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(calls):
        for call, bucket in ((first, samples[0]), (second, samples[1])):
            start = time.perf_counter()
            await call()
            bucket.append(time.perf_counter() - start)
    return statistics.median(samples[0]) * 1000, statistics.median(samples[1]) * 1000


async def compare(label: str, messages: list[Any], answer: str, calls: int) -> None:
    with ScriptedAnthropicServer(lambda _request: reply(text(answer))) as server:
        chat = AnthropicChat(base_url=server.url, api_key=KEY)
        request = chat.build_request(messages)
        client = chat.client
        deltas: list[str] = []

        async def bare() -> None:
            async with client.messages.stream(**request) as stream:
                async for event in stream:
                    if event.type == "text":
                        deltas.append(event.text)
                await stream.get_final_message()

        async def provider() -> None:
            await chat.ainvoke(messages, on_text_delta=deltas.append)

        bare_ms, provider_ms = await timed_pair(bare, provider, calls)
        await client.close()
    print(
        f"{label:<28} bare={bare_ms:8.2f} ms  provider={provider_ms:8.2f} ms  "
        f"ratio={provider_ms / bare_ms:5.2f}x  added={provider_ms - bare_ms:7.2f} ms/call"
    )


async def main(calls: int) -> None:
    for name in [n for n in os.environ if n.startswith("ANTHROPIC_")]:
        del os.environ[name]
    await compare("history=10, short reply", history(10), "OK.", calls)
    await compare("history=1000, short reply", history(1000), "OK.", calls)
    await compare("history=10, 2000 deltas", history(10), "word " * 2000, max(3, calls // 4))
    tool_heavy = [
        *history(10),
        AssistantMessage(content="checking", tool_calls=None),
        ToolMessage(tool_call_id="x", tool_name="read", content="orphan result"),
    ]
    await compare("orphan repair, short reply", tool_heavy, "OK.", calls)
    print("target: ratio <= 1.25x at 1000 messages")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    asyncio.run(main(parser.parse_args().calls))
