"""What tests and benchmarks share: a real mini cluster's wrapper
(cephcluster.py: `deploy/minicluster.sh` driven from Python) and a small fake
of ceph-mgr for unit tests and the tick benchmark (fake_mgr.py)."""
