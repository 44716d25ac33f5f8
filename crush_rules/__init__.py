"""SLA CRUSH rules: isolated / shared placement of normal pools, generated and verified.

Stable API (imported by the ceph-mgr module; stdlib only, Python 3.9+):

``CephCli(conf: str | None = None, name: str | None = None, keyring: str | None = None,
ceph_bin: str = 'ceph')``
    How to reach a live cluster with the ``ceph`` command.
``Tools(crushtool: str = 'crushtool', osdmaptool: str = 'osdmaptool')``
    The Ceph tools; the environment variables SLA_CRUSHTOOL / SLA_OSDMAPTOOL
    override the defaults.
``GenerateOptions``
    Dataclass: normal_class='hdd', urgent_class='ssd', failure_domain='host',
    size=3, pool_ids=() (normal pools: sla_shared weight set),
    urgent_pool_ids=() (urgent pools: sla_hybrid weight set),
    release='pacific', root='default', pg_num=256,
    copy_sizes=(3,) (base sizes N of the copy rules sla_copy_N written and
    verified; 1..9; () writes none; ``.copy_rule_names()`` lists them).
    Weight sets are flat (one position): a pool maps every PG identically under
    sla_isolated_normal, sla_shared and sla_hybrid; urgent use in shared mode
    and the hybrid primary come from the module's pg_upmap_items.
``install(cli, tools, options, repair=False) -> InstallResult``
    cli: a CephCli or any object with ``get_osdmap() -> bytes`` and
    ``set_crushmap(binary: bytes, prior_version: int)`` (tools.Cluster; the
    same for verify_live).
    Reads the live osdmap, generates, verifies on the live pools and sets
    the map with a compare-and-swap on the crush version.  No-op (changed=False)
    when the live map already is the result.  InstallResult has changed,
    rule_ids (name -> id), report (VerifyReport), crush_version,
    upgraded_pools (pool id -> PGs remapped when an older positional weight
    set of a given pool was replaced by the flat one), to_dict().
``verify_live(cli, tools, options) -> VerifyReport``
    Checks the installed rules on the live pools' PGs; ``.ok``, ``.failures``,
    ``.warnings``, ``.to_dict()``, ``.copy_rules`` (rule name -> CopyReport, R8).
    A copy rule of options.copy_sizes missing from the map fails R8.
``plan_switch(cli, tools, pool: str, to_rule: str) -> MovePlan``
    PGs, replicas and bytes a switch of a live pool would move; ``.to_dict()``.
``rule_on_pools(cli, tools, [(pool_id, rule, size), ...]) -> {pool_id: {seed: osds}}``
    PG seed -> OSDs (raw CRUSH) of live pools under another rule at another
    size, read-only: a copy rule at N + 1 mapped on a pool of size N.
``copy_rule_name(size: int) -> str`` / ``copy_rule_size(name: str) -> int | None``
    ``copy_rule_name(3) == 'sla_copy_3'`` (CrushError outside 1..9);
    ``copy_rule_size('sla_copy_3') == 3``, None for any other name.  COPY_PREFIX
    is 'sla_copy_'.  The copy rule for base size N maps a pool of size N like
    sla_isolated_normal and a pool of size N + 1 to one urgent OSD (first, the
    primary) followed by the same N normal OSDs: a pool switches isolated ->
    shared with ``osd pool set POOL size N+1`` and back with ``size N``.
``CopyReport``
    R8 figures of one copy rule: size, pool_id, pgs, the defect counts
    (pgs_differing_from_isolated at N; short_pgs, duplicate_osd_pgs,
    urgent_not_first_pgs, urgent_count_pgs, normal_off_class_pgs,
    normal_failure_domain_pgs, normal_differing_pgs at N + 1), and
    shared_failure_domain_fraction (urgent copy in a failure domain holding a
    normal copy: allowed, reported), replicas_added, replicas_moved; ``.to_dict()``.
``CrushError``
    The only exception raised on purpose; ``str()`` is a one-line message.
    Raised, among others, for any weight set of ours with more than one
    position (never rendered nor installed).

Rule names: RULE_NAMES = (sla_isolated_normal, sla_isolated_urgent, sla_shared,
sla_hybrid, sla_fast), plus copy_rule_name(N) for each copy size.
DEFAULT_SCOPE (a RuleScope: root, failure_domain, normal_class,
urgent_class), DEFAULT_SIZE and DEFAULT_RELEASE are the defaults every entry
point shares.  No module keeps mutable state.
"""

from .errors import CrushError
from .generate import Generated, GenerateOptions, generate, verify_map
from .live import InstallResult, MovePlan, install, plan_switch, rule_on_pools, verify_live
from .reports import CopyReport, VerifyReport
from .rules import (
    COPY_PREFIX,
    DEFAULT_RELEASE,
    DEFAULT_SCOPE,
    DEFAULT_SIZE,
    FAST,
    HYBRID,
    ISOLATED_NORMAL,
    ISOLATED_URGENT,
    RULE_NAMES,
    SHARED,
    copy_rule_name,
    copy_rule_size,
)
from .tools import CephCli, Tools

__all__ = [
    "COPY_PREFIX",
    "DEFAULT_SCOPE",
    "DEFAULT_RELEASE",
    "DEFAULT_SIZE",
    "FAST",
    "HYBRID",
    "ISOLATED_NORMAL",
    "ISOLATED_URGENT",
    "RULE_NAMES",
    "SHARED",
    "CephCli",
    "CopyReport",
    "CrushError",
    "GenerateOptions",
    "Generated",
    "InstallResult",
    "MovePlan",
    "Tools",
    "VerifyReport",
    "copy_rule_name",
    "copy_rule_size",
    "generate",
    "install",
    "plan_switch",
    "rule_on_pools",
    "verify_live",
    "verify_map",
]
