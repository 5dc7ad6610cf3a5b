"""One oversized JSON-RPC line from a stdio server, turned into a small message in bounded memory.

A server that answers with hundreds of megabytes on one line (a dump, minified JSON, a huge
image) would otherwise be held, copied and parsed whole. The transport spills such a line to a
file; :func:`compact_message` scans it once, chunk by chunk, and rebuilds the message with every
big string moved out to a spool file of its own:

* a text block keeps a head and a tail and names its spool (``_meta["codelia/spool"]``), which
  the tool streams into the output cache under the call's ref;
* base64 data (images, blobs) is decoded into its spool; an image is downscaled from there;
* every other value is small by nature and kept as it was.

Memory stays at a chunk plus the small values, whatever the line's size.
"""

from __future__ import annotations

import base64
import codecs
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ...errors import CodeliaError

SPOOL_KEY = "codelia/spool"
CHARS_KEY = "codelia/chars"
HEAD_KEY = "codelia/head"
HEAD_CHARS = 20_000
TAIL_CHARS = 5_000
_CHUNK = 1 << 20
# Strings that are not content (ids, names, types) are small; past this they are cut.
_SMALL_STRING = 64 * 1024
_SCALAR_END = re.compile(r"[\s,\]}]")
# A ``\\u`` escape cut by the chunk's end, or a high surrogate that wants its low half.
_PARTIAL_ESCAPE = re.compile(
    r"(?<!\\)(?:\\\\)*(\\u(?:[0-9a-fA-F]{0,3}|[dD][89abAB][0-9a-fA-F]{2}(?:\\u[0-9a-fA-F]{0,3})?))$"
)


class BigLineError(CodeliaError, ValueError):
    """The spilled line is not one JSON object (the session gets it as a parse error)."""


@dataclass
class _Spool:
    """A big string moved to a file: text (UTF-8) or base64 (decoded bytes)."""

    path: str
    chars: int
    base64: bool


class _Sink:
    """Writes one big string's decoded pieces to its spool file."""

    def __init__(self, directory: str, base64_data: bool) -> None:
        fd, self.path = tempfile.mkstemp(prefix="codelia-mcp-", dir=directory)
        self.file: BinaryIO = os.fdopen(fd, "wb")
        self.base64 = base64_data
        self.chars = 0
        self._pending = ""  # base64 characters short of a multiple of four

    def write(self, text: str) -> None:
        self.chars += len(text)
        if not self.base64:
            self.file.write(text.encode("utf-8", errors="surrogatepass"))
            return
        text = self._pending + "".join(text.split())
        cut = len(text) - len(text) % 4
        self._pending = text[cut:]
        if cut:
            self.file.write(base64.b64decode(text[:cut]))

    def close(self) -> _Spool:
        if self.base64 and self._pending:
            self.file.write(base64.b64decode(self._pending + "=" * (-len(self._pending) % 4)))
        self.file.close()
        return _Spool(self.path, self.chars, self.base64)


def _sink_kind(path: tuple[Any, ...]) -> bool | None:
    """Whether the string at ``path`` is spooled: False for text, True for base64, None: kept."""
    if len(path) < 4 or path[0] != "result" or path[1] != "content":
        return None
    tail = path[3:]
    if tail == ("text",) or tail == ("resource", "text"):
        return False
    if tail == ("data",) or tail == ("resource", "blob"):
        return True
    return None


class _Scanner:
    """A JSON reader over text chunks that builds the value, spooling big strings."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.spools: list[_Spool] = []

    def parse(self, chunks: Any) -> Any:
        self._chunks = chunks
        self._buf = ""
        self._pos = 0
        value = self._value(())
        self._skip_space()
        if self._peek() != "":
            raise BigLineError("text after the JSON value")
        return value

    # -- input -------------------------------------------------------------------------------

    def _more(self) -> bool:
        chunk = next(self._chunks, None)
        if chunk is None:
            return False
        self._buf = self._buf[self._pos :] + chunk
        self._pos = 0
        return True

    def _peek(self) -> str:
        while self._pos >= len(self._buf):
            if not self._more():
                return ""
        return self._buf[self._pos]

    def _skip_space(self) -> None:
        while True:
            buf, pos = self._buf, self._pos
            while pos < len(buf) and buf[pos] in " \t\r\n":
                pos += 1
            self._pos = pos
            if pos < len(buf) or not self._more():
                return

    def _expect(self, char: str) -> None:
        self._skip_space()
        if self._peek() != char:
            raise BigLineError(f"expected {char!r}")
        self._pos += 1

    # -- values ------------------------------------------------------------------------------

    def _value(self, path: tuple[Any, ...]) -> Any:
        self._skip_space()
        char = self._peek()
        if char == "{":
            self._pos += 1
            obj: dict[str, Any] = {}
            self._skip_space()
            if self._peek() == "}":
                self._pos += 1
                return obj
            while True:
                self._skip_space()
                if self._peek() != '"':
                    raise BigLineError("expected a key")
                self._pos += 1
                key = self._string(None)
                self._expect(":")
                obj[key] = self._value((*path, key))
                self._skip_space()
                char = self._peek()
                self._pos += 1
                if char == "}":
                    return obj
                if char != ",":
                    raise BigLineError("expected ',' or '}'")
        if char == "[":
            self._pos += 1
            items: list[Any] = []
            self._skip_space()
            if self._peek() == "]":
                self._pos += 1
                return items
            while True:
                items.append(self._value((*path, len(items))))
                self._skip_space()
                char = self._peek()
                self._pos += 1
                if char == "]":
                    return items
                if char != ",":
                    raise BigLineError("expected ',' or ']'")
        if char == '"':
            self._pos += 1
            kind = _sink_kind(path)
            if kind is None:
                return self._string(None)
            sink = _Sink(self.directory, kind)
            try:
                self._string(sink)
            finally:
                spool = sink.close()
                self.spools.append(spool)
            return spool
        return self._scalar()

    def _scalar(self) -> Any:
        token = ""
        while True:
            match = _SCALAR_END.search(self._buf, self._pos)
            if match is not None:
                token += self._buf[self._pos : match.start()]
                self._pos = match.start()
                break
            token += self._buf[self._pos :]
            self._pos = len(self._buf)
            if not self._more():
                break
        try:
            return json.loads(token)
        except ValueError:
            raise BigLineError(f"bad JSON value {token[:40]!r}") from None

    def _string(self, sink: _Sink | None) -> str:
        """The string body after its opening quote: decoded, streamed to ``sink`` if given.

        The closing quote is found with ``str.find`` (memchr speed): a regex walking the body
        character by character costs ~40 s for 200 MB."""
        kept: list[str] = []
        size = 0
        carry = ""
        while True:
            buf, pos = self._buf, self._pos
            quote = buf.find('"', pos)
            while quote >= 0 and _escaped(buf, quote, pos):
                quote = buf.find('"', quote + 1)
            closed = quote >= 0
            end = quote if closed else len(buf)
            if not closed and _escaped(buf, end, pos):
                end -= 1  # a lone backslash at the chunk's end waits for its escaped char
            piece = carry + buf[pos:end]
            carry = ""
            if not closed and "\\" in piece[-14:]:
                tail = piece[-64:]
                partial = _PARTIAL_ESCAPE.search(tail)
                if partial is not None:
                    cut = len(piece) - len(tail) + partial.start(1)
                    piece, carry = piece[:cut], piece[cut:]
            if "\\" in piece:
                try:
                    piece = json.loads(f'"{piece}"')
                except ValueError:
                    raise BigLineError("bad string escape") from None
            if sink is not None:
                sink.write(piece)
            elif size < _SMALL_STRING:
                kept.append(piece)
                size += len(piece)
            if closed:
                self._pos = end + 1
                return "".join(kept)[:_SMALL_STRING]
            self._pos = end
            if not self._more():
                raise BigLineError("the line ends inside a string")


def _escaped(buf: str, index: int, start: int) -> bool:
    """Whether ``buf[index]`` follows an odd run of backslashes (within the string body)."""
    run = 0
    while index - run - 1 >= start and buf[index - run - 1] == "\\":
        run += 1
    return run % 2 == 1


def _chunks(path: Path) -> Any:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    with open(path, "rb") as handle:
        while True:
            data = handle.read(_CHUNK)
            if not data:
                tail = decoder.decode(b"", final=True)
                if tail:
                    yield tail
                return
            yield decoder.decode(data)


def read_window(spool_path: str, chars: int) -> tuple[str, str]:
    """The first ``HEAD_CHARS`` and last ``TAIL_CHARS`` characters of a text spool."""
    with open(spool_path, encoding="utf-8", errors="replace") as handle:
        head = handle.read(HEAD_CHARS)
    if chars <= HEAD_CHARS + TAIL_CHARS:
        with open(spool_path, encoding="utf-8", errors="replace") as handle:
            return handle.read(), ""
    size = os.path.getsize(spool_path)
    with open(spool_path, "rb") as handle:
        handle.seek(max(0, size - TAIL_CHARS * 4))
        tail = handle.read().decode("utf-8", errors="replace")[-TAIL_CHARS:]
    return head, tail


def _text_block(spool: _Spool) -> dict[str, Any]:
    head, tail = read_window(spool.path, spool.chars)
    return {
        "type": "text",
        "text": head + tail,
        "_meta": {SPOOL_KEY: spool.path, CHARS_KEY: spool.chars, HEAD_KEY: len(head)},
    }


def _image_block(spool: _Spool, mime: str) -> dict[str, Any]:
    from ..images import MAX_INPUT_BYTES
    from .results import image_parts

    size = os.path.getsize(spool.path)
    if size > MAX_INPUT_BYTES:  # view_image's input limit: described, not decoded
        os.unlink(spool.path)
        return {"type": "text", "text": f"[image: {mime}, {size} bytes; too large to load]"}
    raw = Path(spool.path).read_bytes()
    os.unlink(spool.path)
    blocks: list[dict[str, Any]] = []
    for part in image_parts(raw, mime, "image"):
        if part.type == "text":
            blocks.append({"type": "text", "text": part.text})
        else:
            data = base64.b64encode(part.data_bytes() or b"").decode()
            blocks.append({"type": "image", "data": data, "mimeType": part.image_url.media_type})
    return blocks[0] if len(blocks) == 1 else {"type": "codelia/blocks", "blocks": blocks}


def _rebuild(block: Any) -> list[Any]:
    """One content block with its spools resolved (an image may become a note and an image)."""
    if not isinstance(block, dict):
        return [block]
    if isinstance(block.get("text"), _Spool):
        return [_text_block(block["text"])]
    if isinstance(block.get("data"), _Spool):
        spool = block["data"]
        mime = str(block.get("mimeType") or "")
        if block.get("type") == "image":
            rebuilt = _image_block(spool, mime)
            if rebuilt["type"] == "codelia/blocks":
                return list(rebuilt["blocks"])
            return [rebuilt]
        size = os.path.getsize(spool.path)
        os.unlink(spool.path)
        text = f"[{block.get('type')}: {mime or 'unknown type'}, {size} bytes; not shown]"
        return [{"type": "text", "text": text}]
    resource = block.get("resource")
    if isinstance(resource, dict):
        for key in ("text", "blob"):
            spool = resource.get(key)
            if isinstance(spool, _Spool):
                uri = resource.get("uri", "")
                if key == "text" or _is_text_blob(resource):
                    if key == "blob":
                        spool = _decoded_text_spool(spool)
                    rebuilt = _text_block(spool)
                    label = f"[resource {uri}]\n"
                    rebuilt["text"] = label + rebuilt["text"]
                    rebuilt["_meta"][HEAD_KEY] += len(label)
                    return [rebuilt]
                size = os.path.getsize(spool.path)
                os.unlink(spool.path)
                mime = resource.get("mimeType") or "unknown type"
                return [{"type": "text", "text": f"[resource {uri}: {mime}, {size} bytes]"}]
    return [block]


def _is_text_blob(resource: dict[str, Any]) -> bool:
    from .results import is_text_type

    return is_text_type(str(resource.get("mimeType") or ""))


def _decoded_text_spool(spool: _Spool) -> _Spool:
    """A base64 spool holds bytes already; as a text spool its length is counted in chars."""
    with open(spool.path, encoding="utf-8", errors="replace") as handle:
        chars = sum(len(chunk) for chunk in iter(lambda: handle.read(_CHUNK), ""))
    return _Spool(spool.path, chars, False)


def compact_message(line_path: Path, spool_dir: str) -> dict[str, Any]:
    """The JSON-RPC message on the spilled line, with its big strings spooled (see module)."""
    scanner = _Scanner(spool_dir)
    try:
        message = scanner.parse(_chunks(line_path))
    except BaseException:
        for spool in scanner.spools:
            with_suppressed_unlink(spool.path)
        raise
    if not isinstance(message, dict):
        raise BigLineError("the line is not a JSON object")
    result = message.get("result")
    if isinstance(result, dict) and isinstance(result.get("content"), list):
        result["content"] = [out for block in result["content"] for out in _rebuild(block)]
    for spool in scanner.spools:  # spools outside content blocks have no reader
        if isinstance(result, dict) and _referenced(result, spool.path):
            continue
        with_suppressed_unlink(spool.path)
    return message


def _referenced(result: dict[str, Any], path: str) -> bool:
    return any(
        isinstance(block, dict) and (block.get("_meta") or {}).get(SPOOL_KEY) == path
        for block in result.get("content", [])
    )


def with_suppressed_unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
