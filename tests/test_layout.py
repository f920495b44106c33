"""The code base keeps its shape: no runtime import cycle, few function-local imports, small
classes, modules and functions, a map that names every package.

The figures come from ``benchmarks.codebase`` (which reads the source as text and AST); the
limits are the ones ``docs/architecture.md`` states. A failure names what is past a limit.
"""

from __future__ import annotations

import re

import pytest

from benchmarks.codebase import ROOT, SRC, cycles, imports, load_modules, oversized

MODULES = load_modules()


def test_no_runtime_import_cycle() -> None:
    assert cycles(imports(MODULES).edges) == []


def test_few_function_local_imports_of_bastion_modules() -> None:
    local = imports(MODULES).local
    assert len(local) <= 20, local


@pytest.mark.parametrize("kind", ["classes", "modules", "functions"])
def test_no_oversized_class_module_or_function(kind: str) -> None:
    # classes at most 500 lines, modules 800, functions 80
    assert oversized(MODULES)[kind] == []


def test_the_architecture_map_names_every_package_and_only_real_files() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    packages = sorted(p.name for p in SRC.iterdir() if (p / "__init__.py").exists())
    missing = [p for p in packages if f"{p}/" not in text]
    assert missing == []
    named = {
        n for n in re.findall(r"`((?:[a-z_]+/)+[a-z_]+\.py)`", text) if n.split("/")[0] in packages
    }
    absent = sorted(n for n in named if not (SRC / n).exists())
    assert absent == []


def test_no_markdown_link_leaves_the_repository() -> None:
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)", page.read_text(encoding="utf-8")):
            if target.startswith(("http:", "https:", "mailto:")):
                # the map and the front page point only at the repository's own files
                assert page.name not in {"README.md", "architecture.md"}, (page.name, target)
                continue
            resolved = (page.parent / target).resolve()
            assert resolved.is_relative_to(ROOT), (page.name, target)
            assert resolved.exists(), (page.name, target)
