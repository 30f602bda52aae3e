"""The core's layers depend in one direction (docs/architecture.md): every import of every module
of ``arraygrad/``, those inside functions included, goes to a lower layer, so there is no cycle
for a function-local import to hide."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "arraygrad"

LAYERS = {  # docs/architecture.md's layers, numbered by what each may import
    0: ["errors", "_standard", "hookspecs", "_grad_mode", "_pytree"],
    1: ["rules", "_anomaly"],
    2: ["_watch"],
    3: ["_plugins", "_numpy_protocol", "_torch_protocol", "_buffers", "_views"],
    4: ["_engine", "_methods", "_checks"],
    5: ["_variable"],
    6: ["_arguments"],
    7: ["_specials"],
    8: ["_namespace"],
    9: ["_forward", "autograd", "_einops", "_debug", "_checkpoint"],
    10: ["_transforms", "testing", "_function", "scipy"],
    11: ["arraygrad", "conformance"],  # the package's public names; the certification suite
    12: ["cli"],
    13: ["__main__"],  # python -m arraygrad: the command
}
LAYER_OF = {name: layer for layer, names in LAYERS.items() for name in names}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _unit(module: str) -> str:
    """The unit a module belongs to in LAYERS: ``arraygrad.rules.linalg`` is ``rules``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def imports_of(path: Path) -> set[str]:
    """Every arraygrad module that ``path`` imports, at any depth of its code."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:  # `from . import _engine` imports a module
                candidate = f"{target}.{alias.name}"
                as_path = PACKAGE.parent / candidate.replace(".", "/")
                found.add(candidate if as_path.with_suffix(".py").exists() or as_path.is_dir()
                          else target)
    return {name for name in found if name.split(".")[0] == "arraygrad" and name != module}


def import_graph() -> dict[str, set[str]]:
    return {_module_name(path): imports_of(path) for path in sorted(PACKAGE.rglob("*.py"))}


def test_the_graph_is_read_from_every_import_including_those_in_functions():
    graph = import_graph()
    assert "arraygrad.rules._core" in graph["arraygrad.rules.linalg"]
    assert "arraygrad._engine" in graph["arraygrad._variable"]
    source = "def f():\n    from ._variable import Variable\n"
    probe = PACKAGE / "_probe_for_test_layers.py"
    probe.write_text(source)
    try:
        assert imports_of(probe) == {"arraygrad._variable"}
    finally:
        probe.unlink()


def test_no_import_cycle():
    graph = import_graph()
    state: dict[str, str] = {}

    def visit(module, path):
        state[module] = "open"
        for target in sorted(graph.get(module, ())):
            if state.get(target) == "open":
                cycle = path[path.index(target):] + [target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in graph:
        if module not in state:
            visit(module, [module])


def test_each_layer_imports_only_layers_below_it():
    wrong = []
    for module, targets in import_graph().items():
        unit = _unit(module)
        assert unit in LAYER_OF, f"{module} has no layer in LAYERS: add it"
        for target in targets:
            if _unit(target) == unit:
                continue  # within one unit (rules/ and its helpers)
            if LAYER_OF[_unit(target)] >= LAYER_OF[unit]:
                wrong.append(f"{module} (layer {LAYER_OF[unit]}) imports {target}")
    assert not wrong, "\n".join(wrong)


def test_rules_know_neither_variables_nor_the_registry():
    for path in (PACKAGE / "rules").glob("*.py"):
        outside = {t for t in imports_of(path) if _unit(t) != "rules" and t != "arraygrad.errors"}
        assert not outside, f"{path.name} imports {outside}"
