"""OpenAIChat.ainvoke vs a bare openai SDK stream to the same ScriptedOpenAIServer.

Both sides stream the same Chat Completions reply for the same history; the bare side gets the
request ready-made (``create(**request)``, as a hand-written call would be), OpenAIChat converts
the history, folds every chunk (text deltas forwarded to a callback, tool-call fragments joined)
and builds the completion. OpenAIChat hands the SDK its already-plain JSON as ``extra_body``,
skipping the SDK's per-field transform, so on long histories it is faster than the bare call;
a second baseline, ``bare+extra_body``, makes the same call the same fast way, so its ratio is
OpenAIChat's own overhead. It prints both ratios for histories of 10 and 1,000 messages and for
a reply of 2,000 text deltas. Target: both ratios <= 1.2x at 1,000 messages.

    python bench/openai_provider.py [--calls 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

from anthropic_provider import history, timed_pair

from jupyter_codelia.llm.openai import OpenAIChat
from jupyter_codelia.testing import ScriptedOpenAIServer, reply, text

KEY = "bench-key-000000"


async def compare(label: str, messages: list[Any], answer: str, calls: int) -> float:
    with ScriptedOpenAIServer(lambda _request: reply(text(answer))) as server:
        chat = OpenAIChat("gpt-4o", base_url=server.url, api_key=KEY)
        request = chat.build_request(messages)
        client = chat.client
        deltas: list[str] = []

        async def bare() -> None:
            stream = await client.chat.completions.create(**request)
            async for chunk in stream:
                for choice in chunk.choices:
                    if choice.delta.content:
                        deltas.append(choice.delta.content)

        async def bare_extra_body() -> None:
            stream = await client.chat.completions.create(
                model=request["model"], messages=[], stream=True, extra_body=request
            )
            async for chunk in stream:
                for choice in chunk.choices:
                    if choice.delta.content:
                        deltas.append(choice.delta.content)

        async def provider() -> None:
            await chat.ainvoke(messages, on_text_delta=deltas.append)

        bare_ms, provider_ms = await timed_pair(bare, provider, calls)
        fast_ms, provider_again_ms = await timed_pair(bare_extra_body, provider, calls)
        await client.close()
    ratio = provider_ms / bare_ms
    own = provider_again_ms / fast_ms
    print(
        f"{label:<28} bare={bare_ms:8.2f} ms  provider={provider_ms:8.2f} ms  "
        f"ratio={ratio:5.2f}x | bare+extra_body={fast_ms:8.2f} ms  "
        f"provider={provider_again_ms:8.2f} ms  ratio={own:5.2f}x"
    )
    return max(ratio, own)


async def main(calls: int) -> None:
    for name in [n for n in os.environ if n.startswith("OPENAI_")]:
        del os.environ[name]
    await compare("history=10, short reply", history(10), "OK.", calls)
    ratio = await compare("history=1000, short reply", history(1000), "OK.", calls)
    await compare("history=10, 2000 deltas", history(10), "word " * 2000, max(3, calls // 4))
    verdict = "OK" if ratio <= 1.2 else "MISSED"
    print(f"target: both ratios <= 1.2x at 1000 messages -> {verdict}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    asyncio.run(main(parser.parse_args().calls))
