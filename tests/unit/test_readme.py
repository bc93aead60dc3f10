"""The README stays true to the repository: its links lead somewhere, its quickstart is what
CI runs, and no text in the repository cites a tracker the reader does not have.

The design note's sections that the README cites are checked by test_design_citations.py.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
README = REPO_ROOT / "README.md"
CI_SCRIPT = REPO_ROOT / ".ci" / "run"
# Files whose relative links are checked: the README and the documents it sends readers to.
LINKING_DOCS = (
    "README.md",
    "docs/usage.md",
    "docs/glossary.md",
    "docs/measurement.md",
    "benchmarks/README.md",
)
CITATION_TREES = ("pipediag", "tests", "benchmarks", "examples", "docs")
# A tracker's numbers (the word, then a number, maybe after '#'): the repository has no tracker.
ISSUE_CITATION = re.compile(r"\bissues? ?#?\d+", re.IGNORECASE)
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")
QUOTED_PATH = re.compile(r"`((?:docs|benchmarks)/[\w./-]+\.\w+)`")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"\s", "-", text)


def _anchors(path: Path) -> set[str]:
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", path.read_text(), flags=re.MULTILINE)}


def _broken_links(doc: Path) -> list[str]:
    broken = []
    for target in MARKDOWN_LINK.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path_part, _, anchor = target.partition("#")
        linked = (doc.parent / path_part).resolve() if path_part else doc
        if not linked.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target} (no such heading)")
    return broken


def _readme_command(starts: str) -> list[str]:
    """The README's command line that starts with `starts`, split as a shell would."""
    lines = [line.strip() for line in README.read_text().splitlines()]
    matching = [line for line in lines if line.startswith(starts)]
    assert matching, f"the README has no command starting {starts!r}"
    return shlex.split(matching[0])


def _issue_citations() -> list[str]:
    files = [README]
    for tree in CITATION_TREES:
        files += sorted(p for p in (REPO_ROOT / tree).rglob("*") if p.suffix in (".py", ".md"))
    return [
        f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if ISSUE_CITATION.search(line)
    ]


def test_every_relative_link_leads_to_a_file_and_heading() -> None:
    # GIVEN the README and the documents it links
    broken = {doc: _broken_links(REPO_ROOT / doc) for doc in LINKING_DOCS}
    # THEN every relative link names a file there, and a heading in it when it has an anchor
    assert not any(broken.values()), {doc: links for doc, links in broken.items() if links}


def test_the_readme_links_the_measurement_and_benchmark_notes() -> None:
    links = set(MARKDOWN_LINK.findall(README.read_text()))
    assert {
        "docs/usage.md",
        "docs/measurement.md",
        "benchmarks/README.md",
        "docs/design.md",
    } <= links


def test_every_docs_or_benchmarks_path_the_readme_names_exists() -> None:
    named = set(QUOTED_PATH.findall(README.read_text()))
    named |= {t for t in MARKDOWN_LINK.findall(README.read_text()) if t.startswith("docs/")}
    named |= {t for t in MARKDOWN_LINK.findall(README.read_text()) if t.startswith("benchmarks/")}
    missing = sorted(p for p in named if not (REPO_ROOT / p.partition("#")[0]).exists())
    assert not missing, f"the README names paths that do not exist: {missing}"


def test_the_readme_test_command_is_the_one_ci_runs() -> None:
    # GIVEN the README's install-and-test command and the CI script
    readme = _readme_command("pip install -e '.[test]'")
    ci = [shlex.split(line) for line in CI_SCRIPT.read_text().splitlines() if "-m" in line]
    # WHEN both are read as commands
    and_at = readme.index("&&")
    install, test = readme[:and_at], readme[and_at + 1 :]
    ci_pytest = [words for words in ci if words[1:3] == ["-m", "pytest"]]
    ci_install = [words for words in ci if words[1:4] == ["-m", "pip", "install"]]
    # THEN CI runs the same pytest arguments, after installing the same extra
    assert test[:3] == ["python", "-m", "pytest"]
    assert ci_pytest, "CI runs no pytest"
    assert [words[3:] for words in ci_pytest] == [test[3:]]
    assert install[:2] == ["pip", "install"]
    assert ci_install
    assert install[-2:] == ci_install[0][-2:] == ["-e", ".[test]"]


def test_the_readme_quickstart_runs_a_bundled_example() -> None:
    words = _readme_command("pip install -e . && pipediag run")
    assert words[:5] == ["pip", "install", "-e", ".", "&&"]
    script = words[words.index("run") + 1]
    assert (REPO_ROOT / script).is_file()


def test_the_issue_citation_pattern_finds_citations() -> None:
    # GIVEN lines that cite a tracker, and lines that do not
    # (spelled in two parts, so that this file holds no citation itself)
    citing = [w + n for w, n in [("(issue", " 14)"), ("Issue", " 12: the"), ("see issue", " #3")]]
    citing.append("issues" + " 12 and 13")
    clean = ["keras-team/keras#20585", "tis" + "sue 4", "the issue is the wait", "issued 3 times"]
    # THEN the pattern tells them apart
    assert all(ISSUE_CITATION.search(line) for line in citing)
    assert not any(ISSUE_CITATION.search(line) for line in clean)


def test_no_text_in_the_repository_cites_an_issue_number() -> None:
    found = _issue_citations()
    assert not found, "cite docs/design.md sections instead:\n" + "\n".join(found)


def test_the_readme_sample_is_the_answer_of_the_kept_real_run() -> None:
    from benchmarks.readme_sample import KEPT, readme_block, sample_answer

    assert KEPT.is_file(), "run benchmarks/readme_sample.py to keep a real run's report"
    assert readme_block(sample_answer()) in README.read_text()
