"""Importing the samplers, in a fresh interpreter, imports neither pynvml nor TensorFlow."""

from __future__ import annotations

import subprocess
import sys

"""Threaded tests wait this long at most for a reading: a large margin for a loaded CI box."""


def test_importing_the_samplers_imports_neither_pynvml_nor_tensorflow() -> None:
    code = (
        "import sys, pipediag.samplers; "
        "print(sorted(m for m in ('pynvml', 'tensorflow') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
