"""docs/architecture.md's Notes index lists every ``Note [...]`` that src/labrys defines, by the file
that defines it: a heading ``Note [X]`` over a ``~~~`` line, else ``Note [X]:`` opening a line."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "labrys"
OPENING = re.compile(r'\s*(?:#\s*(?:-+\s*)?|""")?Note \[([^\]]+)\](:|\s+-{3,})?\s*(.?)')


def definitions() -> set[tuple[str, str]]:
    found: dict[str, dict[str, int]] = {}  # note -> {file: 2 for a ~~~ heading, 1 for 'Note [X]:'}
    for path in sorted(SRC.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for line, below in zip(lines, lines[1:]):
            m = OPENING.match(line)
            if not m:
                continue
            strength = 2 if not m.group(3) and re.match(r"\s*(?:#\s*)?~{4,}", below) else 1 if m.group(2) else 0
            if strength:
                files = found.setdefault(m.group(1), {})
                files[path.relative_to(SRC).as_posix()] = max(strength, files.get(path.relative_to(SRC).as_posix(), 0))
    return {(note, f) for note, files in found.items() for f, s in files.items() if s == max(files.values())}


def index() -> dict[str, str]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text[text.index("## Notes index"):]
    return {m.group(2): m.group(1) for m in re.finditer(r"^\| ([^|]+) \| `([^`]+)`", table, re.M)}


def test_every_note_is_in_the_index_under_its_file() -> None:
    rows = index()
    defined = definitions()
    assert len(defined) > 100  # the scan finds the notes at all
    missing = sorted(f"{note} ({f})" for note, f in defined if note not in rows.get(f, ""))
    assert not missing, "add to docs/architecture.md's Notes index: " + "; ".join(missing)


def test_every_file_the_index_names_exists() -> None:
    assert not [f for f in index() if not (SRC / f).is_file()]
