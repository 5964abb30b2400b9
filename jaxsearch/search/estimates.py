"""AVTS estimates of one node: debias statistics, debiased values q̂3 and their variance."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsearch import debias as debias_lib
from jaxsearch.enums import Variance
from jaxsearch.tree import Tree


def node_stats(tree: Tree, batch_ids, node) -> debias_lib.DebiasStats:
  """``[B, V]`` debias statistics of ``node[B]`` (a tree that keeps them, ``tree.debias``)."""
  return jax.tree.map(lambda x: x[batch_ids, node], tree.debias)


def slot_estimates(stats: debias_lib.DebiasStats, tree_values, visits, solved, num_active, *,
                   options):
  """``(q̂3 f32[K], σ² f32[K])`` of one node's slots from its statistics (Bellman backup);
  ``options``: the search's :class:`~jaxsearch.search.backup_bellman.BellmanBackup` (its
  ``debias`` and ``variance`` are read).

  ``q̂3 = q̂2 + Σ_{j > n} bias_mean[j]`` (``q̂2`` alone with ``debias=False``) and
  ``σ²(s, n)`` per ``options.variance``; a solved slot's value is exact: no drift, no variance.
  """
  if options.debias:
    debiased = tree_values + jnp.where(solved, 0.0, debias_lib.correction(stats, visits))
  else:
    debiased = tree_values
  if options.variance is Variance.OFF:
    variance = jnp.zeros_like(tree_values)
  else:
    per_bucket = (debias_lib.reference_bucket_variance(stats, num_active)
                  if options.variance is Variance.REFERENCE else None)
    variance = jnp.where(solved, 0.0, debias_lib.variance(stats, visits, per_bucket))
  return debiased, variance
