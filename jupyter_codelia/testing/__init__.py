"""An offline Anthropic API for tests and notebooks: :class:`ScriptedAnthropicServer`.

>>> from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use
>>> with ScriptedAnthropicServer([
...         reply(text("Let me look."), tool_use("read", {"file_path": "a.txt"})),
...         reply(text("Done.")),
...     ]) as server:                                                   # doctest: +SKIP
...     chat = AnthropicChat(base_url=server.url, api_key="test-key")
...     server.requests        # every request: .json, .headers (secrets redacted), .path

``offline_demo(script)`` makes a notebook's ``%%codelia`` cells run on such a server when no
API key is set (``by_prompt`` keys the turns by the prompt's words, ``play`` plays them in
order; both stop honestly when a tool did not return what the script expects).

``python -m jupyter_codelia.testing --script script.json`` runs the same server in its own
process and prints its URL (for a kernel in another process to reach).

:class:`ScriptedOpenAIServer` plays the same scripts as OpenAI's Chat Completions API (pass
``server.url`` as ``OpenAIChat(base_url=...)``).
"""

from ._offline import (
    OFFLINE_API_KEY,
    OFFLINE_BANNER,
    REAL_MODEL_HINT,
    SeenResult,
    by_prompt,
    end_demo,
    end_demo_if_superseded,
    last_result,
    offline_demo,
    play,
)
from ._openai_server import ScriptedOpenAIServer
from ._script import (
    Fault,
    Recorded,
    Reply,
    ScriptError,
    ScriptUsage,
    Turn,
    fault,
    load_recording,
    load_script,
    parse_recording,
    parse_script,
    parse_turn,
    recorded,
    redacted_thinking,
    refusal,
    reply,
    text,
    thinking,
    tool_use,
    usage,
)
from ._server import RecordedRequest, ScriptedAnthropicServer, ScriptedServer, wait_for

__all__ = [
    "OFFLINE_API_KEY",
    "OFFLINE_BANNER",
    "REAL_MODEL_HINT",
    "Fault",
    "Recorded",
    "RecordedRequest",
    "Reply",
    "ScriptError",
    "ScriptUsage",
    "ScriptedAnthropicServer",
    "ScriptedOpenAIServer",
    "ScriptedServer",
    "SeenResult",
    "Turn",
    "by_prompt",
    "end_demo",
    "end_demo_if_superseded",
    "fault",
    "last_result",
    "load_recording",
    "load_script",
    "offline_demo",
    "parse_recording",
    "parse_script",
    "parse_turn",
    "play",
    "recorded",
    "redacted_thinking",
    "refusal",
    "reply",
    "text",
    "thinking",
    "tool_use",
    "usage",
    "wait_for",
]
