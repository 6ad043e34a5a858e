"""The Python LDP libraries the benchmarks compare with, in a throwaway venv."""

import importlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# pure-ldp imports scikit-learn and statsmodels (its RAPPOR) without
# declaring them and calls np.zeros(None), which numpy 2 refuses; pure-ldp and
# multi-freq-ldpy hash str() with xxhash, which xxhash 2+ refuses.
PACKAGES = ["pure-ldp", "multi-freq-ldpy", "xxhash<2", "scikit-learn", "statsmodels", "numpy<2"]


def rerun_in_venv(script, modules, packages=PACKAGES):
    """Returns if `modules` import; else re-runs `script` (with this process's
    arguments) in a throwaway venv holding `packages` (the peers), deleted
    afterwards, and exits with its status."""
    try:
        for module in modules:
            importlib.import_module(module)
        return
    except ImportError:
        pass
    if os.environ.get("LOCALDP_BENCH_VENV"):
        sys.exit(f"{', '.join(packages)} did not install")
    with tempfile.TemporaryDirectory(prefix="localdp-bench-") as venv:
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        python = Path(venv) / "bin" / "python"
        subprocess.run([python, "-m", "pip", "install", "-q", *packages], check=True)
        env = dict(os.environ, LOCALDP_BENCH_VENV="1")
        sys.exit(subprocess.run([python, script, *sys.argv[1:]], env=env).returncode)
