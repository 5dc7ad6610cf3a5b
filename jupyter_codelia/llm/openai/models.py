"""What each OpenAI-compatible model can do, one table per provider family: context window,
default and maximum output, how its reasoning comes over the wire and what must go back with it.

:class:`~.openai.OpenAIChat` sizes the output limit from here and names it the way the model
wants (``max_completion_tokens`` for OpenAI's own families, ``max_tokens`` for the rest; the
Responses API always takes ``max_output_tokens``), and sends back each reasoning form the way
its provider requires:

=====================  ===============================  =========================================
reasoning form         how it arrives                   what goes back with a tool-call turn
=====================  ===============================  =========================================
``hidden``             not at all (OpenAI's Chat        nothing; the Responses API's encrypted
                       Completions), encrypted items    ``reasoning`` items, in place
                       (Responses API)
``field``              a delta field: ``reasoning``     the same field, with the text; DeepSeek
                       (gpt-oss on Ollama / vLLM,       also needs an empty ``reasoning_content``
                       OpenRouter) or                   on a tool-call turn that had none
                       ``reasoning_content`` (DeepSeek)
``signature``          Gemini: a ``thought_signature``  ``extra_content`` on the same tool call
                       in the tool call's
                       ``extra_content.google``
``think_tags``         inline ``<think>...</think>``    nothing (the model's own template drops
                       at the start of the text         earlier reasoning)
=====================  ===============================  =========================================

OpenRouter adds ``reasoning_details`` (text, summaries, encrypted and signed items) to any model;
they go back unchanged on the turn that produced them.

Model ids match by prefix, longest first, after any ``vendor/`` path (OpenRouter's
``deepseek/deepseek-r1``, Gemini's ``models/gemini-3-pro-preview``) and any ``:tag``
(Ollama's ``gpt-oss:20b``). An id the tables do not know gets :data:`UNKNOWN_OPENAI_MODEL` —
no output limit sent (the server's own applies), no known window, reasoning read from
whatever field or tags the server uses and sent back as it came — with one note in the log;
a local model's name is never refused. Pure data and the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..anthropic.models import DEFAULT_MAX_TOKENS_CAP, note_unknown_model

ReasoningForm = Literal["none", "hidden", "field", "signature", "think_tags"]
SendBack = Literal["nothing", "as_received", "reasoning_content"]
LimitParameter = Literal["max_completion_tokens", "max_tokens"]

LOCAL_PROVIDERS = frozenset({"ollama", "vllm", "lmstudio", "llamacpp"})
"""Servers whose output limit is their own configuration (a context length chosen at start):
no limit is sent to them unless one is set, since ``prompt + max_tokens`` over the server's
window is refused."""


@dataclass(frozen=True)
class OpenAIModelInfo:
    """One model family's row.

    ``context_window`` and ``max_output_tokens``: the model's own limits in tokens (None:
    unknown or set by the server). ``reasoning`` and ``send_back``: see the module table;
    ``send_back="reasoning_content"`` is ``as_received`` plus DeepSeek's rule that every
    tool-call turn carries a ``reasoning_content``. ``tools`` / ``vision``: whether it calls
    tools and reads images (None: not known). ``limit_parameter``: the request field of the
    output limit in Chat Completions.
    """

    context_window: int | None
    max_output_tokens: int | None
    reasoning: ReasoningForm
    send_back: SendBack = "as_received"
    tools: bool | None = None
    vision: bool | None = None
    limit_parameter: LimitParameter = "max_tokens"

    @property
    def default_max_tokens(self) -> int | None:
        """The output limit sent when none is configured: the model's maximum, capped like
        the Anthropic table's (reasoning tokens count against it); None when unknown."""
        if self.max_output_tokens is None:
            return None
        return min(self.max_output_tokens, DEFAULT_MAX_TOKENS_CAP)


def _openai(
    window: int,
    output: int,
    reasoning: ReasoningForm,
    *,
    tools: bool = True,
    vision: bool = True,
) -> OpenAIModelInfo:
    return OpenAIModelInfo(
        window,
        output,
        reasoning,
        "nothing",
        tools=tools,
        vision=vision,
        limit_parameter="max_completion_tokens",  # the o-series and gpt-5 refuse max_tokens
    )


# OpenAI's own families (checked against OpenAI's model pages, 2026-11).
OPENAI_MODELS: dict[str, OpenAIModelInfo] = {
    "gpt-5": _openai(400_000, 128_000, "hidden"),
    "gpt-5-chat": _openai(128_000, 16_384, "none"),
    "gpt-4.1": _openai(1_047_576, 32_768, "none"),
    "gpt-4o": _openai(128_000, 16_384, "none"),
    "gpt-4o-audio": _openai(128_000, 16_384, "none", vision=False),
    "gpt-4o-search": _openai(128_000, 16_384, "none", tools=False, vision=False),
    "gpt-4-turbo": _openai(128_000, 4_096, "none"),
    "gpt-4": _openai(8_192, 8_192, "none", vision=False),
    "gpt-3.5-turbo": _openai(16_385, 4_096, "none", vision=False),
    "o1": _openai(200_000, 100_000, "hidden"),
    "o1-mini": _openai(128_000, 65_536, "hidden", tools=False, vision=False),
    "o3": _openai(200_000, 100_000, "hidden"),
    "o3-mini": _openai(200_000, 100_000, "hidden", vision=False),
    "o4-mini": _openai(200_000, 100_000, "hidden"),
}

# DeepSeek's API (api.deepseek.com; its pricing page, 2026-11: 1M context, up to 384K out).
# Thinking mode is on by default and a tool-call turn's reasoning_content must come back.
_DEEPSEEK_V4 = OpenAIModelInfo(1_000_000, 384_000, "field", "reasoning_content", tools=True)
DEEPSEEK_MODELS: dict[str, OpenAIModelInfo] = {
    "deepseek-flash": OpenAIModelInfo(
        1_000_000, 384_000, "field", "reasoning_content", tools=True, vision=True
    ),
    "deepseek-v4": _DEEPSEEK_V4,
    "deepseek-v4-flash": OpenAIModelInfo(
        1_000_000, 384_000, "field", "reasoning_content", tools=True, vision=True
    ),
    "deepseek-v4-pro": OpenAIModelInfo(
        1_000_000, 384_000, "field", "reasoning_content", tools=True, vision=False
    ),
    # Older names, now served by V4 Flash (chat: thinking off, reasoner: on).
    "deepseek-chat": _DEEPSEEK_V4,
    "deepseek-reasoner": _DEEPSEEK_V4,
}

# Gemini through its OpenAI-compatible endpoint (generativelanguage.googleapis.com/v1beta/openai).
_GEMINI_THINKING = OpenAIModelInfo(1_048_576, 65_536, "signature", tools=True, vision=True)
GEMINI_MODELS: dict[str, OpenAIModelInfo] = {
    "gemini-3": _GEMINI_THINKING,
    "gemini-2.5": _GEMINI_THINKING,
    "gemini-2.0-flash": OpenAIModelInfo(1_048_576, 8_192, "none", tools=True, vision=True),
}

# Open-weight families served by Ollama, vLLM, llama.cpp, LM Studio and OpenRouter's hosts.
# Their windows depend on how the server was started; these are the models' own.
OPEN_WEIGHT_MODELS: dict[str, OpenAIModelInfo] = {
    # gpt-oss reasons in the harmony "analysis" channel, served as a ``reasoning`` field.
    "gpt-oss": OpenAIModelInfo(131_072, 131_072, "field", tools=True, vision=False),
    # DeepSeek-R1 (and its distills) and QwQ write <think>...</think> inline unless the
    # server parses it out; their templates drop earlier turns' reasoning.
    "deepseek-r1": OpenAIModelInfo(128_000, None, "think_tags", "nothing"),
    "qwq": OpenAIModelInfo(131_072, None, "think_tags", "nothing"),
}

MODEL_TABLES: dict[str, dict[str, OpenAIModelInfo]] = {
    "openai": OPENAI_MODELS,
    "deepseek": DEEPSEEK_MODELS,
    "gemini": GEMINI_MODELS,
    "open-weight": OPEN_WEIGHT_MODELS,
}
"""Every table by provider family (the README's provider section lists the same)."""

_ROWS: dict[str, OpenAIModelInfo] = {
    prefix: row for table in MODEL_TABLES.values() for prefix, row in table.items()
}

UNKNOWN_OPENAI_MODEL = OpenAIModelInfo(None, None, "field")
"""What an id missing from the tables gets: no known limits (no output limit is sent, so the
server's own applies), reasoning taken from any field or leading <think> tags, sent back as it
came, capabilities unknown (a run is not refused for them)."""


def model_family(model: str) -> str | None:
    """The table prefix ``model`` belongs to (the longest that fits), or None."""
    name = model.split("/")[-1].split(":")[0].lower()
    best = ""
    for prefix in _ROWS:
        if name.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return best or None


def model_info(model: str) -> OpenAIModelInfo:
    """The row of ``model``; :data:`UNKNOWN_OPENAI_MODEL` (noted once in the log) when no
    table knows it."""
    family = model_family(model)
    if family is not None:
        return _ROWS[family]
    note_unknown_model(
        model,
        "model %r is not in jupyter_codelia's OpenAI-compatible model table: no output limit "
        "is sent unless one is set (the server's own applies), its context window is unknown, "
        "and its reasoning is read and sent back in whatever form the server uses",
    )
    return UNKNOWN_OPENAI_MODEL


__all__ = [
    "DEEPSEEK_MODELS",
    "GEMINI_MODELS",
    "LOCAL_PROVIDERS",
    "MODEL_TABLES",
    "OPENAI_MODELS",
    "OPEN_WEIGHT_MODELS",
    "UNKNOWN_OPENAI_MODEL",
    "LimitParameter",
    "OpenAIModelInfo",
    "ReasoningForm",
    "SendBack",
    "model_family",
    "model_info",
]
