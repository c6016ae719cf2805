"""The shape of the code base, checked: layers, no import circles, room sizes.

``lint-imports`` (setup.cfg) checks that every import runs down the layers; these tests
check what it cannot: that every module *is* in a layer (a new module nobody placed
escapes the contract), that no two modules import each other through any chain (lazy
imports inside functions included: grimp reads every import statement), that modules
and functions stay small enough to read, and that an import of icefloe inside a function
says why it is not at the top.
"""

from __future__ import annotations

import ast
import configparser
from pathlib import Path

import grimp
import pytest

from icefloe import LAYERS

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("icefloe",)
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80


def _layers() -> list[list[str]]:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    raw = cfg["importlinter:contract:layers"]["layers"]
    return [
        [m.strip() for m in line.replace("|", ":").split(":")]
        for line in raw.strip().splitlines()
        if line.strip()
    ]


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES)


def _sources() -> list[Path]:
    return sorted(p for layer in LAYERS for p in (ROOT / layer).rglob("*.py"))


# ``python -m icefloe``: two lines that call ``icefloe.app.cli`` (the top layer); the contract
# names packages, so this one module stands above it
ENTRY = "icefloe.__main__"


def test_every_module_is_in_exactly_one_layer() -> None:
    placed = [m for layer in _layers() for m in layer]
    assert len(placed) == len(set(placed)), "a module is named in two layers"
    graph = _graph()
    homeless = []
    for module in sorted(graph.modules):
        if module in PACKAGES or module == ENTRY:
            continue
        owners = [p for p in placed if module == p or module.startswith(p + ".")]
        if len(owners) != 1:
            homeless.append(f"{module}: {owners or 'no layer'}")
    assert not homeless, "place these in setup.cfg's layers contract:\n" + "\n".join(homeless)
    assert graph.find_modules_directly_imported_by(ENTRY) == {"icefloe.app.cli"}


def test_the_layers_contract_names_the_folders_top_to_bottom() -> None:
    """A module's folder tells its layer: one row a top-level folder, in LAYERS' order."""
    assert _layers() == [[f"icefloe.{layer}"] for layer in LAYERS]


def test_every_folder_opens_by_naming_its_layer() -> None:
    for number, layer in enumerate(LAYERS, start=1):
        doc = ast.get_docstring(ast.parse((ROOT / layer / "__init__.py").read_text())) or ""
        assert doc.startswith(f"Layer {number} of {len(LAYERS)}"), f"{layer}/__init__.py"


def test_the_import_root_maps_each_folder_under_it() -> None:
    """``icefloe/<layer>`` is a relative link to ``<layer>/`` (what mypy, import-linter and
    editors read); setup.py maps the same folders for the wheel."""
    for layer in LAYERS:
        link = ROOT / "icefloe" / layer
        assert link.is_symlink() and link.readlink() == Path("..", layer), link
    mapped = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()} - {"tests"}
    assert mapped == {"icefloe", *LAYERS}, "a top-level package that is not a layer"


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_between_modules_lazy_imports_included() -> None:
    graph = _graph()
    modules = {m for m in graph.modules if m not in PACKAGES}
    edges = {
        m: {i for i in graph.find_modules_directly_imported_by(m) if i in modules} for m in modules
    }
    # a package's __init__ importing its own sub-modules is how packages re-export
    for m in modules:
        edges[m] = {i for i in edges[m] if not i.startswith(m + ".")}
    assert _cycles(edges) == []


def test_no_module_over_400_lines() -> None:
    big = {
        str(p.relative_to(ROOT)): n
        for p in _sources()
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert big == {}


def test_no_function_over_80_lines() -> None:
    long = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = (node.end_lineno or node.lineno) - first + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length})")
    assert long == []


# ``Config`` and ``TablePolicy`` travel typed (STYLE.md): a parameter or attribute named for
# them is never ``Any`` (nor ``Any | None``, ``dict[str, Any]``...)
CONFIG_NAMES = ("cfg", "config", "policy")


def _is_config_name(name: str) -> bool:
    return any(name == n or name.endswith("_" + n) for n in CONFIG_NAMES)


def _names_any(annotation: ast.expr) -> bool:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        annotation = ast.parse(annotation.value, mode="eval").body  # a string annotation
    return any(
        (isinstance(n, ast.Name) and n.id == "Any")
        or (isinstance(n, ast.Attribute) and n.attr == "Any")
        for n in ast.walk(annotation)
    )


def _config_typed_any(source: str) -> list[str]:
    """``line name: annotation`` of each parameter or annotated attribute named
    ``cfg``/``config``/``policy`` (or ``*_cfg``...) whose annotation names ``Any``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            args = [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, (a.vararg, a.kwarg))]
            found += [
                f"{p.lineno} {p.arg}: {ast.unparse(p.annotation)}"
                for p in args
                if p.annotation is not None and _is_config_name(p.arg) and _names_any(p.annotation)
            ]
        elif isinstance(node, ast.AnnAssign):
            target = node.target
            name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
            if _is_config_name(name) and _names_any(node.annotation):
                found.append(f"{node.lineno} {name}: {ast.unparse(node.annotation)}")
    return sorted(found, key=lambda hit: int(hit.split()[0]))


def test_config_as_any_finder_finds_them() -> None:
    source = (
        "def f(cfg: Any, policy: 'Any | None', table_policy: dict[str, typing.Any],\n"
        "      config: Config, conf: Any, *, spark: Any) -> None:\n"
        "    self.cfg: Any = cfg\n"
        "class C:\n"
        "    policy: TablePolicy\n"
        "    config: Any\n"
    )
    assert _config_typed_any(source) == [
        "1 cfg: Any",
        "1 policy: 'Any | None'",
        "1 table_policy: dict[str, typing.Any]",
        "3 cfg: Any",
        "6 config: Any",
    ]


def test_config_and_policies_are_never_any_in_service_and_jobs() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{hit}"
        for path in _sources()
        if path.relative_to(ROOT).parts[0] in ("service", "jobs")
        for hit in _config_typed_any(path.read_text())
    ]
    assert found == [], "type these as Config, TablePolicy or MaintenancePolicy"


# Imports sit at the top of the module (STYLE.md); one inside a function is for a heavy
# optional dependency, the executors' archive, DAG parsing or the CLI's start-up, and says
# so: a comment on its line, or on the line above its block of imports
def _statement_lists(node: ast.AST) -> list[list[ast.stmt]]:
    lists = [getattr(node, f, None) for f in ("body", "orelse", "finalbody")]
    lists += [h.body for h in getattr(node, "handlers", [])]
    lists += [c.body for c in getattr(node, "cases", [])]
    return [s for s in lists if isinstance(s, list) and s and isinstance(s[0], ast.stmt)]


def _names_own_module(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return bool(node.level) or (node.module or "").split(".")[0] in PACKAGES
    return any(a.name.split(".")[0] in PACKAGES for a in node.names)


def _unexplained_lazy_imports(source: str) -> list[str]:
    """``line statement`` of each import of an icefloe module inside a function with no
    comment on its lines nor on the line above the block of imports it sits in."""
    lines = source.splitlines()
    found: list[str] = []
    checked: set[int] = set()
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            for stmts in _statement_lists(node):
                if id(stmts) in checked:
                    continue
                checked.add(id(stmts))
                block: list[ast.stmt] = []
                for stmt in [*stmts, None]:
                    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                        block.append(stmt)
                        continue
                    found += _unexplained(lines, block)
                    block = []
    return sorted(found, key=lambda hit: int(hit.split()[0]))


def _unexplained(lines: list[str], block: list[ast.stmt]) -> list[str]:
    if not block:
        return []
    above = lines[block[0].lineno - 2].strip() if block[0].lineno > 1 else ""
    return [
        f"{stmt.lineno} {ast.unparse(stmt)}"
        for stmt in block
        if isinstance(stmt, (ast.Import, ast.ImportFrom))
        and _names_own_module(stmt)
        and not above.startswith("#")
        and not any("#" in line for line in lines[stmt.lineno - 1 : stmt.end_lineno])
    ]


def test_lazy_import_finder_finds_them() -> None:
    source = (
        "from icefloe.base.config import Config\n"
        "def f():\n"
        "    import json\n"
        "    from icefloe.base.keys import Keys\n"
        "    if x:\n"
        "        from icefloe.jobs.base.plan import (\n"
        "            plan_table,\n"
        "        )\n"
        "    # the planner: only for a sort\n"
        "    from icefloe.jobs.base.plan import load_and_plan\n"
        "    from optimizer import binpack\n"
        "    from icefloe.state import queue  # stores: only for status\n"
        "    def g():\n"
        "        import icefloe.optimizer.entropy\n"
        "        from .sibling import x\n"
        "class C:\n"
        "    def m(self):\n"
        "        from pyspark.sql import functions as F\n"
    )
    assert _unexplained_lazy_imports(source) == [
        "4 from icefloe.base.keys import Keys",
        "6 from icefloe.jobs.base.plan import plan_table",
        "14 import icefloe.optimizer.entropy",
        "15 from .sibling import x",
    ]


def test_every_function_level_import_of_icefloe_says_why() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{hit}"
        for path in _sources()
        for hit in _unexplained_lazy_imports(path.read_text())
    ]
    assert found == [], "import these at the top, or say why not on the line above"
