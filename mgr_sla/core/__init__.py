"""The pure core: plain data in, plain data out; no Ceph, no mgr, no threads
of its own. Imports nothing from placement/, shell/ or mgr_module.
"""
