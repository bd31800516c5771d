"""Walk a package's imports with ``ast`` (function-level imports included) and check a declared layer order.

Used by the layer tests of ``tools.prefixbench`` and ``tools.course``: a module may import from its own layer
and the layers below it, never above; nothing may form an import cycle.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Import:
    source: str  # dotted module name of the importer
    target: str  # dotted module name imported
    line: int


def module_name(root: Path, package: str, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([package, *parts])


def _resolve(source: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = source.split(".") if is_package else source.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(root: Path, package: str) -> tuple[set[str], list[Import]]:
    """Every module of the package under ``root`` and every import it makes (absolute, dotted)."""
    files = sorted(root.rglob("*.py"))
    modules = {module_name(root, package, f) for f in files}
    found = []
    for path in files:
        source = module_name(root, package, path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found += [Import(source, alias.name, node.lineno) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(source, path.name == "__init__.py", node)
                for alias in node.names:
                    candidate = f"{base}.{alias.name}"
                    found.append(Import(source, candidate if candidate in modules else base, node.lineno))
    return modules, found


def layer_of(module: str, package: str, layers: list[str]) -> int | None:
    """Index of the layer a module belongs to: its first component below ``package``; ``None`` for the
    package's own facade modules (its ``__init__`` and modules that are not a layer)."""
    rest = module[len(package) + 1:].split(".")[0] if module.startswith(package + ".") else None
    return layers.index(rest) if rest in layers else None


def violations(root: Path, package: str, layers: list[str], facades: set[str]) -> list[str]:
    """Upward imports, imports of a facade from inside a layer, and import cycles, one line each."""
    modules, found = imports_of(root, package)
    problems = []
    for imp in found:
        if not imp.target.startswith(package) or imp.target not in modules | {package}:
            continue
        source_layer = layer_of(imp.source, package, layers)
        if source_layer is None:
            continue  # a facade may import any layer
        target_layer = layer_of(imp.target, package, layers)
        where = f"{imp.source} line {imp.line} imports {imp.target}"
        if imp.target in facades:
            problems.append(f"{where}: a facade, which only outside code may import")
        elif target_layer is not None and target_layer > source_layer:
            problems.append(f"{where}: layer {layers[target_layer]} is above {layers[source_layer]}")
    return problems + cycles(modules, found)


def cycles(modules: set[str], found: list[Import]) -> list[str]:
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for imp in found:
        if imp.target in modules and imp.target != imp.source:
            graph[imp.source].add(imp.target)
    state: dict[str, int] = {}
    stack: list[str] = []
    out: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                out.append("import cycle: " + " -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return out


def long_functions(root: Path, limit: int) -> list[str]:
    """Functions longer than ``limit`` lines (decorators and docstring included)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > limit:
                    out.append(f"{path.relative_to(root)}:{node.lineno} {node.name} is {length} lines")
    return out
