"""PyFlink's DataStream API on ckptsim: ``ckptsim run my_job.py`` runs a PyFlink program as
written.

While ``ckptsim run`` runs a script, ``import pyflink...`` resolves to this package
(``ckptsim.pyflink._imports``): ``pyflink.common`` and ``pyflink.datastream`` with PyFlink's
module tree, class names and method names. ``env.execute()`` runs the job on ckptsim's actors
with its checkpointing, ``-D`` settings, ``--simulate``, ``--web`` and faults. Where the job
model has the class (user functions, state descriptors, windows, watermark strategies) it is
re-exported here, one implementation for both spellings; where PyFlink's spelling differs,
a thin layer adapts it. A name resolves in every module where PyFlink 2.3 has it
(``_pyflink_names``: PyFlink's own list). What ckptsim cannot run, or does not implement yet,
stops the program with one line saying so and what to use instead.
"""

from __future__ import annotations

from ckptsim.pyflink.version import __version__

__all__ = ["__version__"]
