#!/usr/bin/env python3
"""Writes the output of every `$ localdp plan ...` console block of
docs/choosing-epsilon.md under its command, from the built CLI (argument:
the binary, default target/debug/localdp). cli/tests/plan.rs checks them."""
import re
import subprocess
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
binary = sys.argv[1] if len(sys.argv) > 1 else str(root / "target/debug/localdp")
page = root / "docs/choosing-epsilon.md"


def fill(match):
    indent, command = match.group(1), match.group(2)
    args = command.split(" ")[1:]
    output = subprocess.run([binary, *args], cwd=root, check=True, capture_output=True, text=True).stdout
    body = "".join(f"{indent}{line}".rstrip() + "\n" for line in output.rstrip("\n").split("\n"))
    return f"{indent}```console\n{indent}$ {command}\n{body}{indent}```"


text = re.sub(r"( *)```console\n *\$ (localdp plan [^\n]*)\n.*?```", fill, page.read_text(), flags=re.S)
page.write_text(text)
