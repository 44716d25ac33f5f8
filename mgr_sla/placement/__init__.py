"""Placement strategies: how a managed pool gets to what the mode wants of it
(the interface in base.py, one module per strategy, the placer that asks them).
Imports the core, never the shell.
"""
