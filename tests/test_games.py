"""Fast tests of games.tictactoe and games.connect_four: rules, conventions, oracles, data.

Jitted functions are built once at module level and called with few distinct shapes, because
compiling dominates the run time on CPU.
"""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsearch import games
from jaxsearch.games import connect_four as c4
from jaxsearch.games import tictactoe as t3

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "connect4"

# --- shared jitted functions ------------------------------------------------------------------

t3_init = jax.jit(jax.vmap(t3.init))
t3_legal = jax.jit(jax.vmap(t3.legal_actions))
t3_step = jax.jit(jax.vmap(t3.step))
t3_value = jax.jit(jax.vmap(t3.minimax_value))
t3_qs = jax.jit(jax.vmap(t3.minimax_action_values))
t3_index = jax.jit(jax.vmap(t3.state_index))
t3_observe = jax.jit(jax.vmap(t3.observe))

c4_init = jax.jit(jax.vmap(c4.init))
c4_legal = jax.jit(jax.vmap(c4.legal_actions))
c4_step = jax.jit(jax.vmap(c4.step))
c4_observe = jax.jit(jax.vmap(c4.observe))
c4_board = jax.jit(jax.vmap(c4.board))


CHUNK = 2048  # every batched call is padded to this size: one compile per function


def _call(fn, *args):
  """Calls a jitted batched ``fn`` on pytrees with a leading ``[P]`` axis, in chunks of
  ``CHUNK`` (the last one edge-padded) so each function compiles for one shape only."""
  p = jax.tree.leaves(args)[0].shape[0]
  outs = []
  for lo in range(0, p, CHUNK):
    chunk = jax.tree.map(lambda x: np.asarray(x)[lo:lo + CHUNK], args)
    n = jax.tree.leaves(chunk)[0].shape[0]
    padded = jax.tree.map(
        lambda x: np.concatenate([x, np.repeat(x[:1], CHUNK - n, axis=0)]), chunk)
    outs.append(jax.tree.map(lambda x: np.asarray(x)[:n], fn(*padded)))
  return jax.tree.map(lambda *xs: np.concatenate(xs), *outs)


def _one(fn, state, *args):
  """Calls a batched jitted ``fn`` on one unbatched state and unbatches the result."""
  batched = jax.tree.map(lambda x: np.asarray(x)[None], (state, *args))
  return jax.tree.map(lambda x: x[0], _call(fn, *batched))


def _step1(step_fn, state, action):
  return _one(step_fn, state, np.int32(action), np.int32(0))


def _all_children(step_fn, states, num_actions):
  """``StepResult`` with leaves ``[P, A]``: every action stepped from every state."""
  p = jax.tree.leaves(states)[0].shape[0]
  rep = jax.tree.map(lambda x: np.repeat(np.asarray(x), num_actions, axis=0), states)
  acts = np.tile(np.arange(num_actions, dtype=np.int32), p)
  out = _call(step_fn, rep, acts, np.zeros_like(acts))
  return jax.tree.map(lambda x: x.reshape((p, num_actions) + x.shape[1:]), out)


def _flat(tree):
  """Merges the two leading axes ``[P, A, ...] -> [P * A, ...]``."""
  return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), tree)


# === tic-tac-toe ==============================================================================


def test_t3_init_legal_game_constant():
  s = _call(t3_init, np.zeros((3, 2), np.uint32))  # the key is unused
  assert s.board.shape == (3, 9) and s.board.dtype == jnp.int8
  assert _call(t3_legal, s).all()
  assert t3.GAME.num_actions == 9 and t3.GAME.max_length == 9 and t3.GAME.name == "tictactoe"
  assert _call(t3_observe, s).shape == (3, 3, 3, 2)
  # Unbatched jit works too, and agrees with the vmapped version.
  assert jax.jit(t3.legal_actions)(t3.init(None)).shape == (9,)
  r = jax.jit(t3.step)(t3.init(None), 4, 0)
  assert r.reward.shape == () and r.discount == -1.0 and int(r.state.board[4]) == 1
  jax.tree.map(np.testing.assert_array_equal, r, _step1(t3_step, t3.init(None), 4))


@pytest.mark.parametrize("line", t3.LINES.tolist())
def test_t3_every_line_wins(line):
  # X plays the line, O plays two cells that are neither in the line nor a line of O's.
  others = [c for c in range(9) if c not in line][:2]
  moves = [line[0], others[0], line[1], others[1]]
  state = t3.state_from_moves(moves)
  assert not bool(state.terminal)
  r = _step1(t3_step, state, line[2])
  assert r.reward == 1.0 and r.discount == 0.0 and r.terminal
  assert not _one(t3_legal, r.state).any()
  assert "X wins" in t3.render(r.state)


def test_t3_second_player_win_and_move_conventions():
  state = t3.init(None)
  for i, a in enumerate([0, 3, 1, 4, 8]):
    r = _step1(t3_step, state, a)
    assert (r.reward, r.discount, bool(r.terminal)) == (0.0, -1.0, False), i
    state = r.state
  assert int(state.player) == -1
  jax.tree.map(np.testing.assert_array_equal, state, t3.state_from_moves([0, 3, 1, 4, 8]))
  r = _step1(t3_step, state, 5)  # O completes 3-4-5: +1 to the mover, O.
  assert (r.reward, r.discount, bool(r.terminal)) == (1.0, 0.0, True)
  assert "O wins" in t3.render(r.state)


def test_t3_draw_and_terminal_noop():
  moves = [0, 1, 2, 4, 3, 5, 7, 6]
  state = t3.state_from_moves(moves)
  r = _step1(t3_step, state, 8)
  assert (r.reward, r.discount, bool(r.terminal)) == (0.0, 0.0, True)
  assert not _one(t3_legal, r.state).any()
  assert "draw" in t3.render(r.state)
  # Stepping a terminal state (any action) changes nothing and stays terminal.
  for a in range(9):
    r2 = _step1(t3_step, r.state, a)
    np.testing.assert_array_equal(r2.state.board, r.state.board)
    assert (r2.reward, r2.discount, bool(r2.terminal)) == (0.0, 0.0, True)
  # An occupied cell is a harmless no-op.
  r3 = _step1(t3_step, state, 0)
  np.testing.assert_array_equal(r3.state.board, np.asarray(state.board))
  assert int(r3.state.player) == int(state.player) and r3.discount == 0.0


def test_t3_state_from_moves_and_render():
  with pytest.raises(ValueError, match="occupied"):
    t3.state_from_moves([4, 4])
  with pytest.raises(ValueError, match="after the game ended"):
    t3.state_from_moves([0, 3, 1, 4, 2, 5])
  with pytest.raises(ValueError, match="not a cell"):
    t3.state_from_moves([9])
  text = t3.render(t3.state_from_moves([4]))
  assert "X" in text and "5" not in text and "1" in text and "O to move" in text


def test_t3_oracle_known_positions():
  states = games.stack_states([
      t3.init(None),
      t3.state_from_moves([0, 1, 4]),  # O must block 8, then X forks: O loses.
      t3.state_from_moves([0, 1, 4, 8]),  # X to move forks with 3 or 6: forced win.
      t3.state_from_moves([0, 3, 1, 4]),  # X wins at once with 2.
      t3.state_from_moves([0, 3, 1, 4, 2]),  # terminal: value 0, no legal action.
  ])
  v = _call(t3_value, states)
  q = _call(t3_qs, states)
  np.testing.assert_array_equal(v, [0.0, -1.0, 1.0, 1.0, 0.0])
  np.testing.assert_array_equal(q[0], np.zeros(9))  # every opening draws
  assert q[2, 3] == 1.0 and q[2, 6] == 1.0 and q[2, 2] == 0.0
  assert np.isneginf(q[2, [0, 1, 4, 8]]).all()
  assert q[3, 2] == 1.0
  assert np.isneginf(q[4]).all()
  # Unbatched jit.
  assert float(jax.jit(t3.minimax_value)(t3.state_from_moves([0, 1, 4]))) == -1.0


def test_t3_oracle_bellman_over_all_states():
  states = t3.reachable_states()
  assert states.board.shape == (t3.NUM_REACHABLE_NONTERMINAL, 9) == (4520, 9)
  idx = _call(t3_index, states)
  assert len(np.unique(idx)) == 4520 and idx.min() >= 0 and idx.max() < 3**9
  legal = _call(t3_legal, states)
  assert legal.any(axis=1).all()  # non-terminal states all have a move
  v = _call(t3_value, states)
  q = _call(t3_qs, states)
  assert set(np.unique(v).tolist()) <= {-1.0, 0.0, 1.0}
  kids = _all_children(t3_step, states, 9)
  v_next = _call(t3_value, _flat(kids.state)).reshape(4520, 9)
  assert not np.isnan(v_next[legal]).any()  # every legal successor is in the table
  backed = kids.reward + kids.discount * v_next
  np.testing.assert_array_equal(q[legal], backed[legal])
  assert np.isneginf(q[~legal]).all()
  np.testing.assert_array_equal(v, q.max(axis=1))
  # Terminal successors are worth 0 and end with discount 0; others alternate (-1).
  np.testing.assert_array_equal(v_next[legal & kids.terminal], 0.0)
  np.testing.assert_array_equal(kids.discount[legal], np.where(kids.terminal[legal], 0.0, -1.0))


# === connect four =============================================================================

DRAW_GAME = "624644612135733672354552142525176133417776"  # 42 moves, nobody connects four


def _naive_lines():
  """All 69 four-cell lines of the 6x7 board as ``[69, 4]`` flat indices (row-major)."""
  lines = []
  for r in range(6):
    for c in range(7):
      for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        cells = [(r + k * dr, c + k * dc) for k in range(4)]
        if all(0 <= rr < 6 and 0 <= cc < 7 for rr, cc in cells):
          lines.append([rr * 7 + cc for rr, cc in cells])
  return np.array(lines)


NAIVE_LINES = _naive_lines()
assert NAIVE_LINES.shape == (69, 4)


def _naive_has_four(board2d, player):
  """Brute force over every line of an ``[6, 7]`` board (independent of the bit tricks)."""
  return bool((np.asarray(board2d).reshape(-1)[NAIVE_LINES] == player).all(axis=1).any())


def test_c4_init_legal_game_constant():
  s = _call(c4_init, np.zeros((2, 2), np.uint32))
  assert _call(c4_legal, s).all()
  assert c4.GAME.num_actions == 7 and c4.GAME.max_length == 42 and c4.GAME.name == "connect_four"
  assert _call(c4_observe, s).shape == (2, 6, 7, 2)
  assert jax.jit(c4.legal_actions)(c4.init(None)).shape == (7,)
  r = jax.jit(c4.step)(c4.state_from_moves("4"), 3, 0)
  assert r.reward.shape == () and r.discount == -1.0 and r.terminal.dtype == jnp.bool_
  jax.tree.map(np.testing.assert_array_equal, r.state, c4.state_from_moves("44"))
  jax.tree.map(np.testing.assert_array_equal, r, _step1(c4_step, c4.state_from_moves("4"), 3))
  text = c4.render(c4.init(None))
  assert "1 2 3 4 5 6 7" in text and "X to move" in text


@pytest.mark.parametrize("moves", [
    "1212121",  # vertical in column 1
    "1122334",  # horizontal on the bottom row
    "12234334744",  # up-right diagonal
    "76654554144",  # up-left diagonal (mirror image)
    "3344556",  # horizontal 3-6, completed at its right end
    "1122443",  # horizontal 1-4, completed in the middle of the line
])
def test_c4_wins(moves):
  before = c4.state_from_moves(moves[:-1])
  assert not bool(before.terminal)
  r = _step1(c4_step, before, int(moves[-1]) - 1)
  board = _one(c4_board, r.state)
  mover = 1 if len(moves) % 2 == 1 else -1
  assert _naive_has_four(board, mover)
  assert (r.reward, r.discount, bool(r.terminal)) == (1.0, 0.0, True)
  assert not _one(c4_legal, r.state).any()
  assert bool(c4.state_from_moves(moves).terminal)
  assert ("X" if mover == 1 else "O") + " wins" in c4.render(r.state)


def test_c4_full_column_draw_and_noops():
  s = c4.state_from_moves("111111")  # alternating discs: full, nobody wins
  legal = _one(c4_legal, s)
  np.testing.assert_array_equal(legal, [False] + [True] * 6)
  r = _step1(c4_step, s, 0)  # full column: no-op
  np.testing.assert_array_equal(r.state.mine, np.asarray(s.mine))
  assert int(r.state.num_moves) == 6 and r.discount == 0.0 and not r.terminal
  with pytest.raises(ValueError, match="full"):
    c4.state_from_moves("1111111")
  # Draw on a full board.
  s = c4.state_from_moves(DRAW_GAME[:-1])
  assert not bool(s.terminal)
  r = _step1(c4_step, s, int(DRAW_GAME[-1]) - 1)
  assert (r.reward, r.discount, bool(r.terminal)) == (0.0, 0.0, True)
  assert not _one(c4_legal, r.state).any()
  assert "draw" in c4.render(r.state)
  # A terminal state stays terminal and unchanged whatever is played.
  for a in range(7):
    r2 = _step1(c4_step, r.state, a)
    assert (r2.reward, r2.discount, bool(r2.terminal)) == (0.0, 0.0, True)
    np.testing.assert_array_equal(r2.state.theirs, r.state.theirs)
  with pytest.raises(ValueError, match="after the game ended"):
    c4.state_from_moves("12121213")
  with pytest.raises(ValueError, match="digit"):
    c4.state_from_moves("128")


@jax.jit
def _random_play(s0, u):
  """Random legal play with ``vmap(step)`` in a scan; keeps stepping finished games.

  Args: ``s0`` batched initial states ``[G]``; ``u`` ``f32[T, G, 7]`` uniform noise (numpy: a
  ``jax.random`` call would cost seconds of compilation on CPU).
  """

  def body(s, ut):
    legal = jax.vmap(c4.legal_actions)(s)
    a = jnp.argmax(jnp.where(legal, ut, -1.0), axis=-1)  # action 0 once nothing is legal
    r = jax.vmap(c4.step)(s, a, jnp.zeros_like(a))
    return r.state, (a, r.reward, r.discount, r.terminal, jax.vmap(c4.board)(r.state))

  return jax.lax.scan(body, s0, u)


def test_c4_random_games_match_naive_rules():
  batch, steps = 24, 46  # 46 > 42: every game is stepped after it ended
  s0 = c4.states_from_moves([""] * batch)
  u = np.random.default_rng(7).uniform(size=(steps, batch, 7)).astype(np.float32)
  _, (acts, rew, disc, term, boards) = _random_play(s0, u)
  acts, rew, disc, term, boards = map(np.asarray, (acts, rew, disc, term, boards))
  for g in range(batch):
    board = np.zeros((6, 7), np.int8)
    heights = [0] * 7
    over, mover = False, 1
    for t in range(steps):
      a = acts[t, g]
      if over:
        assert (rew[t, g], disc[t, g], term[t, g]) == (0.0, 0.0, True)
      else:
        assert heights[a] < 6
        board[heights[a], a] = mover
        heights[a] += 1
        won = _naive_has_four(board, mover)
        over = won or sum(heights) == 42
        assert rew[t, g] == float(won), (g, t)
        assert disc[t, g] == (0.0 if over else -1.0), (g, t)
        assert term[t, g] == over
        mover = -mover
      assert np.array_equal(boards[t, g], board), (g, t)
    assert over


def test_c4_observe_is_mover_relative():
  s = c4.state_from_moves("44")
  obs = np.asarray(_one(c4_observe, s))
  assert obs[0, 3, 0] == 1 and obs[1, 3, 1] == 1 and obs.sum() == 2  # X (mover) bottom
  s = c4.state_from_moves("445")
  obs = np.asarray(_one(c4_observe, s))
  assert obs[1, 3, 0] == 1 and obs[0, 3, 1] == 1 and obs[0, 4, 1] == 1  # O to move


def test_stack_states():
  s = games.stack_states([c4.state_from_moves("1"), c4.state_from_moves("77")])
  assert s.mine.shape == (2, 6) and s.num_moves.tolist() == [1, 2]
  b = c4.states_from_moves(["1", "77"])
  jax.tree.map(np.testing.assert_array_equal, s, b)
  with pytest.raises(ValueError):
    games.stack_states([])
  # Inside a jit (tracers) it stacks too.
  twice = jax.jit(lambda x: games.stack_states([x, x]))(c4.state_from_moves("1"))
  assert twice.mine.shape == (2, 6)


def test_c4_load_test_positions_errors(tmp_path):
  with pytest.raises(FileNotFoundError, match="nope.moves"):
    c4.load_test_positions(tmp_path / "nope.moves")
  bad = tmp_path / "bad.moves"
  bad.write_text("1234 1 2 3\n")
  with pytest.raises(ValueError, match=r"bad\.moves:1"):
    c4.load_test_positions(bad)
  bad.write_text("1234 -3\n")  # a Test_* file (one score) instead of Test_*.moves
  with pytest.raises(ValueError, match=r"\.moves file"):
    c4.load_test_positions(bad)


@pytest.mark.skipif(not DATA.is_dir(), reason=f"Connect Four test data not found at {DATA}")
def test_c4_pons_positions_consistent_with_step():
  """Pons' scores: ``(43 - n) // 2`` = win with my next disc (never happens in these sets:
  they contain no immediate wins), ``-((42 - n) // 2)`` = the opponent wins at once after this
  column, ``(41 - n) // 2`` = I win with my disc after next whatever the reply."""
  moves, scores = c4.load_test_positions(DATA / "Test_L2_R1.moves")
  assert scores.shape == (1000, 7)
  moves, scores = moves[:400], scores[:400]
  states = c4.states_from_moves(moves)
  n = np.array([len(m) for m in moves])[:, None]
  legal = _call(c4_legal, states)
  np.testing.assert_array_equal(legal, scores != c4.FULL_COLUMN_SCORE)
  assert not np.asarray(states.terminal).any()

  # Ply 1: my move. Ply 2: every reply. Ply 3: every move of mine after that.
  k1 = _all_children(c4_step, states, 7)  # [P, 7]
  k2 = _all_children(c4_step, _flat(k1.state), 7)  # [P*7, 7]
  k3 = _all_children(c4_step, _flat(k2.state), 7)  # [P*49, 7]
  legal2 = _call(c4_legal, _flat(k1.state)).reshape(-1, 7, 7)
  my_win_now = (k1.reward == 1) & legal
  opp_wins = ((k2.reward.reshape(-1, 7, 7) == 1) & legal2).any(axis=2) & legal
  win_after = (k3.reward.reshape(-1, 7, 7, 7) == 1).any(axis=3)
  forced = ~opp_wins & (~legal2 | win_after).all(axis=2) & legal2.any(axis=2) & legal
  nonzero = scores != 0  # near the end the formulas below collide with a draw (0)
  np.testing.assert_array_equal(my_win_now, legal & (scores == (43 - n) // 2))
  np.testing.assert_array_equal(opp_wins & nonzero, (scores == -((42 - n) // 2)) & nonzero)
  np.testing.assert_array_equal(forced & nonzero, (scores == (41 - n) // 2) & nonzero)
  assert opp_wins.sum() > 100 and forced.sum() > 10  # the checks are not vacuous
