"""The module's layers, as its imports draw them:

- mgr_sla/core/ is pure: it imports nothing of placement/, shell/, module.py,
  worker.py or ceph-mgr's mgr_module (only the core itself and crush_rules);
- mgr_sla/placement/ imports the core, the worker threads and crush_rules, never the
  shell or mgr_module;
- every file of the module imports (with a stand-in mgr_module for the shell).
"""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from harness.fake_mgr import install_fake_mgr_module

ROOT = Path(__file__).resolve().parents[2]
MGR = ROOT / "mgr_sla"
# what each layer may import of the module (dotted under mgr_sla), besides itself
ALLOWED = {
    "core": ("core", "crush_rules"),
    "placement": ("core", "placement", "worker", "crush_rules"),
}


def module_files() -> list[Path]:
    return sorted(p for p in MGR.rglob("*.py")
                  if not {"crush_rules", "_vendor"} & set(p.relative_to(MGR).parts))


def dotted(path: Path) -> str:
    parts = path.relative_to(MGR).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_in(text: str, module: str, is_package: bool = False) -> list[str]:
    """What a file of `module` (dotted under mgr_sla) imports: mgr_sla modules
    as dotted names under mgr_sla, and mgr_module; the rest is left out."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    package = [p for p in package if p]
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1]
            target = [*base, *(node.module.split(".") if node.module else [])]
            if node.module is None:  # `from . import x`: x may be a module
                found += [".".join([*target, a.name]) for a in node.names]
            else:
                found.append(".".join(target))
        elif isinstance(node, ast.ImportFrom) and node.module == "mgr_module":
            found.append("mgr_module")
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name == "mgr_module"]
    return found


def violations(layer: str, files: dict[str, tuple[str, bool]]) -> list[str]:
    """`module imports target` for each import a layer's files may not make;
    files: dotted module -> (its text, whether it is a package's __init__)."""
    wrong = []
    for module, (text, is_package) in sorted(files.items()):
        if module.split(".")[0] != layer:
            continue
        for target in imports_in(text, module, is_package):
            if target.split(".")[0] not in ALLOWED[layer]:
                wrong.append(f"{module} imports {target}")
    return wrong


def the_module() -> dict[str, tuple[str, bool]]:
    return {dotted(p): (p.read_text(), p.name == "__init__.py") for p in module_files()}


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_a_layer_imports_only_what_lies_below_it(layer: str) -> None:
    wrong = violations(layer, the_module())
    assert not wrong, "\n".join(wrong)


def test_the_rule_catches_a_core_file_importing_the_shell_or_the_mgr() -> None:
    files = the_module()
    text, _ = files["core.tick"]
    files["core.tick"] = (text + "\nfrom ..shell.status import status_dict\n"
                          "from mgr_module import MgrModule\n", False)
    files["placement.base"] = ("from ..shell import compat\n", False)
    assert violations("core", files) == ["core.tick imports shell.status",
                                         "core.tick imports mgr_module"]
    assert violations("placement", files) == ["placement.base imports shell"]


@pytest.mark.parametrize("path", module_files(), ids=lambda p: str(p.relative_to(MGR)))
def test_every_file_of_the_module_imports(path: Path) -> None:
    install_fake_mgr_module()
    name = "mgr_sla" + ("." + dotted(path) if dotted(path) else "")
    importlib.import_module(name)


def cycles(files: dict[str, tuple[str, bool]]) -> list[list[str]]:
    """Import cycles among the module's files (dotted names), each once."""
    graph = {m: {t for t in imports_in(text, m, pkg) if t in files and t != m}
             for m, (text, pkg) in files.items()}
    found: list[list[str]] = []
    done: set[str] = set()

    def walk(node: str, path: list[str]) -> None:
        for nxt in sorted(graph[node]):
            if nxt in path:
                cycle = path[path.index(nxt):]
                if sorted(cycle) not in [sorted(c) for c in found]:
                    found.append(cycle)
            elif nxt not in done:
                walk(nxt, [*path, nxt])
        done.add(node)
    for start in sorted(graph):
        if start not in done:
            walk(start, [start])
    return found


def test_no_file_of_the_module_imports_one_that_imports_it_back() -> None:
    assert cycles(the_module()) == []
    files = the_module()
    files["shell.facts"] = (files["shell.facts"][0] + "\nfrom .admission_step import x\n",
                            False)
    assert ["shell.admission_step", "shell.facts"] in [sorted(c) for c in cycles(files)]
