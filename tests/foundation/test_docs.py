"""The documents: the README links every reference document under docs/, every relative link of
the README, CONTRIBUTING.md and docs/*.md reaches its file (and its heading, for an anchor), and
the README stays the short entry a newcomer reads to the end."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, ROOT / "CONTRIBUTING.md", *DOCS]
README_MAX_LINES = 220  # the bar: the entry in about 200 lines, the reference in docs/

_FENCED = re.compile(r"^```.*?^```", flags=re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*$", flags=re.MULTILINE)


def _prose(page: Path) -> str:
    """The page without code blocks, where brackets and parentheses are code, not links."""
    return _FENCED.sub("", page.read_text())


def links(page: Path) -> list[str]:
    """The targets of the page's inline links (a code span's text is code, not a link)."""
    return _LINK.findall(_CODE_SPAN.sub("", _prose(page)))


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation dropped, spaces
    to hyphens, a repeated heading numbered from -1."""
    seen: dict[str, int] = {}
    out = set()
    for heading in _HEADING.findall(_prose(page)):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        out.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return out


def broken_links(page: Path) -> list[str]:
    """Each relative link of ``page`` whose file, or heading for an anchor, does not exist."""
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ... are not checked here
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{page.name}: {target} (no such file)")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{page.name}: {target} (no heading #{anchor} in {file.name})")
    return broken


def test_the_link_checker_finds_a_missing_file_and_a_missing_heading(tmp_path: Path):
    (tmp_path / "other.md").write_text("# Other\n\n## Measured (2 cores, 24 GiB)\n\n## Notes\n\n## Notes\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](other.md#measured-2-cores-24-gib) [ok](other.md#notes-1) [ok](#page) "
                    "[web](https://example.org/x) `[code](missing.md)`\n\n# Page\n\n"
                    "[gone](missing.md) [no heading](other.md#nowhere)\n\n```\n[in code](missing.md)\n```\n")
    assert broken_links(page) == ["page.md: missing.md (no such file)",
                                  "page.md: other.md#nowhere (no heading #nowhere in other.md)"]


def test_every_relative_link_resolves():
    assert sum(len(links(page)) for page in PAGES) > len(PAGES)  # the pages do link each other
    assert [broken for page in PAGES for broken in broken_links(page)] == []


def test_the_readme_links_every_reference_document():
    linked = {(README.parent / target.partition("#")[0]).resolve() for target in links(README)}
    assert DOCS and [doc.name for doc in DOCS if doc.resolve() not in linked] == []
    assert (ROOT / "CONTRIBUTING.md").resolve() in linked and (ROOT / "LICENSE").resolve() in linked


def test_the_readme_stays_an_entry():
    """Reference text (tables, settings, figures) belongs in docs/: the README is read to the end."""
    assert len(README.read_text().splitlines()) <= README_MAX_LINES
