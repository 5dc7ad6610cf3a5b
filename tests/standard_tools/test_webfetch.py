"""webfetch against real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import errno
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from _web_servers import LoopbackServer, Reply, Seen, free_port, slow_chunks

from jupyter_codelia.standard_tools.web import WebConfig, classify_fetch_error, web_tools
from jupyter_codelia.tools import CancelSignal, RunCancelled, ToolContext, ToolInputError

PAGE = (
    b"<!doctype html><html><head><title>Example Page</title>"
    b"<style>p { color: red }</style><script>var hidden = 1;</script></head>"
    b"<body><h1>Hello</h1><p>Visit <a href='https://example.com/docs'>Docs</a>.</p>"
    b'<p>Relative <a href="/guide/start">start</a> &amp; more</p>'
    b"<ul><li>one</li><li>two</li></ul><!-- a comment --><noscript>enable js</noscript>"
    b"</body></html>"
)
HTML = {"content-type": "text/html; charset=utf-8"}


def html(body: bytes, **kwargs: Any) -> Reply:
    return Reply(200, HTML, body, **kwargs)


def redirect(location: str, status: int = 302) -> Reply:
    return Reply(status, {"location": location}, b"")


async def fetch(url: str, *, private: bool = True, ctx: ToolContext | None = None, **args: Any):
    tool = web_tools(WebConfig(allow_private_network=private))[1]
    assert tool.name == "webfetch"
    result = await tool.execute_raw(json.dumps({"url": url, **args}), ctx or ToolContext())
    if result.type == "json":
        return result.value
    return result.text


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as srv:
        yield srv


@pytest.mark.asyncio
async def test_html_page_as_markdown(server: LoopbackServer) -> None:
    server.routes["/page"] = lambda req: html(PAGE)
    out = await fetch(server.url("/page"))
    assert list(out) == [
        "url",
        "final_url",
        "status",
        "ok",
        "content_type",
        "output_format",
        "title",
        "content",
        "truncated",
        "byte_size",
        "duration_ms",
    ]
    assert out["url"] == out["final_url"] == server.url("/page")
    assert (out["status"], out["ok"], out["truncated"]) == (200, True, False)
    assert out["content_type"] == "text/html; charset=utf-8"
    assert out["output_format"] == "markdown"
    assert out["title"] == "Example Page"
    assert out["byte_size"] == len(PAGE)
    assert out["duration_ms"] >= 0
    content = out["content"]
    assert "# Hello" in content
    assert "[Docs](https://example.com/docs)" in content
    assert f"[start]({server.url('/guide/start')})" in content
    assert "- one\n- two" in content
    assert "& more" in content
    for hidden in ("hidden", "color: red", "a comment", "enable js"):
        assert hidden not in content
    accept = server.requests[0].headers["accept"]
    assert accept == "text/html,text/plain,application/xhtml+xml;q=0.9,*/*;q=0.7"


@pytest.mark.asyncio
async def test_html_page_as_text_and_raw_html(server: LoopbackServer) -> None:
    server.routes["/page"] = lambda req: html(PAGE)
    out = await fetch(server.url("/page"), output_format="text")
    assert out["content"] == "Hello\nVisit Docs.\nRelative start & more\n- one\n- two"
    assert out["title"] == "Example Page"
    raw = await fetch(server.url("/page"), output_format="html")
    assert raw["content"] == PAGE.decode()
    assert raw["title"] == "Example Page"
    assert server.requests[-1].headers["accept"].startswith("text/html,application/xhtml+xml,")


@pytest.mark.asyncio
async def test_html_detected_from_the_body_without_content_type(server: LoopbackServer) -> None:
    body = b"<HTML><body><p>Sniffed  page</p><pre>  keep\n    indent</pre></body></HTML>"
    server.routes["/x"] = lambda req: Reply(200, {}, body)
    out = await fetch(server.url("/x"), output_format="text")
    assert out["content_type"] is None
    assert out["content"] == "Sniffed page\n  keep\n    indent"
    assert out["title"] is None


@pytest.mark.asyncio
async def test_json_body_is_returned_as_whitespace_normalized_text(server: LoopbackServer) -> None:
    body = b'{"a": 1,   "b": [1, 2]}  \r\n\r\n\r\n\r\nnext'
    server.routes["/api"] = lambda req: Reply(200, {"content-type": "application/json"}, body)
    out = await fetch(server.url("/api"))
    assert out["content"] == '{"a": 1,   "b": [1, 2]}\n\nnext'
    assert out["title"] is None
    assert out["content_type"] == "application/json"


@pytest.mark.asyncio
async def test_404_with_body_is_a_result_not_an_error(server: LoopbackServer) -> None:
    page = b"<html><head><title>Not here</title></head><body><p>No such page</p></body></html>"
    server.routes["/gone"] = lambda req: Reply(404, HTML, page)
    out = await fetch(server.url("/gone"))
    assert (out["status"], out["ok"]) == (404, False)
    assert out["title"] == "Not here"
    assert out["content"] == "No such page"


@pytest.mark.asyncio
async def test_redirect_chain_is_followed_to_the_final_url(server: LoopbackServer) -> None:
    server.routes["/r1"] = lambda req: redirect("/r2", 301)
    server.routes["/r2"] = lambda req: redirect("r3", 307)
    server.routes["/r3"] = lambda req: redirect(server.url("/final"), 303)
    server.routes["/final"] = lambda req: html(b"<html><body><p>Arrived</p></body></html>")
    out = await fetch(server.url("/r1"))
    assert out["url"] == server.url("/r1")
    assert out["final_url"] == server.url("/final")
    assert out["content"] == "Arrived"
    assert [r.path for r in server.requests] == ["/r1", "/r2", "/r3", "/final"]


@pytest.mark.asyncio
async def test_redirect_loop_and_bad_redirect_scheme(server: LoopbackServer) -> None:
    server.routes["/loop"] = lambda req: redirect("/loop")
    out = await fetch(server.url("/loop"))
    last = server.url("/loop")
    assert out == f"Error fetching URL [redirect_error]: stopped after 10 redirects (last: {last})"
    assert len(server.requests) == 11
    server.routes["/ftp"] = lambda req: redirect("ftp://files.example/x")
    out = await fetch(server.url("/ftp"))
    assert out == (
        "Error fetching URL [redirect_error]: redirect to unsupported URL protocol ftp: "
        "ftp://files.example/x"
    )


@pytest.mark.asyncio
async def test_slow_body_hits_the_single_timeout(server: LoopbackServer) -> None:
    server.routes["/slow"] = lambda req: Reply(
        200, HTML, slow_chunks(b"<html><body>", b"<p>tick</p>", 400), chunk_delay_s=0.05
    )
    out = await fetch(server.url("/slow"), timeout_ms=300)
    assert out == "Error fetching URL [timeout]: timed out after 300ms"


@pytest.mark.asyncio
async def test_server_that_never_answers_hits_the_timeout() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()  # accepts connections in the kernel's backlog, never replies
    try:
        port = listener.getsockname()[1]
        out = await fetch(f"http://127.0.0.1:{port}/", timeout_ms=200)
        assert out == "Error fetching URL [timeout]: timed out after 200ms"
    finally:
        listener.close()


@pytest.mark.asyncio
async def test_binary_bodies_are_refused(server: LoopbackServer) -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(200)
    server.routes["/img"] = lambda req: Reply(200, {"content-type": "image/png"}, png)
    server.routes["/blob"] = lambda req: Reply(200, {}, png)
    server.routes["/pdf"] = lambda req: Reply(
        200, {"content-type": "application/pdf; name=x"}, b"%PDF-1.7"
    )
    assert await fetch(server.url("/img")) == "Unsupported content-type for webfetch: image/png"
    assert (
        await fetch(server.url("/pdf")) == "Unsupported content-type for webfetch: application/pdf"
    )
    assert (
        await fetch(server.url("/blob")) == "Unsupported content-type for webfetch: binary response"
    )
    controls = bytes([1, 2, 3, 4, 5, 6, 7, 8, 14, 15, 16, 17]) + b"abcdefghijklmnopqrstuvwxyz"
    server.routes["/ctl"] = lambda req: Reply(200, {}, controls)
    assert "binary response" in await fetch(server.url("/ctl"))


@pytest.mark.asyncio
async def test_textual_types_beyond_text_star_are_accepted(server: LoopbackServer) -> None:
    for content_type in ("application/xml", "image/svg+xml", "application/x-yaml"):
        server.routes["/t"] = lambda req, ct=content_type: Reply(200, {"content-type": ct}, b"a: 1")
        out = await fetch(server.url("/t"))
        assert out["content"] == "a: 1", content_type


@pytest.mark.asyncio
async def test_body_over_max_bytes_is_cut_and_sized_from_content_length(
    server: LoopbackServer,
) -> None:
    big = b"x" * 300_000
    server.routes["/big"] = lambda req: Reply(200, {"content-type": "text/plain"}, big)
    out = await fetch(server.url("/big"), max_bytes=1000)
    assert out["truncated"] is True
    assert out["content"] == "x" * 1000
    assert out["byte_size"] == 300_000
    server.routes["/stream"] = lambda req: Reply(
        200, {"content-type": "text/plain"}, slow_chunks(b"y" * 700, b"y" * 700, 5000)
    )
    out = await fetch(server.url("/stream"), max_bytes=1000)
    assert (out["truncated"], out["byte_size"], out["content"]) == (True, 1000, "y" * 1000)
    fits = await fetch(server.url("/big"), max_bytes=1_000_000)
    assert (fits["truncated"], len(fits["content"])) == (False, 300_000)


@pytest.mark.asyncio
async def test_charsets(server: LoopbackServer) -> None:
    latin = "café déjà".encode("latin-1")
    server.routes["/latin"] = lambda req: Reply(
        200, {"content-type": "text/plain; charset=ISO-8859-1"}, latin
    )
    server.routes["/lying"] = lambda req: Reply(
        200, {"content-type": "text/plain; charset=utf-8"}, latin
    )
    server.routes["/unknown"] = lambda req: Reply(
        200, {"content-type": "text/plain; charset=no-such-codec"}, "naïve".encode()
    )
    server.routes["/bytes-codec"] = lambda req: Reply(
        200, {"content-type": "text/plain; charset=base64"}, "ok ✓".encode()
    )
    server.routes["/meta"] = lambda req: Reply(
        200,
        {"content-type": "text/html"},
        b'<html><head><meta charset="windows-1252"></head>'
        b"<body><p>\x93quoted\x94</p></body></html>",
    )
    assert (await fetch(server.url("/latin")))["content"] == "café déjà"
    assert (await fetch(server.url("/lying")))["content"] == "caf\ufffd d\ufffdj\ufffd"
    assert (await fetch(server.url("/unknown")))["content"] == "naïve"
    assert (await fetch(server.url("/bytes-codec")))["content"] == "ok ✓"
    assert (await fetch(server.url("/meta")))["content"] == "\u201cquoted\u201d"
    cut = await fetch(server.url("/unknown"), max_bytes=3)  # "na" + first byte of "ï"
    assert cut["content"] == "na\ufffd"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("not a url", "Invalid URL: not a url"),
        ("http://", "Invalid URL: http://"),
        ("http://[::1", "Invalid URL: http://[::1"),
        ("ftp://files.example/x", "Unsupported URL protocol: ftp:"),
        ("FILE:///etc/passwd", "Unsupported URL protocol: file:"),
        ("javascript:alert(1)", "Unsupported URL protocol: javascript:"),
    ],
)
async def test_bad_urls(url: str, expected: str) -> None:
    assert await fetch(url) == expected


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"timeout_ms": 30001}, "timeout_ms"),
        ({"timeout_ms": 0}, "timeout_ms"),
        ({"max_bytes": 1_000_001}, "max_bytes"),
        ({"output_format": "pdf"}, "output_format"),
        ({"headers": {}}, 'Unrecognized key: "headers"'),
    ],
)
async def test_input_validation(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolInputError) as info:
        await fetch("http://127.0.0.1/", **args)
    assert "Tool input validation failed for webfetch" in str(info.value)
    assert message in str(info.value)


@pytest.mark.asyncio
async def test_connection_refused() -> None:
    out = await fetch(f"http://127.0.0.1:{free_port()}/")
    assert out.startswith("Error fetching URL [connection_refused]: ")
    assert out.endswith("(code=ECONNREFUSED)")


def test_error_classification_without_network() -> None:
    def chained(outer: Exception, inner: BaseException) -> Exception:
        outer.__cause__ = inner
        return outer

    gai = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    assert classify_fetch_error(chained(OSError("lookup"), gai)) == (
        "dns_error",
        "lookup (code=ENOTFOUND)",
    )
    again = socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
    assert classify_fetch_error(chained(OSError(""), again))[1].endswith("(code=EAI_AGAIN)")
    assert classify_fetch_error(ConnectionResetError("peer")) == (
        "connection_reset",
        "peer (code=ECONNRESET)",
    )
    assert classify_fetch_error(BrokenPipeError("pipe")) == (
        "connection_reset",
        "pipe (code=EPIPE)",
    )
    cert = ssl.SSLCertVerificationError(1, "certificate verify failed")
    cert.reason = "CERTIFICATE_VERIFY_FAILED"
    kind, detail = classify_fetch_error(chained(OSError("handshake"), cert))
    assert (kind, detail) == ("tls_error", "handshake (code=CERTIFICATE_VERIFY_FAILED)")
    # Classified by type, never by message: words in a message change nothing.
    assert classify_fetch_error(RuntimeError("bad TLS record, connection refused")) == (
        "network_error",
        "bad TLS record, connection refused",
    )
    refused_errno = OSError(errno.ECONNREFUSED, "Connection refused")
    assert classify_fetch_error(chained(RuntimeError("connect"), refused_errno)) == (
        "connection_refused",
        "connect (code=ECONNREFUSED)",
    )
    assert classify_fetch_error(RuntimeError("")) == ("network_error", "network request failed")
    assert classify_fetch_error(RuntimeError("fetch failed")) == (
        "network_error",
        "network request failed",
    )


@pytest.mark.asyncio
async def test_cancel_signal_aborts_a_slow_fetch(server: LoopbackServer) -> None:
    started = threading.Event()

    def slow(req: Seen) -> Reply:
        started.set()
        return Reply(200, HTML, slow_chunks(b"<p>", b"x", 100_000), chunk_delay_s=0.05)

    server.routes["/slow"] = slow
    signal = CancelSignal()
    task = asyncio.create_task(fetch(server.url("/slow"), ctx=ToolContext(signal=signal)))
    while not started.is_set():
        await asyncio.sleep(0.01)
    signal.cancel("user pressed stop")
    with pytest.raises(RunCancelled, match="user pressed stop"):
        await task


@pytest.mark.asyncio
async def test_task_cancellation_aborts_a_slow_fetch(server: LoopbackServer) -> None:
    server.routes["/slow"] = lambda req: Reply(
        200, HTML, slow_chunks(b"<p>", b"x", 100_000), chunk_delay_s=0.05
    )
    task = asyncio.create_task(fetch(server.url("/slow"), timeout_ms=30000))
    while not server.requests:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


RICH = (
    "<html><head><title> Rich \n page </title></head><body>"
    "<nav><a href='#top'>Top</a></nav><h2>Hello <em>world</em></h2>"
    "<p>See <a href='/docs'>the <b>Docs</b></a>, <code>x = 1</code> and <strong> </strong>.</p>"
    "<ul><li><p>one</p></li><li>two<ul><li>nested</li></ul></li></ul>"
    "<ol><li>first</li><li>second</li></ol>"
    "<pre><code>def f():\n    return 1\n</code></pre>"
    "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>"
    "<img src='/i.png' alt='An image'><svg><text>drawing</text></svg><hr>"
    "<p>end<br> line</p><a href='/empty'></a></body></html>"
)


@pytest.mark.asyncio
async def test_markdown_and_text_rendering_of_common_elements(server: LoopbackServer) -> None:
    server.routes["/rich"] = lambda req: html(RICH.encode())
    base = server.base
    out = await fetch(server.url("/rich"))
    assert out["title"] == "Rich page"
    assert out["content"] == (
        "Top\n\n## Hello *world*\n\n"
        f"See [the **Docs**]({base}/docs), `x = 1` and  .\n\n"
        "- one\n- two\n  - nested\n\n1. first\n2. second\n\n"
        "```\ndef f():\n    return 1\n```\n\n"
        "| a | b |\n| --- | --- |\n| 1 | 2 |\n\n"
        f"![An image]({base}/i.png)\n\n---\n\nend\nline\n\n"
        f"[{base}/empty]({base}/empty)"
    )
    text = await fetch(server.url("/rich"), output_format="text")
    assert text["content"] == (
        "Top\nHello world\nSee the Docs, x = 1 and  .\n- one\n- two\n  - nested\n"
        "1. first\n2. second\ndef f():\n    return 1\na\tb\n1\t2\nend\nline"
    )


@pytest.mark.asyncio
async def test_deeply_nested_pages_do_not_hit_the_recursion_limit(server: LoopbackServer) -> None:
    depth = 20_000
    body = b"<html><body>" + b"<div>" * depth + b"deep" + b"</div>" * depth + b"</body></html>"
    server.routes["/deep"] = lambda req: html(body)
    out = await fetch(server.url("/deep"), max_bytes=1_000_000)
    assert out["content"] == "deep"


@pytest.mark.asyncio
async def test_markdown_and_text_show_html_entities_as_their_characters(
    server: LoopbackServer,
) -> None:
    page = (
        b"<html><head><title>A &amp; B &lt;t&gt;</title></head><body>"
        b"<h2>if a &lt; b &amp;&amp; c &gt; d</h2><p>&quot;q&quot; &#39;x&#39; &#x3C;hex&#62; "
        b"&copy; &hellip;</p><pre>x &lt; y</pre><p><code>&lt;div&gt;</code></p>"
        b'<table><tr><td>1 &lt; 2</td></tr></table><a href="/x?a=1&amp;b=2">l &amp; m</a>'
        b"</body></html>"
    )
    server.routes["/e"] = lambda req: html(page)
    out = await fetch(server.url("/e"))
    assert out["title"] == "A & B <t>"
    content = out["content"]
    for shown in (
        "## if a < b && c > d",
        "\"q\" 'x' <hex> \u00a9 \u2026",
        "```\nx < y\n```",
        "`<div>`",
        "| 1 < 2 |",
        f"[l & m]({server.url('/x?a=1&b=2')})",
    ):
        assert shown in content, (shown, content)
    assert "&lt;" not in content and "&amp;" not in content
    text = (await fetch(server.url("/e"), output_format="text"))["content"]
    assert "if a < b && c > d" in text and "&lt;" not in text
