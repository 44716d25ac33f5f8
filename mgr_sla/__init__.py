"""ceph-sla: the `sla` ceph-mgr module (loaded by ceph-mgr as package `sla`).

Layers (docs/architecture.md): core/ is pure and imports without Ceph;
placement/ holds the strategies; shell/ and `module.py` need ceph-mgr's
`mgr_module`, and `module.py` is only imported when running inside the mgr.
"""
__version__ = "0.9.0"

try:
    import mgr_module  # noqa: F401  (exists only inside ceph-mgr)
except ImportError:
    pass
else:
    from .module import Module  # noqa: F401
