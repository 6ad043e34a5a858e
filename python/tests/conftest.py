"""Fixtures: the `localdp` CLI built from this tree (LOCALDP_CLI, default
target/release/localdp, which scripts/test.sh builds before these tests)."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cli():
    path = Path(os.environ.get("LOCALDP_CLI", ROOT / "target" / "release" / "localdp"))
    if not path.exists():
        pytest.fail(f"no CLI at {path}: cargo build --release -p localdp-cli (or set LOCALDP_CLI)")

    def run(*args, **kwargs):
        return subprocess.run([str(path), *map(str, args)], check=True, capture_output=True, **kwargs).stdout

    run.path = path
    return run
