"""The mgr side: collaborators that hold mgr state, read from the mgr and act
on the cluster (the tick runner, commands, metrics). Everything here may
import the core and the placement strategies.
"""
