"""Watch mode in a fresh interpreter: importing pipediag loads no Keras until `pipediag.keras`
is used."""

from __future__ import annotations

import subprocess
import sys

from cli_runner import ENV


def test_importing_pipediag_loads_no_keras_until_pipediag_keras_is_used() -> None:
    code = (
        "import sys, pipediag\n"
        "assert 'keras' not in sys.modules and 'tensorflow' not in sys.modules\n"
        "assert 'pipediag.keras' not in sys.modules\n"
        "assert 'pipediag.watch.watcher' not in sys.modules\n"
        "try:\n    pipediag.no_such_thing\nexcept AttributeError:\n    print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
