"""Golden trees: the engine's output, bit for bit, for one fixed key per configuration family.

Each case below runs one small jitted search and compares **every array leaf** of the
resulting :class:`~jaxsearch.tree.Tree` (game states included) with a SHA-256 digest of its
bytes (``np.asarray(leaf).tobytes()``), its shape and its dtype, stored in
``tests/golden/trees.json`` under the flat field names of the tree's first layout
(:func:`flat_fields`). A refactoring of the engine that changes nothing must keep every
digest; the failure names the case and the leaves that differ.

The cases cover the engine's families on tiny shapes: PUCT with the MuZero schedule, root
Dirichlet noise and a top-K slot cut (hashed game); Gumbel MuZero's root rule; a two-player
game (tic-tac-toe PUCT, then a reused subtree after ``reroot``); Thompson sampling with the
running-mean backup on a chance game (sampled outcomes); AVTS (Bellman backup) with widening
and debias statistics, and with a top-K cut, bound slots, the ``"gap"`` outcome rule, few chance
records and chunked expansion on a Garnet with ``O = 2``; AVTS on tic-tac-toe (negative
discounts); subtree-entropy PUCT (``"full"`` on a chance game).

Regenerate (only after a deliberate change of behaviour, and say so in the commit)::

    python tests/test_golden_trees.py --regenerate
    # or: JAXSEARCH_GOLDEN_REGENERATE=1 pytest tests/test_golden_trees.py

The searches are compiled without LLVM's backend optimisations (:data:`COMPILER_OPTIONS`),
which halves the compile time that dominates this file; the digests are of float bits, so they
hold for the CPU backend (as the tests run, ``tests/conftest.py``), these options and the
jax/jaxlib version they were recorded with (stored in the file). Another XLA version may
legitimately round differently: when upgrading jax, regenerate on the old engine code first.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsearch as js
from jaxsearch.games import garnet, hashed, stack_states, tictactoe
from jaxsearch.game import Estimate

import bit_exact

GOLDEN = Path(__file__).resolve().parent / "golden" / "trees.json"
REGENERATE = os.environ.get("JAXSEARCH_GOLDEN_REGENERATE", "").strip() not in ("", "0")
KEY = 20240611

# ---- games and estimators ------------------------------------------------------------------

HASHED_A = 5
# Chance game: 3 members (one root each), S = 4 states, A = 4 actions, O = 2 outcomes, H = 3.
GARNET = garnet.make_family(3, 4, 4, 2, 3, seed=7)


def _hashed():
  game = hashed.make(HASHED_A, seed=1)
  return game, hashed.estimator(HASHED_A), hashed.distinct_roots(game, 3)


def _garnet_estimator():
  return garnet.estimator(GARNET, bias=0.2, noise=0.3, seed=3)


def _garnet_bounds_estimator():
  """The noisy Garnet estimator plus admissible per-action bounds (``Q* + 0.25 + |z|``), so
  that bound slots have something to rank."""
  base = _garnet_estimator()
  extra = 0.25 + np.abs(np.random.default_rng(5).standard_normal(
      np.asarray(GARNET.q_star).shape)).astype(np.float32)
  table = np.asarray(GARNET.q_star, np.float32) + extra

  def estimate(params, key, states):
    out = base(params, key, states)
    horizon = table.shape[1]
    time = jnp.minimum(states.time, horizon - 1)
    bounds = jnp.asarray(table)[states.mdp, time, states.state]
    return out.replace(action_bounds=jnp.where((states.time < horizon)[:, None], bounds, 0.0))

  return estimate


def _ttt_roots():
  return stack_states([tictactoe.state_from_moves(m) for m in ([], [4, 0], [0, 4, 8])])


def _ttt_action_values(params, key, states):
  """Made-up, state-dependent q̂1 for tic-tac-toe (AVTS needs action values)."""
  del params, key
  weights = jnp.arange(1, 10, dtype=jnp.float32)
  mix = jnp.sum(states.board.astype(jnp.float32) * weights, axis=-1, keepdims=True)
  q = 0.5 * jnp.sin(1.3 * jnp.arange(9, dtype=jnp.float32)[None] + 0.7 * mix)
  value = jnp.where(states.terminal, 0.0, jnp.max(q, axis=-1))
  return Estimate(value=value, action_values=q)


# ---- the cases ------------------------------------------------------------------------------

# XLA compiles dominate this file's time; without LLVM's backend optimisations they take about
# half as long. Digests are only ever compared with others compiled the same way: with XLA's
# default CPU code generator, the one users get, even where the rest of the suite runs on the
# older, faster-compiling one (tests/conftest.py).
COMPILER_OPTIONS = {"xla_backend_optimization_level": 0, **bit_exact.DEFAULT_CODEGEN}


def _compiled(fn, *args):
  """``fn`` jitted and compiled for ``args`` (with :data:`COMPILER_OPTIONS`)."""
  return jax.jit(fn).lower(*args).compile(compiler_options=COMPILER_OPTIONS)


def _search_case(search, roots):
  """A case that runs ``search`` once from ``roots``; returns ``{name: tree}``."""
  args = (None, jax.random.PRNGKey(KEY), roots)
  return {"tree": _compiled(search, *args)(*args).tree}


def _puct_hashed():
  game, estimator, roots = _hashed()
  search = js.policies.puct(game, estimator, num_simulations=12, max_depth=6,
                            dirichlet_fraction=0.25, dirichlet_alpha=0.5, num_slots=4)
  return _search_case(search, roots)


def _gumbel_hashed():
  game, estimator, roots = _hashed()
  search = js.policies.gumbel(game, estimator, num_simulations=12, max_num_considered_actions=4,
                              max_depth=6)
  return _search_case(search, roots)


def _noisy_values(params, key, states):
  """Value drawn from the key (so the estimator's key matters), uniform prior."""
  del params
  return Estimate(value=jax.random.uniform(key, states.terminal.shape, minval=-0.5, maxval=0.5))


def _puct_tictactoe_reuse():
  """Two-player PUCT (an estimator that draws), then a second search on the subtree of the
  chosen move (``init_tree`` keeps the tree). Both calls pass a tree: one compiled program."""
  search = js.policies.puct(tictactoe.GAME, _noisy_values, num_simulations=10, max_nodes=24,
                            c=1.25)
  roots = _ttt_roots()
  init_args = (None, jax.random.PRNGKey(KEY - 1), roots)
  fresh = _compiled(search.init_tree, *init_args)(*init_args)
  compiled = _compiled(search, None, jax.random.PRNGKey(KEY), roots, fresh)
  first = compiled(None, jax.random.PRNGKey(KEY), roots, fresh)
  kept = jax.jit(js.tree.reroot)(first.tree, first.action)
  nexts = jax.jit(jax.vmap(lambda s, a: tictactoe.step(s, a).state))(roots, first.action)
  second = compiled(None, jax.random.PRNGKey(KEY + 1), nexts, kept)
  return {"first": first.tree, "second": second.tree}


def _thompson_mean_garnet():
  search = js.policies.custom(GARNET.game, _garnet_estimator(),
                              selection=js.selection.thompson(), num_simulations=12,
                              outcome_rule="sample")
  return _search_case(search, GARNET.roots())


def _avts_garnet_widening():
  search = js.policies.avts(GARNET.game, _garnet_estimator(), num_simulations=10,
                            num_buckets=4)
  return _search_case(search, GARNET.roots())


def _avts_garnet_bounds_gap():
  """Top-K cut (K = 3 of A = 4) with one bound slot, the gap outcome rule, few chance records
  and chunked expansion (``B·O = 6 > expand_chunk = 4``), the centred variance."""
  search = js.policies.avts(GARNET.game, _garnet_bounds_estimator(), num_simulations=10,
                            widening=False, num_slots=3, bound_slots=1, outcome_rule="gap",
                            variance="centred", num_buckets=4, max_chance=14, expand_chunk=4)
  return _search_case(search, GARNET.roots())


def _avts_tictactoe():
  search = js.policies.avts(tictactoe.GAME, _ttt_action_values, num_simulations=8,
                            variance="reference", num_buckets=4)
  return _search_case(search, _ttt_roots())


def _entropy_full_garnet():
  search = js.policies.entropy_puct(GARNET.game, _garnet_estimator(), num_simulations=12,
                                    entropy="full")
  return _search_case(search, GARNET.roots())


CASES = {
    "puct_hashed": _puct_hashed,
    "gumbel_hashed": _gumbel_hashed,
    "puct_tictactoe_reuse": _puct_tictactoe_reuse,
    "thompson_mean_garnet": _thompson_mean_garnet,
    "avts_garnet_widening": _avts_garnet_widening,
    "avts_garnet_bounds_gap": _avts_garnet_bounds_gap,
    "avts_tictactoe": _avts_tictactoe,
    "entropy_full_garnet": _entropy_full_garnet,
}


# ---- digests --------------------------------------------------------------------------------

# The digests were recorded when the tree was one flat record: each part's fields are named
# here as they were then (``nodes.visits`` was ``node_visits``, ``debias.count`` was
# ``node_bias_count``, ...). A part the search does not keep (``None``) was then a constant
# placeholder of width 1, compared as such: the debias statistics ``[B, N, 1]`` and the slot
# bounds ``[B, N, 1]`` of running-mean trees, the subtree entropy ``[B, 1]`` of trees without it.
FLAT_PREFIX = {"nodes": "node_", "slots": "slot_", "chance": "chance_", "bounds": "node_",
               "slot_bounds": "slot_", "entropy": "node_", "debias": "node_bias_"}
FLAT_NAME = {"entropy.entropy": "node_entropy", "debias.bias_mean": "node_bias_mean",
             "slot_bounds.bound": "slot_bound", "slot_bounds.upper": "slot_upper"}
# Fields computed from other fields when a node is created, which the flat record did not
# have: :func:`check_derived` pins them to what they are computed from instead.
DERIVED = {"slots.prior_probs"}
# Fields a search leaves ``None`` where they would hold a constant (slot k is action k, no
# q̂1): the record holds that constant, read through the accessor named here, so that the
# digests also pin what the accessor gives.
NOT_STORED = {"slots.action": "actions", "slots.action_value": "action_values"}


def check_derived(tree) -> None:
  """Each kept prior probability is, bit for bit, the softmax of its node's stored logits over
  its legal slots (what a rule would compute at every visit), on every allocated node."""
  if tree.slots.prior_probs is None:
    return
  expected = js.selection.masked_softmax(tree.slots.prior_logits, tree.slots.legal)
  allocated = np.arange(tree.max_nodes)[None, :] < np.asarray(tree.num_nodes)[:, None]
  got, want = np.asarray(tree.slots.prior_probs), np.asarray(expected)
  assert allocated.any()
  np.testing.assert_array_equal(got[allocated], want[allocated])
  assert not got[~allocated].any()


def _placeholders(tree) -> dict:
  """``{flat name: array}`` standing for the parts ``tree`` does not keep."""
  b, n = tree.batch_size, tree.max_nodes
  out = {}
  if tree.entropy is None:
    out.update(node_entropy=np.zeros((b, 1), np.float32),
               node_leaves=np.ones((b, 1), np.float32), node_closed=np.zeros((b, 1), bool))
  if tree.debias is None:
    out.update(node_bias_count=np.zeros((b, n, 1), np.int32),
               node_bias_mean=np.zeros((b, n, 1), np.float32),
               node_bias_sq_sum=np.zeros((b, n, 1), np.float32))
  if tree.slot_bounds is None:
    out.update(slot_solved=np.zeros((b, n, 1), bool),
               slot_bound=np.full((b, n, 1), js.tree.NO_BOUND, np.float32),
               slot_upper=np.full((b, n, 1), js.tree.NO_UPPER, np.float32))
  return out


def flat_fields(tree) -> dict:
  """``{flat name: array or state pytree}`` of every field of ``tree`` (see above)."""
  out = {}
  for part in dataclasses.fields(tree):
    value = getattr(tree, part.name)
    if part.name not in FLAT_PREFIX:
      out[part.name] = value  # the per-tree counters
      continue
    for field in dataclasses.fields(value) if value is not None else ():
      name = f"{part.name}.{field.name}"
      if name in DERIVED:
        continue
      array = getattr(value, field.name)
      if name in NOT_STORED and array is None:  # the constant the tree leaves out
        array = getattr(value, NOT_STORED[name])()
      out[FLAT_NAME.get(name, FLAT_PREFIX[part.name] + field.name)] = array
  out.update(_placeholders(tree))
  return out


def digests(trees) -> dict:
  """``{"<tree>.<field path>": {"shape", "dtype", "sha256"}}`` of every array leaf."""
  out = {}
  for name, tree in trees.items():
    for field, value in flat_fields(tree).items():
      for path, leaf in jax.tree_util.tree_flatten_with_path(value)[0]:
        array = np.ascontiguousarray(np.asarray(leaf))
        out[f"{name}.{field}{jax.tree_util.keystr(path)}"] = {
            "shape": list(array.shape), "dtype": str(array.dtype),
            "sha256": hashlib.sha256(array.tobytes()).hexdigest()}
  return out


def _meta() -> dict:
  import jaxlib
  return {"jax": jax.__version__, "jaxlib": jaxlib.__version__,
          "backend": jax.default_backend()}


def _load() -> dict:
  if GOLDEN.exists():
    return json.loads(GOLDEN.read_text())
  return {"meta": _meta(), "cases": {}}


def _store(name: str, got: dict) -> None:
  data = _load()
  data["meta"] = _meta()
  data["cases"][name] = got
  data["cases"] = dict(sorted(data["cases"].items()))
  GOLDEN.parent.mkdir(parents=True, exist_ok=True)
  GOLDEN.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


@pytest.mark.parametrize("name", list(CASES))
def test_golden_tree(name):
  trees = CASES[name]()
  for tree in trees.values():
    check_derived(tree)
  got = digests(trees)
  if REGENERATE:
    _store(name, got)
    return
  data = _load()
  if jax.default_backend() != data["meta"]["backend"]:
    pytest.skip(f"golden trees were recorded on {data['meta']['backend']}")
  assert name in data["cases"], (
      f"no golden data for {name!r}: run python tests/test_golden_trees.py --regenerate")
  want = data["cases"][name]
  assert set(got) == set(want), (
      f"{name}: leaves differ: missing {sorted(set(want) - set(got))}, "
      f"new {sorted(set(got) - set(want))}")
  differ = [leaf for leaf in want if got[leaf] != want[leaf]]
  versions = ("" if data["meta"] == _meta() else
              f" (recorded with {data['meta']}, now {_meta()}: regenerate on the old code first)")
  assert not differ, (
      f"{name}: {len(differ)} of {len(want)} tree leaves differ from the golden "
      f"trees{versions}: " + ", ".join(
          f"{leaf} (shape {want[leaf]['shape']} -> {got[leaf]['shape']}, dtype "
          f"{want[leaf]['dtype']} -> {got[leaf]['dtype']})" for leaf in differ))


if __name__ == "__main__":
  if sys.argv[1:] != ["--regenerate"]:
    sys.exit("usage: python tests/test_golden_trees.py --regenerate")
  # Through pytest from the repository root, as the tests run: tests/conftest.py sets the same
  # XLA flags, and this checkout's jaxsearch is imported (not another installed one).
  import subprocess
  sys.exit(subprocess.call(
      [sys.executable, "-m", "pytest", str(Path(__file__).resolve()), "-q", "-p",
       "no:cacheprovider"], cwd=Path(__file__).resolve().parents[1],
      env={**os.environ, "JAXSEARCH_GOLDEN_REGENERATE": "1"}))
