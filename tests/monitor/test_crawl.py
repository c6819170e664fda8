"""Every page a shifter can reach from the overview, by following its links: none is dead, none shows template
source (a multi-line `{# … #}` comment was printed at the top of every page, issue 50 finding 1), none fails."""

import re
from html.parser import HTMLParser
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest

pytestmark = pytest.mark.django_db

# what Django's template language leaves when a tag, a variable or a comment is not parsed as one
TEMPLATE_SOURCE = re.compile(r"\{[{%#]|[}%#]\}")
SKIPPED = ("/admin/", "/api/", "/static/", "/accounts/", "/server/", "/cache/", "/proxy/")


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []
        self.text: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._hidden += 1
        if tag == "a":
            self.hrefs.extend(value for name, value in attrs if name == "href" and value)
        for name, value in attrs:  # attributes a reader sees
            if name in ("title", "placeholder", "aria-label", "alt") and value:
                self.text.append(value)

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._hidden -= 1

    def handle_data(self, data):
        if not self._hidden:
            self.text.append(data)


def crawl(client, start: str, limit: int) -> dict[str, list[str]]:
    """Pages reached breadth-first from `start`, at most `limit`, one per path and set of parameter names; each with
    what is wrong with it."""
    seen_shapes: dict[tuple, int] = {}
    todo, found = [start], {}
    while todo and len(found) < limit:
        url = todo.pop(0)
        parts = urlsplit(url)
        # a kind of page (its first path segment and depth) with a set of parameter names, up to three of each
        segments = parts.path.strip("/").split("/")
        shape = (segments[0], len(segments), tuple(sorted(p.split("=")[0] for p in parts.query.split("&") if p)))
        if seen_shapes.get(shape, 0) >= 3 or url in found:
            continue
        seen_shapes[shape] = seen_shapes.get(shape, 0) + 1
        response = client.get(url)
        problems = []
        if response.status_code != 200:
            problems.append(f"answered {response.status_code}")
            found[url] = problems
            continue
        parser = Links()
        parser.feed(response.content.decode())
        text = " ".join(parser.text)
        for source in TEMPLATE_SOURCE.finditer(text):
            problems.append("template source: " + text[max(0, source.start() - 40) : source.end() + 40])
            break
        found[url] = problems
        for href in parser.hrefs:
            target = urldefrag(urljoin(url, href))[0]
            parts = urlsplit(target)
            if parts.netloc or not parts.path.startswith("/") or parts.path.startswith(SKIPPED):
                continue
            todo.append(target)
    return found


def test_no_page_reached_from_the_overview_is_dead_or_shows_template_source(client, living_grid):
    pages = crawl(client, "/", limit=400)
    assert len(pages) > 60, sorted(pages)  # the crawl reached the pages of every kind
    broken = {url: problems for url, problems in pages.items() if problems}
    assert broken == {}


def test_a_template_comment_left_unparsed_is_found():
    parser = Links()
    parser.feed("<p>{# deferred: the charts\n are drawn #}</p><script>var a = {{}};</script>")
    assert TEMPLATE_SOURCE.search(" ".join(parser.text))
