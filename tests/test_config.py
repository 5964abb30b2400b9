"""The search's settings (``SearchConfig``, its parts and the mode enums) and the tree's parts."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsearch as js
from jaxsearch.games import garnet, tictactoe
from jaxsearch import tree as tree_lib

import bit_exact

SMALL = garnet.make_family(2, 4, 3, 2, 3, seed=11)


def _estimator():
  return garnet.estimator(SMALL, bias=0.1, noise=0.2, seed=2)


def _config(**options):
  return js.SearchConfig(num_simulations=4, selection=js.selection.puct(), **options)


# ---- enums ----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", [js.OutcomeRule, js.Backup, js.SubtreeEntropy,
                                  js.EntropyPolicy, js.Variance, js.RootPolicy,
                                  js.VisitConvention, js.PriorSource, js.QNormalize,
                                  js.ValueSource])
def test_modes_are_string_enums(kind):
  for member in kind:
    assert isinstance(member, str) and member == member.value and f"{member}" == member.value
    assert kind(member.value) is member


def test_strings_become_members_once_with_a_clear_error_listing_the_choices():
  config = _config(backup="bellman", outcome_rule="gap",
                   avts=js.AvtsOptions(variance="centred"))
  assert config.backup.kind is js.Backup.BELLMAN and config.outcome_rule is js.OutcomeRule.GAP
  assert config.avts.variance is js.Variance.CENTRED and config.avts is config.backup
  entropy = js.EntropyOptions(kind="one_level", policy="pibar")
  assert entropy.kind is js.SubtreeEntropy.ONE_LEVEL and entropy.policy is js.EntropyPolicy.PIBAR
  with pytest.raises(ValueError, match="backup must be a BackupRule or one of 'mean', "
                                       "'bellman', 'avts', got 'bogus'"):
    _config(backup="bogus")
  with pytest.raises(ValueError, match="variance must be one of 'avts', 'reference', "
                                       "'centred', 'off', got 'none'"):
    js.AvtsOptions(variance="none")
  with pytest.raises(ValueError, match="subtree_entropy must be one of 'full', 'one_level'"):
    js.EntropyOptions(kind="half")
  search = js.policies.puct(tictactoe.GAME, js.estimators.uniform(), num_simulations=2,
                            root_policy="pibar")
  assert search.root_policy is js.RootPolicy.PIBAR
  with pytest.raises(ValueError, match="root_policy must be one of 'visits', 'pibar'"):
    js.policies.puct(tictactoe.GAME, js.estimators.uniform(), num_simulations=2,
                     root_policy="pi")
  # The selection rules' own modes too, checked when the rule is built.
  with pytest.raises(ValueError, match="visit_convention must be one of 'node', 'children'"):
    js.selection.puct(visit_convention="parent")
  with pytest.raises(ValueError, match="prior must be one of 'logits', 'action_values'"):
    js.selection.puct(prior="values")
  with pytest.raises(ValueError, match="normalize must be one of 'legal', 'all', 'none'"):
    js.policies.gumbel(tictactoe.GAME, js.estimators.uniform(), num_simulations=2,
                       normalize="legals")
  with pytest.raises(ValueError, match="value_source must be one of 'node', 'recover'"):
    js.policies.gumbel(tictactoe.GAME, js.estimators.uniform(), num_simulations=2,
                       value_source="raw")
  same = [js.selection.puct(visit_convention=mode) for mode in ("children",
                                                                js.VisitConvention.CHILDREN)]
  assert same[0].reads_prior_probs and same[1].reads_prior_probs


# ---- the config object ----------------------------------------------------------------------

def test_the_backup_is_the_rule_object_and_a_name_is_looked_up_once():
  """``SearchConfig(backup=...)`` takes the rule itself; a name comes from one table; the
  Bellman options are the rule's fields, and the former ``avts=`` keyword builds the same
  config (equal, same hash: the same compiled program)."""
  rule = js.selection.thompson()
  by_object = js.SearchConfig(num_simulations=4, selection=rule,
                              backup=js.search.BellmanBackup(widening=True, num_buckets=8))
  by_name = js.SearchConfig(num_simulations=4, selection=rule, backup="avts",
                            avts=js.AvtsOptions(widening=True, num_buckets=8))
  assert by_object == by_name and hash(by_object) == hash(by_name)
  assert by_object.backup is by_object.avts and by_object.backup.num_buckets == 8
  assert by_object.backup_rule is by_object.backup  # the former name still reads it
  assert set(js.search.BACKUPS) == {"mean", "bellman", "avts"}
  assert _config(backup=js.Backup.MEAN).backup == js.search.MeanBackup()
  assert _config(backup="bellman").backup == js.search.BellmanBackup()
  assert _config().backup == js.search.MeanBackup() and _config().avts is None
  with pytest.raises(ValueError, match="give them as its fields"):
    _config(backup=js.search.BellmanBackup(), avts=js.AvtsOptions(widening=True))
  with pytest.raises(ValueError, match="num_buckets must be a positive int"):
    js.search.BellmanBackup(num_buckets=0)
  # Every part of the rule protocol has a default but the simulation step itself.
  class Incomplete(js.search.BackupRule):
    kind = js.Backup.MEAN
  with pytest.raises(NotImplementedError):
    Incomplete().expand_and_backup(None, None, None, None, None, None)
  assert Incomplete().tree_parts() == js.search.MeanBackup().tree_parts()


def test_parts_are_checked_and_combinations_need_their_backup():
  with pytest.raises(TypeError, match="avts must be a AvtsOptions"):
    _config(avts={"widening": True})
  with pytest.raises(ValueError, match="widening=True needs backup='bellman'"):
    _config(avts=js.AvtsOptions(widening=True))
  with pytest.raises(ValueError, match="subtree_entropy needs backup='mean'"):
    _config(backup="bellman", entropy=js.EntropyOptions())
  with pytest.raises(ValueError, match="dirichlet_alpha must be > 0"):
    js.RootNoise(alpha=0.0)
  # A noise fraction of 0 is no noise: the config keeps none.
  assert _config(root_noise=js.RootNoise(fraction=0.0)).root_noise is None
  assert _config(root_noise=js.RootNoise()).root_noise == js.RootNoise(0.25, 0.3)


def test_sizes_left_to_the_game_come_from_the_model():
  model = js.model.from_game(SMALL.game, _estimator())
  mean = _config().for_model(model)
  assert (mean.max_nodes, mean.max_depth) == (5, SMALL.game.max_length)
  bellman = _config(backup="bellman").for_model(model)
  assert bellman.max_nodes == 4 * SMALL.game.num_outcomes + 1
  given = _config(max_nodes=9, max_depth=2)
  assert given.for_model(model) is given


def test_flat_keywords_fill_the_parts():
  config = js.search.config_from_keywords(
      num_simulations=4, selection=js.selection.thompson(), backup="bellman", widening=True,
      variance="off", num_buckets=8, dirichlet_fraction=0.5, dirichlet_alpha=0.7)
  assert config.avts == js.AvtsOptions(widening=True, variance="off", num_buckets=8)
  assert config.root_noise == js.RootNoise(0.5, 0.7) and config.entropy is None
  config = js.search.config_from_keywords(num_simulations=4, selection=js.selection.puct(),
                                          subtree_entropy="full", entropy_policy="pibar")
  assert config.entropy == js.EntropyOptions("full", "pibar")
  with pytest.raises(TypeError, match=r"unknown search options \['widen'\]"):
    js.search.config_from_keywords(num_simulations=4, selection=js.selection.puct(),
                                   widen=True)


def test_custom_with_a_config_is_the_flat_form_bit_for_bit():
  """``custom(game, estimator, config=...)`` and the named constructor's flat keywords build
  the same search: the same config, the same trees for the same key."""
  flat = js.policies.avts(SMALL.game, _estimator(), num_simulations=6, num_buckets=4,
                          variance="centred", temperature=0.5)
  config = js.SearchConfig(num_simulations=6, selection=js.selection.thompson(),
                           backup=js.Backup.BELLMAN,
                           avts=js.AvtsOptions(widening=True, num_buckets=4,
                                               variance=js.Variance.CENTRED))
  built = js.policies.custom(SMALL.game, _estimator(), config=config, temperature=0.5)
  assert dataclasses.replace(built.config, selection=flat.config.selection) == flat.config
  assert built.temperature == 0.5
  key = jax.random.PRNGKey(3)
  a, b = jax.jit(flat)(None, key, SMALL.roots()), jax.jit(built)(None, key, SMALL.roots())
  for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
  with pytest.raises(TypeError, match="not both"):
    js.policies.custom(SMALL.game, _estimator(), config=config, widening=False)


# ---- the tree's parts -----------------------------------------------------------------------

def test_parts_a_search_does_not_keep_are_none():
  roots = SMALL.roots()
  key = jax.random.PRNGKey(0)
  mean = js.policies.puct(SMALL.game, _estimator(), num_simulations=3).init_tree(None, key, roots)
  assert mean.slot_bounds is None and mean.debias is None and mean.entropy is None
  assert mean.num_buckets is None and mean.bounds.bound.shape == (2, 4)
  bellman = js.policies.avts(SMALL.game, _estimator(), num_simulations=3,
                             num_buckets=5).init_tree(None, key, roots)
  assert bellman.slot_bounds.bound.shape == bellman.slots.visits.shape == (2, 7, 3)
  assert bellman.debias.count.shape == (2, 7, 5) and bellman.num_buckets == 5
  entropy = js.policies.entropy_puct(SMALL.game, _estimator(), num_simulations=3).init_tree(
      None, key, roots)
  assert entropy.entropy.leaves.shape == (2, 4) and entropy.debias is None


def test_write_sets_the_given_fields_of_a_part_and_drops_out_of_range_rows():
  part = tree_lib.allocate(1, 3, 2, 1, jnp.zeros(())).slots
  part = jax.tree.map(lambda x: x[0], part)
  new = tree_lib.update(tree_lib.SlotStats, visits=jnp.array([[4, 5], [6, 7]]),
                      legal=jnp.array([[True, False], [True, True]]))
  written = tree_lib.write(part, new, jnp.array([1, 3]))  # row 3 is out of range: dropped
  np.testing.assert_array_equal(written.visits, [[0, 0], [4, 5], [0, 0]])
  np.testing.assert_array_equal(written.legal, [[False, False], [True, False], [False, False]])
  for field in ("action", "prior_logits", "action_value", "value", "chance"):
    np.testing.assert_array_equal(getattr(written, field), getattr(part, field))
  assert tree_lib.write(None, None, 0) is None
  with pytest.raises(ValueError, match="does not keep"):
    tree_lib.write(None, new, 0)
  with pytest.raises(TypeError, match="no fields"):
    tree_lib.update(tree_lib.SlotStats, visit=1)
  assert {f.name for f in dataclasses.fields(tree_lib.Tree)} >= set(tree_lib.NODE_PARTS)


# PUCT with root noise, Gumbel and entropy-guided PUCT are pinned by the golden trees, recorded
# before the probabilities were kept; π̄ here.
@pytest.mark.parametrize("rule,noise", [(js.selection.pibar_argmax_visits(), 0.0),
                                        pytest.param(js.selection.puct(), 0.25,
                                                     marks=pytest.mark.slow)])
def test_kept_prior_probabilities_change_no_decision(rule, noise):
  """A rule that reads the prior probabilities gets them kept per node under the running-mean
  backup (computed once, at creation) rather than recomputed at every visit; the trees are
  the same bit for bit as with the rule computing them (root noise included), and the kept
  ones are the softmax of the stored logits over the legal slots."""
  assert rule.reads_prior_probs
  recomputing = dataclasses.replace(rule, reads_prior_probs=False)
  key = jax.random.PRNGKey(5)
  trees = []
  for selection in (rule, recomputing):
    config = js.SearchConfig(num_simulations=6, selection=selection,
                             root_noise=js.RootNoise(fraction=noise) if noise else None)
    search = js.policies.custom(SMALL.game, _estimator(), config=config)
    assert search.config.keeps_prior_probs == selection.reads_prior_probs
    trees.append(bit_exact.jit(search)(None, key, SMALL.roots()).tree)
  kept, computed = trees
  assert computed.slots.prior_probs is None
  np.testing.assert_array_equal(
      kept.slots.prior_probs[:, :3], js.selection.masked_softmax(
          kept.slots.prior_logits[:, :3], kept.slots.legal[:, :3]))
  kept = kept.replace(slots=kept.slots.replace(prior_probs=None))
  for x, y in zip(jax.tree.leaves(kept), jax.tree.leaves(computed), strict=True):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
  bellman = js.SearchConfig(num_simulations=2, selection=rule, backup=js.Backup.BELLMAN)
  assert not bellman.keeps_prior_probs  # solved slots leave the selectable set
  # A tree kept by one search and continued by the other: a clear error, not a pytree one.
  keeping = js.policies.custom(SMALL.game, _estimator(), config=js.SearchConfig(
      num_simulations=6, selection=rule))
  with pytest.raises(ValueError, match="rule does not read the prior probabilities"):
    keeping(None, key, SMALL.roots(), computed)
  with pytest.raises(ValueError, match="rule reads the prior probabilities"):
    search(None, key, SMALL.roots(), trees[0])


def test_rows_for_a_field_the_part_does_not_keep_are_refused():
  part = jax.tree.map(lambda x: x[0], tree_lib.allocate(1, 3, 2, 1, jnp.zeros(())).slots)
  assert part.prior_probs is None
  with pytest.raises(ValueError, match="SlotStats.prior_probs, which the tree does not keep"):
    tree_lib.write(part, tree_lib.update(tree_lib.SlotStats, prior_probs=jnp.ones((2,))), 0)


def test_training_modes_are_the_librarys_enums():
  """A training run's policy, value target and value scale are enum members whatever they
  were given as (a preset's string, a checkpoint's JSON), and a wrong one names the choices."""
  from jaxsearch.train.config import TrainConfig
  config = TrainConfig(game="tictactoe", policy="gumbel", value_target="mix",
                       value_scale="muzero")
  assert config.policy is js.enums.SearchPolicy.GUMBEL
  assert config.value_target is js.enums.ValueTarget.MIX
  assert config.value_scale is js.enums.ValueScaleKind.MUZERO
  assert config.policy == "gumbel"  # a str enum: equal to its string, written as it in JSON
  with pytest.raises(ValueError, match="policy must be one of 'alphazero', 'avts', 'gumbel'"):
    TrainConfig(game="tictactoe", policy="muzero")
  with pytest.raises(ValueError,
                     match="value_target must be one of 'outcome', 'search', 'mix', 'n_step'"):
    TrainConfig(game="tictactoe", value_target="return")
  with pytest.raises(ValueError, match="value_scale must be one of 'auto'"):
    TrainConfig(game="tictactoe", value_scale="log")
