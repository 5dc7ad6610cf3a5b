"""search against real HTTP servers on 127.0.0.1.

The ddg backend runs ddgs's own DuckDuckGo engine (request building and HTML parsing) with its
endpoint pointed at a loopback server that answers in DuckDuckGo's HTML layout; brave is the
Brave Search JSON API against a loopback server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from html import escape
from typing import Any
from urllib.parse import parse_qs

import pytest
from _web_servers import LoopbackServer, Reply, Seen, free_port, slow_chunks

from jupyter_codelia.standard_tools.web import WebConfig, web_tools
from jupyter_codelia.tools import ToolContext, ToolInputError

FAKE_BRAVE_KEY = "brv-FAKE-0123456789abcdef"


def ddg_page(hits: list[tuple[str, str, str]]) -> bytes:
    """A results page in DuckDuckGo's HTML layout (html.duckduckgo.com/html/)."""
    rows = "".join(
        '<div class="result results_links results_links_deep web-result">'
        '<div class="links_main links_deep result__body">'
        f'<h2 class="result__title"><a class="result__a" href="{escape(url)}">{escape(title)}</a>'
        f'</h2><a class="result__snippet" href="{escape(url)}">{escape(snippet)}</a>'
        "</div></div>"
        for title, url, snippet in hits
    )
    return f"<html><body><div class='results'>{rows}</div></body></html>".encode()


HITS = [
    ("Python docs", "https://docs.python.org/3/", "The official <b>documentation</b>"),
    ("PyPI", "https://pypi.org/project/x/", "Package index"),
    ("Blog", "https://blog.example.com/post", "A blog post"),
    ("Example", "https://example.com/", "Example domain"),
]


async def search(config: WebConfig, **args: Any) -> Any:
    tool = web_tools(config)[0]
    assert tool.name == "search"
    result = await tool.execute_raw(json.dumps(args), ToolContext())
    return result.value if result.type == "json" else result.text


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as srv:
        yield srv


def ddg_config(server: LoopbackServer, **extra: Any) -> WebConfig:
    return WebConfig(ddg_endpoint=server.url("/html/"), **extra)


@pytest.mark.asyncio
async def test_ddg_results_as_json(server: LoopbackServer) -> None:
    server.routes["/html/"] = lambda req: Reply(200, {"content-type": "text/html"}, ddg_page(HITS))
    out = await search(ddg_config(server), query="python docs")
    assert out == {
        "query": "python docs",
        "backend": "ddg",
        "count": 4,
        "results": [
            {
                "title": "Python docs",
                "url": "https://docs.python.org/3/",
                "snippet": "The official documentation",
                "source": "ddg",
            },
            {
                "title": "PyPI",
                "url": "https://pypi.org/project/x/",
                "snippet": "Package index",
                "source": "ddg",
            },
            {
                "title": "Blog",
                "url": "https://blog.example.com/post",
                "snippet": "A blog post",
                "source": "ddg",
            },
            {
                "title": "Example",
                "url": "https://example.com/",
                "snippet": "Example domain",
                "source": "ddg",
            },
        ],
    }
    (request,) = server.requests
    assert request.method == "POST"
    assert parse_qs(request.body.decode())["q"] == ["python docs"]


@pytest.mark.asyncio
async def test_max_results_and_allowed_domains(server: LoopbackServer) -> None:
    server.routes["/html/"] = lambda req: Reply(200, {"content-type": "text/html"}, ddg_page(HITS))
    out = await search(ddg_config(server), query="q", max_results=2)
    assert [r["title"] for r in out["results"]] == ["Python docs", "PyPI"]
    assert out["count"] == 2
    out = await search(
        ddg_config(server), query="q", allowed_domains=[" Example.COM. ", "python.org", "  "]
    )
    assert [r["url"] for r in out["results"]] == [
        "https://docs.python.org/3/",
        "https://blog.example.com/post",
        "https://example.com/",
    ]
    out = await search(ddg_config(server), query="q", allowed_domains=["ample.com"])
    assert out["results"] == []
    assert out["count"] == 0


@pytest.mark.asyncio
async def test_ddg_fetches_a_second_page_for_more_than_ten_results(server: LoopbackServer) -> None:
    def pages(req: Seen) -> Reply:
        form = parse_qs(req.body.decode())
        offset = int(form.get("s", ["0"])[0])
        hits = [(f"Hit {offset + i}", f"https://e.org/{offset + i}", "s") for i in range(10)]
        return Reply(200, {"content-type": "text/html"}, ddg_page(hits))

    server.routes["/html/"] = pages
    out = await search(ddg_config(server), query="many", max_results=15)
    assert out["count"] == 15
    assert out["results"][-1]["title"] == "Hit 14"
    assert len(server.requests) == 2


@pytest.mark.asyncio
async def test_ddg_non_200_is_reported(server: LoopbackServer) -> None:
    server.routes["/html/"] = lambda req: Reply(202, {"content-type": "text/html"}, b"slow down")
    out = await search(ddg_config(server), query="q")
    assert out.startswith("Error running search: ")
    assert out.endswith("ddg request failed: status=202")


@pytest.mark.asyncio
async def test_ddg_timeout(server: LoopbackServer) -> None:
    server.routes["/html/"] = lambda req: Reply(
        200, {"content-type": "text/html"}, slow_chunks(b"<html>", b" ", 200), chunk_delay_s=0.05
    )
    out = await search(ddg_config(server, search_timeout_s=0.3), query="q")
    assert out == "Error running search: TimeoutError: timed out after 0.3s"


@pytest.mark.asyncio
async def test_brave_needs_its_key_and_sends_no_request_without_it(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BRAVE_SEARCH_API_KEY", raising=False)
    config = WebConfig(search_backend="brave", brave_endpoint=server.url("/brave"))
    assert await search(config, query="q") == "Missing BRAVE_SEARCH_API_KEY for brave backend."
    monkeypatch.setenv("MY_BRAVE", "   ")
    custom = WebConfig(brave_api_key_env="MY_BRAVE", brave_endpoint=server.url("/brave"))
    out = await search(custom, query="q", backend="brave")
    assert out == "Missing MY_BRAVE for brave backend."
    assert server.requests == []


BRAVE_ANSWER = {
    "web": {
        "results": [
            {"title": "One", "url": "https://one.example/", "description": "first"},
            {"title": "No description", "url": "https://two.example/"},
            {"url": "https://no-title.example/"},
            "not an object",
            {"title": "Sub", "url": "https://docs.one.example/x", "description": "third"},
        ]
    }
}


@pytest.mark.asyncio
async def test_brave_results(server: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAVE_SEARCH_API_KEY", f"  {FAKE_BRAVE_KEY}  ")
    server.routes["/brave"] = lambda req: Reply(
        200, {"content-type": "application/json"}, json.dumps(BRAVE_ANSWER).encode()
    )
    config = WebConfig(brave_endpoint=server.url("/brave"))
    out = await search(config, query="one thing", backend="brave", max_results=7)
    assert out == {
        "query": "one thing",
        "backend": "brave",
        "count": 3,
        "results": [
            {"title": "One", "url": "https://one.example/", "snippet": "first", "source": "brave"},
            {
                "title": "No description",
                "url": "https://two.example/",
                "snippet": "",
                "source": "brave",
            },
            {
                "title": "Sub",
                "url": "https://docs.one.example/x",
                "snippet": "third",
                "source": "brave",
            },
        ],
    }
    (request,) = server.requests
    assert request.query == {"q": ["one thing"], "count": ["7"]}
    assert request.headers["x-subscription-token"] == FAKE_BRAVE_KEY
    assert request.headers["accept"] == "application/json"
    out = await search(config, query="q", backend="brave", allowed_domains=["one.example"])
    assert [r["title"] for r in out["results"]] == ["One", "Sub"]


@pytest.mark.asyncio
async def test_brave_failures_are_text_and_never_show_the_key(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_SEARCH_API_KEY", FAKE_BRAVE_KEY)
    config = WebConfig(search_backend="brave", brave_endpoint=server.url("/brave"))
    server.routes["/brave"] = lambda req: Reply(500, {"content-type": "text/plain"}, b"boom")
    out = await search(config, query="q")
    assert out == "Error running search: SearchBackendError: brave request failed: status=500"
    server.routes["/brave"] = lambda req: Reply(200, {"content-type": "application/json"}, b"{x")
    out = await search(config, query="q")
    assert out.startswith("Error running search: JSONDecodeError: ")
    refused = WebConfig(
        search_backend="brave", brave_endpoint=f"http://127.0.0.1:{free_port()}/{FAKE_BRAVE_KEY}"
    )
    out = await search(refused, query="q")
    assert out.startswith("Error running search: ConnectError: ")
    assert FAKE_BRAVE_KEY not in out


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"query": ""}, "query"),
        ({}, 'missing required field "query"'),
        ({"query": "q", "max_results": 0}, "max_results"),
        ({"query": "q", "max_results": 21}, "max_results"),
        ({"query": "q", "backend": "google"}, "backend"),
        ({"query": "q", "allowed_domains": [""]}, "allowed_domains.0"),
        ({"query": "q", "site": "x"}, 'Unrecognized key: "site"'),
    ],
)
async def test_input_validation(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolInputError) as info:
        await search(WebConfig(), **args)
    assert "Tool input validation failed for search: " in str(info.value)
    assert message in str(info.value)


def test_config_validation_messages() -> None:
    import pydantic

    with pytest.raises(pydantic.ValidationError) as info:
        WebConfig(search_backend="bing")  # type: ignore[arg-type]
    assert "search_backend" in str(info.value)
    with pytest.raises(pydantic.ValidationError) as info:
        WebConfig(search_timeout_s=0)
    assert "search_timeout_s" in str(info.value)


@pytest.mark.asyncio
async def test_ddg_redirect_links_are_unwrapped(server: LoopbackServer) -> None:
    wrapped = "//duckduckgo.com/l/?uddg=https%3A%2F%2Fdocs.python.org%2F3%2F&rut=abc"
    hits = [("Docs", wrapped, "s"), ("Plain", "https://example.org/x?a=1", "t")]
    server.routes["/html/"] = lambda req: Reply(200, {"content-type": "text/html"}, ddg_page(hits))
    out = await search(ddg_config(server), query="q", allowed_domains=["python.org", "example.org"])
    assert [r["url"] for r in out["results"]] == [
        "https://docs.python.org/3/",
        "https://example.org/x?a=1",
    ]


def instant_answer_body(**fields: Any) -> bytes:
    """An Instant Answer API response (api.duckduckgo.com/?format=json): every key is present,
    empty when unused, as the real service answers."""
    body: dict[str, Any] = {
        "Abstract": "", "AbstractSource": "", "AbstractText": "", "AbstractURL": "",
        "Answer": "", "AnswerType": "", "Definition": "", "DefinitionSource": "",
        "DefinitionURL": "", "Entity": "", "Heading": "", "Image": "", "ImageHeight": "",
        "ImageIsLogo": "", "ImageWidth": "", "Infobox": "", "Redirect": "", "RelatedTopics": [],
        "Results": [], "Type": "", "meta": {},
    }  # fmt: skip
    body.update(fields)
    return json.dumps(body).encode()


@pytest.mark.asyncio
async def test_ddg_instant_answers_are_returned_with_the_results(server: LoopbackServer) -> None:
    server.routes["/html/"] = lambda req: Reply(200, {"content-type": "text/html"}, ddg_page(HITS))
    abstract = instant_answer_body(
        Heading="Python (programming language)",
        AbstractText="Python is a high-level, general-purpose programming language.",
        AbstractURL="https://en.wikipedia.org/wiki/Python_(programming_language)",
        AbstractSource="Wikipedia",
        Type="A",
        RelatedTopics=[{"FirstURL": "https://duckduckgo.com/Guido", "Text": "Guido van Rossum"}],
        Results=[{"FirstURL": "https://www.python.org/", "Text": "Official site"}],
    )
    json_type = {"content-type": "application/x-javascript"}  # what the service sends
    server.routes["/ia/"] = lambda req: Reply(200, json_type, abstract)
    config = ddg_config(server, ddg_instant_endpoint=server.url("/ia/"))
    out = await search(config, query="python language")
    assert out["instant_answer"] == {
        "heading": "Python (programming language)",
        "abstract": "Python is a high-level, general-purpose programming language.",
        "url": "https://en.wikipedia.org/wiki/Python_(programming_language)",
        "source": "Wikipedia",
    }
    assert out["count"] == 4
    asked = next(r for r in server.requests if r.path == "/ia/")
    assert asked.query["q"] == ["python language"] and asked.query["format"] == ["json"]
    # A direct answer (no abstract) takes the first official result's URL.
    calc = instant_answer_body(
        Answer="0.5", AnswerType="calc", Results=[{"FirstURL": "https://calc.example/"}]
    )
    server.routes["/ia/"] = lambda req: Reply(200, {}, calc)
    out = await search(config, query="1/2")
    assert out["instant_answer"] == {"answer": "0.5", "url": "https://calc.example/"}
    # allowed_domains applies to it too; a heading alone or a failure adds nothing.
    out = await search(config, query="1/2", allowed_domains=["python.org"])
    assert "instant_answer" not in out
    server.routes["/ia/"] = lambda req: Reply(200, {}, instant_answer_body(Heading="Mercury"))
    assert "instant_answer" not in await search(config, query="mercury")
    server.routes["/ia/"] = lambda req: Reply(500, {}, b"oops")
    out = await search(config, query="mercury")
    assert "instant_answer" not in out and out["count"] == 4


@pytest.mark.asyncio
async def test_no_instant_answer_request_behind_a_ddg_gateway(server: LoopbackServer) -> None:
    server.routes["/html/"] = lambda req: Reply(200, {"content-type": "text/html"}, ddg_page(HITS))
    out = await search(ddg_config(server), query="python")
    assert "instant_answer" not in out
    assert [r.path for r in server.requests] == ["/html/"]
