"""Reading the project's Markdown pages in tests: a section's text and its code blocks, as printed."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
RECIPES_PAGE = ROOT / "docs" / "recipes.md"


def doc_section(page: Path, title: str) -> str:
    """The text of the `## <title>...` section of a Markdown page (up to the next `## ` heading)."""
    text = page.read_text(encoding="utf-8")
    assert f"\n## {title}" in text, f"{page.relative_to(ROOT)} has no '## {title}' section"
    return text.split(f"\n## {title}", 1)[1].split("\n## ", 1)[0]


def section_block(page: Path, title: str, language: str = "python") -> str:
    """The one ```<language> block of a page's `## <title>` section."""
    blocks = re.findall(rf"```{language}\n(.*?)```", doc_section(page, title), re.S)
    assert len(blocks) == 1, f"{page.relative_to(ROOT)} '## {title}': {len(blocks)} {language} blocks, not one"
    return blocks[0]
