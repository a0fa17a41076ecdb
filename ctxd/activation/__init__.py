"""The cd hot path: project discovery, detectors, env diff and state codec.

Nothing here may import click, psutil, shellingham, platformdirs, typing or
dataclasses: ``ctxd export`` runs on every directory change.
"""
