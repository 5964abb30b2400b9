"""Searches against the exact tic-tac-toe minimax table.

The claim under test: from the empty board and from every *decisive* position, a search never
chooses a move the minimax table calls worse than the best legal one.

* Decisive = reachable, not terminal, and the legal moves do not all have the same minimax
  value, so a wrong choice changes the result: 3,191 of the 4,520 non-terminal positions.
  (Every move from the empty board draws, so there it only has to pick a legal move.)
* UCT with random rollouts at 2,000 simulations (``R = 1`` rollout per leaf, ``c = sqrt 2``).
  Zero mistakes over all decisive positions for search seeds 0 and 1; the margin is real but
  not huge (seed 0: 19 mistakes at 500 simulations, 7 at 1,000).
* PUCT with a uniform prior (the rollout estimator gives no prior logits) at 1,000
  simulations, ``R = 8`` rollouts per leaf and a constant ``c = 4``: zero mistakes for seeds
  0, 1 and 2 (4 at 500 simulations). The MuZero schedule (``c`` from 1.25 to 1.44 here) is too
  greedy with a uniform prior and never got there: 19 mistakes at 2,000 and 13 at 4,000
  simulations with ``R = 1``, 7 at 2,000 and 3 at 4,000 with ``R = 8``. It locks onto a move
  whose random rollouts look good and starves the rest (e.g. the centre, a draw, where only a
  corner forks and wins). Other constants failed at 1,000 simulations: with ``R = 1``,
  ``c`` = 1, 2, 4, 8, 16 made 38, 16, 4, 15, 40 mistakes; with ``R = 8``, ``c = 8`` made 16.
  (Sweeps: ``jaxsearch bench tictactoe``.)

The default run checks the empty board plus a fixed random sample of decisive positions; the
``slow`` tests sweep all of them (``pytest -m slow``; about 40 s for UCT and 70 s for PUCT on
two CPU cores). ``jaxsearch bench tictactoe`` runs the same sweeps with other settings.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsearch as js
from jaxsearch.games import tictactoe as t3

GAME = t3.GAME

UCT_SIMULATIONS = 2000
UCT_ROLLOUTS = 1
PUCT_SIMULATIONS = 1000
PUCT_ROLLOUTS = 8
PUCT_C = 4.0

SAMPLE_SIZE = 64
SAMPLE_SEED = 0  # which decisive positions the fast tests use
SEARCH_SEED = 0  # the searches' PRNG key
SWEEP_CHUNK = 128  # positions per call in the full sweeps (tree memory ~ chunk * max_nodes)

NUM_DECISIVE = 3191


# --- positions ----------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _positions():
  """The empty board followed by every decisive position (by state index), as numpy arrays:
  ``(boards int8[P, 9], players int8[P], qs f32[P, 9])`` with ``qs`` the minimax action
  values (``-inf`` illegal)."""
  states = t3.reachable_states()
  qs = np.asarray(jax.jit(jax.vmap(t3.minimax_action_values))(states))
  legal = np.isfinite(qs)
  best = np.where(legal, qs, -np.inf).max(axis=1)
  worst = np.where(legal, qs, np.inf).min(axis=1)
  keep = np.flatnonzero(best > worst)
  empty = t3.init(None)
  boards = np.concatenate([np.asarray(empty.board)[None], np.asarray(states.board)[keep]])
  players = np.concatenate([np.asarray(empty.player)[None], np.asarray(states.player)[keep]])
  empty_qs = np.asarray(t3.minimax_action_values(empty))[None]
  return boards, players, np.concatenate([empty_qs, qs[keep]])


@functools.lru_cache(maxsize=None)
def _sample():
  """The empty board plus ``SAMPLE_SIZE`` decisive positions drawn with a fixed seed."""
  boards, players, qs = _positions()
  rng = np.random.default_rng(SAMPLE_SEED)
  picked = np.sort(rng.choice(np.arange(1, len(qs)), SAMPLE_SIZE, replace=False))
  idx = np.concatenate([[0], picked])
  return boards[idx], players[idx], qs[idx]


def _states(boards, players) -> t3.State:
  return t3.State(board=jnp.asarray(boards), player=jnp.asarray(players),
                  terminal=jnp.zeros((len(players),), bool))


# --- searches -----------------------------------------------------------------------------------

def _jit_search(search):
  """Jitted ``(key, roots) -> (action, visit_counts)``; the trees stay inside the jit."""

  def run(key, roots):
    out = search(None, key, roots)
    return out.action, out.visit_counts

  return jax.jit(run)


@functools.lru_cache(maxsize=None)
def _uct():
  return _jit_search(js.policies.uct(GAME, js.estimators.rollout(GAME, UCT_ROLLOUTS),
                                     num_simulations=UCT_SIMULATIONS))


@functools.lru_cache(maxsize=None)
def _puct():
  return _jit_search(js.policies.puct(GAME, js.estimators.rollout(GAME, PUCT_ROLLOUTS),
                                      num_simulations=PUCT_SIMULATIONS, c=PUCT_C))


def _search_all(fn, boards, players, chunk):
  """Runs ``fn`` over all positions in calls of ``chunk`` (the last one padded, so there is one
  compile); chunk ``i`` gets the key ``fold_in(PRNGKey(SEARCH_SEED), i)``."""
  key = jax.random.PRNGKey(SEARCH_SEED)
  actions, visits = [], []
  for i, lo in enumerate(range(0, len(players), chunk)):
    hi = min(lo + chunk, len(players))
    idx = np.concatenate([np.arange(lo, hi), np.zeros(chunk - (hi - lo), np.int64)])
    a, v = fn(jax.random.fold_in(key, i), _states(boards[idx], players[idx]))
    actions.append(np.asarray(a)[:hi - lo])
    visits.append(np.asarray(v)[:hi - lo])
  return np.concatenate(actions), np.concatenate(visits)


def _assert_no_mistakes(name, boards, players, qs, actions, visits):
  """Fails listing every position where ``actions`` is illegal or below the minimax best."""
  chosen = qs[np.arange(len(actions)), np.clip(actions, 0, 8)]
  best = qs.max(axis=1)
  bad = np.flatnonzero((actions < 0) | ~np.isfinite(chosen) | (chosen < best))
  if len(bad) == 0:
    return
  lines = [f"{name}: {len(bad)} mistakes in {len(actions)} positions"]
  for p in bad[:10]:
    state = t3.State(board=boards[p], player=players[p], terminal=np.bool_(False))
    # "+ 0.0" turns the table's -0.0 draws into 0.0 for printing.
    table = np.where(np.isfinite(qs[p]), qs[p] + 0.0, np.nan)
    lines += [t3.render(state),
              f"chose cell {actions[p] + 1} = action {actions[p]} (minimax "
              f"{chosen[p] + 0.0:+.0f}, best {best[p] + 0.0:+.0f}); root visits "
              f"{visits[p].tolist()}; minimax by action {table.tolist()} (nan = illegal)"]
  pytest.fail("\n".join(lines))


# --- the positions themselves -------------------------------------------------------------------

def test_decisive_positions_are_counted_as_stated():
  _, _, qs = _positions()
  assert len(qs) == 1 + NUM_DECISIVE
  assert np.all(qs[0] == 0.0)  # the empty board: every move draws
  legal = np.isfinite(qs[1:])
  best = np.where(legal, qs[1:], -np.inf).max(axis=1)
  worst = np.where(legal, qs[1:], np.inf).min(axis=1)
  assert np.all(best > worst)


def test_sample_is_nontrivial():
  """The fast tests' sample covers the kinds of decision that can go wrong."""
  _, players, qs = _sample()
  assert len(qs) == 1 + SAMPLE_SIZE
  decisive = qs[1:]
  legal = np.isfinite(decisive)
  best = np.where(legal, decisive, -np.inf).max(axis=1)
  worst = np.where(legal, decisive, np.inf).min(axis=1)
  num_best = np.sum(legal & (decisive == best[:, None]), axis=1)
  assert np.sum(best == 1.0) >= 10  # forced wins to find
  assert np.sum(worst == -1.0) >= 10  # positions where some move loses
  assert np.sum((best == 0.0) & (worst == -1.0)) >= 5  # must find the draw or lose
  assert np.sum(num_best == 1) >= 10  # exactly one good move
  assert set(np.unique(players[1:]).tolist()) == {-1, 1}  # both sides to move
  assert len(set(np.sum(legal, axis=1).tolist())) >= 4  # early and late positions


# --- searches on the sample (default run) -------------------------------------------------------

def test_uct_with_rollouts_makes_no_minimax_mistakes_on_sample():
  boards, players, qs = _sample()
  actions, visits = _search_all(_uct(), boards, players, chunk=len(qs))
  assert visits.sum(axis=1).tolist() == [UCT_SIMULATIONS] * len(qs)
  _assert_no_mistakes("uct", boards, players, qs, actions, visits)


@pytest.mark.slow
def test_puct_uniform_prior_makes_no_minimax_mistakes_on_sample():
  boards, players, qs = _sample()
  actions, visits = _search_all(_puct(), boards, players, chunk=len(qs))
  assert visits.sum(axis=1).tolist() == [PUCT_SIMULATIONS] * len(qs)
  _assert_no_mistakes("puct", boards, players, qs, actions, visits)


# --- full sweeps (pytest -m slow) ---------------------------------------------------------------

@pytest.mark.slow
def test_uct_with_rollouts_makes_no_minimax_mistakes_anywhere():
  boards, players, qs = _positions()
  actions, visits = _search_all(_uct(), boards, players, chunk=SWEEP_CHUNK)
  _assert_no_mistakes("uct", boards, players, qs, actions, visits)


@pytest.mark.slow
def test_puct_uniform_prior_makes_no_minimax_mistakes_anywhere():
  boards, players, qs = _positions()
  actions, visits = _search_all(_puct(), boards, players, chunk=SWEEP_CHUNK)
  _assert_no_mistakes("puct", boards, players, qs, actions, visits)
