"""Kept at this name: hooks rendered before the export moved to ctxd.fastpath, still running
in users' open shells, end with ``from ctxd.export_entry import hook_main;hook_main()`` (older
ones with ``export_main``). The code is in ctxd.fastpath.export_entry."""

from ctxd.fastpath.export_entry import export_main, hook_main, hook_process  # noqa: F401
