"""The fix table (`report/fixes.py`): one record per fix, and the facts each layer reads."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pipediag
from pipediag.bench.compose import _edit_rank
from pipediag.report import fixes
from pipediag.report.fixes import (
    FIX_CACHE,
    FIX_DEVICE_PREFETCH,
    FIX_HOIST_CACHE,
    FIX_MATERIALISE,
    FIX_PARALLEL_INTERLEAVE,
    FIX_PARALLEL_MAP,
    FIX_PREFETCH,
    FIX_VECTORIZE,
    FIXES,
    fix_facts,
    fix_words,
)
from pipediag.report.vocabulary import FixName


def test_every_fix_the_report_may_name_has_one_record() -> None:
    assert sorted(FIXES) == sorted(get_args(FixName))
    assert all(name == facts.name for name, facts in FIXES.items())


def test_edits_are_reapplied_in_one_fixed_order_with_the_unranked_after() -> None:
    # GIVEN every fix, in the vocabulary's order
    names = list(get_args(FixName))
    # WHEN they are sorted as composing sorts edits
    ordered = sorted(names, key=_edit_rank)
    # THEN moves, changes in place, caches and the final prefetch come first, in that order
    assert ordered[:7] == [
        FIX_MATERIALISE,
        FIX_HOIST_CACHE,
        FIX_VECTORIZE,
        FIX_PARALLEL_MAP,
        FIX_PARALLEL_INTERLEAVE,
        FIX_CACHE,
        FIX_PREFETCH,
    ]
    # AND the others (and an unknown id) share the last place, so they keep the kept order
    assert {_edit_rank(name) for name in ordered[7:]} == {_edit_rank("not-a-fix")}


def test_only_the_caching_fixes_cache_and_only_the_device_prefetch_goes_last() -> None:
    assert {f.name for f in FIXES.values() if f.caches} == {FIX_CACHE, FIX_HOIST_CACHE}
    assert {f.name for f in FIXES.values() if f.last_line} == {FIX_DEVICE_PREFETCH}
    assert {f.name for f in FIXES.values() if not f.bounded_by_hold} == {FIX_DEVICE_PREFETCH}


def test_an_unknown_fix_is_named_by_its_id_and_has_no_facts() -> None:
    facts = fix_facts("from-a-later-version")
    assert fix_words("from-a-later-version") == "from-a-later-version"
    assert facts.edit_rank is None and facts.option_line is None and facts.semantics == ()
    assert not facts.caches and not facts.stage_work and facts.last_line is None


def test_each_fix_is_written_out_one_way() -> None:
    # A fix changes the stage lines, or sets an option, or adds a last line: never two, and
    # never none (the code writer would drop it silently).
    for facts in FIXES.values():
        ways = [facts.code, facts.option_line, facts.last_line]
        assert sum(way is not None for way in ways) == 1, facts.name


def test_each_fix_id_is_named_in_at_most_three_modules() -> None:
    # Its record, the candidate that builds it, the rule that proposes it: every other layer
    # reads the record, so a new fix touches three files.
    package = Path(pipediag.__file__).parent
    sources = {p: p.read_text() for p in package.rglob("*.py")}
    for constant in [name for name in vars(fixes) if name.startswith("FIX_")]:
        named_in = [p.name for p, text in sources.items() if re.search(rf"\b{constant}\b", text)]
        assert len(named_in) <= 3, (constant, named_in)
