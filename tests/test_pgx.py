"""pgx environments as jaxsearch Games (games.pgx_env): conventions, search, play, training.

Environments: tic_tac_toe (deterministic, two players) and 2048 (stochastic, one player) in
the default suite; the searches at B = 64 on othello, 2048, connect_four and backgammon
(stochastic, several moves per turn), the games won against a random player and a short
training run under ``-m slow`` (each pgx game's compile costs 15-50 s on a busy 2-core CPU).
"""

import builtins
import io
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pgx = pytest.importorskip("pgx")

import jaxsearch as js  # noqa: E402
from jaxsearch import cli  # noqa: E402
from jaxsearch.train import agents  # noqa: E402
from jaxsearch.app import evaluate as ev  # noqa: E402

from jaxsearch.games import pgx_env  # noqa: E402

B = 64


@pytest.fixture(scope="module")
def ttt():
  game = pgx_env.make("tic_tac_toe")
  return game, jax.jit(jax.vmap(game.step)), jax.jit(jax.vmap(game.legal_actions))


def _batched(state):
  return jax.tree.map(lambda x: jnp.asarray(x)[None], state)


def _unbatched(state):
  return jax.tree.map(lambda x: x[0], state)


def test_make_is_cached_and_named():
  game = pgx_env.make("pgx:tic_tac_toe")
  assert game is pgx_env.make("tic_tac_toe")
  assert game.name == "pgx:tic_tac_toe" and game.num_actions == 9 and game.num_outcomes == 1
  assert game.max_length == 9 and game.value_range == (-1.0, 1.0)
  assert pgx_env.make("2048").num_outcomes == 4 and pgx_env.make("2048", chance_samples=2
                                                                  ).num_outcomes == 2
  # Built eagerly (as `jaxsearch play` does), every leaf is an array: pgx's othello state
  # holds Python ints, which the adapter converts.
  state = pgx_env.make("othello").init(jax.random.PRNGKey(0))
  assert all(isinstance(x, jax.Array) for x in jax.tree.leaves(state))
  assert "X to move" in pgx_env.render(state) and " 20" in pgx_env.render(state)


def test_tic_tac_toe_conventions(ttt):
  """The final move's reward goes to the mover, discounts are -1 then 0, and the terminal
  state has no legal action although pgx's own mask is all True there."""
  game, step, legal_fn = ttt
  state = _batched(game.init(jax.random.PRNGKey(0)))
  first = int(state.env.current_player[0])
  # The first player takes cells 0, 1, 2 (a row); the second plays 3 and 4.
  for ply, cell in enumerate([0, 3, 1, 4, 2]):
    mover = int(state.env.current_player[0])
    assert mover == (first if ply % 2 == 0 else 1 - first)
    result = step(state, jnp.array([cell]), jnp.zeros((1,), jnp.int32))
    state = result.state
    if ply < 4:
      assert float(result.reward[0]) == 0.0 and float(result.discount[0]) == -1.0
      assert not bool(result.terminal[0])
  assert float(result.reward[0]) == 1.0 and float(result.discount[0]) == 0.0
  assert bool(result.terminal[0]) and bool(state.env.terminated[0])
  assert bool(np.all(np.asarray(state.env.legal_action_mask)))  # pgx: all True ...
  assert not bool(np.any(np.asarray(legal_fn(state))))         # ... ours: all False
  # Stepping a terminal state, or an illegal action, changes nothing.
  again = step(state, jnp.array([5]), jnp.zeros((1,), jnp.int32))
  assert float(again.reward[0]) == 0.0 and float(again.discount[0]) == 0.0
  assert bool(again.terminal[0])
  fresh = _batched(game.init(jax.random.PRNGKey(0)))
  once = step(fresh, jnp.array([4]), jnp.zeros((1,), jnp.int32)).state
  taken = step(once, jnp.array([4]), jnp.zeros((1,), jnp.int32))  # cell 4 is taken
  assert float(taken.reward[0]) == 0.0 and float(taken.discount[0]) == 0.0
  assert not bool(taken.terminal[0])  # pgx would end the game with a penalty here
  for a, b in zip(jax.tree.leaves(taken.state), jax.tree.leaves(once)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  assert pgx_env.observe(_unbatched(fresh)).dtype == jnp.float32


def test_losing_on_your_own_move_is_a_negative_reward_to_the_mover(ttt):
  """pgx's rewards are per player; the adapter must pick the mover's, not player 0's."""
  game, step, _ = ttt
  state = _batched(game.init(jax.random.PRNGKey(1)))
  for cell in [0, 3, 1, 4, 8]:
    state = step(state, jnp.array([cell]), jnp.zeros((1,), jnp.int32)).state
  mover = int(state.env.current_player[0])  # the second player completes 3-4-5 and wins
  result = step(state, jnp.array([5]), jnp.zeros((1,), jnp.int32))
  assert float(result.reward[0]) == 1.0
  assert float(result.state.env.rewards[0, mover]) == 1.0


def _search_check(game, simulations=8):
  search = jax.jit(js.policies.puct(game, js.estimators.uniform(), num_simulations=simulations,
                                    max_nodes=simulations + 1))
  states = jax.jit(jax.vmap(game.init))(jax.random.split(jax.random.PRNGKey(3), B))
  # Play a few moves first, so the roots are varied positions, then search them all.
  step = jax.jit(jax.vmap(game.step))
  for ply in range(3):
    out = search(None, jax.random.PRNGKey(ply), states)
    legal = np.asarray(jax.vmap(game.legal_actions)(states))
    action = np.asarray(out.action)
    alive = legal.any(axis=1)
    assert np.all(legal[np.arange(B)[alive], action[alive]]), "an illegal action was chosen"
    assert np.all(action[~alive] == -1)
    assert np.all(np.asarray(out.visit_counts)[~legal] == 0)
    outcome = jax.random.randint(jax.random.PRNGKey(10 + ply), (B,), 0, game.num_outcomes)
    states = step(states, jnp.maximum(jnp.asarray(action), 0), outcome).state
  return out


def test_search_under_jit_at_batch_64_picks_legal_actions():
  out = _search_check(pgx_env.make("tic_tac_toe"))
  assert out.action.shape == (B,)


# Each of these compiles a pgx game's step inside the search: 15-50 s apiece on 2 busy cores.
@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["othello", "2048", "connect_four", "backgammon"])
def test_search_under_jit_at_batch_64_picks_legal_actions_slow(env_id):
  _search_check(pgx_env.make(env_id))


def test_2048_outcomes_are_sampled_from_the_state_key():
  game = pgx_env.make("2048")
  step = jax.jit(jax.vmap(game.step, in_axes=(None, None, 0)))
  state = game.init(jax.random.PRNGKey(0))
  action = int(np.flatnonzero(np.asarray(game.legal_actions(state)))[0])
  probs = np.asarray(game.outcome_probs(state, jnp.int32(action)))
  np.testing.assert_allclose(probs, np.full(4, 0.25))
  results = step(state, jnp.int32(action), jnp.arange(4))
  again = step(state, jnp.int32(action), jnp.arange(4))
  boards = np.asarray(results.state.env._board).reshape(4, -1)
  np.testing.assert_array_equal(boards, np.asarray(again.state.env._board).reshape(4, -1))
  assert len({b.tobytes() for b in boards}) > 1  # different outcomes, different tiles
  assert np.all(np.asarray(results.discount) == 1.0)  # one player: no sign flip
  # The next state's key depends on the outcome, so futures differ too.
  assert len({k.tobytes() for k in np.asarray(results.state.key)}) == 4


def test_bad_ids_and_missing_pgx(monkeypatch):
  with pytest.raises(ValueError, match="unknown pgx environment 'chekers'.*othello"):
    pgx_env.make("chekers")
  with pytest.raises(ValueError, match="bridge_bidding.*not supported.*download"):
    pgx_env.make("bridge_bidding")
  with pytest.raises(ValueError, match="max_length"):
    pgx_env.make("tic_tac_toe", max_length=0)
  assert "othello" in pgx_env.available() and "bridge_bidding" not in pgx_env.available()
  monkeypatch.setitem(sys.modules, "pgx", None)  # import pgx now fails
  with pytest.raises(ImportError, match=r'pip install "jaxsearch\[pgx\]"'):
    pgx_env.make("hex", max_length=3)  # arguments not cached yet


def test_the_library_imports_without_pgx():
  code = ("import sys; sys.modules['pgx'] = None\n"
          "import jaxsearch, jaxsearch.viz, jaxsearch.train.trainer, jaxsearch.app.training\n"
          "import jaxsearch.cli\n"
          "from jaxsearch.games import pgx_env\n"
          "try:\n  pgx_env.make('othello')\nexcept ImportError as e:\n  print('ERR', e)\n"
          "sys.exit(jaxsearch.cli.main(['play', 'pgx:othello']))\n")
  done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        timeout=300)
  assert "ERR pgx is not installed" in done.stdout
  assert done.returncode == 2 and "jaxsearch play: pgx is not installed" in done.stderr
  assert "Traceback" not in done.stderr


def _play(monkeypatch, argv, stdin):
  feed = io.StringIO(stdin)

  def read(prompt=""):
    line = feed.readline()
    if not line:
      raise EOFError
    return line.rstrip("\n")

  monkeypatch.setattr(builtins, "input", read)
  return cli.main(argv)


def test_cli_play_pgx_tic_tac_toe(monkeypatch, capsys):
  # The search (UCT + rollouts) moves first; the person then types junk, out-of-range
  # numbers, a taken cell, and cells until the game ends.
  moves = ["x", "0", "99", "5", "5"] + [str(c) for c in range(1, 10)]  # 5 is taken by then
  status = _play(monkeypatch, ["play", "pgx:tic_tac_toe", "--first", "search",
                               "--simulations", "50"], "\n".join(moves) + "\n")
  out = capsys.readouterr().out
  assert status == 0
  assert "pgx:tic_tac_toe: you play second" in out and "You play O." in out
  assert "search plays" in out and "'x' is not a number" in out and "out of range" in out
  assert "is not legal here" in out
  assert ("The search wins." in out or "Draw." in out or "You win!" in out or "Bye." in out)


def test_cli_unknown_pgx_game_is_one_line(capsys):
  assert cli.main(["play", "pgx:chekers"]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and err[0].startswith("jaxsearch play: unknown pgx environment")
  assert cli.main(["train", "pgx:chekers", "--quiet"]) == 2
  assert "unknown pgx environment" in capsys.readouterr().err
  with pytest.raises(SystemExit):
    cli.main(["play", "pgx:"])


def _uct_vs_random(env_id, simulations, games=2):
  game = pgx_env.make(env_id)
  agent = ev.uct_rollout_player(game, simulations)
  return ev.play_match(game, agent, ev.random_player(game), jax.random.PRNGKey(0), games)


@pytest.mark.slow
def test_uct_beats_random_at_tic_tac_toe():
  result = _uct_vs_random("tic_tac_toe", 50, games=4)
  assert result["wins"] >= 3 and result["losses"] == 0 and result["forfeits"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["connect_four", "othello"])
def test_uct_beats_random(env_id):
  result = _uct_vs_random(env_id, 100)
  assert result["wins"] == 2 and result["forfeits"] == 0


@pytest.mark.slow
def test_backgammon_turns_and_a_match():
  """Several checker moves per turn: discount +1 while the same player moves on, -1 when the
  turn passes; a match against random (both agents called on every game) completes."""
  game = pgx_env.make("backgammon", max_length=60)
  step = jax.jit(jax.vmap(game.step))
  states = jax.vmap(game.init)(jax.random.split(jax.random.PRNGKey(0), 16))
  seen = set()
  for t in range(30):
    legal = jax.vmap(game.legal_actions)(states)
    action = agents._sample_masked(jax.random.PRNGKey(t), legal)
    before = np.asarray(states.env.current_player)
    result = step(states, jnp.maximum(action, 0), jnp.zeros((16,), jnp.int32))
    after = np.asarray(result.state.env.current_player)
    live = np.asarray(action >= 0) & ~np.asarray(result.terminal)
    expected = np.where(after == before, 1.0, -1.0)
    np.testing.assert_array_equal(np.asarray(result.discount)[live], expected[live])
    seen |= set(expected[live].tolist())
    states = result.state
  assert seen == {1.0, -1.0}
  random_agent = ev.random_player(game)
  result = ev.play_match(game, random_agent, random_agent, jax.random.PRNGKey(1), 4,
                         alternating=False)
  assert result["games"] == 4 and result["forfeits"] == 0


@pytest.mark.slow
def test_train_on_a_pgx_game(tmp_path):
  from jaxsearch.app import training
  config = training.preset("pgx:tic_tac_toe", batch_size=8, simulations=4, min_replay=16,
                           train_batch=16, eval_games=4, eval_simulations=4,
                           eval_uct_simulations=8, network="mlp", hidden=(16,), eval_every=6)
  # Games of at most 9 plies: by step 12 some have ended and filled the buffer.
  summary = training.trainer(config, out_dir=tmp_path).run(steps=12, progress=False)
  assert summary["steps"] == 12 and summary["games"] > 0 and summary["updates"] > 0
  for name in ("search_vs_random", "net_vs_random", "search_vs_uct"):
    assert 0.0 <= summary[name] <= 1.0


@pytest.mark.slow
def test_mean_return_of_a_one_player_game():
  game = pgx_env.make("2048")
  random_agent = ev.random_player(game)
  assert ev.mean_return(game, random_agent, jax.random.PRNGKey(0), 8, max_steps=0) == 0.0
  # An agent with no move (-1) ends every game at once; a random one merges tiles.
  assert ev.mean_return(game, lambda key, states: jnp.full((8,), -1, jnp.int32),
                        jax.random.PRNGKey(0), 8, max_steps=50) == 0.0
  assert ev.mean_return(game, random_agent, jax.random.PRNGKey(0), 8, max_steps=50) > 0.0
  with pytest.raises(ValueError, match="num_games"):
    ev.mean_return(game, random_agent, jax.random.PRNGKey(0), 0)
