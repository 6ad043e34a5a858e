"""The Python blocks of docs/, run as a reader pastes them: each page's
blocks in order, in one fresh folder per page, in one namespace. The
commands a page gives to make their inputs (its `sh` blocks, with the
CLI as `localdp`) run first where they stand; `sh` blocks that reach a
collector (an `http://` URL) or are taken from a file (`<!-- file: PATH
-->`) are left to tests/js/docs.test.mjs, which runs and checks every
`sh` block. A block that raises fails its page's test, which names the
block's line."""

import contextlib
import io
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(p for p in (ROOT / "docs").glob("*.md") if "```python" in p.read_text())


def blocks(page):
    """The fenced blocks of a page: (line, language, code, taken from a file)."""
    lines = page.read_text().split("\n")
    found, i = [], 0
    while i < len(lines):
        opened = re.match(r"^```(\S*)\s*$", lines[i])
        if not opened:
            i += 1
            continue
        start, body = i, []
        for i in range(i + 1, len(lines)):
            if re.match(r"^```\s*$", lines[i]):
                break
            body.append(lines[i])
        before = next((l for l in reversed(lines[:start]) if l.strip()), "")
        found.append((start + 1, opened.group(1), "\n".join(body), before.strip().startswith("<!-- file:")))
        i += 1
    return found


def test_the_docs_have_python_blocks():
    assert [p.name for p in PAGES] == ["COLUMNAR.md", "python.md"]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_python_blocks_run_as_written(page, cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    localdp_dir = tmp_path / ".bin"
    localdp_dir.mkdir()
    (localdp_dir / "localdp").symlink_to(Path(cli.path))
    env = {**os.environ, "PATH": f"{localdp_dir}{os.pathsep}{os.environ['PATH']}"}
    namespace = {"__name__": "__main__"}
    ran = 0
    for line, language, code, from_file in blocks(page):
        where = f"{page.name}:{line}"
        if language == "sh" and not from_file and "http://" not in code:
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", code], env=env, capture_output=True, text=True)
            assert done.returncode == 0, f"{where}: {done.stderr}"
        elif language == "python":
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(code, where, "exec"), namespace)
            ran += 1
    assert ran > 0
