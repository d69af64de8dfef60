"""Every Python snippet in the README and the docs runs as written.

The snippets of one page run in order in one fresh process (a page's later snippets build on
its earlier ones), in an empty folder, with engram's locations pointed into it, so a snippet
that reads a default location reads one of its own. A block fenced as ```python no-run is
shown but not run (for code that needs a server or a model).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
_BLOCK = re.compile(r"^```python[ \t]*(?P<info>[^\n]*)\n(?P<code>.*?)^```", re.M | re.S)


def _snippets(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    return [m["code"] for m in _BLOCK.finditer(text) if "no-run" not in m["info"]]


def _pages_with_snippets() -> list[Path]:
    return [page for page in PAGES if _snippets(page)]


def test_the_readme_has_snippets_to_run() -> None:
    assert _snippets(ROOT / "README.md")


@pytest.mark.parametrize("page", _pages_with_snippets(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_page_s_snippets_run(page: Path, tmp_path: Path) -> None:
    script = tmp_path / "snippets.py"
    script.write_text("\n\n".join(_snippets(page)), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env.update(
        HOME=str(tmp_path / "home"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    )
    run = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, f"{page.name}: a snippet failed\n{run.stderr[-3000:]}"
