#!/usr/bin/env python3
"""Writes into docs/choosing-epsilon.md the output of every `localdp plan`
sh block: the text block right after it. Each sh block writes its config
with a heredoc (`cat > NAME <<'EOF'`), then runs `localdp plan`. Argument:
the CLI binary (default target/debug/localdp). cli/tests/plan.rs checks
the outputs; tests/js/docs.test.mjs runs the sh blocks."""
import re
import subprocess
import sys
import tempfile
from pathlib import Path

root = Path(__file__).resolve().parent.parent
binary = sys.argv[1] if len(sys.argv) > 1 else str(root / "target/debug/localdp")
page = root / "docs/choosing-epsilon.md"
BLOCK = re.compile(r"(?P<i> *)```sh\n(?P<sh>(?:(?!```).)*?\n *localdp plan [^\n]*)\n(?P=i)```\n\n(?P=i)```text\n.*?(?P=i)```", re.S)


def run(sh):
    """The output of the block's `localdp plan`, its config written first."""
    lines = sh.split("\n")
    name = re.fullmatch(r"cat > (\S+) <<'EOF'", lines[0]).group(1)
    end = lines.index("EOF")
    with tempfile.TemporaryDirectory() as scratch:
        Path(scratch, name).write_text("\n".join(lines[1:end]) + "\n")
        args = lines[end + 1].split(" ")[1:]
        return subprocess.run([binary, *args], cwd=scratch, check=True, capture_output=True, text=True).stdout


def fill(match):
    indent = match.group("i")
    sh = "\n".join(line[len(indent):] for line in match.group("sh").split("\n"))
    body = "".join(f"{indent}{line}".rstrip() + "\n" for line in run(sh).rstrip("\n").split("\n"))
    return f"{indent}```sh\n{match.group('sh')}\n{indent}```\n\n{indent}```text\n{body}{indent}```"


page.write_text(BLOCK.sub(fill, page.read_text()))
