"""The shape of the code base: the numbers the core's layout is held to.

Reads ``src/bastion`` (and ``README.md``) as text and AST, never importing the library, and
prints one figure a line. ``--json`` prints them as one JSON object instead; ``--check``
exits 1 when a figure is past its limit (the limits are in ``LIMITS``).

    .venv/bin/python -m benchmarks.codebase            # the figures
    .venv/bin/python -m benchmarks.codebase --check    # and fail past a limit

Figures:

* ``lines``: physical lines of library source; ``lines.<pkg>`` the same per package.
* ``classes_over_500``, ``modules_over_800``, ``functions_over_80``: counts (a module or
  function whose docstring or leading comment says ``data table`` is exempt).
* ``agent_init_params``, ``agent_class_lines``, ``agent_methods``, ``agent_properties``:
  the ``Agent`` class.
* ``runtime_cycles``: strongly connected groups (of two or more modules) in the graph of
  imports that run (module level, inside functions, or deferred with ``lazy_module``; not
  under ``TYPE_CHECKING``).
* ``local_imports``: imports of Bastion's own modules placed inside functions, but for
  those that load an optional dependency (inside a ``try`` that catches ``ImportError``).
* ``dict_str_any``: ``dict[str, Any]`` written out (docstrings too); ``any_per_kloc``: the
  name ``Any`` used in code per 1,000 lines.
* ``duplicates_per_kloc``: pairs the ``duplicates`` command finds in ``src/bastion`` per
  1,000 lines (absent where the command is not on the PATH).
* ``root_names``: ``bastion.__all__``; ``readme_lines``.
* ``import_ratio``: ``from bastion import Agent, tool`` over ``import asyncio, pydantic``,
  each timed in fresh interpreters, interleaved (``--no-import`` leaves it out).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import statistics
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "bastion"

LIMITS: dict[str, float] = {
    "classes_over_500": 0,
    "modules_over_800": 0,
    "functions_over_80": 0,
    "agent_init_params": 25,
    "agent_class_lines": 500,
    "runtime_cycles": 0,
    "local_imports": 20,
    "dict_str_any": 260,
    "any_per_kloc": 10,
    "duplicates_per_kloc": 2.5,
    "root_names": 80,
    "readme_lines": 250,
    "import_ratio": 1.5,
}

_EXEMPT = re.compile(r"data table", re.IGNORECASE)
_DICT_ANY = re.compile(r"\bdict\[\s*str\s*,\s*Any\s*\]")


@dataclass(frozen=True, slots=True)
class Module:
    """One source file: its dotted name, path, text and tree."""

    name: str
    path: Path
    text: str
    tree: ast.Module

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"


def load_modules(src: Path = SRC) -> dict[str, Module]:
    """Every ``.py`` file below ``src``, by dotted module name."""
    modules: dict[str, Module] = {}
    for path in sorted(src.rglob("*.py")):
        parts = path.relative_to(src.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        text = path.read_text(encoding="utf-8")
        modules[name] = Module(name, path, text, ast.parse(text, str(path)))
    return modules


# -- sizes -----------------------------------------------------------------------------


def _span(node: ast.AST) -> int:
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])  # type: ignore[attr-defined]
    return node.end_lineno - first + 1  # type: ignore[attr-defined]


def _exempt(node: ast.AST, module: Module) -> bool:
    doc = (
        ast.get_docstring(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module))
        else None
    )
    if doc and _EXEMPT.search(doc):
        return True
    line = module.text.splitlines()[max(node.lineno - 2, 0)] if hasattr(node, "lineno") else ""  # type: ignore[attr-defined]
    return bool(_EXEMPT.search(line))


def oversized(modules: dict[str, Module]) -> dict[str, list[str]]:
    """The classes over 500 lines, modules over 800 and functions over 80, by name."""
    found: dict[str, list[str]] = {"classes": [], "modules": [], "functions": []}
    for module in modules.values():
        lines = len(module.text.splitlines())
        if lines > 800 and not _exempt(module.tree, module):
            found["modules"].append(f"{module.name} ({lines})")
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ClassDef) and _span(node) > 500:
                found["classes"].append(f"{module.name}.{node.name} ({_span(node)})")
            elif (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and _span(node) > 80
                and not _exempt(node, module)
            ):
                found["functions"].append(f"{module.name}:{node.name} ({_span(node)})")
    return found


def agent_shape(modules: dict[str, Module]) -> dict[str, int]:
    """The ``Agent`` class: its constructor's parameters, lines, methods and properties."""
    for module in modules.values():
        for node in module.tree.body:
            if isinstance(node, ast.ClassDef) and node.name == "Agent":
                methods = [
                    n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                ]
                init = next((m for m in methods if m.name == "__init__"), None)
                params = 0
                if init is not None:
                    a = init.args
                    params = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) - 1
                props = sum(
                    any(isinstance(d, ast.Name) and d.id == "property" for d in m.decorator_list)
                    for m in methods
                )
                return {
                    "agent_init_params": params,
                    "agent_class_lines": _span(node),
                    "agent_methods": len(methods),
                    "agent_properties": props,
                }
    return {}


# -- imports ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Imports:
    """The runtime import edges and the function-local imports of Bastion's modules."""

    edges: dict[str, set[str]] = field(default_factory=dict[str, set[str]])
    local: list[str] = field(default_factory=list[str])


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


_OPTIONAL = {"ImportError", "ModuleNotFoundError"}


def _loads_optional(node: ast.Try) -> bool:
    """A ``try`` whose handlers catch ``ImportError``: it loads an optional dependency."""
    for handler in node.handlers:
        caught = handler.type
        names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
        if any(isinstance(name, ast.Name) and name.id in _OPTIONAL for name in names):
            return True
    return False


def _runtime_imports(
    tree: ast.AST,
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
    """Each import that runs, with whether it sits inside a function and whether it loads
    an optional dependency (inside a ``try`` that catches ``ImportError``)."""

    def walk(
        node: ast.AST, in_function: bool, optional: bool
    ) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for orelse in child.orelse:
                    yield from walk(orelse, in_function, optional)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, in_function, optional
            inner = in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
            )
            guarded = optional or (isinstance(child, ast.Try) and _loads_optional(child))
            yield from walk(child, inner, guarded)

    yield from walk(tree, False, False)


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.name.split(".")
    if not module.is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _definitions(modules: dict[str, Module]) -> dict[str, dict[str, str]]:
    """For each package, the submodule its ``__init__`` names each attribute from."""
    found: dict[str, dict[str, str]] = {}
    for module in modules.values():
        if not module.is_package:
            continue
        table: dict[str, str] = {}
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ImportFrom):
                target = _absolute(module, node)
                for alias in node.names:
                    table[alias.asname or alias.name] = target
        found[module.name] = table
    return found


def _resolve(
    target: str, name: str, modules: dict[str, Module], table: dict[str, dict[str, str]]
) -> str:
    """The module that defines ``target.name``, following package re-exports."""
    for _ in range(10):
        if f"{target}.{name}" in modules:
            return f"{target}.{name}"
        inner = table.get(target, {}).get(name)
        if inner is None or inner == target or inner not in modules:
            return target
        target = inner
    return target


def imports(modules: dict[str, Module]) -> _Imports:
    """The graph of runtime imports between Bastion's modules."""
    table = _definitions(modules)
    found = _Imports()
    for module in modules.values():
        edges = found.edges.setdefault(module.name, set())
        for node, in_function, optional in _runtime_imports(module.tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("bastion")]
            else:
                base = _absolute(module, node)
                if base == "bastion" or base.startswith("bastion."):
                    targets = [_resolve(base, a.name, modules, table) for a in node.names]
            targets = [t for t in targets if t in modules and t != module.name]
            edges.update(targets)
            if in_function and not optional and targets:
                found.local.append(f"{module.name}:{node.lineno}")
        edges.update(t for t in _lazy_targets(module.tree) if t in modules)
    return found


def _lazy_targets(tree: ast.AST) -> Iterator[str]:
    """The modules bound with ``lazy_module("...")``: imports that run later, still edges."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "lazy_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.args[0].value


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of two or more modules (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


# -- text ------------------------------------------------------------------------------


def any_count(modules: dict[str, Module]) -> int:
    """How often the name ``Any`` is used in code (AST names; strings and comments not)."""
    return sum(
        isinstance(node, ast.Name) and node.id == "Any"
        for module in modules.values()
        for node in ast.walk(module.tree)
    )


def root_names(modules: dict[str, Module]) -> int:
    """The names in ``bastion.__all__``."""
    for node in modules["bastion"].tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == "__all__" and node.value is not None:  # type: ignore[union-attr]
            return len(ast.literal_eval(node.value))  # type: ignore[union-attr,arg-type]
    return 0


def duplicate_pairs() -> int | None:
    """The pairs ``duplicates`` finds in ``src/bastion`` (``None``: no such command)."""
    if shutil.which("duplicates") is None:
        return None
    done = subprocess.run(
        ["duplicates", "--repo", str(SRC), "--most", "1", "--seconds", "120"],
        capture_output=True,
        text=True,
        check=False,
    )
    first = done.stdout.strip().splitlines()[0] if done.stdout.strip() else ""
    match = re.match(r"(\d+) pairs", first)
    return int(match.group(1)) if match else 0


def _time(statement: str) -> float:
    code = f"import time\n_t=time.perf_counter()\n{statement}\nprint(time.perf_counter()-_t)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def import_ratio(rounds: int = 15) -> float:
    """``from bastion import Agent, tool`` over ``import asyncio, pydantic`` (medians)."""
    ours: list[float] = []
    floor: list[float] = []
    _time("from bastion import Agent, tool")  # warm the bytecode cache
    for _ in range(rounds):
        ours.append(_time("from bastion import Agent, tool"))
        floor.append(_time("import asyncio, pydantic"))
    return statistics.median(ours) / statistics.median(floor)


def measure(*, with_import: bool = True) -> dict[str, object]:
    """Every figure, by name; lists name what is past a size limit."""
    modules = load_modules()
    lines = sum(len(m.text.splitlines()) for m in modules.values())
    per_package: dict[str, int] = {}
    for m in modules.values():
        package = m.name.split(".")[1] if "." in m.name else "(root)"
        per_package[package] = per_package.get(package, 0) + len(m.text.splitlines())
    big = oversized(modules)
    graph = imports(modules)
    groups = cycles(graph.edges)
    figures: dict[str, object] = {"lines": lines}
    figures.update({f"lines.{k}": v for k, v in sorted(per_package.items())})
    figures |= {
        "classes_over_500": len(big["classes"]),
        "modules_over_800": len(big["modules"]),
        "functions_over_80": len(big["functions"]),
        **agent_shape(modules),
        "runtime_cycles": len(groups),
        "local_imports": len(graph.local),
        "dict_str_any": sum(len(_DICT_ANY.findall(m.text)) for m in modules.values()),
        "any_per_kloc": round(any_count(modules) * 1000 / lines, 2),
        "root_names": root_names(modules),
        "readme_lines": len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()),
    }
    pairs = duplicate_pairs()
    if pairs is not None:
        figures["duplicates_per_kloc"] = round(pairs * 1000 / lines, 2)
    if with_import:
        figures["import_ratio"] = round(import_ratio(), 2)
    figures["detail.classes_over_500"] = big["classes"]
    figures["detail.modules_over_800"] = big["modules"]
    figures["detail.functions_over_80"] = big["functions"]
    figures["detail.runtime_cycles"] = groups
    figures["detail.local_imports"] = graph.local
    return figures


def main(argv: list[str] | None = None) -> int:
    """Print the figures; with ``--check``, exit 1 past a limit."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.codebase")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.add_argument("--check", action="store_true", help="exit 1 past a limit")
    parser.add_argument("--no-import", action="store_true", help="skip the import timing")
    parser.add_argument("--detail", action="store_true", help="list what is past each limit")
    args = parser.parse_args(argv)
    figures = measure(with_import=not args.no_import)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            if key.startswith("detail."):
                if args.detail and value:
                    print(f"{key}:")
                    for item in value:  # type: ignore[attr-defined]
                        print(f"    {item}")
                continue
            limit = LIMITS.get(key)
            mark = "" if limit is None else f"   (limit {limit:g})"
            print(f"{key:24} {value}{mark}")
    over = [
        k
        for k, limit in LIMITS.items()
        if isinstance(figures.get(k), (int, float)) and figures[k] > limit  # type: ignore[operator]
    ]
    if args.check and over:
        print("past the limit: " + ", ".join(over), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
