"""Handoff archives: where a learner is, packed so the next session continues from there.

``ctxd.handoff.core.ProjectHandoffs`` is what the surfaces call (handoff, teach prompt,
review, practice) over a ``ProjectMemory``; ``ctxd.handoff.archive`` stores and loads archives
(the API other commands read archives through), ``ctxd.handoff.archive_schema`` is their
schema, validation and migrations; ``ctxd.handoff.build`` makes an archive from a project's
conversation store (with ``learner`` and ``environment``); ``ctxd.handoff.render`` prints one
as markdown. The memory core never imports this package.
"""
