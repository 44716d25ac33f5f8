"""A strategy is its own files: its model (core/models/), its working class
(placement/*_strategy.py) and its line in the two registries, besides its
name in core.state.Strategy. Everything else asks a pool's model (through
the registry) what it would otherwise branch on, so nothing else in mgr_sla/
names a strategy; and what each model answers is what those branches said."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from mgr_sla.core.cluster import PoolInfo
from mgr_sla.core.models import registry
from mgr_sla.core.state import PoolRole, Role, Strategy
from mgr_sla.core.switch_cost import WRITE_COST

ROOT = Path(__file__).resolve().parents[2]
MGR = ROOT / "mgr_sla"
# the grep of docs/architecture.md ("a new strategy")
NAMES = re.compile(r"Strategy\.(COPY|MOVE|EC)|MoveStrategy|CopyStrategy|EcStrategy"
                   r"|MoveModel|CopyModel|EcModel")
ALLOWED = {
    "core/state.py",  # defines Strategy
    "core/models/registry.py", "placement/registry.py",
    "placement/move_strategy.py", "placement/copy_strategy.py", "placement/ec_strategy.py",
}
MODELS_DIR = "core/models/"


def naming_a_strategy() -> dict[str, list[str]]:
    """mgr_sla file (relative) -> its lines that name a strategy."""
    found: dict[str, list[str]] = {}
    for path in sorted(MGR.rglob("*.py")):
        lines = [f"{n}: {line.strip()}"
                 for n, line in enumerate(path.read_text().splitlines(), 1)
                 if NAMES.search(line)]
        if lines:
            found[path.relative_to(MGR).as_posix()] = lines
    return found


def test_only_a_strategys_own_files_and_the_registries_name_it() -> None:
    found = naming_a_strategy()
    wrong = {f: lines for f, lines in found.items()
             if f not in ALLOWED and not f.startswith(MODELS_DIR)}
    assert not wrong, "\n".join(f"mgr_sla/{f}:{line}" for f, lines in wrong.items()
                                for line in lines)
    # the pattern finds what it is to find: the registries list every strategy
    for registry_file in ("core/models/registry.py", "placement/registry.py"):
        named = {m.group(1) for line in found[registry_file]
                 for m in re.finditer(r"Strategy\.(COPY|MOVE|EC)", line)}
        assert named == {"COPY", "MOVE", "EC"}, registry_file


def pool(erasure: bool) -> PoolInfo:
    if erasure:
        return PoolInfo(7, "ecpool", 5, 6, min_size=5, pg_num=32, erasure=True, ec_k=4, ec_m=2)
    return PoolInfo(7, "bulk", 5, 3, min_size=2, pg_num=32)


def test_each_model_says_what_the_branches_on_its_name_said() -> None:
    models = registry.MODELS
    assert [k for k, m in models.items() if m.erasure] == [Strategy.EC]
    assert [k for k, m in models.items() if m.changes_size] == [Strategy.COPY]
    assert [k for k, m in models.items() if m.rules_from_own_rule] == [Strategy.EC]
    assert {k for k, m in models.items() if m.places_by_entries} == {Strategy.MOVE, Strategy.EC}
    assert registry.strategies_for(pool(True)) == (Strategy.EC,)
    assert registry.strategies_for(pool(False)) == registry.AUTO_ORDER


def test_the_strategies_a_pools_next_switch_may_use() -> None:
    mine = PoolRole(Role.NORMAL, strategy=Strategy.EC)
    assert registry.choices(mine) == (Strategy.EC,)
    assert registry.choices(PoolRole(Role.NORMAL, auto=True)) == registry.AUTO_ORDER


@pytest.mark.parametrize("kind, weight_set_left", [
    (Strategy.COPY, True), (Strategy.MOVE, False)])
def test_an_auto_pool_keeps_a_weight_set_its_own_strategy_does_not_release(
        kind: Strategy, weight_set_left: bool) -> None:
    auto = registry.with_strategy(registry.auto_role(pool(False), "replicated_rule", kind),
                                  kind, pool(False))
    assert registry.others_weight_set(auto) is weight_set_left
    for strategy in Strategy:  # a pool with one strategy: its release removes what it needs
        role = registry.MODELS[strategy].new_role(pool(strategy is Strategy.EC), "own")
        assert not registry.others_weight_set(role)


def test_the_device_priors_part_on_the_urgent_region() -> None:
    """copy: every op has its primary there; move: the urgent share of the
    replicas; ec: whole stripes, a read waiting for every shard."""
    copy, move, ec = (registry.MODELS[k] for k in (Strategy.COPY, Strategy.MOVE, Strategy.EC))
    part = copy.urgent_part(0.5, 3, 0.2)
    assert (part.reads, part.writes, part.reads_wait_for_all) == (1.0, 1.0, False)
    # its reads and one write copy each, of its isolated work
    assert part.moved == pytest.approx((0.5 + 0.5 * WRITE_COST) / (0.5 * 3 * WRITE_COST + 0.5))
    part = move.urgent_part(0.5, 3, 0.2)
    assert (part.moved, part.reads, part.writes, part.reads_wait_for_all) == (
        0.2, 0.2, pytest.approx(0.6), False)
    part = ec.urgent_part(0.5, 6, 0.25)
    assert (part.moved, part.reads, part.writes, part.reads_wait_for_all) == (
        0.25, 1.0, 1.0, True)
