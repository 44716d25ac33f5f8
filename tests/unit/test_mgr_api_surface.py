"""The mgr API the module uses, held against every release's mgr_module.py.

The surface of each release (names and parameters, recorded as facts in
data/mgr_api_surface.json: Pacific, Reef and Tentacle parsed from Debian's
packages, Squid- and Umbrella-era sources read from ceph/ceph) is compared with
what mgr_sla really touches, found by walking its AST:

- names imported from `mgr_module` or read as `mgr_module.X` / getattr(mgr_module, "X");
- attributes of the MgrModule: `self.X` in a MgrModule subclass that the class
  does not define itself, `super().X`, and `module.X` where compat.py takes the
  module as a parameter named `module`;
- `X.Y` on such an attribute (`self.ClusterLogPrio.INFO`, `module.rados.mon_command`);
- methods called on the OSDMap from `get_osdmap()`;
- the keyword fields passed to `compat.option(...)` (mgr_module.Option).

A name one release lacks fails the test unless SHIMS names the compat.py
function that handles the difference (and that function exists and is the
only place the name is used).
"""
from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mgr_sla.core.settings import SETTINGS_SPECS

ROOT = Path(__file__).resolve().parents[2]
MGR_SLA_DIR = ROOT / "mgr_sla"
SURFACE = json.loads((Path(__file__).parent / "data" / "mgr_api_surface.json").read_text())
RELEASES = SURFACE["releases"]

# mgr API names some release lacks, each handled by the compat.py function named.
SHIMS = {
    "mgr_module.CLIReadCommand": "read_command",    # Tentacle 20.2.4 has none: registry .Read
    "mgr_module.CLIWriteCommand": "write_command",  # Tentacle 20.2.4 has none: registry .Write
    "mgr_module.CLICommandBase": "read_command",    # Tentacle+ only: probed with getattr
    "MgrModule.get_counter": "perf_counter",        # Tentacle+: get_unlabeled_counter
    "MgrModule.get_unlabeled_counter": "perf_counter",  # Tentacle+ only
}


@dataclass
class Use:
    where: str  # file:line of the first use
    args: list[tuple[int, frozenset[str], bool]] = field(default_factory=list)
    # per call: (positional count, keyword names, *args/**kwargs passed)


def _calls(node: ast.Call) -> tuple[int, frozenset[str], bool]:
    star = any(isinstance(a, ast.Starred) for a in node.args) or any(
        k.arg is None for k in node.keywords)
    positional = sum(1 for a in node.args if not isinstance(a, ast.Starred))
    return positional, frozenset(k.arg for k in node.keywords if k.arg), star


# The MgrModule subclass is split into mixins (placement.py, pool_commands.py)
# over ShellBase (shell_common.py), which declares the mgr calls they make for
# the type checker only (under TYPE_CHECKING): those stay uses, not definitions.
SHELL_BASES = {"MgrModule", "mgr_module.MgrModule"}


# The module's collaborators get `get_osdmap` injected, late-bound.
OSDMAP_GETTERS = ("self.get_osdmap", "module.get_osdmap", "self._get_osdmap",
                  "self._mgr.get_osdmap")


def _defined_in(node: ast.ClassDef) -> set[str]:
    defined: set[str] = set()
    skip: set[ast.AST] = set()
    for item in ast.walk(node):
        if isinstance(item, ast.If) and ast.unparse(item.test) == "TYPE_CHECKING":
            skip.update(ast.walk(item))
    for item in ast.walk(node):
        if item in skip:
            continue
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defined.add(item.name)
        elif isinstance(item, ast.Attribute) and isinstance(item.ctx, ast.Store) \
                and isinstance(item.value, ast.Name) and item.value.id == "self":
            defined.add(item.attr)
    for item in node.body:
        targets = item.targets if isinstance(item, ast.Assign) else \
            [item.target] if isinstance(item, ast.AnnAssign) else []
        defined.update(t.id for t in targets if isinstance(t, ast.Name))
    return defined


_SHELL_DEFINED: set[str] | None = None


def module_files() -> list[Path]:
    """Every file of the module, its subpackages included (not the crush_rules
    copy inside it, which is the generator's, nor the vendored library)."""
    return sorted(p for p in MGR_SLA_DIR.rglob("*.py")
                  if not {"crush_rules", "_vendor"} & set(p.relative_to(MGR_SLA_DIR).parts))


def shell_defined() -> set[str]:
    """Every name the module class, its mixins and ShellBase define."""
    global _SHELL_DEFINED
    if _SHELL_DEFINED is None:
        _SHELL_DEFINED = set()
        for path in module_files():
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef) and (
                        {ast.unparse(b) for b in node.bases} & SHELL_BASES
                        or node.name == "ShellBase"):
                    _SHELL_DEFINED |= _defined_in(node)
    return _SHELL_DEFINED


class Collector(ast.NodeVisitor):
    def __init__(self, path: Path) -> None:
        self.path = path
        self.uses: dict[str, Use] = {}
        self._mgr_class: set[str] | None = None  # names the MgrModule subclass defines
        self._osdmaps: set[str] = set()
        self._parents: dict[ast.AST, ast.AST] = {}

    def add(self, name: str, node: ast.AST) -> None:
        use = self.uses.setdefault(name, Use(f"{self.path.name}:{getattr(node, 'lineno', 0)}"))
        parent = self._parents.get(node)
        if isinstance(parent, ast.Call) and parent.func is node:
            use.args.append(_calls(parent))

    def run(self) -> dict[str, Use]:
        tree = ast.parse(self.path.read_text())
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                self._parents[child] = parent
        self.visit(tree)
        return self.uses

    # -- mgr_module names ----------------------------------------------------
    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module == "mgr_module":
            for alias in node.names:
                self.add(f"mgr_module.{alias.name}", node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        bases = {ast.unparse(b) for b in node.bases}
        if not bases & SHELL_BASES:
            self.generic_visit(node)
            return
        # the module class and its mixins: what any of them defines is ours
        self._mgr_class, outer = shell_defined() | _defined_in(node), self._mgr_class
        self.generic_visit(node)
        self._mgr_class = outer

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        outer = self._osdmaps
        self._osdmaps = set()
        for item in ast.walk(node):
            if isinstance(item, ast.Assign) and isinstance(item.value, ast.Call) \
                    and ast.unparse(item.value.func) in OSDMAP_GETTERS:
                self._osdmaps.update(t.id for t in item.targets if isinstance(t, ast.Name))
        self.generic_visit(node)
        self._osdmaps = outer

    def _mgr_attr(self, node: ast.Attribute) -> str | None:
        """`X` when node is `self.X` (MgrModule subclass), `module.X` (compat.py),
        `self._module.X` (module_port.py) or `super().X`."""
        base = node.value
        if isinstance(base, ast.Name) and base.id == "module" and self.path.name == "compat.py":
            return node.attr
        if ast.unparse(base) == "self._module" and self.path.name == "module_port.py":
            return node.attr  # the port's adapter: every call of it is the MgrModule's
        if isinstance(base, ast.Name) and base.id == "self" and self._mgr_class is not None \
                and node.attr not in self._mgr_class:
            return node.attr
        if isinstance(base, ast.Call) and ast.unparse(base.func) == "super" \
                and self._mgr_class is not None:
            return node.attr
        return None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        base = node.value
        if isinstance(base, ast.Name) and base.id == "mgr_module":
            self.add(f"mgr_module.{node.attr}", node)
        elif isinstance(base, ast.Name) and base.id in self._osdmaps:
            self.add(f"OSDMap.{node.attr}", node)
        elif isinstance(base, ast.Attribute) and self._mgr_attr(base):
            self.add(f"MgrModule.{self._mgr_attr(base)}.{node.attr}", node)
        attr = self._mgr_attr(node)
        if attr is not None:
            self.add(f"MgrModule.{attr}", node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = ast.unparse(node.func)
        if func in ("getattr", "hasattr") and len(node.args) >= 2 \
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            owner = ast.unparse(node.args[0])
            if owner == "mgr_module":
                self.add(f"mgr_module.{node.args[1].value}", node)
            elif owner == "module" and self.path.name == "compat.py":
                self.add(f"MgrModule.{node.args[1].value}", node)
        if func == "compat.option":
            for k in node.keywords:
                if k.arg:
                    self.add(f"Option.{k.arg}", node)
        self.generic_visit(node)


def used_surface() -> dict[str, Use]:
    uses: dict[str, Use] = {}
    for path in module_files():
        for name, use in Collector(path).run().items():
            uses.setdefault(name, Use(use.where)).args.extend(use.args)
    # the Option fields the module declares: its option specs, as compat.option gets them
    for spec in SETTINGS_SPECS:
        for key in spec.fields():
            uses.setdefault(f"Option.{key}", Use(f"settings.py ({spec.name})"))
    return uses


def lookup(release: dict, name: str) -> tuple[bool, list[str] | None]:
    """(present, parameters or None) of a collected name in one release."""
    section, _, rest = name.partition(".")
    if section == "mgr_module":
        entry = release["mgr_module"].get(rest)
        return entry is not None, (entry or {}).get("params")
    if section == "Option":
        return rest in {p.split("=")[0] for p in release["Option"]}, None
    if section == "OSDMap":
        entry = release["OSDMap"].get(rest)
        return entry is not None, (entry or {}).get("params")
    attr, _, member = rest.partition(".")
    if attr in SURFACE["class_hooks"]["all"] or attr in ("CLICommand", "__init__"):
        return True, None  # set by the module itself or by ceph-mgr on the instance
    entry = release["MgrModule"].get(attr)
    if entry is None:
        return False, None
    if member:
        if attr == "ClusterLogPrio":
            return member in release["ClusterLogPrio"], None
        if attr == "rados":
            return member == "mon_command", SURFACE["rados.Rados.mon_command"]["params"]
        return True, None
    return True, entry.get("params")


def fits(params: list[str], call: tuple[int, frozenset[str], bool]) -> str | None:
    """Why a call (positional count, keywords, starred) does not fit params, or None."""
    positional, keywords, star = call
    names = [p.lstrip("*").split("=")[0] for p in params]
    kwonly_at = params.index("*") if "*" in params else None
    if any(p.startswith("*") and p != "*" and not p.startswith("**") for p in params):
        kwonly_at = next(i for i, p in enumerate(params) if p.startswith("*")
                         and not p.startswith("**"))
        varargs = True
    else:
        varargs = False
    plain = params[:kwonly_at] if kwonly_at is not None else \
        [p for p in params if not p.startswith("**")]
    if positional > len(plain) and not varargs:
        return f"{positional} positional arguments, takes {len(plain)}"
    if not any(p.startswith("**") for p in params):
        unknown = keywords - set(names)
        if unknown:
            return f"unknown keyword(s) {sorted(unknown)}"
    if not star:
        required = [p for p in plain if "=" not in p and not p.startswith("*")]
        missing = [p for p in required[positional:] if p not in keywords]
        if missing:
            return f"missing {missing}"
    return None


USES = used_surface()


def test_collector_finds_what_the_module_calls() -> None:
    # The walk must see the calls this test exists for; if these vanish the
    # collector broke (or the module changed: then update this list).
    for name in ("mgr_module.MgrModule", "mgr_module.HandleCommandResult",
                 "mgr_module.CLIReadCommand", "mgr_module.Option", "MgrModule.get",
                 "MgrModule.get_osdmap", "OSDMap.map_pool_pgs_up", "MgrModule.get_store",
                 "MgrModule.set_store", "MgrModule.get_module_option",
                 "MgrModule.set_health_checks", "MgrModule.remote", "MgrModule.rados",
                 "MgrModule.rados.mon_command", "MgrModule.ClusterLogPrio.INFO",
                 "MgrModule.log", "Option.runtime"):
        assert name in USES, f"{name} not collected from mgr_sla/*.py"


def test_collector_sees_a_new_call(tmp_path: Path) -> None:
    src = tmp_path / "module.py"
    src.write_text(
        "from mgr_module import MgrModule\n"
        "class M(MgrModule):\n"
        "    def tick(self):\n"
        "        m = self.get_osdmap()\n"
        "        m.pg_to_up_acting_osds(1, 2)\n"
        "        self.get_all_perf_counters(prio_limit=5)\n"
        "        self.mine()\n"
        "    def mine(self):\n"
        "        return self.get('df', mutable=True)\n")
    uses = Collector(src).run()
    assert "MgrModule.mine" not in uses
    assert uses["OSDMap.pg_to_up_acting_osds"].args == [(2, frozenset(), False)]
    assert uses["MgrModule.get_all_perf_counters"].args == [(0, frozenset({"prio_limit"}), False)]
    assert not lookup(RELEASES["reef"], "MgrModule.get_all_perf_counters")[0]
    present, params = lookup(RELEASES["tentacle"], "MgrModule.get")
    assert present and params is not None
    assert fits(params, uses["MgrModule.get"].args[0]) is not None  # mutable= is Umbrella's


def test_surface_data_is_complete() -> None:
    assert set(RELEASES) == {"pacific", "reef", "squid", "tentacle", "umbrella"}
    for name, rel in RELEASES.items():
        assert rel["source"] and rel["checked"], name
        assert {"get", "get_osdmap", "remote", "set_health_checks"} <= set(rel["MgrModule"]), name


def _gaps() -> Iterator[tuple[str, str, str]]:
    for name, use in sorted(USES.items()):
        for release, surface in RELEASES.items():
            present, params = lookup(surface, name)
            if not present:
                yield release, name, f"missing ({use.where})"
                continue
            for call in use.args if params is not None else []:
                why = fits(params, call)
                if why:
                    yield release, name, f"call at {use.where} does not fit {params}: {why}"


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_every_used_name_exists_or_is_shimmed(release: str) -> None:
    problems = [f"{name}: {why}" for rel, name, why in _gaps()
                if rel == release and name not in SHIMS]
    assert not problems, (f"{release}'s mgr API lacks what mgr_sla uses "
                          f"(handle it in mgr_sla/shell/compat.py and add it to SHIMS):\n"
                          + "\n".join(problems))


def test_shims_exist_and_are_the_only_users() -> None:
    compat = ast.parse((ROOT / "mgr_sla" / "shell" / "compat.py").read_text())
    functions = {n.name for n in ast.walk(compat) if isinstance(n, ast.FunctionDef)}
    for name, shim in SHIMS.items():
        assert shim in functions, f"SHIMS names compat.{shim} for {name}: no such function"
        use = USES.get(name)
        if use is not None:
            assert use.where.startswith("compat.py:"), \
                f"{name} is used outside compat.py ({use.where}): go through compat.{shim}"
    stale = [n for n in SHIMS if not any(n == g[1] for g in _gaps())]
    assert not stale, f"SHIMS entries no release needs any more: {stale}"
