#!/usr/bin/env bash
# Installs what the build needs, idempotently. Sourced by the other scripts.
set -euo pipefail
if ! command -v cargo >/dev/null 2>&1; then
  if [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi
fi
command -v cargo >/dev/null 2>&1 || { echo "setup: cargo not found (install Rust with rustup)" >&2; exit 1; }
