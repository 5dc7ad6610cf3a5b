"""The one base of every error jupyter-codelia raises on purpose.

``except CodeliaError`` catches them all. Each subclass keeps the builtin base callers already
expect (a missing session is still a ``KeyError``, a bad argument a ``ValueError``), and code that
needs to tell cases apart catches the subclass, never a message: messages are for people and
models, and may change.

The hierarchy (a builtin base in parentheses, then the module that defines the class; a test
keeps this tree equal to the classes)::

    * CodeliaError — errors
      * AgentRunError (RuntimeError) — agent._agent
        * RunAlreadyActiveError — agent._agent
      * BigLineError (ValueError) — standard_tools.mcp._bigline
      * BridgeError (RuntimeError) — acp._errors
        * ServerNotFoundError — acp._errors
      * CompletionRefusedError (RuntimeError) — tools._host
      * ConfigError (ValueError) — notebook.config
      * ConfinementError (OSError) — standard_tools.files._confine
      * FrontendError (RuntimeError) — notebook.frontend
        * FrontendTimeoutError — notebook.frontend
        * FrontendUnavailableError — notebook.frontend
      * ImageTooLargeError (ValueError) — standard_tools.images
      * InStreamApiError — llm.anthropic._stream
      * IndexFormatError (ValueError) — cache._index
      * InvalidSessionIdError (ValueError) — session._models
      * KernelToolError (RuntimeError) — server.jupyter_ai_tools
      * LlmError — llm.base
      * McpConfigError (ValueError) — standard_tools.mcp.config
      * NotTrackableError — notebook.kernel_tools._fingerprint
        * FingerprintTimeoutError — notebook.kernel_tools._fingerprint
      * NotUtf8Error (ValueError) — standard_tools._fileio
      * NotebookDocError — server.notebook_doc._errors
        * CellChangedError (RuntimeError) — server.notebook_doc._errors
        * InvalidNotebookRequestError (ValueError) — server.notebook_doc._errors
        * NeedsTabError (RuntimeError) — server.notebook_doc._errors
        * NotebookFileChangedError (RuntimeError) — server.notebook_doc._errors
        * NotebookNotFoundError (LookupError) — server.notebook_doc._errors
        * NotebookTooLargeError (ValueError) — server.notebook_doc._errors
        * NotebookUnreadableError (ValueError) — server.notebook_doc._errors
        * RevertRefusedError (RuntimeError) — server.notebook_doc._errors
      * NotebookFileError (ValueError) — notebook.notebook_tools.cells
      * PatchApplyError (ValueError) — standard_tools.patch._lines
      * PatchConflictError — standard_tools.patch._write
      * PatchParseError (ValueError) — standard_tools.patch._parse
      * PeerError (RuntimeError) — server.kernel_peer
        * ChannelClosedError — server.kernel_peer
        * KernelRequestError — server.kernel_peer
        * NotebookNotFoundError — server.mcp_endpoint
        * PeerTimeoutError — server.kernel_peer
        * RelayUnavailableError — server.mcp_endpoint
      * PermissionConfigError (ValueError) — agent.permissions
      * PrivateNetworkError — standard_tools.web._netguard
      * RedirectError — standard_tools.web
      * RequestError (ValueError) — notebook.bridge
      * RipgrepMissingError (RuntimeError) — standard_tools.files.search
      * RunNotFinishedError (RuntimeError) — notebook.run.results
      * SandboxPathError — standard_tools._fileio
      * ScriptError (ValueError) — testing._script
      * SearchBackendError — standard_tools.web
      * SecurityError — standard_tools._sandbox
      * SessionConflictError — session._models
      * SessionLoadError — session._models
      * SessionNotFound (KeyError) — session._models
      * SharedStoreSettingError (ValueError) — session._sharing
      * StreamProtocolError (ValueError) — llm.anthropic._stream
      * ToolDefinitionError (TypeError) — tools._errors
      * ToolError — tools._errors
        * JobNotFoundError — standard_tools.jobs
        * McpServerError — standard_tools.mcp.server
        * ToolArgumentsError — tools._errors
        * ToolInputError — tools._errors
      * ToolOutputCacheError — cache._errors
        * InvalidPatternError (ValueError) — cache._errors
        * ToolOutputCorruptedError — cache._errors
        * ToolOutputEvictedError (LookupError) — cache._errors
        * ToolOutputNotFoundError (LookupError) — cache._errors
        * ToolOutputTooLargeError — cache._errors
        * WriterClosedError — cache._errors
      * UndoError (LookupError) — notebook.kernel_tools.undo
      * UnknownToolError (LookupError) — notebook.run.external
      * UnsupportedImageError (ValueError) — standard_tools.images

Control flow is not an error and stays outside this tree: ``RunCancelled`` (a
``CancelledError``), ``TaskComplete`` (the ``done`` tool's signal), ``RunInterrupted`` (the
kernel interrupt, a ``KeyboardInterrupt``) and ``ExecutionAbandoned`` (a worker thread left
behind).
"""

from __future__ import annotations


class CodeliaError(Exception):
    """Base of the errors jupyter-codelia raises."""
