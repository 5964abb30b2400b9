"""Evaluation against exact oracles (jaxsearch.app.evaluate).

Agents and matches are checked against answers computed independently: the minimax table read
with numpy, hand-derived games, and the exact expected error of a random move on the Connect
Four sets. Compiles dominate the run time, so the agents are built once per module (an agent
object is the cache key of its compiled programs). The search baselines run under ``-m slow``.
"""

import hashlib
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsearch.games import connect_four as c4
from jaxsearch.games import tictactoe as t3
from jaxsearch.app import connect4_sets
from jaxsearch.app import evaluate as ev
from jaxsearch.train import agents as agents_lib

KEY = jax.random.PRNGKey(0)
TTT_BATCH = 1024  # positions per act call on tic-tac-toe (5 calls, one compile per agent)
MATCH_GAMES = 200


def _first_legal_act(key, states):
  """A deliberately weak, deterministic agent: the lowest legal cell."""
  del key
  legal = jax.vmap(t3.legal_actions)(states)
  return jnp.where(jnp.any(legal, axis=-1), jnp.argmax(legal, axis=-1), -1).astype(jnp.int32)


@pytest.fixture(scope="module")
def agents():
  return {"perfect": ev.perfect_player(), "random": ev.random_player(t3.GAME),
          "first": ev.as_agent(_first_legal_act)}


@pytest.fixture(scope="module")
def ttt_table():
  """``(boards int8[4520, 9], qs f32[4520, 9])`` straight from the oracle's numpy table."""
  value, qs, idx = t3._oracle_tables()  # pylint: disable=protected-access
  del value
  digits = (idx[:, None] // 3 ** np.arange(9)) % 3
  return np.where(digits == 2, -1, digits).astype(np.int8), qs[idx]


@pytest.fixture(scope="module")
def random_vs_perfect(agents):
  """One compiled match serves both views (the perfect agent's results are the mirror)."""
  return ev.tictactoe_vs_perfect(agents["random"], KEY, MATCH_GAMES)


# --- tic-tac-toe: optimal-move fraction -----------------------------------------------------------

def test_positions_are_all_reachable_nonterminal_states(ttt_table):
  states, qs = ev.tictactoe_positions()
  boards, table_qs = ttt_table
  assert qs.shape == (t3.NUM_REACHABLE_NONTERMINAL, 9)
  np.testing.assert_array_equal(np.asarray(states.board), boards)
  np.testing.assert_array_equal(qs, table_qs)
  assert np.all(np.isfinite(qs).any(axis=1))  # every position has a legal move


def test_perfect_player_is_optimal_everywhere(agents):
  report = ev.tictactoe_optimal_moves(agents["perfect"], KEY, TTT_BATCH)
  assert report.fraction_correct == 1.0
  assert len(report.failed) == 0
  # Ties are broken at random, not towards the lowest optimal cell.
  qs = report.values
  lowest_optimal = np.argmax(qs == qs.max(axis=1, keepdims=True), axis=1)
  num_optimal = np.sum(qs == qs.max(axis=1, keepdims=True), axis=1)
  differs = report.actions != lowest_optimal
  assert 0.3 < differs[num_optimal > 1].mean() < 0.8
  assert not differs[num_optimal == 1].any()


def test_random_player_is_sometimes_optimal(agents, ttt_table):
  report = ev.tictactoe_optimal_moves(agents["random"], KEY, TTT_BATCH)
  _, qs = ttt_table
  legal = np.isfinite(qs)
  assert np.all(legal[np.arange(len(qs)), report.actions])  # always a legal move
  # Expected fraction: mean over positions of (optimal moves / legal moves) = 0.571...
  share = (qs == qs.max(axis=1, keepdims=True)).sum(axis=1) / legal.sum(axis=1)
  sigma = np.sqrt(np.sum(share * (1 - share))) / len(qs)
  assert 0.0 < report.fraction_correct < 1.0
  assert abs(report.fraction_correct - share.mean()) < 5 * sigma


def test_broken_agent_fraction_matches_numpy(agents, ttt_table):
  boards, qs = ttt_table
  first = np.argmax(boards == 0, axis=1)
  chosen = qs[np.arange(len(qs)), first]
  expected = np.mean(chosen == qs.max(axis=1))
  report = ev.tictactoe_optimal_moves(agents["first"], KEY, TTT_BATCH)
  np.testing.assert_array_equal(report.actions, first)
  np.testing.assert_array_equal(report.correct, chosen == qs.max(axis=1))
  assert ev.tictactoe_optimal_fraction(agents["first"], KEY, TTT_BATCH) == expected
  assert 0.2 < expected < 0.8
  # The failed positions come back as states, e.g. to render.
  failed = report.failed_states()
  assert failed.board.shape == (len(report.failed), 9)
  assert "to move" in t3.render(jax.tree.map(lambda x: x[0], failed))


def test_illegal_moves_are_never_optimal():
  never = ev.as_agent(lambda key, states: jnp.full((states.board.shape[0],), -1, jnp.int32))
  assert ev.tictactoe_optimal_fraction(never, KEY, None) == 0.0


# --- matches ------------------------------------------------------------------------------------

def test_perfect_player_never_loses_to_random(random_vs_perfect):
  r = random_vs_perfect  # the random player's view
  assert r["games"] == MATCH_GAMES
  assert r["wins"] + r["draws"] + r["losses"] == MATCH_GAMES
  assert r["wins"] == 0 and r["forfeits"] == 0  # the perfect player never lost
  assert r["as_first"]["games"] == r["as_second"]["games"] == MATCH_GAMES // 2


def test_random_player_loses_to_perfect(random_vs_perfect):
  r = random_vs_perfect
  assert r["losses"] > 0
  # Random moves lose most games, more often when moving second.
  assert r["as_first"]["losses"] > 60 and r["as_second"]["losses"] > 80


def test_perfect_players_always_draw(agents):
  score, started, forfeit = ev.match_outcomes(t3.GAME, agents["perfect"], agents["perfect"],
                                              KEY, 64)
  assert np.all(score == 0) and not forfeit.any()
  assert started.sum() == 32


def test_match_bookkeeping_on_a_hand_derived_game(agents):
  # Lowest-free-cell vs itself: X takes 0, 2, 4, 6 and wins on the 2-4-6 diagonal, every game.
  r = ev.play_match(t3.GAME, agents["first"], agents["first"], KEY, 10)
  assert r["as_first"] == {"wins": 5, "draws": 0, "losses": 0, "games": 5}
  assert r["as_second"] == {"wins": 0, "draws": 0, "losses": 5, "games": 5}
  assert (r["wins"], r["draws"], r["losses"], r["forfeits"]) == (5, 0, 5, 0)


def test_illegal_move_forfeits_the_game(agents):
  never = ev.as_agent(lambda key, states: jnp.full((states.board.shape[0],), -1, jnp.int32))
  r = ev.play_match(t3.GAME, never, agents["first"], KEY, 4)
  assert (r["losses"], r["forfeits"]) == (4, 4)
  with pytest.raises(ValueError, match="even"):
    ev.play_match(t3.GAME, never, never, KEY, 3)


# --- adapters, jit and vmap ---------------------------------------------------------------------

def test_greedy_act_fn_masks_illegal_moves_and_traces_params():
  boards = [t3.state_from_moves(m) for m in ([], [0], [4, 8], [0, 3, 1])]
  states = jax.tree.map(lambda *x: jnp.stack(x), *boards)
  logits_fn = lambda params, s: jnp.broadcast_to(params, (s.board.shape[0], 9))  # noqa: E731
  prefer_low = -jnp.arange(9.0)  # cell 0 first, unless occupied
  agent = ev.greedy_act_fn(t3.GAME, logits_fn, prefer_low)
  np.testing.assert_array_equal(np.asarray(ev.act_on_positions(agent, KEY, states)),
                                [0, 1, 0, 2])
  # New parameters re-use the compiled program (they are traced, not baked in).
  size = agents_lib._act_jit._cache_size()  # pylint: disable=protected-access
  agent = ev.greedy_act_fn(t3.GAME, logits_fn, -prefer_low)
  np.testing.assert_array_equal(np.asarray(ev.act_on_positions(agent, KEY, states)),
                                [8, 8, 7, 8])
  assert agents_lib._act_jit._cache_size() == size  # pylint: disable=protected-access


def test_search_act_fn_is_greedy_and_keeps_one_program_per_search():
  import jaxsearch as js  # pylint: disable=import-outside-toplevel
  sampling = js.policies.alphazero(t3.GAME, js.estimators.uniform(), num_simulations=8)
  first = ev.search_act_fn(sampling, {"w": jnp.zeros(3)})
  again = ev.search_act_fn(sampling, {"w": jnp.ones(3)})
  assert first.fn == again.fn and hash(first.fn) == hash(again.fn)  # same jit cache entry
  assert first.fn.static[0].temperature == 0.0 and sampling.temperature == 1.0
  assert ev.search_act_fn(sampling, None, greedy=False).fn.static[0] is sampling
  other = js.policies.alphazero(t3.GAME, js.estimators.uniform(), num_simulations=8)
  assert ev.search_act_fn(other).fn != first.fn


def test_agent_under_jit_and_vmap(agents):
  states, _ = ev.tictactoe_positions()
  batches = jax.tree.map(lambda x: np.asarray(x)[:64].reshape((4, 16) + x.shape[1:]), states)
  keys = jnp.stack([jax.random.PRNGKey(i) for i in range(4)])
  agent = agents["perfect"]
  # vmap (under jit) over a leading axis of [4, 16] batches, each with its own key = 4 separate
  # jitted calls (the Agent is a pytree argument of the module's jitted act function).
  mapped = np.asarray(jax.jit(jax.vmap(agent))(keys, batches))
  for i in range(4):
    one = agents_lib._act_jit(  # pylint: disable=protected-access
        agent, keys[i], jax.tree.map(lambda x: x[i], batches))
    np.testing.assert_array_equal(mapped[i], np.asarray(one))
  assert len(set(mapped[:, 0].tolist())) > 1  # the key matters (random tie-breaking)


# --- Connect Four -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def c4_sets():
  # The copies shipped with the package (jaxsearch/data/connect4).
  return {name: ev.load_connect4_set(name, data_dir=ev.DEFAULT_CONNECT4_DIR)
          for name in ev.CONNECT4_SETS}


@pytest.fixture(scope="module")
def c4_random():
  return ev.random_player(c4.GAME)


def test_connect4_sets_load_with_consistent_full_columns(c4_sets):
  legal_fn = jax.jit(jax.vmap(c4.legal_actions))
  for name, s in c4_sets.items():
    assert len(s) == 1000 and s.scores.shape == (1000, 7) and s.name == name
    legal = np.asarray(legal_fn(s.states))
    np.testing.assert_array_equal(legal, s.scores != c4.FULL_COLUMN_SCORE)
    assert not np.asarray(s.states.terminal).any()
    # The mover alternates: num_moves = length of the move string.
    np.testing.assert_array_equal(np.asarray(s.states.num_moves), [len(m) for m in s.moves])


def test_connect4_random_error_rate_matches_readme(c4_sets, c4_random):
  readme = {"Test_L3_R1": 0.311, "Test_L2_R1": 0.286, "Test_L2_R2": 0.421}
  for i, (name, s) in enumerate(c4_sets.items()):
    probs = connect4_sets._random_error_probs(s.scores)  # pylint: disable=protected-access
    expected = ev.connect4_expected_random_error(s)
    assert abs(expected - readme[name]) < 0.0006, (name, expected)
    sigma = np.sqrt(np.sum(probs * (1 - probs))) / len(s)
    report = ev.connect4_move_errors(c4_random, jax.random.fold_in(KEY, i), s)
    assert abs(report.error_rate - expected) < 4 * sigma, (name, report.error_rate, expected)
    assert np.all(s.scores[np.arange(len(s)), report.actions] != c4.FULL_COLUMN_SCORE)


def test_connect4_oracle_agent_makes_no_errors(c4_sets):
  s = c4_sets["Test_L2_R2"]
  report = ev.connect4_move_errors(ev.connect4_oracle_player(s), KEY, s, batch_size=500)
  assert report.error_rate == 0.0
  best = np.where(s.scores == c4.FULL_COLUMN_SCORE, -10**6, s.scores).max(axis=1)
  np.testing.assert_array_equal(s.scores[np.arange(len(s)), report.actions], best)


def test_connect4_error_definition_uses_signs_only():
  # Two hand-made positions: win (+3) / win (+1) / draw / loss, and draw / loss / full.
  scores = np.array([[3, 1, 0, -2, -1000, -5, -1], [0, -1, -1000, -3, -4, -1, 0]], np.int32)
  positions = ev.Connect4Set(name="hand", path=None, moves=["", "1"],
                             states=c4.states_from_moves(["", "1"]), scores=scores)

  def fixed(actions):
    return ev.as_agent(lambda key, states: jnp.asarray(actions, jnp.int32))

  cases = {(0, 0): [True, True], (1, 6): [True, True], (2, 1): [False, False],
           (4, 2): [False, False], (-1, 3): [False, False]}
  for actions, correct in cases.items():
    report = ev.connect4_move_errors(fixed(actions), KEY, positions)
    assert report.correct.tolist() == correct, actions


def test_connect4_sets_ship_with_the_package(monkeypatch):
  """The default folder is the shipped copy (checksums as in its README.md); an explicit
  ``data_dir`` and ``$JAXSEARCH_CONNECT4_DIR`` override it."""
  shipped = ev.DEFAULT_CONNECT4_DIR
  assert shipped.parts[-3:] == ("jaxsearch", "data", "connect4")
  monkeypatch.delenv(ev.CONNECT4_ENV, raising=False)
  assert ev.connect4_data_dir() == shipped
  assert ev.load_connect4_set("L3_R1").path == shipped / "Test_L3_R1.moves"
  readme = (shipped / "README.md").read_text()
  rows = re.findall(r"^\| (Test_\S+) \| ([0-9a-f]{64}) \|$", readme, flags=re.M)
  assert {name for name, _ in rows} == {f"{n}{ext}" for n in ev.CONNECT4_SETS
                                        for ext in ("", ".moves")}
  for name, digest in rows:
    assert hashlib.sha256((shipped / name).read_bytes()).hexdigest() == digest, name
  assert ev.connect4_data_dir("/x") == Path("/x")
  monkeypatch.setenv(ev.CONNECT4_ENV, "/y")
  assert ev.connect4_data_dir() == Path("/y") and ev.connect4_data_dir("/x") == Path("/x")


def test_missing_connect4_data_gives_a_clear_error(tmp_path, monkeypatch):
  with pytest.raises(FileNotFoundError) as err:
    ev.load_connect4_set("Test_L3_R1", data_dir=tmp_path)
  text = str(err.value)
  assert str(tmp_path / "Test_L3_R1.moves") in text
  assert "README.md" in text and ev.CONNECT4_ENV in text and "ships" in text
  assert "broken" not in text
  monkeypatch.setenv(ev.CONNECT4_ENV, str(tmp_path / "elsewhere"))
  with pytest.raises(FileNotFoundError, match="elsewhere"):
    ev.load_connect4_set("L2_R2")
  # A shipped file missing means a broken install.
  monkeypatch.delenv(ev.CONNECT4_ENV)
  monkeypatch.setattr(connect4_sets, "DEFAULT_CONNECT4_DIR", tmp_path)
  with pytest.raises(FileNotFoundError, match="the install is broken, reinstall jaxsearch"):
    connect4_sets.load_connect4_set("L2_R2")


def test_connect4_loader_rejects_wrong_full_column_markers(tmp_path):
  good = (ev.DEFAULT_CONNECT4_DIR / "Test_L3_R1.moves").read_text().splitlines()[0].split()
  path = tmp_path / "Test_bad.moves"
  path.write_text(" ".join([good[0]] + ["0"] * 7) + "\n")  # column 1 is full in that position
  with pytest.raises(ValueError, match="markers"):
    ev.load_connect4_set(path)
  path.write_text(" ".join(good) + "\n")
  assert len(ev.load_connect4_set(str(path))) == 1


# --- search baselines (slow) --------------------------------------------------------------------

@pytest.mark.slow
def test_uct_rollout_baseline_beats_random_on_connect4(c4_sets, c4_random):
  # Measured (key 0, chunks of 250): 1.1 % errors on Test_L3_R1 (2.3 % Test_L2_R1, 10.4 %
  # Test_L2_R2); 20 of 20 games won against the random player.
  uct = ev.uct_rollout_player(c4.GAME, 200)
  s = c4_sets["Test_L3_R1"]
  rate = ev.connect4_error_rate(uct, KEY, s, batch_size=250)
  assert rate < 0.5 * ev.connect4_expected_random_error(s), rate
  r = ev.play_match(c4.GAME, uct, c4_random, KEY, 20)
  assert r["wins"] >= 18, r


@pytest.mark.slow
def test_uct_rollout_baseline_on_tictactoe():
  # Measured (key 0): 99.1 % optimal moves (41 misses); 8 losses, 32 draws in 40 games against
  # the perfect player (all 8 losses moving second).
  uct = ev.uct_rollout_player(t3.GAME, 200)
  assert 0.97 < ev.tictactoe_optimal_fraction(uct, KEY, 1024) < 1.0
  r = ev.tictactoe_vs_perfect(uct, KEY, 40)
  assert r["wins"] == 0 and r["draws"] >= 20 and r["forfeits"] == 0, r
