"""Boundaries as tests (issue 24, item 3): the import graph of ``src/icml25`` keeps its layers apart.

The graph is read statically with :mod:`ast` from every ``.py`` file under ``src/icml25``: every
``import`` and ``from ... import`` anywhere in a file (module level, inside functions and classes, under
``if TYPE_CHECKING:``), relative imports resolved against the importing module's package, plus
``importlib.import_module("...")`` calls with a literal module name. ``from pkg import name`` imports
``pkg.name`` when that is a module of the tree, else ``pkg``.

Rules (each its own test; a failure lists every offender as ``file:line`` and what it imports):

1. no paper imports another paper: a module of ``icml25.papers.<a>`` never imports ``icml25.papers.<b>``
   (b != a);
2. a paper's **reproduction modules** are ``repro.py``, any ``repro_*.py`` (the experiments and claims,
   run through :mod:`icml25.core`) and ``figures.py`` (the experiments' figures, which may draw with
   :mod:`icml25.core.plots`, the claims' own seed intervals; checklist item 6 puts figures there); **every
   other module of the paper's folder is a method module**, ``__init__.py`` (the public API) included. A
   method module imports neither the reproduction machinery (``icml25.core``, ``icml25.cli``,
   ``icml25._entry``) nor a reproduction module of its paper. The shared building blocks of
   ``icml25.common`` that method modules use obey the same rule (else a method would reach the machinery
   through them);
3. nothing in ``src/icml25`` uses another module's private names: no ``from m import _x`` with ``m`` another
   module of ``icml25`` (``_x`` a function, class, constant or submodule), no ``import m`` (or ``from p import
   m``) followed by ``m._x``; dunder names (``__version__``) are public;
4. every module of ``icml25.common`` is imported by at least two papers (by any of a paper's modules, ``repro.py``
   included; else it belongs in that paper);
5. the modules of ``icml25.core`` import each other without a cycle.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = "icml25"
MACHINERY = ("icml25.core", "icml25.cli", "icml25._entry")


@dataclass(frozen=True)
class Import:
    """One imported module (``target``) and the names taken from it (``names``; empty for ``import m``)."""

    module: str
    file: str
    line: int
    target: str
    names: tuple[str, ...] = ()

    def where(self) -> str:
        return f"{self.file}:{self.line}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    """Every module of the tree: dotted name -> file."""
    return {_module_name(p): p for p in sorted((SRC / ROOT).rglob("*.py"))}


def _is_package(module: str) -> bool:
    return _modules()[module].name == "__init__.py"


def _resolve(module: str, level: int, name: str | None) -> str:
    """The absolute module named by ``from <level dots><name> import ...`` inside ``module``."""
    if level == 0:
        return name or ""
    base = module.split(".") if _is_package(module) else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _inside(target: str, prefix: str) -> bool:
    return target == prefix or target.startswith(prefix + ".")


def _rel(path: Path) -> str:
    return path.relative_to(SRC.parent).as_posix()


@cache
def _tree(module: str) -> ast.Module:
    path = _modules()[module]
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _imports_in(tree: ast.AST, module: str, file: str) -> list[Import]:
    """Every import in ``tree`` (the source of ``module``, in ``file``), at any depth."""
    modules = _modules()
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Import(module, file, node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(module, node.level, node.module)
            plain = tuple(a.name for a in node.names if f"{source}.{a.name}" not in modules)
            if plain:
                found.append(Import(module, file, node.lineno, source, plain))
            found += [Import(module, file, node.lineno, f"{source}.{a.name}") for a in node.names
                      if f"{source}.{a.name}" in modules]
        elif (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
              and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append(Import(module, file, node.lineno, node.args[0].value))
    return sorted(found, key=lambda i: i.line)


def _imports_of(module: str) -> list[Import]:
    return _imports_in(_tree(module), module, _rel(_modules()[module]))


@cache
def _graph() -> tuple[Import, ...]:
    """Every import of the tree, in file order."""
    return tuple(imp for module in _modules() for imp in _imports_of(module))


def _internal() -> list[Import]:
    return [imp for imp in _graph() if _inside(imp.target, ROOT)]


def _paper(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == [ROOT, "papers"] else None


def _is_repro(module: str) -> bool:
    last = module.split(".")[-1]
    return _paper(module) is not None and not _is_package(module) and (
        last in ("repro", "figures") or last.startswith("repro_"))


def _report(title: str, offenders: list[str]) -> str:
    return f"{title} ({len(offenders)}):\n  " + "\n  ".join(offenders)


# ---------------------------------------------------------------- the reader itself

def test_the_reader_sees_every_kind_of_import():
    """Function-level, ``TYPE_CHECKING``, relative and ``import_module`` imports are all read."""
    source = """
from typing import TYPE_CHECKING
from . import cmdp
from .cmdp import thing, _hidden
from .. import vlgpo
if TYPE_CHECKING:
    from icml25.core.experiment import ConfigError
def f():
    import icml25.common.checks as c
    import importlib
    return importlib.import_module("icml25.papers.pas.data")
"""
    got = {(i.line, i.target, i.names) for i in _imports_in(ast.parse(source), "icml25.papers.omdpd.omdpd", "x.py")}
    assert got >= {
        (3, "icml25.papers.omdpd.cmdp", ()),
        (4, "icml25.papers.omdpd.cmdp", ("thing", "_hidden")),
        (5, "icml25.papers.vlgpo", ()),
        (7, "icml25.core.experiment", ("ConfigError",)),
        (9, "icml25.common.checks", ()),
        (11, "icml25.papers.pas.data", ()),
    }
    assert _resolve("icml25.papers.omdpd", 1, "cmdp") == "icml25.papers.omdpd.cmdp"  # from a package's __init__
    assert {_paper(i.module) for i in _internal() if _paper(i.module)} >= {"omdpd", "vlgpo", "mf_lal"}


# ---------------------------------------------------------------- rule 1

def test_no_paper_imports_another_paper():
    offenders = [f"{i.where()}: {i.module} imports {i.target}" for i in _internal()
                 if _paper(i.module) and _paper(i.target) and _paper(i.target) != _paper(i.module)]
    assert not offenders, _report("a paper imports another paper", offenders)


# ---------------------------------------------------------------- rule 2

def test_method_modules_import_neither_core_nor_repro():
    offenders = []
    for i in _internal():
        paper = _paper(i.module)
        method = paper is not None and not _is_repro(i.module)
        if not (method or _inside(i.module, f"{ROOT}.common")):
            continue
        if any(_inside(i.target, m) for m in MACHINERY):
            offenders.append(f"{i.where()}: {i.module} imports the machinery {i.target}")
        elif paper is not None and _paper(i.target) == paper and _is_repro(i.target):
            offenders.append(f"{i.where()}: {i.module} imports its paper's reproduction module {i.target}")
    assert not offenders, _report("a method module (or icml25.common) imports core or repro", offenders)


# ---------------------------------------------------------------- rule 3

def _module_bindings(tree: ast.AST, module: str) -> dict[str, str]:
    """Local names bound to a module of the tree by an import anywhere in ``tree`` (of ``module``): name -> module."""
    modules = _modules()
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _inside(alias.name, ROOT):
                    bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else ROOT
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(module, node.level, node.module)
            for alias in node.names:
                if f"{source}.{alias.name}" in modules:
                    bound[alias.asname or alias.name] = f"{source}.{alias.name}"
    return bound


def _dotted(node: ast.expr, bound: dict[str, str]) -> str | None:
    """The module an expression like ``icml25.papers.x`` or ``alias`` names, if any."""
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    if isinstance(node, ast.Attribute):
        parent = _dotted(node.value, bound)
        if parent is not None and f"{parent}.{node.attr}" in _modules():
            return f"{parent}.{node.attr}"
    return None


def _private_attributes(tree: ast.AST, module: str) -> list[tuple[int, str]]:
    """``(line, "owner._name")`` for each private attribute read off another module bound by an import."""
    bound = _module_bindings(tree, module)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            owner = _dotted(node.value, bound)
            if owner is not None and owner != module:
                found.append((node.lineno, f"{owner}.{node.attr}"))
    return found


def test_private_attribute_reader():
    source = """
import icml25.papers.omdpd.cmdp
import icml25.papers.omdpd.cmdp as c
from icml25.papers.omdpd import cmdp as alias
from . import omdpd
icml25.papers.omdpd.cmdp._a
c._b
alias._c
omdpd._d
omdpd.__version__
self._e
"""
    got = _private_attributes(ast.parse(source), "icml25.papers.omdpd.repro")
    assert got == [(6, "icml25.papers.omdpd.cmdp._a"), (7, "icml25.papers.omdpd.cmdp._b"),
                   (8, "icml25.papers.omdpd.cmdp._c"), (9, "icml25.papers.omdpd.omdpd._d")]


def test_no_module_uses_another_modules_private_names():
    offenders = []
    for i in _internal():
        if i.target == i.module:
            continue
        offenders += [f"{i.where()}: {i.module} imports {n} from {i.target}" for n in i.names if _is_private(n)]
        last = i.target.split(".")[-1]
        if not i.names and _is_private(last) and i.target.rsplit(".", 1)[0] != i.module:
            offenders.append(f"{i.where()}: {i.module} imports the private module {i.target}")
    for module, path in _modules().items():
        offenders += [f"{_rel(path)}:{line}: {module} uses {used}"
                      for line, used in _private_attributes(_tree(module), module)]
    assert not offenders, _report("a module uses another module's private names", offenders)


# ---------------------------------------------------------------- rule 4

def test_every_common_module_serves_two_papers():
    users: dict[str, set[str]] = defaultdict(set)
    for i in _internal():
        if _paper(i.module) and _inside(i.target, f"{ROOT}.common"):
            users[i.target].add(_paper(i.module))
    common = [m for m in _modules() if _inside(m, f"{ROOT}.common") and not _is_package(m)]
    assert common, "no module in icml25.common: the rule would pass vacuously"
    offenders = [f"{_rel(_modules()[m])}: imported by {sorted(users[m]) or 'no paper'}" for m in common
                 if len(users[m]) < 2]
    assert not offenders, _report("a module of icml25.common serves fewer than two papers (move it into the paper)",
                                  offenders)


# ---------------------------------------------------------------- rule 5

def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node, or with a self-loop (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges.get(v, ()):
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_cycles_finder():
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert _cycles({"a": {"b"}, "b": {"c"}}) == []


def test_core_has_no_import_cycle():
    core = f"{ROOT}.core"
    edges: dict[str, set[str]] = defaultdict(set)
    lines: dict[tuple[str, str], list[str]] = defaultdict(list)
    for i in _internal():
        if _inside(i.module, core) and _inside(i.target, core) and i.target != i.module:
            edges[i.module].add(i.target)
            lines[i.module, i.target].append(i.where())
    cycles = _cycles(edges)
    offenders = [" <-> ".join(c) + ": " + "; ".join(f"{a} -> {b} at {', '.join(lines[a, b])}"
                                                    for a in c for b in c if (a, b) in lines) for c in cycles]
    assert not offenders, _report("an import cycle among icml25.core's modules", offenders)
