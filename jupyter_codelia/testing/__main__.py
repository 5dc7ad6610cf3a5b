"""``python -m jupyter_codelia.testing``: run a scripted model server in its own process.

``--api anthropic`` (the default) serves the Messages API (ScriptedAnthropicServer);
``--api openai`` serves Chat Completions and the Responses API under ``/v1``
(ScriptedOpenAIServer).

Prints the server's URL as the first line of stdout, then serves until SIGTERM / SIGINT.
``--record`` appends every request (secrets redacted) to a JSON-lines file as it arrives.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from ._openai_server import ScriptedOpenAIServer
from ._script import ScriptError, load_script
from ._server import RecordedRequest, ScriptedAnthropicServer


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m jupyter_codelia.testing",
        description="Serve scripted model replies (Anthropic or OpenAI APIs) on 127.0.0.1.",
    )
    parser.add_argument(
        "--api",
        choices=("anthropic", "openai"),
        default="anthropic",
        help="which API to speak (openai: its base_url is the printed URL, ending in /v1)",
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument(
        "--script", type=Path, help="JSON file: a list of turns (see jupyter_codelia.testing)"
    )
    parser.add_argument("--record", type=Path, help="append each request as a JSON line here")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        turns: list[Any] = load_script(args.script) if args.script else []
    except ScriptError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    kind = ScriptedOpenAIServer if args.api == "openai" else ScriptedAnthropicServer
    server = kind(turns, port=args.port)
    record: Path | None = args.record
    if record is not None:
        record_lock = threading.Lock()

        def write_record(request: RecordedRequest) -> None:
            with record_lock, record.open("a", encoding="utf-8") as out:
                out.write(json.dumps(request.to_json()) + "\n")

        server.on_request = write_record
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        server.start()
    except OSError as exc:
        reason = exc.strerror or exc
        print(f"error: cannot listen on 127.0.0.1:{args.port}: {reason}", file=sys.stderr)
        return 2
    print(server.url, flush=True)
    try:
        stop.wait()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
