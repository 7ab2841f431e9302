"""The package's stages import only downward, so the folders keep showing the data flow."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "grokslt"

# Bottom to top; a module may import its own stage and the stages below it.
STAGES = ["base", "training", "estimation", "analysis", "figures", "workflow", "cli"]
BASE_MODULES = {"__init__", "errors", "io", "artefacts", "settings", "runtime", "cpu_kernels"}
TOP_MODULES = {"cli", "__main__"}


def stage_of(module: str) -> str:
    """The stage of a dotted module name inside grokslt ('grokslt.training.data' -> 'training')."""
    parts = module.split(".")[1:] or ["__init__"]
    if parts[0] in BASE_MODULES:
        return "base"
    if parts[0] in TOP_MODULES:
        return "cli"
    if parts[0] in STAGES:
        return parts[0]
    raise AssertionError(f"grokslt.{parts[0]} belongs to no stage: put it in a stage folder or name it in this test")


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def grokslt_imports(path: Path) -> set[str]:
    """Every grokslt module a file imports, at the top or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "grokslt"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "grokslt":
            found.add(node.module)
            # `from grokslt.training import data` imports the module grokslt.training.data
            for alias in node.names:
                candidate = PACKAGE.parent / Path(*node.module.split("."), alias.name)
                if candidate.with_suffix(".py").exists() or candidate.is_dir():
                    found.add(f"{node.module}.{alias.name}")
    return found


def upward_imports(files, name_of=module_name) -> list[str]:
    upward = []
    for path in files:
        importer = name_of(path)
        for imported in sorted(grokslt_imports(path)):
            if STAGES.index(stage_of(imported)) > STAGES.index(stage_of(importer)):
                upward.append(f"{importer} ({stage_of(importer)}) imports {imported} ({stage_of(imported)})")
    return upward


def test_no_module_imports_from_a_stage_above_its_own():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 30
    assert upward_imports(files) == []


def test_the_check_catches_an_upward_import(tmp_path):
    bad = tmp_path / "loss.py"
    bad.write_text((PACKAGE / "training" / "loss.py").read_text() + "\nfrom grokslt.estimation import llc\n")
    assert upward_imports([bad], name_of=lambda path: "grokslt.training.loss") == [
        "grokslt.training.loss (training) imports grokslt.estimation (estimation)",
        "grokslt.training.loss (training) imports grokslt.estimation.llc (estimation)",
    ]


def test_every_module_lies_in_a_known_stage():
    for path in PACKAGE.rglob("*.py"):
        stage_of(module_name(path))
    with pytest.raises(AssertionError, match="belongs to no stage"):
        stage_of("grokslt.flat_new_module")


def import_cycles(files, name_of=module_name) -> list[list[str]]:
    """The import cycles among `files` (at the top or inside functions): each cycle's modules, sorted; a module
    importing a name of a package (`from grokslt.figures import style`) imports that package's `__init__`."""
    graph = {name_of(path): set() for path in files}
    for path in files:
        graph[name_of(path)] = {name for name in grokslt_imports(path) if name in graph} - {name_of(path)}
    cycles, index, low, stack, on_stack = [], {}, {}, [], set()

    def visit(module):  # Tarjan's strongly connected components: a component of two or more modules is a cycle
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph[module]):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(cycles)


def test_no_import_cycle_anywhere_in_the_package():
    assert import_cycles(sorted(PACKAGE.rglob("*.py"))) == []


def test_the_check_catches_a_cycle_inside_a_stage(tmp_path):
    names = {}
    files = {
        "a": "from grokslt.estimation.b import y\n",
        "b": "import grokslt.estimation.c\n",
        "c": "def f():\n    from grokslt.estimation.a import x\n",  # an import inside a function closes it
        "d": "import grokslt.estimation.a\n",  # imports into the cycle, but is not on it
    }
    for name, imports in files.items():
        path = tmp_path / f"{name}.py"
        path.write_text(imports)
        names[path] = f"grokslt.estimation.{name}"
    assert import_cycles(list(names), name_of=names.get) == [
        ["grokslt.estimation.a", "grokslt.estimation.b", "grokslt.estimation.c"]
    ]
