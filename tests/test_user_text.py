"""User-facing text names papers by their authors and title (and a section or
figure), never by the number of a seed, and points to nothing outside the
repository: no paths into the reference library beside it, no implementation-guide files.  This test reads
src, tests, docs, examples, scripts, benchmarks and the README for those patterns."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = re.compile(
    r"seed[ _-]?00\d"                    # "seed 004", "seed-000-knossos.md"
    r"|\.\./shared|shared/(?:spec|seeds|data)"  # the reference material is not part of the product
    r"|\"shared\"\s*/"                     # ... nor a path built to it
    r"|guide §|implementation guide|\bthe guide(?:'s)?\b(?! to)"
    r"|(?-i:LANGUAGE\.md)",              # the language reference is docs/reference.md
    re.IGNORECASE)
SUFFIXES = {".py", ".md", ".ks", ".txt", ".toml", ".cfg", ".rst"}


def _files() -> list[Path]:
    out = [ROOT / "README.md"]
    for top in ("src", "tests", "docs", "examples", "scripts", "benchmarks"):
        for path in sorted((ROOT / top).rglob("*")):
            if (path.is_file() and path.suffix in SUFFIXES and path != Path(__file__).resolve()
                    and not any(part.endswith(".egg-info") or part == "__pycache__" for part in path.parts)):
                out.append(path)
    return out


def test_no_seed_numbers_guides_or_shared_paths_in_user_facing_text():
    hits = []
    for path in _files():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            match = FORBIDDEN.search(line)
            if match:
                hits.append(f"{path.relative_to(ROOT)}:{number}: {match.group(0)!r} in {line.strip()[:100]}")
    assert not hits, "name the paper (authors, title, section) instead:\n" + "\n".join(hits)


def test_the_pattern_catches_what_it_should():
    for text in ("the seed 002 demo", "seed-000-knossos.md §6", "see ../../shared/spec/LANGUAGE.md",
                 "Figs 7-8; guide §3", "as the implementation guide says", "with the guide's fixes",
                 "LANGUAGE.md §4"):
        assert FORBIDDEN.search(text), text
    for text in ("--seed 0", "(seed 0; finite differences ...)", "a guide to the tutorial", "docs/reference.md §5",
                 "docs/language.md"):
        assert not FORBIDDEN.search(text), text
