"""The web tools: ``search`` (DuckDuckGo or Brave) and ``webfetch``.

Owns :class:`WebConfig`, the two tools' inputs, the search backends, the fetch loop (manual
redirects, one timer for the whole fetch, a streamed read capped at ``max_bytes``), the result
JSON and the error texts. The private-network guard lives in ``_netguard``, body decoding and
HTML conversion in ``_html``; httpx2, ddgs and the HTML libraries are imported on first use.

Both tools report expected failures as text results; neither is ever allowed without the
user's confirmation in the default permission mode (that policy lives in ``agent``).
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import os
import socket
import ssl
import time
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import parse_qs, urljoin, urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..._text import describe_exc, js_round
from ...errors import CodeliaError
from ...tools import FunctionTool, JsonResult, ToolContext, ToolRisk, define_tool
from .._cancel import run_cancellable
from . import _html

if TYPE_CHECKING:
    import httpx2

SearchBackend = Literal["ddg", "brave"]
OutputFormat = Literal["markdown", "text", "html"]

DDG_HTML_ENDPOINT = "https://html.duckduckgo.com/html/"
DDG_INSTANT_ENDPOINT = "https://api.duckduckgo.com/"
INSTANT_ANSWER_CHARS = 2000
BRAVE_ENDPOINT = "https://api.search.brave.com/res/v1/web/search"
MAX_REDIRECTS = 10
_DDG_PAGE_SIZE = 10
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_USER_AGENT = "Mozilla/5.0 (compatible; jupyter-codelia webfetch)"

log = logging.getLogger("jupyter_codelia.web")


class WebConfig(BaseModel):
    """Configuration of the web tools.

    ``ddg_endpoint`` / ``brave_endpoint`` replace the services' URLs (tests point them at
    loopback servers; a company may point them at a gateway). ``ddg_instant_endpoint`` is
    DuckDuckGo's Instant Answer API, asked next to the HTML results; with ``ddg_endpoint`` set
    and it unset, no instant answers are asked for (nothing goes to DuckDuckGo's own host
    behind a gateway's back). ``allow_private_network`` lets
    webfetch reach private, loopback, link-local and unique-local addresses;
    ``private_network_allowlist`` opens only the listed addresses or networks (CIDR), e.g.
    ``("10.20.0.0/16",)`` for an intranet wiki, and keeps the guard for everything else.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    search_backend: SearchBackend = "ddg"
    brave_api_key_env: str = Field(default="BRAVE_SEARCH_API_KEY", min_length=1)
    ddg_endpoint: str | None = None
    ddg_instant_endpoint: str | None = None
    brave_endpoint: str | None = None
    allow_private_network: bool = False
    search_timeout_s: float = Field(default=15.0, gt=0)
    private_network_allowlist: tuple[str, ...] = ()

    @field_validator("private_network_allowlist")
    @classmethod
    def _check_networks(cls, entries: tuple[str, ...]) -> tuple[str, ...]:
        for entry in entries:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(
                    f"private_network_allowlist entry {entry!r} is not an IP address or network "
                    "(write e.g. '10.20.0.0/16' or '192.168.1.5')"
                ) from None
        return entries


class SearchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, description="What to search for.")
    max_results: int = Field(default=5, ge=1, le=20, description="Results to return (1-20).")
    backend: SearchBackend | None = Field(
        default=None, description="Search backend; omit for the configured default."
    )
    allowed_domains: list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None,
        description="Keep only results on these domains (subdomains included), e.g. python.org.",
    )


class WebfetchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, description="The http(s) URL to fetch.")
    output_format: OutputFormat = Field(
        default="markdown",
        description="markdown (default) or text convert HTML pages; html returns the raw page.",
    )
    timeout_ms: int = Field(
        default=10000, gt=0, le=30000, description="One timeout for the whole fetch, in ms."
    )
    max_bytes: int = Field(
        default=200000, gt=0, le=1000000, description="Read at most this many bytes of the body."
    )


# --- search ----------------------------------------------------------------------------------


class SearchBackendError(CodeliaError):
    """A search service answered with an unusable status."""


def _domain_filter(allowed: list[str] | None) -> list[str]:
    domains = (d.strip().lower().rstrip(".") for d in allowed or [])
    return [d for d in domains if d]


def _host_allowed(url: str, domains: list[str]) -> bool:
    if not domains:
        return True
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return False
    if not host:
        return False
    return any(host == d or host.endswith("." + d) for d in domains)


def _unwrap_ddg_redirect(url: str) -> str:
    """DuckDuckGo may link through ``//duckduckgo.com/l/?uddg=<target>``: return the target."""
    parts = urlsplit(url if "://" in url else "https:" + url)
    if parts.hostname in ("duckduckgo.com", "html.duckduckgo.com") and parts.path == "/l/":
        target = parse_qs(parts.query).get("uddg")
        if target and target[0].startswith(("http://", "https://")):
            return target[0]
    return url


def _ddg_search(
    query: str, max_results: int, endpoint: str, timeout_s: float
) -> list[dict[str, str]]:
    """DuckDuckGo's HTML results through ddgs's maintained parser; ``endpoint`` may be anything."""
    from ddgs.engines.duckduckgo import Duckduckgo

    class DuckDuckGoAt(Duckduckgo):
        # ddgs hides non-200 answers (DuckDuckGo's rate limit is a 202); report them instead.
        def request(self, *args: Any, **kwargs: Any) -> Any:
            response = self.http_client.request(*args, **kwargs)
            if response.status_code != 200:
                raise SearchBackendError(f"ddg request failed: status={response.status_code}")
            return response.text

    # primp takes fractional seconds although ddgs annotates an int.
    engine = DuckDuckGoAt(timeout=timeout_s)  # type: ignore[arg-type]
    engine.search_url = endpoint
    rows: list[dict[str, str]] = []
    pages = max(1, -(-max_results // _DDG_PAGE_SIZE))
    for page in range(1, pages + 1):
        found = engine.search(query=query, page=page) or []
        for hit in found:
            if hit.title and hit.href:
                url = _unwrap_ddg_redirect(hit.href)
                rows.append({"title": hit.title, "url": url, "snippet": hit.body, "source": "ddg"})
        if not found:
            break
    return rows


async def _ddg_instant_answer(query: str, endpoint: str, timeout_s: float) -> dict[str, str]:
    """DuckDuckGo's Instant Answer for ``query`` (an abstract, a direct answer or a definition),
    or {} when it has none or cannot be had: it only adds to the HTML results."""
    import httpx2

    from ._netguard import shared_ssl_context

    params = {"q": query, "format": "json", "no_html": "1", "no_redirect": "1"}
    params["skip_disambig"] = "1"
    try:
        async with httpx2.AsyncClient(timeout=timeout_s, verify=shared_ssl_context()) as client:
            headers = {"User-Agent": _USER_AGENT}
            response = await client.get(endpoint, params=params, headers=headers)
        payload = response.json() if response.is_success else None
    except Exception:
        log.info("DuckDuckGo instant answer failed", exc_info=True)
        return {}
    return instant_answer(payload)


def instant_answer(payload: Any) -> dict[str, str]:
    """The useful fields of an Instant Answer API response, named for the model."""
    if not isinstance(payload, dict):
        return {}
    fields = {
        "heading": "Heading",
        "answer": "Answer",
        "abstract": "AbstractText",
        "url": "AbstractURL",
        "source": "AbstractSource",
        "definition": "Definition",
        "definition_url": "DefinitionURL",
    }
    answer = {
        name: value.strip()[:INSTANT_ANSWER_CHARS]
        for name, key in fields.items()
        if isinstance(value := payload.get(key), str) and value.strip()
    }
    if not answer.keys() & {"answer", "abstract", "definition"}:
        return {}  # a heading alone (a disambiguation page) answers nothing
    if not answer.get("url"):
        first = next((r for r in payload.get("Results") or [] if isinstance(r, dict)), None)
        if first is not None and isinstance(first.get("FirstURL"), str):
            answer["url"] = first["FirstURL"]
    return answer


async def _brave_search(
    query: str, max_results: int, api_key: str, endpoint: str, timeout_s: float
) -> list[dict[str, str]]:
    import httpx2

    from ._netguard import shared_ssl_context

    async with httpx2.AsyncClient(timeout=timeout_s, verify=shared_ssl_context()) as client:
        response = await client.get(
            endpoint,
            params={"q": query, "count": max_results},
            headers={"Accept": "application/json", "X-Subscription-Token": api_key},
        )
    if not response.is_success:
        raise SearchBackendError(f"brave request failed: status={response.status_code}")
    payload = response.json()
    web = payload.get("web") if isinstance(payload, dict) else None
    results = web.get("results") if isinstance(web, dict) else None
    rows: list[dict[str, str]] = []
    for entry in results if isinstance(results, list) else []:
        if not isinstance(entry, dict):
            continue
        title, url = entry.get("title"), entry.get("url")
        if isinstance(title, str) and isinstance(url, str):
            snippet = entry.get("description")
            rows.append(
                {
                    "title": title,
                    "url": url,
                    "snippet": snippet if isinstance(snippet, str) else "",
                    "source": "brave",
                }
            )
    return rows


async def _with_instant_answer(
    results: Awaitable[list[dict[str, str]]],
    query: str,
    endpoint: str,
    timeout_s: float,
    found: dict[str, str],
) -> list[dict[str, str]]:
    """The HTML results, with the instant answer asked for at the same time put in ``found``."""
    rows, answer = await asyncio.gather(results, _ddg_instant_answer(query, endpoint, timeout_s))
    found.update(answer)
    return rows


def _search_tool(config: WebConfig) -> FunctionTool:
    async def search(params: SearchInput, ctx: ToolContext) -> JsonResult | str:
        ctx.check_cancelled()
        backend = params.backend or config.search_backend
        api_key = ""
        if backend == "brave":
            api_key = os.environ.get(config.brave_api_key_env, "").strip()
            if not api_key:
                return f"Missing {config.brave_api_key_env} for brave backend."
        domains = _domain_filter(params.allowed_domains)
        found: dict[str, str] = {}  # the instant answer, when the backend gives one
        try:
            if backend == "brave":
                work = _brave_search(
                    params.query,
                    params.max_results,
                    api_key,
                    config.brave_endpoint or BRAVE_ENDPOINT,
                    config.search_timeout_s,
                )
            else:
                work = asyncio.to_thread(
                    _ddg_search,
                    params.query,
                    params.max_results,
                    config.ddg_endpoint or DDG_HTML_ENDPOINT,
                    config.search_timeout_s,
                )
                instant_endpoint = config.ddg_instant_endpoint or (
                    DDG_INSTANT_ENDPOINT if config.ddg_endpoint is None else None
                )
                if instant_endpoint is not None:
                    work = _with_instant_answer(
                        work, params.query, instant_endpoint, config.search_timeout_s, found
                    )
            rows = await run_cancellable(
                asyncio.wait_for(work, config.search_timeout_s), ctx.signal
            )
        except asyncio.CancelledError:
            raise
        except (asyncio.TimeoutError, TimeoutError):
            return (
                f"Error running search: TimeoutError: timed out after {config.search_timeout_s:g}s"
            )
        except Exception as exc:
            text = describe_exc(exc)
            if api_key:
                text = text.replace(api_key, "[REDACTED]")
            return f"Error running search: {text}"
        kept = [row for row in rows if _host_allowed(row["url"], domains)][: params.max_results]
        value: dict[str, Any] = {
            "query": params.query,
            "backend": backend,
            "count": len(kept),
            "results": kept,
        }
        if found and (not domains or _host_allowed(found.get("url", ""), domains)):
            value["instant_answer"] = found
        return JsonResult(value=value)

    return define_tool(
        name="search",
        description=(
            "Search the web and return titles, URLs and snippets as JSON (with DuckDuckGo, also "
            "an instant_answer when it has one: a direct answer, an abstract or a definition). "
            "Use it to find pages, then read one with webfetch. allowed_domains keeps only "
            "results on those domains."
        ),
        input=SearchInput,
        execute=search,
        risk=ToolRisk(kind="network"),
    )


# --- webfetch --------------------------------------------------------------------------------


class RedirectError(CodeliaError):
    """A redirect chain that webfetch will not follow."""


@dataclass
class _Fetched:
    """The (possibly cut) body of the final response and what the result reports about it."""

    body: bytes
    content_type: str | None
    final_url: str
    status: int
    truncated: bool
    byte_size: int


def _accept_header(output_format: str) -> str:
    if output_format == "html":
        return "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.8"
    return "text/html,text/plain,application/xhtml+xml;q=0.9,*/*;q=0.7"


async def _fetch(client: httpx2.AsyncClient, params: WebfetchInput) -> _Fetched | str:
    """Follow redirects by hand (each hop's connection passes the guard) and read the body."""
    current = params.url
    for _hop in range(MAX_REDIRECTS + 1):
        request = client.build_request(
            "GET", current, headers={"Accept": _accept_header(params.output_format)}
        )
        response = await client.send(request, stream=True)
        try:
            location = response.headers.get("location")
            if response.status_code in _REDIRECT_STATUSES and location:
                target = urljoin(str(response.url), location)
                scheme = urlsplit(target).scheme.lower()
                if scheme not in ("http", "https"):
                    raise RedirectError(f"redirect to unsupported URL protocol {scheme}: {target}")
                current = target
                continue
            return await _read_response(response, params)
        finally:
            await response.aclose()
    raise RedirectError(f"stopped after {MAX_REDIRECTS} redirects (last: {current})")


async def _read_response(response: httpx2.Response, params: WebfetchInput) -> _Fetched | str:
    content_type = response.headers.get("content-type", "")
    if content_type.strip() and not _html.is_textual(content_type):
        return f"Unsupported content-type for webfetch: {_html.media_type(content_type)}"
    chunks: list[bytes] = []
    kept = 0
    truncated = False
    async for chunk in response.aiter_bytes():
        remaining = params.max_bytes - kept
        if len(chunk) > remaining:
            chunks.append(chunk[:remaining])
            kept += remaining
            truncated = True
            break
        chunks.append(chunk)
        kept += len(chunk)
    body = b"".join(chunks)
    declared = response.headers.get("content-length", "")
    byte_size = int(declared) if declared.isdigit() and int(declared) > kept else kept
    if not content_type.strip() and _html.looks_binary(body):
        return "Unsupported content-type for webfetch: binary response"
    return _Fetched(
        body=body,
        content_type=content_type or None,
        final_url=str(response.url),
        status=response.status_code,
        truncated=truncated,
        byte_size=byte_size,
    )


def _render(params: WebfetchInput, fetched: _Fetched, started: float) -> dict[str, Any]:
    content_type = fetched.content_type or ""
    raw, _codec = _html.decode_body(fetched.body, content_type)
    title: str | None = None
    if _html.is_html(content_type, raw):
        rendering = _html.render_html(raw, params.output_format, fetched.final_url)
        title = rendering.title
        content = raw if params.output_format == "html" else rendering.content
    else:
        content = raw if params.output_format == "html" else _html.normalize_whitespace(raw)
    return {
        "url": params.url,
        "final_url": fetched.final_url,
        "status": fetched.status,
        "ok": 200 <= fetched.status < 300,
        "content_type": fetched.content_type,
        "output_format": params.output_format,
        "title": title,
        "content": content,
        "truncated": fetched.truncated,
        "byte_size": fetched.byte_size,
        "duration_ms": max(0, js_round((time.monotonic() - started) * 1000)),
    }


def _exception_chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    queue: list[BaseException] = [exc]
    while queue:
        current = queue.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        nested = getattr(current, "exceptions", None)  # ExceptionGroup from happy eyeballs
        if isinstance(nested, (list, tuple)):
            queue.extend(e for e in nested if isinstance(e, BaseException))
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                queue.append(linked)


_DEFAULT_DETAIL = {
    "tls_error": "certificate validation failed",
    "dns_error": "dns lookup failed",
    "connection_refused": "connection refused",
    "connection_reset": "connection reset",
    "network_error": "network request failed",
}


def classify_fetch_error(exc: BaseException) -> tuple[str, str]:
    """``(kind, detail)`` for a failed fetch, from the types in the exception's chain.

    The transport wraps the operating system's error (``raise ConnectError(...) from exc``), so
    the chain holds the resolver, socket or TLS error that says what happened; messages are only
    shown, never parsed. Checked in order: DNS, refused, reset, TLS, anything else.
    """
    chain = list(_exception_chain(exc))
    kind, code = "network_error", None
    gai = next((e for e in chain if isinstance(e, socket.gaierror)), None)
    refused = next((e for e in chain if _is_refused(e)), None)
    reset = next((e for e in chain if isinstance(e, (ConnectionResetError, BrokenPipeError))), None)
    tls = next((e for e in chain if isinstance(e, ssl.SSLError)), None)
    if gai is not None:
        kind, code = "dns_error", "EAI_AGAIN" if gai.errno == socket.EAI_AGAIN else "ENOTFOUND"
    elif refused is not None:
        kind, code = "connection_refused", "ECONNREFUSED"
    elif reset is not None:
        kind = "connection_reset"
        code = "EPIPE" if isinstance(reset, BrokenPipeError) else "ECONNRESET"
    elif tls is not None:
        reason = getattr(tls, "reason", None) or getattr(tls, "verify_message", None)
        kind = "tls_error"
        code = str(reason).upper().replace(" ", "_") if reason else None
    message = str(exc).strip()
    if not message or message == "fetch failed":
        message = next((str(e).strip() for e in chain[1:] if str(e).strip()), "")
    detail = message or _DEFAULT_DETAIL[kind]
    if code:
        detail += f" (code={code})"
    return kind, detail


def _is_refused(exc: BaseException) -> bool:
    return isinstance(exc, ConnectionRefusedError) or (
        isinstance(exc, OSError) and exc.errno == errno.ECONNREFUSED
    )


def _webfetch_tool(config: WebConfig) -> FunctionTool:
    async def webfetch(params: WebfetchInput, ctx: ToolContext) -> JsonResult | str:
        ctx.check_cancelled()
        import httpx2

        from ._netguard import GuardedTransport, PrivateNetworkError

        url = params.url.strip()
        try:
            parts = urlsplit(url)
            if parts.scheme and parts.scheme.lower() in ("http", "https"):
                httpx2.URL(url)
        except (ValueError, httpx2.InvalidURL):
            return f"Invalid URL: {params.url}"
        if not parts.scheme or (not parts.netloc and parts.scheme.lower() in ("http", "https")):
            return f"Invalid URL: {params.url}"
        if parts.scheme.lower() not in ("http", "https"):
            return f"Unsupported URL protocol: {parts.scheme.lower()}:"
        params = params.model_copy(update={"url": url})
        started = time.monotonic()
        timeout_s = params.timeout_ms / 1000
        transport = GuardedTransport(
            allow_private_network=config.allow_private_network,
            allowlist=config.private_network_allowlist,
        )
        try:
            async with httpx2.AsyncClient(
                transport=transport,
                timeout=timeout_s,
                follow_redirects=False,
                trust_env=False,
                headers={"User-Agent": _USER_AGENT},
            ) as client:
                fetched = await run_cancellable(
                    asyncio.wait_for(_fetch(client, params), timeout_s), ctx.signal
                )
        except asyncio.CancelledError:
            raise
        except (asyncio.TimeoutError, TimeoutError, httpx2.TimeoutException):
            return f"Error fetching URL [timeout]: timed out after {params.timeout_ms}ms"
        except PrivateNetworkError as exc:
            return f"Error fetching URL [private_network]: {exc}"
        except RedirectError as exc:
            return f"Error fetching URL [redirect_error]: {exc}"
        except Exception as exc:
            kind, detail = classify_fetch_error(exc)
            return f"Error fetching URL [{kind}]: {detail}"
        if isinstance(fetched, str):
            return fetched
        # Converting a large page takes a moment: keep the event loop (the kernel's) free.
        return JsonResult(value=await asyncio.to_thread(_render, params, fetched, started))

    return define_tool(
        name="webfetch",
        description=(
            "Fetch one http(s) URL and return its content as markdown (default), text or raw "
            "html, with title, status and final URL, as JSON. For textual content only "
            "(binary downloads are refused); the body is cut at max_bytes. Private, loopback "
            "and link-local addresses are refused unless configuration allows them."
        ),
        input=WebfetchInput,
        execute=webfetch,
        risk=ToolRisk(kind="network", describe=_describe_fetch),
    )


def _describe_fetch(args: dict[str, Any]) -> str:
    url, shape = args.get("url"), args.get("output_format")
    url = url.strip() if isinstance(url, str) and url.strip() else "(unknown url)"
    return f"webfetch {url} ({shape if isinstance(shape, str) and shape else 'markdown'})"


def web_tools(config: WebConfig | None = None) -> list[FunctionTool]:
    """The ``search`` and ``webfetch`` tools configured by ``config``."""
    config = config or WebConfig()
    return [_search_tool(config), _webfetch_tool(config)]
