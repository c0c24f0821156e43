"""The layer rule of docs/design.md §2, read from the source with ``ast``.

Arrows point down: front ends (the package root, ``notebook/``, ``server/``, the ``cli*.py``
modules) -> ``kit/`` -> ``core/`` -> {``mcp/``, ``models/``, ``store/``, ``schema/``, ``config``}
-> ``protocol/``. Front ends never import each other (what several offer lives in ``kit/``), the
core never imports the native tools, and nothing outside ``examples/`` imports ``examples/``.
``secrets/`` is a leaf every layer redacts with (it imports only ``protocol/`` and ``textsafe``),
so ``mcp/`` needs nothing of ``store/``.
Every import counts, wherever it sits: at module level, inside a function (the lazy imports
that keep ``import nbagent`` cheap), under ``TYPE_CHECKING``, relative (``from . import x``)
or through ``importlib.import_module("...")`` with a literal name. A cycle that only shows
once a lazy import runs is still a cycle.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "nbagent"

# The package root is a face too: it re-exports Session (core) and loads the notebook extension.
# The walkthroughs sit on top like a person at a notebook: they drive the notebook front end.
# The CLI modules (``nbagent.cli``, ``nbagent.cli_*``) are one front end together.
FRONT_ENDS = ("nbagent", "nbagent.notebook", "nbagent.server", "nbagent.cli", "nbagent.examples.walkthroughs")
# The front-end imports that are layering, not crossing: `%load_ext nbagent` finds its hooks on
# the package root, which hands them to the notebook; the walkthroughs sit above the notebook
# front end, using it as a person at a notebook does.
FRONT_END_BRIDGES = {("nbagent", "nbagent.notebook.extension"), ("nbagent.examples.walkthroughs", "nbagent.notebook")}
# calls/ holds what every tool call obeys, whatever its source: core/ and mcp/ both apply it.
BELOW_CORE = ("nbagent.mcp", "nbagent.models", "nbagent.store", "nbagent.schema", "nbagent.config", "nbagent.calls", "nbagent.checkpoint")


@dataclass(frozen=True)
class Import:
    path: Path
    line: int
    text: str
    target: str

    def where(self, root: Path) -> str:
        return f"{self.path.relative_to(root.parent)}:{self.line}: {self.text}"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str, root: Path) -> bool:
    rel = Path(*name.split(".")[1:]) if "." in name else Path()
    base = root / rel
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _targets(node: ast.AST, package: str, root: Path) -> list[str]:
    """The nbagent modules one import statement loads (``from pkg import mod`` names ``pkg.mod``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        subs = [f"{module}.{alias.name}" for alias in node.names]
        found = [sub for sub in subs if _is_module(sub, root)]
        return found if len(found) == len(subs) else [module, *found]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "import_module"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return [node.args[0].value]
    return []


def read_imports(root: Path) -> list[Import]:
    """Every import of an nbagent module by a module under ``root``, with its file and line."""
    found: list[Import] = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        module = _module_name(path, root)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(source, filename=str(path))):
            for target in _targets(node, package, root):
                if target == root.name or target.startswith(root.name + "."):
                    text = ast.get_source_segment(source, node) or ast.unparse(node)
                    found.append(Import(path, node.lineno, " ".join(text.split()), target))
    return found


def _within(name: str, layer: str) -> bool:
    return name == layer or name.startswith(layer + ".")


def _layer(name: str, layers: tuple[str, ...]) -> str | None:
    # The root "nbagent" contains everything; it is a layer only as the module itself.
    # "<pkg>.cli" also names the CLI modules beside it, "<pkg>.cli_*".
    for layer in layers:
        if name == layer or ("." in layer and _within(name, layer)):
            return layer
        if layer.endswith(".cli") and name.startswith(layer + "_") and "." not in name[len(layer) :]:
            return layer
    return None


def layer_problems(root: Path) -> list[str]:
    """One line per import that breaks the layer rule: file, line, the import, the rule."""
    pkg = root.name
    protocol = f"{pkg}.protocol"
    examples = f"{pkg}.examples"
    front_ends = tuple(f.replace("nbagent", pkg, 1) for f in FRONT_ENDS)
    bridges = [tuple(n.replace("nbagent", pkg, 1) for n in pair) for pair in FRONT_END_BRIDGES]
    below_core = tuple(b.replace("nbagent", pkg, 1) for b in BELOW_CORE)
    problems: list[str] = []
    for imp in read_imports(root):
        source = _module_name(imp.path, root)
        face, target_face = _layer(source, front_ends), _layer(imp.target, front_ends)
        if _within(imp.target, examples) and not _within(source, examples):
            problems.append(f"{imp.where(root)}  (outside examples/, it imports {examples})")
        elif face and target_face not in (None, face, pkg) and not any(
            _layer(source, (above,)) and _within(imp.target, below) for above, below in bridges
        ):
            problems.append(f"{imp.where(root)}  (the front end {_face_name(face, pkg)} imports the front end {_face_name(target_face, pkg)})")
        elif _within(source, f"{pkg}.core") and _within(imp.target, f"{pkg}.tools"):
            problems.append(f"{imp.where(root)}  (core/ must not import tools/)")
        elif _within(source, protocol) and not _within(imp.target, protocol):
            problems.append(f"{imp.where(root)}  (protocol/ imports nothing else of {pkg})")
        elif _within(source, f"{pkg}.calls") and not any(
            _within(imp.target, f"{pkg}.{leaf}") for leaf in ("calls", "protocol", "schema")
        ):
            problems.append(f"{imp.where(root)}  (calls/ imports only protocol/ and schema/ of {pkg})")
        elif _within(source, f"{pkg}.secrets") and not any(
            _within(imp.target, f"{pkg}.{leaf}") for leaf in ("secrets", "protocol", "textsafe")
        ):
            problems.append(f"{imp.where(root)}  (secrets/ imports only protocol/ and textsafe of {pkg})")
        elif _within(source, f"{pkg}.mcp") and _within(imp.target, f"{pkg}.store"):
            problems.append(f"{imp.where(root)}  (mcp/ must not import store/; what both need of secrets is in secrets/)")
        elif _layer(source, below_core) and _within(imp.target, f"{pkg}.core"):
            problems.append(f"{imp.where(root)}  ({_layer(source, below_core)} must not import core/)")
        elif face is None and target_face:
            problems.append(f"{imp.where(root)}  (below the front ends, it imports the front end {_face_name(target_face, pkg)})")
    return problems


def _face_name(face: str, pkg: str) -> str:
    return {pkg: "the package root", f"{pkg}.cli": f"{pkg}.cli*"}.get(face, face)


def import_cycles(root: Path) -> list[list[str]]:
    """The groups of modules that import each other, round and round (the strongly connected
    components of the import graph, Tarjan's algorithm), each sorted; none is the goal."""
    graph: dict[str, set[str]] = {}
    for imp in read_imports(root):
        source = _module_name(imp.path, root)
        if imp.target != source:
            graph.setdefault(source, set()).add(imp.target)
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for target in graph.get(module, ()):
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            group = stack[stack.index(module):]
            del stack[stack.index(module):]
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return sorted(cycles)


def test_no_modules_of_nbagent_import_each_other() -> None:
    cycles = import_cycles(PACKAGE)
    assert not cycles, "modules that import each other:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_an_import_cycle_is_found_even_through_a_lazy_import(tmp_path: Path) -> None:
    root = tmp_path / "nbagent"
    (root / "core").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "core" / "__init__.py").write_text("")
    (root / "core" / "a.py").write_text("from nbagent.core import b\n")
    (root / "core" / "b.py").write_text("def f():\n    from nbagent.core.a import x\n")
    (root / "core" / "c.py").write_text("from nbagent.core import a\n")

    assert import_cycles(root) == [["nbagent.core.a", "nbagent.core.b"]]


def test_every_import_in_nbagent_points_down_the_layers() -> None:
    problems = layer_problems(PACKAGE)
    assert not problems, "imports against the layer rule (docs/design.md §2):\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("path", "source", "line", "expected"),
    [
        ("protocol/items.py", "def f():\n    from nbagent.core import turn\n", 2, "protocol/ imports nothing"),
        ("mcp/x.py", "def f():\n    from ..core.turn import run\n", 2, "nbagent.mcp must not import core/"),
        ("store/x.py", "import importlib\nimportlib.import_module('nbagent.core.session')\n", 2, "must not import core/"),
        ("models/x.py", "from nbagent import __version__\n", 1, "imports the front end the package root"),
        ("core/x.py", "from .. import notebook\n", 1, "imports the front end nbagent.notebook"),
        ("mcp/x.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import nbagent.cli\n", 3, "nbagent.cli"),
        ("calls/x.py", "from nbagent.mcp import y\n", 1, "calls/ imports only protocol/ and schema/"),
        ("mcp/x.py", "from nbagent import cli_mcp\n", 1, "imports the front end nbagent.cli*"),
        ("notebook/x.py", "def f():\n    from nbagent.cli_mcp import x\n", 2, "front end nbagent.notebook imports the front end nbagent.cli*"),
        ("cli_x.py", "from nbagent.notebook import y\n", 1, "front end nbagent.cli* imports the front end nbagent.notebook"),
        ("core/x.py", "from nbagent.tools import notebook\n", 1, "core/ must not import tools/"),
        ("notebook/x.py", "from nbagent.examples.quickstart import build\n", 1, "outside examples/, it imports nbagent.examples"),
        ("secrets/x.py", "from nbagent.config import Config\n", 1, "secrets/ imports only protocol/ and textsafe"),
        ("secrets/x.py", "def f():\n    from nbagent.store import y\n", 2, "secrets/ imports only protocol/ and textsafe"),
        ("mcp/x.py", "from nbagent.store.rollout import RolloutWriter\n", 1, "mcp/ must not import store/"),
    ],
)
def test_a_wrong_way_import_is_reported_with_its_file_line_and_text(
    tmp_path: Path, path: str, source: str, line: int, expected: str
) -> None:
    root = tmp_path / "nbagent"
    for folder in ("", "protocol", "calls", "core", "mcp", "store", "models", "notebook", "tools", "examples", "secrets"):
        (root / folder).mkdir(exist_ok=True)
        (root / folder / "__init__.py").write_text("")
    (root / "notebook" / "y.py").write_text("")
    (root / "examples" / "quickstart.py").write_text("")
    (root / "cli_mcp.py").write_text("")
    (root / "core" / "turn.py").write_text("")
    (root / "core" / "session.py").write_text("")
    (root / "cli.py").write_text("")
    (root / path).write_text(source)

    [problem] = layer_problems(root)
    assert problem.startswith(f"nbagent/{path}:{line}: ")
    assert expected in problem


def test_downward_imports_are_not_reported(tmp_path: Path) -> None:
    root = tmp_path / "nbagent"
    for folder in ("", "protocol", "core", "mcp", "notebook", "secrets"):
        (root / folder).mkdir(exist_ok=True)
        (root / folder / "__init__.py").write_text("")
    (root / "protocol" / "items.py").write_text("from . import _base\nfrom nbagent.protocol import items\n")
    (root / "protocol" / "_base.py").write_text("")
    (root / "textsafe.py").write_text("")
    (root / "secrets" / "r.py").write_text("from nbagent.protocol import items\nfrom nbagent.textsafe import x\nfrom . import s\n")
    (root / "secrets" / "s.py").write_text("")
    (root / "mcp" / "x.py").write_text("from nbagent.protocol import items\nfrom . import y\nfrom nbagent.secrets import r\n")
    (root / "mcp" / "y.py").write_text("")
    (root / "core" / "x.py").write_text("def f():\n    from nbagent.mcp import x\n")
    (root / "notebook" / "x.py").write_text("import nbagent\nfrom nbagent.core import x\nfrom nbagent.kit import k\n")
    (root / "kit").mkdir()
    (root / "kit" / "__init__.py").write_text("")
    (root / "kit" / "k.py").write_text("from nbagent.core import x\n")
    (root / "__init__.py").write_text("def f():\n    from nbagent.notebook.extension import load\n")
    (root / "notebook" / "extension.py").write_text("")
    (root / "examples").mkdir()
    (root / "examples" / "__init__.py").write_text("")
    (root / "examples" / "q.py").write_text("from nbagent.examples import r\nfrom nbagent.core import x\n")
    (root / "examples" / "r.py").write_text("")

    assert layer_problems(root) == []
