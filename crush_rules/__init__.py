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
    release='pacific', root='default', pg_num=256.
    Weight sets are flat (one position): a pool maps every PG identically under
    sla_isolated_normal, sla_shared and sla_hybrid; urgent use in shared mode
    and the hybrid primary come from the module's pg_upmap_items.
``install(cli, tools, options) -> InstallResult``
    Reads the live osdmap, generates, verifies on the live pools and sets
    the map with a compare-and-swap on the crush version.  No-op (changed=False)
    when the live map already is the result.  InstallResult has changed,
    rule_ids (name -> id), report (VerifyReport), crush_version,
    upgraded_pools (pool id -> PGs remapped when an older positional weight
    set of a given pool was replaced by the flat one), to_dict().
``verify_live(cli, tools, options) -> VerifyReport``
    Checks the installed rules on the live pools' PGs; ``.ok``, ``.failures``,
    ``.warnings``, ``.to_dict()``.
``plan_switch(cli, tools, pool: str, to_rule: str) -> MovePlan``
    PGs, replicas and bytes a switch of a live pool would move; ``.to_dict()``.
``CrushError``
    The only exception raised on purpose; ``str()`` is a one-line message.
    Raised, among others, for any weight set of ours with more than one
    position (never rendered nor installed).

Rule names: RULE_NAMES = (sla_isolated_normal, sla_isolated_urgent, sla_shared,
sla_hybrid, sla_fast).  DEFAULT_PLACEMENT (a Placement: root, failure_domain,
normal_class, urgent_class), DEFAULT_SIZE and DEFAULT_RELEASE are the defaults
every entry point shares.  No module keeps mutable state.
"""

from .errors import CrushError
from .generate import Generated, GenerateOptions, generate, verify_map
from .live import InstallResult, MovePlan, install, plan_switch, verify_live
from .rules import (
    DEFAULT_PLACEMENT,
    DEFAULT_RELEASE,
    DEFAULT_SIZE,
    FAST,
    HYBRID,
    ISOLATED_NORMAL,
    ISOLATED_URGENT,
    RULE_NAMES,
    SHARED,
)
from .tools import CephCli, Tools
from .verify import VerifyReport

__all__ = [
    "DEFAULT_PLACEMENT",
    "DEFAULT_RELEASE",
    "DEFAULT_SIZE",
    "FAST",
    "HYBRID",
    "ISOLATED_NORMAL",
    "ISOLATED_URGENT",
    "RULE_NAMES",
    "SHARED",
    "CephCli",
    "CrushError",
    "GenerateOptions",
    "Generated",
    "InstallResult",
    "MovePlan",
    "Tools",
    "VerifyReport",
    "generate",
    "install",
    "plan_switch",
    "verify_live",
    "verify_map",
]
