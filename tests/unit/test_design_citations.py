"""Every design note a comment cites is in the repository, and so is the section it names.

Comments cite the design note as `(docs/design.md, "Section name")`. A citation of a file the
reader does not have, or of a section since renamed, sends them nowhere.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DESIGN_NOTE = REPO_ROOT / "docs" / "design.md"
CITING_TREES = ("pipediag", "tests", "benchmarks", "examples")
# Spelled in two parts so that this file does not cite the note it forbids.
OUTSIDE_NOTE = "DESIGN" + ".md"
# A citation may wrap over lines and comment markers: `(docs/design.md, "Iterator\n# tear-down")`.
CITATION = re.compile(r'docs/design\.md,\s*"([^"]+)"')


def _sources() -> list[Path]:
    """Where citations live; not this file, whose examples are not citations."""
    files = [REPO_ROOT / "README.md"]
    for tree in CITING_TREES:
        files += sorted((REPO_ROOT / tree).rglob("*.py"))
    return [path for path in files if path != Path(__file__).resolve()]


def _flattened(text: str) -> str:
    """Lines joined with single spaces, comment markers dropped, so wrapped citations match."""
    return re.sub(r"\s*\n\s*(?:#\s*)?", " ", text)


def _sections() -> set[str]:
    headings = re.findall(r"^#{2,3} (.+)$", DESIGN_NOTE.read_text(), flags=re.MULTILINE)
    return {heading.strip() for heading in headings}


def test_the_design_note_is_in_the_repository() -> None:
    assert DESIGN_NOTE.is_file()
    assert "## Architecture" in DESIGN_NOTE.read_text()


def test_no_citation_of_a_note_outside_the_repository() -> None:
    citing = [str(p.relative_to(REPO_ROOT)) for p in _sources() if OUTSIDE_NOTE in p.read_text()]
    assert not citing, f"{OUTSIDE_NOTE} is not in the repository; cited in: {', '.join(citing)}"


def test_every_cited_section_exists() -> None:
    # GIVEN every citation of the design note in the code, tests, benchmarks and README
    sections = _sections()
    cited = {
        (str(path.relative_to(REPO_ROOT)), name.strip())
        for path in _sources()
        for name in CITATION.findall(_flattened(path.read_text()))
    }
    # THEN there are some, and each names a heading of docs/design.md
    assert len(cited) >= 20
    missing = sorted(f"{where}: {name!r}" for where, name in cited if name not in sections)
    assert not missing, "sections not in docs/design.md: " + "; ".join(missing)
