"""What each strategy wants of a pool, as the registry gives it to the shell
and the tick: the rule and size per mode, the rules and weight sets to
install, who may use it, and the registry's own completeness."""
from __future__ import annotations

import pytest

from mgr_sla.core.cluster import PoolInfo
from mgr_sla.core.decision import Mode
from mgr_sla.core.models import registry
from mgr_sla.core.models.base import RuleNeeds
from mgr_sla.core.state import PoolRole, PoolTarget, Role, Strategy, UrgentPlacement
from mgr_sla.placement.registry import STRATEGIES

MOVE = PoolRole(Role.NORMAL)
COPY = PoolRole(Role.NORMAL, strategy=Strategy.COPY, base_size=3, base_min_size=2)
URGENT = PoolRole(Role.URGENT)
HYBRID = PoolRole(Role.URGENT, UrgentPlacement.HYBRID)


def info(size: int) -> PoolInfo:
    return PoolInfo(7, "bulk", 5, size, min_size=2, pg_num=64)


def test_every_strategy_has_a_model_and_a_working_class() -> None:
    assert set(registry.MODELS) == set(STRATEGIES) == set(Strategy)
    for kind, model in registry.MODELS.items():
        assert model.kind is kind
    assert set(registry.AUTO_ORDER) == {Strategy.COPY, Strategy.MOVE}  # replicated pools'
    assert Strategy.DEFAULT in Strategy and len(list(Strategy)) == 3  # an alias, no fourth


def test_targets_per_role_and_mode() -> None:
    assert registry.targets(MOVE) == {Mode.ISOLATED: PoolTarget("sla_isolated_normal"),
                                      Mode.SHARED: PoolTarget("sla_shared")}
    assert registry.targets(COPY) == {Mode.ISOLATED: PoolTarget("sla_isolated_normal", 3, 2),
                                      Mode.SHARED: PoolTarget("sla_copy_3", 4, 2)}
    for mode in Mode:
        assert registry.target(URGENT, mode) == PoolTarget("sla_isolated_urgent")
        assert registry.target(HYBRID, mode) == PoolTarget("sla_hybrid")
        # an urgent pool keeps its rule whatever strategy a record gives it
        odd = PoolRole(Role.URGENT, strategy=Strategy.COPY, base_size=3)
        assert registry.target(odd, mode) == PoolTarget("sla_isolated_urgent")


def test_a_copy_pool_recorded_without_its_size_never_goes_shared() -> None:
    """sla_shared without the pool's own weight set would spread it over every class."""
    sizeless = PoolRole(Role.NORMAL, strategy=Strategy.COPY)
    assert {t.rule for t in registry.targets(sizeless).values()} == {"sla_isolated_normal"}
    assert registry.model_of(sizeless).needs(sizeless) == RuleNeeds()


def test_needs_name_the_rules_and_weight_sets_to_install() -> None:
    roles = {1: MOVE, 2: COPY, 3: URGENT, 4: HYBRID,
             5: PoolRole(Role.NORMAL, strategy=Strategy.COPY, base_size=2)}
    needs = registry.needs(roles)
    assert [p for p, n in needs.items() if n.weight_set] == registry.weight_set_pools(roles) == [1]
    assert [p for p, n in needs.items() if n.hybrid_weight_set] == [4]
    assert sorted(n.copy_size for n in needs.values() if n.copy_size) == [2, 3]
    assert registry.rules_needed(roles.values(), ("sla_isolated_urgent",)) == [
        "sla_isolated_urgent", "sla_isolated_normal", "sla_shared", "sla_copy_3",
        "sla_hybrid", "sla_copy_2"]


@pytest.mark.parametrize("size, refused", [(1, True), (2, False), (8, False), (9, True)])
def test_copy_refuses_sizes_it_cannot_toggle(size: int, refused: bool) -> None:
    why = registry.MODELS[Strategy.COPY].refusal(info(size))
    assert (why is not None) is refused
    if why:
        assert "size of 2 to 8" in why and "'bulk'" in why
    assert registry.MODELS[Strategy.MOVE].refusal(info(size)) is None


def test_copy_refuses_a_pool_whose_size_the_mon_must_not_change() -> None:
    frozen = PoolInfo(7, "bulk", 5, 3, flags=frozenset({"hashpspool", "nosizechange"}))
    why = registry.MODELS[Strategy.COPY].refusal(frozen)
    assert why is not None and "ceph osd pool set bulk nosizechange false" in why
    assert registry.MODELS[Strategy.MOVE].refusal(frozen) is None


def test_new_roles_record_what_isolation_restores() -> None:
    copy = registry.MODELS[Strategy.COPY].new_role(info(3), "replicated_rule")
    assert (copy.strategy, copy.base_size, copy.base_min_size, copy.original_rule) == (
        Strategy.COPY, 3, 2, "replicated_rule")
    move = registry.MODELS[Strategy.MOVE].new_role(info(3), None)
    assert (move.strategy, move.base_size, move.role) == (Strategy.MOVE, None, Role.NORMAL)
