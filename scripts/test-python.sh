#!/usr/bin/env bash
# The Python package (python/, `import localdp`): makes a virtual environment
# under target/ once (kept between runs), installs what the tests need into
# it (python/requirements-test.txt; nothing is fetched when it is all
# there), builds and installs the package from python/ with pip and maturin
# (release profile, the workspace's target/, so it reuses the compiled
# dependencies), and runs pytest: bit-identity with the CLI across families
# (LOCALDP_CLI, default target/release/localdp), errors, the docs' examples;
# then the stub: mypy --strict on every documented call
# (python/tests/typing_calls.py) and stubtest against the built module.
# pytest exits 5 when it collects no test, which fails this script (set -e).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/python-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
export PATH="$PWD/$venv/bin:$PATH"
python -m pip install -q --disable-pip-version-check -r python/requirements-test.txt
start=$(date +%s)
python -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps --force-reinstall ./python
echo "test-python: the package built and installed in $(($(date +%s) - start)) s"
python -m pytest -q python/tests
python -m mypy --strict python/tests/typing_calls.py
python -m mypy.stubtest localdp
