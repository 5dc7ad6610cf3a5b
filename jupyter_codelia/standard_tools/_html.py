"""Turning a fetched body into text the model can read (spec/web-tools.md §3, steps 3-8).

Owns content-type and binary sniffing, charset decoding, HTML detection, title extraction and
HTML → markdown (markdownify) / plain text (a block-aware walk over the selectolax DOM). Links
and image sources are made absolute against the final URL so the model can follow them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

_TEXTUAL_MARKERS = (
    "json",
    "xml",
    "javascript",
    "xhtml",
    "svg",
    "markdown",
    "yaml",
    "x-www-form-urlencoded",
)
_HTML_SIGNATURE = re.compile(r"<html[\s>]|<!doctype html", re.IGNORECASE)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.I)
_SPACE_BEFORE_NEWLINE = re.compile(r"[ \t]+\n")
_MANY_NEWLINES = re.compile(r"\n{3,}")
_WHITESPACE_RUN = re.compile(r"\s+")
_CONTROL_BYTES = frozenset(range(32)) - {9, 10, 12, 13}

# Elements that start a new line in the plain-text rendering.
_BLOCK_TAGS = frozenset(
    {
        *("address", "article", "aside", "blockquote", "dd", "details", "div", "dl", "dt"),
        *("fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "li", "main"),
        *("h1", "h2", "h3", "h4", "h5", "h6", "nav", "ol", "p", "pre", "section", "summary"),
        *("table", "tbody", "thead", "tfoot", "tr", "ul"),
    }
)
_BLOCK_BREAK = "\x00"
_BLOCK_BREAKS = re.compile(r"[ \t\n]*\x00(?:[ \t\n]*\x00)*\n*")
_CELL_TAGS = frozenset({"td", "th"})
_SKIPPED_TAGS = frozenset({"script", "style", "noscript", "template", "head", "-comment"})


def media_type(content_type: str) -> str:
    """The content type without parameters (``text/html; charset=x`` → ``text/html``)."""
    return content_type.split(";", 1)[0].strip()


def is_textual(content_type: str) -> bool:
    lowered = content_type.lower()
    return lowered.startswith("text/") or any(marker in lowered for marker in _TEXTUAL_MARKERS)


def looks_binary(data: bytes) -> bool:
    """Binary heuristic on the first 512 bytes: a NUL, or over 10 % control bytes."""
    head = data[:512]
    if not head:
        return False
    if 0 in head:
        return True
    controls = sum(1 for byte in head if byte in _CONTROL_BYTES)
    return controls / len(head) > 0.1


def _charset_param(content_type: str) -> str | None:
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip("\"'") or None
    return None


def _known_text_codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        b"a".decode(name)  # LookupError for unknown names and for bytes-to-bytes codecs
    except LookupError:
        return None
    return name


def decode_body(data: bytes, content_type: str) -> tuple[str, str]:
    """Decode ``data``: BOM, then the header's charset, then an HTML ``<meta charset>``, then UTF-8.

    Unknown charsets fall through to the next source; undecodable bytes become U+FFFD.
    Returns ``(text, codec used)``.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace"), "utf-8"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace"), "utf-16"
    codec = _known_text_codec(_charset_param(content_type))
    if codec is None:
        match = _META_CHARSET.search(data[:4096])
        if match is not None:
            codec = _known_text_codec(match.group(1).decode("ascii", errors="ignore"))
    codec = codec or "utf-8"
    return data.decode(codec, errors="replace"), codec


def is_html(content_type: str, text: str) -> bool:
    return "text/html" in content_type.lower() or bool(_HTML_SIGNATURE.search(text))


def normalize_whitespace(text: str) -> str:
    """CRLF/CR → LF, no spaces before newlines, at most one blank line in a row, stripped."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _SPACE_BEFORE_NEWLINE.sub("\n", text)
    return _MANY_NEWLINES.sub("\n\n", text).strip()


@dataclass
class HtmlRendering:
    title: str | None
    content: str


def render_html(html: str, output_format: str, base_url: str) -> HtmlRendering:
    """Title plus the body as ``markdown`` or ``text`` (scripts, styles and comments removed)."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    title_node = tree.css_first("title")
    title = _WHITESPACE_RUN.sub(" ", title_node.text()).strip() if title_node else ""
    tree.strip_tags(["script", "style", "noscript", "template"])
    _absolutize(tree, base_url)
    body = tree.body if tree.body is not None else tree.root
    if body is None:
        content = ""
    elif output_format == "markdown":
        content = _to_markdown(body.html or "")
    else:
        content = _to_text(body)
    return HtmlRendering(title=title or None, content=normalize_whitespace(content))


def _absolutize(tree: Any, base_url: str) -> None:
    for selector, attribute in (("a[href]", "href"), ("img[src]", "src")):
        for node in tree.css(selector):
            value = node.attrs.get(attribute)
            if not value or value.startswith(("#", "data:", "javascript:", "mailto:")):
                continue
            try:
                node.attrs[attribute] = urljoin(base_url, value.strip())
            except ValueError:
                continue


def _to_markdown(html: str) -> str:
    from markdownify import markdownify

    return str(markdownify(html, heading_style="ATX", bullets="-", strip=["img"]))


def _to_text(root: Any) -> str:
    """Plain text of ``root``: block elements on their own lines, list items as ``- ``.

    Walks the DOM with an explicit stack, so deeply nested pages cannot exhaust the recursion
    limit; whitespace is collapsed as a browser would, except inside ``<pre>``.
    """
    parts: list[str] = []
    pre_depth = 0
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        tag: str = node.tag
        if leaving:
            if tag == "pre":
                pre_depth -= 1
            if tag in _BLOCK_TAGS:
                parts.append(_BLOCK_BREAK)
            elif tag in _CELL_TAGS:
                parts.append("\t")
            continue
        if tag == "-text":
            text: str = (node.text_content or "").replace(_BLOCK_BREAK, "")
            parts.append(text if pre_depth else _WHITESPACE_RUN.sub(" ", text))
            continue
        if tag in _SKIPPED_TAGS:
            continue
        if tag == "br":
            parts.append("\n")
            continue
        if tag in _BLOCK_TAGS:
            parts.append(_BLOCK_BREAK)
        if tag == "li":
            parts.append("- ")
        if tag == "pre":
            pre_depth += 1
        stack.append((node, True))
        children = list(node.iter(include_text=True))
        stack.extend((child, False) for child in reversed(children))
    # Adjacent block edges (</h1><p>) make one line break, not a blank line per edge.
    text = _BLOCK_BREAKS.sub("\n", "".join(parts))
    # Collapsing leaves at most one stray space at a line start; deeper indentation is <pre>'s.
    lines = text.split("\n")
    return "\n".join(
        line[1:] if line.startswith(" ") and not line.startswith("  ") else line for line in lines
    )
