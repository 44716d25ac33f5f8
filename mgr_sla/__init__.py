"""ceph-sla: the `sla` ceph-mgr module (loaded by ceph-mgr as package `sla`).

The pure core (activity, decision, gates, state, cluster, report) imports
without Ceph; `module.py` needs ceph-mgr's `mgr_module` and is only imported
when running inside the mgr.
"""
__version__ = "0.9.0"

try:
    import mgr_module  # noqa: F401  (exists only inside ceph-mgr)
except ImportError:
    pass
else:
    from .module import Module  # noqa: F401
