"""The PNG report in a fresh interpreter: importing the renderers imports neither matplotlib
nor TensorFlow, and rendering never imports pyplot."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_importing_renderers_does_not_import_matplotlib_and_rendering_avoids_pyplot(
    tmp_path: Path,
) -> None:
    code = (
        "import sys\n"
        "import pipediag.renderers.png as png, pipediag.renderers.chrome_trace\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported'\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow imported'\n"
        "from pipediag.report.model import Report\n"
        "from pathlib import Path\n"
        f"png.render_png(Report(script='t.py'), Path({str(tmp_path / 'a.png')!r}))\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
