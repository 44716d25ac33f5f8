"""ceph-sla: adaptive isolated/shared CRUSH mapping for urgent Ceph clients."""
from setuptools import find_packages, setup

setup(
    name="ceph-sla",
    version="0.9.0",
    description="ceph-mgr module and CRUSH rule generator that keep urgent clients' latency",
    packages=find_packages(include=["crush_rules", "crush_rules.*", "mgr_sla", "mgr_sla.*"]),
    # the vendored exposition library's licence travels with it
    package_data={"mgr_sla._vendor.prometheus_client": ["LICENSE", "NOTICE", "py.typed"]},
    python_requires=">=3.9",
    # the benchmarks (bench/, run from a checkout): the policy simulation and the plots
    extras_require={"bench": ["numpy", "matplotlib"]},
    license="LGPL-2.1-or-later",
    entry_points={"console_scripts": ["sla-crush = crush_rules.cli:main"]},
)
