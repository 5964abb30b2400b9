"""Tree memory of the shipped configurations, in bytes per decision node.

A search's tree is allocated once at its full capacity, so bytes per node times ``B · N`` is
its memory; docs/solving.md and docs/benchmarks.md quote these figures (Wordle 7.9 KB a node, Connect Four 4.3 MB at
B = 256, S = 64). They are read from ``jax.eval_shape`` of each configuration's own
``init_tree`` — no array is allocated, nothing compiles — so a layout change that grows a
tree (a field made per-slot, a wider dtype, chance records per slot instead of per node)
fails here. The bounds are upper bounds with a few per cent of headroom above the figures
measured when they were written (in each test's comment), so that shrinking a layout never
fails a test; lower one when a layout shrinks for good.
"""

import jax
import jax.numpy as jnp
import pytest

import jaxsearch as js
from jaxsearch.games import connect_four, mastermind, tictactoe, wordle



def _per_node(search, roots, params=None):
  """``(total, parts)`` bytes per decision node of ``search``'s tree: ``parts`` by family
  (``node``: nodes, bounds, entropy and debias statistics; ``slot``: slots and their bounds;
  ``chance``; per tree ``num``/``nonfinite``)."""
  tree = jax.eval_shape(search.init_tree, params, jax.random.PRNGKey(0), roots)
  batch, nodes = tree.nodes.visits.shape
  parts = {}
  for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
    part = jax.tree_util.keystr(path).lstrip(".").split(".")[0]
    family = FAMILY.get(part, part.split("_")[0])
    parts[family] = parts.get(family, 0.0) + leaf.size * leaf.dtype.itemsize / (batch * nodes)
  return sum(parts.values()), parts


FAMILY = {"nodes": "node", "bounds": "node", "entropy": "node", "debias": "node",
          "slots": "slot", "slot_bounds": "slot", "chance": "chance"}


def _one_root(state):
  return jax.tree.map(lambda x: jnp.asarray(x)[None], state)


def test_bytes_per_node_counts_every_field():
  """The helper itself: a PUCT tree of B = 2, N = 5 on tic-tac-toe adds up to the arrays'
  own sizes, and a wider ``K`` (Mastermind's 128 slots) grows the slot part linearly."""
  game = tictactoe.GAME
  roots = jax.vmap(game.init)(jax.random.split(jax.random.PRNGKey(0), 2))
  search = js.policies.puct(game, js.estimators.uniform(), num_simulations=4, max_nodes=5)
  total, parts = _per_node(search, roots)
  tree = jax.eval_shape(search.init_tree, None, jax.random.PRNGKey(0), roots)
  assert total * 2 * 5 == pytest.approx(sum(x.size * x.dtype.itemsize
                                             for x in jax.tree.leaves(tree)))
  # 9 slots of bool legal, f32 prior logit, prior probability, value, i32 visits, chance =
  # 21 B each; the AVTS-only per-slot bounds are not kept, nor the slot's action (slot k is
  # action k) or q̂1 (the uniform estimator gives none).
  assert parts["slot"] == 9 * 21
  assert search.config.keeps_prior_probs
  assert tree.slots.action is None and tree.slots.action_value is None
  # An estimator with action values gets its q̂1 stored: 4 B a slot more.
  with_q1 = js.policies.puct(game, js.estimators.rollout(game, 1, action_values=True),
                             num_simulations=4, max_nodes=5)
  assert _per_node(with_q1, roots)[1]["slot"] == 9 * 25


def test_mastermind_solver_tree():
  """``jaxsearch solve mastermind`` (4×6): AVTS with 128 slots (96 for bounds), 14 feedbacks.
  Measured: 5,479 B a node (slots 4,352 = 128 × 34; node 843, of which the debias
  statistics 384 and the state 164; chance records 284)."""
  puzzle = mastermind.puzzle(4, 6)
  search = js.policies.avts(puzzle.game, puzzle.estimator, num_simulations=32, max_nodes=64,
                            num_slots=128, bound_slots=96,
                            max_depth=puzzle.game.max_length or 16)
  total, parts = _per_node(search, _one_root(puzzle.initial_state))
  assert total <= 5_600, parts
  assert parts["slot"] <= 128 * 34, parts
  assert parts["chance"] <= 14 * 20 + 4, parts  # + 4: the record's owner node


@pytest.fixture(scope="module")
def wordle_lists():
  """The Wordle lists the package ships (or ``$WORDLE_DATA``)."""
  from jaxsearch.games import wordle
  return wordle.default_paths()


def test_wordle_solver_tree(wordle_lists):
  """``jaxsearch solve wordle`` on the full 3158 / 14855 lists: AVTS, 64 slots, 243
  feedbacks. Measured: 7,859 B a node — chance records 4,864 (one per node, 243 outcomes ×
  20 B, + 4 for the owner node), slots 2,176 (64 × 34), node 819 (state 397). The chance records are the part meant
  to shrink; these are the ceilings a regression would break."""
  puzzle = wordle.puzzle(*wordle_lists)
  search = js.policies.avts(puzzle.game, puzzle.estimator, num_simulations=8, max_nodes=64,
                            num_slots=64, max_depth=puzzle.game.max_length or 16)
  total, parts = _per_node(search, _one_root(puzzle.initial_state))
  assert total <= 8_000, parts
  assert parts["chance"] <= 243 * 20 + 4, parts
  assert parts["slot"] <= 64 * 34, parts
  assert parts["node"] <= 850, parts


def test_connect_four_puct_tree():
  """The benchmark's Connect Four PUCT (B = 256, S = 64, N = S + 1): 223 B a node (slots
  147 = 7 × 21, node 52, one chance record of one outcome 24), so 3.7 MB for the batch (the
  README's figure). The prior probabilities (7 × 4 B) are kept so that no descent
  recomputes a softmax; the slots' actions and q̂1 are not (constant here)."""
  game = connect_four.GAME
  roots = jax.vmap(game.init)(jax.random.split(jax.random.PRNGKey(0), 256))
  search = js.policies.puct(game, js.estimators.uniform(), num_simulations=64)
  total, parts = _per_node(search, roots)
  assert search.config.max_nodes == 65
  assert total <= 230, parts
  assert total * 256 * 65 <= 3.8e6


@pytest.mark.parametrize("game, policy, measured", [
    ("tictactoe", None, 319), ("connect_four", None, 272), ("connect_four", "avts", 698)])
def test_training_preset_trees(game, policy, measured):
  """The trees of ``jaxsearch train``'s presets (tic-tac-toe PUCT, Connect Four Gumbel) and
  of AVTS self-play, at the presets' capacity ``2 S + 1``; ``measured`` is the figure when
  this was written, the ceiling 5 % above it."""
  import types

  from jaxsearch.app import registry, training
  from jaxsearch.train import trainer
  config = training.preset(game, **({"policy": policy} if policy else {}))
  module = registry.game_module(game)
  # The trainer's own make_search with a rollout estimator standing in for the network
  # (building a Trainer compiles the network's initialisers, ~10 s); it returns action
  # values, so the trees keep q̂1: the larger layout of the two a network can give.
  stand_in = types.SimpleNamespace(config=config, game=module.GAME, estimator=(
      js.estimators.rollout(module.GAME, num_rollouts=1, action_values=True)))
  search = trainer.Trainer.make_search(stand_in, config.simulations, config.nodes,
                                    config.dirichlet_fraction)
  assert search.config.max_nodes == 2 * config.simulations + 1
  roots = jax.vmap(module.GAME.init)(jax.random.split(jax.random.PRNGKey(0), 4))
  total, parts = _per_node(search, roots)
  assert total <= 1.05 * measured, parts
