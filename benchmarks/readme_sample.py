"""The README's sample answer, from a real run of its own quickstart command.

Runs `pipediag run examples/input_bound_fit.py --epochs 2` (the README's first command),
keeps its report.json as `docs/examples/input_bound_fit.json`, redraws the README's PNG
from it, and writes its answer between the README's sample markers.
`tests/unit/test_readme.py` renders the kept report again and checks the README still
shows that answer, so the sample cannot drift from what pipediag prints.

    python benchmarks/readme_sample.py               # a fresh run (about a minute on 2 cores)
    python benchmarks/readme_sample.py --no-run      # re-render the kept report only
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
KEPT = ROOT / "docs" / "examples" / "input_bound_fit.json"
PNG = ROOT / "docs" / "report-example-input-bound.png"
START, END = "<!-- answer sample: start -->", "<!-- answer sample: end -->"
# The folder the README's command writes to, as the sample names it.
OUT = "pipediag-out"
NAMES = ["report.json", "summary.txt", "report.png", "trace.json"]


def sample_answer(report_path: Path = KEPT) -> str:
    """The answer the README shows: the kept report's, as `pipediag run` prints it."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from pipediag.renderers.answer import render_answer, report_line
    from pipediag.report.io import load_report

    report = load_report(report_path)
    return render_answer(report, report_line(OUT, NAMES))


def readme_block(text: str) -> str:
    return f"{START}\n```\n{text}```\n{END}"


def redraw_png(report_path: Path = KEPT) -> None:
    """The README's PNG, drawn again from the kept report by this checkout's renderer."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from pipediag.renderers.png import render_png
    from pipediag.report.io import load_report

    render_png(load_report(report_path), PNG)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-run", action="store_true", help="re-render the kept report only")
    args = parser.parse_args(argv)
    if not args.no_run:
        with tempfile.TemporaryDirectory(prefix="pipediag-readme-") as tmp:
            out = Path(tmp) / OUT
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pipediag",
                    "run",
                    "--out",
                    str(out),
                    "examples/input_bound_fit.py",
                    "--epochs",
                    "2",
                ],
                cwd=ROOT,
                check=True,
            )
            KEPT.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(out / "report.json", KEPT)
    redraw_png()
    body = README.read_text()
    head, _, rest = body.partition(START)
    _, _, tail = rest.partition(END)
    README.write_text(head + readme_block(sample_answer()) + tail)
    print(sample_answer(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
