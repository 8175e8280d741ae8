"""The method's documentation is in the repository: every ``docs/physics.md`` section, reference solution
(``§5.6-k``), pitfall (``P<n>``) and erratum (``E<n>``) that a docstring or test cites exists there, and nothing
in the package, its tests or docs points at a file outside the repository."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PHYSICS = ROOT / "docs" / "physics.md"
SOURCES = [*ROOT.glob("cenic_gym/**/*.py"), *ROOT.glob("envs/*.py"), *ROOT.glob("tests/*.py"),
           *ROOT.glob("benchmarks/**/*.py"), *ROOT.glob("docs/*.md"), ROOT / "README.md", ROOT / "training/README.md"]


def physics_labels():
    text = PHYSICS.read_text()
    sections = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)[. ]", text, re.M))
    body = text[text.index("### 5.6"):text.index("### 5.7")]
    items = {f"5.6-{k}" for k in re.findall(r"^(\d+)\. ", body, re.M)}
    marks = set(re.findall(r"\*\*([EP]\d+)\b", text)) | set(re.findall(r"^\| ([EP]\d+) \|", text, re.M))
    return sections, items, marks


def test_every_cited_physics_section_exists():
    sections, items, marks = physics_labels()
    missing = []
    for path in SOURCES:
        if path == PHYSICS:
            continue
        for m in re.finditer(r"docs/physics\.md ((?:\[?§[\d.\-–]+(?: item \d+)?(?:, ?)?)+)", path.read_text()):
            for ref in re.findall(r"§(\d+(?:\.\d+)?)(?:-(\d+)| item (\d+))?", m.group(1)):
                sec, item = ref[0].rstrip("."), ref[1] or ref[2]
                if item and f"{sec}-{item}" not in items or not item and sec not in sections:
                    missing.append(f"{path.relative_to(ROOT)}: §{sec}{'-' + item if item else ''}")
    assert not missing, missing
    assert {"E1", "E2", "E3", "E4", "E9", "E16"} <= marks, sorted(marks)


def test_nothing_points_outside_the_repository():
    pattern = re.compile("|".join([r"\.\./shared", "shared/" + "docs", "physics" + "-notes"]))  # not this file itself
    offenders = [str(p.relative_to(ROOT)) for p in SOURCES if pattern.search(p.read_text())]
    assert not offenders, offenders
