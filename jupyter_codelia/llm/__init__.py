"""Messages, content parts and model providers.

Importing this package is cheap: the Anthropic provider lives in ``jupyter_codelia.llm.anthropic``
and imports the SDK only when that module is imported.
"""

from .base import ChatModel, LlmError, StreamCallbacks
from .messages import (
    AssistantMessage,
    ChatInvokeCompletion,
    ChatInvokeUsage,
    ContentPart,
    DocumentPart,
    FunctionToolDefinition,
    ImagePart,
    Message,
    OtherPart,
    ReasoningMessage,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    ToolOutputRef,
    UserMessage,
)

__all__ = [
    "AssistantMessage",
    "ChatInvokeCompletion",
    "ChatInvokeUsage",
    "ChatModel",
    "ContentPart",
    "DocumentPart",
    "FunctionToolDefinition",
    "ImagePart",
    "LlmError",
    "Message",
    "OtherPart",
    "ReasoningMessage",
    "StreamCallbacks",
    "SystemMessage",
    "TextPart",
    "ToolCall",
    "ToolMessage",
    "ToolOutputRef",
    "UserMessage",
]
