"""Kept at this name for what outlives an upgrade: console scripts installed before the entry
point moved to ctxd.fastpath.console_entry (an editable install never rewrites its script) and
hooks rendered before the export had a module of its own, still running in open shells
(``from ctxd._entry import export_main``). The code is in ctxd.fastpath."""

from ctxd.fastpath.console_entry import main  # noqa: F401
from ctxd.fastpath.export_entry import export_main  # noqa: F401
