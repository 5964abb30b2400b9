"""Value scales (jaxsearch.train.value_scale): the game's values <-> the value head's [-1, 1].

MuZero's transform and its inverse round-trip, games in [-1, 1] keep the identity (their
training is unchanged), and a short 2048 run trains on targets inside the head's range while
its search sees values in the game's units.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxsearch.app import training
from jaxsearch.games import connect_four, tictactoe
from jaxsearch.train import losses, networks, replay
from jaxsearch.train import value_scale as vs

pgx_env = pytest.importorskip("jaxsearch.games.pgx_env")

# Magnitudes from 1e-6 to 1e6 (2048's returns reach thousands) and their negatives.
MAGNITUDES = st.floats(min_value=-6.0, max_value=6.0).map(lambda e: 10.0 ** e)
VALUES = st.one_of(st.just(0.0), MAGNITUDES, MAGNITUDES.map(lambda x: -x))


def test_h_is_muzeros_transform():
  """h(x) = sign(x)(sqrt(|x| + 1) − 1) + εx, ε = 1e-3 (Schrittwieser et al. 2020, App. F)."""
  x = np.array([0.0, 3.0, -8.0, 99.0, 1e-6, -1e-6], np.float32)
  expected = np.array([0.0, 1.0 + 3e-3, -2.0 - 8e-3, 9.0 + 99e-3, 1e-6 * (0.5 + 1e-3),
                       -1e-6 * (0.5 + 1e-3)])
  # Relative: the naive sqrt(|x| + 1) − 1 is 5% off at 1e-6 in float32.
  np.testing.assert_allclose(np.asarray(vs.h(x)), expected, rtol=1e-5)


@settings(max_examples=60, deadline=None)
@given(x=VALUES, epsilon=st.sampled_from([0.0, 1e-3, 0.1]))
def test_h_inverse_round_trips(x, epsilon):
  y = vs.h(jnp.float32(x), epsilon)
  back = float(vs.h_inverse(y, epsilon))
  assert back == pytest.approx(np.float32(x), rel=2e-6, abs=1e-30)
  assert float(vs.h(back, epsilon)) == pytest.approx(float(y), rel=2e-6, abs=1e-30)


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(["linear", "muzero"]),
       lo=st.sampled_from([-13.0, -3.0, 0.0, 5.0]),
       width=st.sampled_from([1.0, 6.0, 100.0, 10000.0]),
       fractions=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8))
def test_scale_round_trips_within_its_range(kind, lo, width, fractions):
  """decode(encode(x)) = x over [lo, hi]; encode is monotone onto [-1, 1], lo -> -1, hi -> 1."""
  scale = vs.ValueScale(kind, lo, lo + width)
  x = np.float32(lo) + np.float32(width) * np.sort(np.asarray(fractions, np.float32))
  encoded = np.asarray(scale.encode(x))
  assert np.all(encoded >= -1.0) and np.all(encoded <= 1.0)
  assert np.all(np.diff(encoded) >= 0.0)
  np.testing.assert_allclose(np.asarray(scale.decode(encoded)), x, rtol=1e-5,
                             atol=1e-5 * width)
  np.testing.assert_allclose(np.asarray(scale.encode(np.float32([lo, lo + width]))),
                             [-1.0, 1.0], atol=1e-6)


def test_outside_the_range_saturates():
  """Targets past [lo, hi] are clipped to the head's range; decode never leaves [lo, hi]."""
  scale = vs.muzero(0.0, 10000.0)
  np.testing.assert_array_equal(np.asarray(scale.encode(jnp.float32([-5.0, 20000.0]))),
                                [-1.0, 1.0])
  np.testing.assert_allclose(np.asarray(scale.decode(jnp.float32([-3.0, 3.0]))),
                             [0.0, 10000.0], rtol=1e-6)
  assert bool(jnp.isnan(scale.encode(jnp.float32(jnp.nan))))  # missing targets stay missing


def test_games_in_unit_range_get_the_identity():
  """Tic-tac-toe, Connect Four and pgx's board games: nothing is done to their values (the
  very same arrays come back), so their training is bit for bit what it was."""
  games = [tictactoe.GAME, connect_four.GAME, pgx_env.make("connect_four"),
           pgx_env.make("tic_tac_toe")]
  for game in games:
    scale = vs.for_game(game)
    assert scale.is_identity, game.name
    x = jnp.float32([-1.0, 0.25, 1.0])
    assert scale.encode(x) is x and scale.decode(x) is x
  config = training.preset("tictactoe", hidden=(8,), batch_size=2, simulations=2, eval_every=-1)
  assert training.trainer(config, evaluator=False).value_scale.is_identity


def test_games_outside_unit_range_are_scaled():
  """Declared bounds (backgammon, the poker games) scale linearly; a rough range (2048) with
  MuZero's h; an explicit kind overrides."""
  assert vs.for_game(pgx_env.make("backgammon")) == vs.linear(-3.0, 3.0)
  assert vs.for_game(pgx_env.make("kuhn_poker")) == vs.linear(-2.0, 2.0)
  game_2048 = pgx_env.make("2048")
  assert game_2048.value_bounds is None
  assert vs.for_game(game_2048) == vs.muzero(0.0, 10000.0)
  assert vs.for_game(game_2048, "identity").is_identity
  assert vs.for_game(game_2048, "linear") == vs.linear(0.0, 10000.0)
  assert vs.for_game(tictactoe.GAME, "muzero") == vs.muzero(-1.0, 1.0)
  with pytest.raises(ValueError, match="value_scale"):
    vs.for_game(game_2048, "log")
  with pytest.raises(ValueError, match="value_scale"):
    training.preset("pgx:2048", value_scale="log")
  # Returns summed over a long game learn from bootstrapped n-step returns; the others mix.
  assert training.preset("pgx:2048").value_target == "n_step"
  assert training.preset("pgx:backgammon").value_target == "mix"
  assert training.preset("pgx:2048", value_target="mix").value_target == "mix"


def test_loss_encodes_value_and_action_value_targets():
  """Both heads train on encoded targets; unvisited actions (NaN) stay out of the mean."""
  graphdef, params = networks.init("mlp", (3,), 2, hidden=(4,), action_values=True)
  scale = vs.muzero(0.0, 10000.0)
  batch = replay.Sample(
      obs=jnp.ones((2, 3), jnp.float32), policy=jnp.full((2, 2), 0.5), legal=jnp.ones((2, 2), bool),
      value=jnp.float32([500.0, 9000.0]),
      action_values=jnp.float32([[100.0, jnp.nan], [9000.0, 20.0]]))
  _, metrics = losses.loss_fn(params, graphdef, batch, l2=0.0, value_scale=scale)
  out = networks.apply(graphdef, params, batch.obs)
  np.testing.assert_allclose(float(metrics["value_loss"]),
                             float(jnp.mean((out.value - scale.encode(batch.value)) ** 2)),
                             rtol=1e-5)
  q, target = np.asarray(out.action_values), np.asarray(scale.encode(batch.action_values))
  expected = 0.5 * ((q[0, 0] - target[0, 0]) ** 2 +
                    0.5 * ((q[1, 0] - target[1, 0]) ** 2 + (q[1, 1] - target[1, 1]) ** 2))
  np.testing.assert_allclose(float(metrics["action_value_loss"]), expected, rtol=1e-5)


TINY_2048 = dict(network="mlp", hidden=(16,), batch_size=4, simulations=4, random_opening=0,
                 replay_capacity=256, min_replay=16, train_batch=16, updates_per_step=1,
                 warmup_steps=2, eval_every=-1, checkpoint_every=0)
HORIZON = 12  # 2048 games cut at 12 moves, so that games end (and training starts) at once


@pytest.fixture
def short_2048(monkeypatch):
  """pgx:2048 with games cut at ``HORIZON`` moves (a fresh cached Game, removed after)."""
  monkeypatch.setitem(pgx_env.MAX_LENGTH, "2048", HORIZON)
  pgx_env._make.cache_clear()
  yield
  pgx_env._make.cache_clear()


@pytest.mark.slow
def test_2048_training_sees_targets_in_the_heads_range(short_2048):
  """A few training steps on 2048: the buffer holds returns in the game's units (well past 1),
  the loss trains on their encoding (inside [-1, 1]), and the search's estimator decodes the
  head into the game's units."""
  trainer = training.trainer(training.preset("pgx:2048", **TINY_2048), evaluator=False)
  assert trainer.game.max_length == HORIZON
  scale = trainer.value_scale
  assert scale == vs.muzero(0.0, 10000.0)
  ts = trainer.init_state()
  rows = []
  for _ in range(HORIZON + 3):
    ts, metrics = trainer.iterate(ts)
    rows.append(jax.device_get(metrics))
  assert int(ts.updates) >= 3 and int(ts.buffer.size) >= TINY_2048["min_replay"]

  targets = np.asarray(ts.buffer.data.value[:int(ts.buffer.size)])
  assert targets.max() > 4.0  # 2048's returns: merged tiles, in the game's units
  encoded = np.asarray(scale.encode(targets))
  assert encoded.min() >= -1.0 and encoded.max() <= 1.0
  # What the loss saw: the squared error of the head to the encoded targets (both in
  # [-1, 1], so at most 4), not to the raw returns (mean squares in the hundreds).
  trained = [float(r["value_loss"]) for r in rows if r["updates"] > 0]
  assert trained and all(0.0 < v <= 4.0 for v in trained)

  # The search sees the head decoded into the game's units.
  states = ts.selfplay.states
  estimate = trainer.estimator(ts.params, jax.random.PRNGKey(0), states)
  head = networks.apply(trainer.graphdef, ts.params, jax.vmap(trainer.observe)(states)).value
  np.testing.assert_allclose(np.asarray(estimate.value), np.asarray(scale.decode(head)),
                             rtol=1e-5)
  assert np.all(np.asarray(estimate.value) >= 0.0)
  assert np.all(np.asarray(estimate.value) <= 10000.0)
