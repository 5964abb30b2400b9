"""The generic search loop: select -> expand -> evaluate -> backup, in one jitted function.

The simulations are a ``lax.fori_loop`` over the whole batch, so the loop never selects
between whole trees. Within a simulation:

* **select** (:func:`.descent.select`) descends every tree; the selection rule is a pure
  function of one node, vmapped, while the descent loop is batched by hand (a vmapped
  ``while_loop`` re-selects its carry every level). It records what it reads on the way down.
* **expand + evaluate** (:mod:`.expansion`): one batched ``Model.step`` (game step and one
  estimator call); :func:`.nodes.node_update` turns the estimates into slot entries.
* **backup**: the config's backup rule (``config.backup``, a :class:`~.backup.BackupRule`
  carried by the search's :class:`~.plan.SearchPlan`) runs expansion, evaluation and backup
  (``expand_and_backup``), and answers every other phase's backup-specific questions. With
  the running mean (:class:`~.backup_mean.MeanBackup`), :func:`.expansion.expand_one` writes
  the new edge and node, :func:`.backup_mean.path_returns` computes the returns and
  :func:`.backup_mean.write_returns` writes their running means (level by level, or the
  whole path at once), and :mod:`.subtree_entropy` updates the entropy statistics if kept;
  with the Bellman backup (:class:`~.backup_bellman.BellmanBackup`), every outcome of the
  expanded slot is created at once and q̂2, the debias statistics and the bounds are
  recomputed leaf to root.

The descent's loop carries only the ``O(D)`` path, never the tree, and no tree array is read
after the descent before it is written: either would make XLA copy whole tree arrays every
simulation (measured, see the notes in :class:`Path`). The running-mean backup's loop carries
the arrays it writes and reads none of them but through the path (measured in place).

The engine knows nothing of selection rules, games or networks: it receives a
:class:`~jaxsearch.model.Model` and a :class:`SearchConfig`, resolved once for the model into
a :class:`SearchPlan` (:func:`plan_for`) that every phase reads. The module layout and one
simulation's walk through it are described in ``docs/architecture.md``.
"""

from jaxsearch.enums import (Backup, EntropyPolicy, OutcomeRule, RootPolicy, SubtreeEntropy,
                             Variance)
from jaxsearch.search.backup import BackupRule
from jaxsearch.search.backup_bellman import AvtsOptions, BellmanBackup
from jaxsearch.search.config import (BACKUPS, EntropyOptions, LoopOptions, RootNoise,
                                     SearchConfig, config_from_keywords)
from jaxsearch.search.backup_mean import MeanBackup
from jaxsearch.search.descent import Path
from jaxsearch.search.estimates import node_stats, slot_estimates
from jaxsearch.search.simulate import draw_root_noise, init_tree, run
from jaxsearch.search.nodes import NodeUpdate
from jaxsearch.search.plan import SearchPlan, plan_for

__all__ = ["SearchConfig", "RootNoise", "AvtsOptions", "EntropyOptions", "LoopOptions",
           "config_from_keywords", "BACKUPS", "SearchPlan", "plan_for", "BackupRule",
           "MeanBackup", "BellmanBackup", "Path", "NodeUpdate", "init_tree", "run",
           "draw_root_noise", "node_stats", "slot_estimates", "OutcomeRule", "Backup",
           "SubtreeEntropy", "EntropyPolicy", "Variance", "RootPolicy"]
