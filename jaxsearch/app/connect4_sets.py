"""Connect Four test sets (Pascal Pons' ``Test_*.moves``): loading them, an agent's move
errors on them, and the oracle player that plays a best move of a set."""

from __future__ import annotations

import dataclasses
import importlib.resources
import os
from pathlib import Path
from typing import Optional, Union

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch.train.agents import ActFn, Agent, MoveReport, BoundFn, act_on_positions

from jaxsearch.games import connect_four as c4

CONNECT4_ENV = "JAXSEARCH_CONNECT4_DIR"
CONNECT4_SETS = ("Test_L3_R1", "Test_L2_R1", "Test_L2_R2")
# The copies shipped with the package (README.md there: source and checksums).
DEFAULT_CONNECT4_DIR = Path(str(importlib.resources.files("jaxsearch") / "data" / "connect4"))


# ---------------------------------------------------------------------------------------------
# Connect Four test sets.


@dataclasses.dataclass(frozen=True)
class Connect4Set:
  """A Connect Four test set (Pascal Pons' ``Test_*.moves``), see ``README.md`` next to it.

  Attributes:
    name: e.g. ``"Test_L3_R1"``.
    path: the ``.moves`` file read.
    moves: ``P`` move strings (columns ``1..7``).
    states: the positions, a batched ``connect_four.State`` (leaves ``[P, ...]``).
    scores: ``i32[P, 7]`` perfect-play score of each column for the player to move (positive =
      win, larger = sooner; ``-1000`` = full column).
  """

  name: str
  path: Path
  moves: list
  states: c4.State
  scores: np.ndarray

  def __len__(self) -> int:
    return len(self.moves)


def connect4_data_dir(data_dir: Union[str, Path, None] = None) -> Path:
  """``data_dir``, else ``$JAXSEARCH_CONNECT4_DIR``, else the copies shipped with the package
  (:data:`DEFAULT_CONNECT4_DIR`, ``jaxsearch/data/connect4``)."""
  if data_dir is not None:
    return Path(data_dir)
  env = os.environ.get(CONNECT4_ENV)
  return Path(env) if env else DEFAULT_CONNECT4_DIR


def _connect4_path(name_or_path: Union[str, Path], data_dir) -> Path:
  text = str(name_or_path)
  path = Path(text)
  if path.is_file() or os.sep in text or text.endswith(".moves"):
    return path
  name = text if text.startswith("Test_") else f"Test_{text}"
  return connect4_data_dir(data_dir) / f"{name}.moves"


def _missing_set_message(path: Path) -> str:
  """Why the set file ``path`` (which does not exist) is needed and how to supply it."""
  text = (f"Connect Four test set not found: {path}. The package ships the sets "
          f"(Test_L3_R1.moves, Test_L2_R1.moves, Test_L2_R2.moves) in {DEFAULT_CONNECT4_DIR} "
          f"(format, source and error definition in its README.md: "
          f"{DEFAULT_CONNECT4_DIR / 'README.md'}) and reads them from there unless "
          f"${CONNECT4_ENV} or data_dir= names another folder.")
  if path.parent.resolve() == DEFAULT_CONNECT4_DIR.resolve():
    text += " This file is one of the shipped copies: the install is broken, reinstall jaxsearch."
  elif os.environ.get(CONNECT4_ENV):
    text += (f" ${CONNECT4_ENV} is {os.environ[CONNECT4_ENV]!r}: point it at a folder holding "
             f"the sets, or unset it to use the shipped copies.")
  return text


def load_connect4_set(name_or_path: Union[str, Path],
                      data_dir: Union[str, Path, None] = None) -> Connect4Set:
  """Reads a Connect Four test set.

  Args:
    name_or_path: a set name (``"Test_L3_R1"``, or ``"L3_R1"``) looked up as ``<name>.moves`` in
      the data directory, or the path of a ``.moves`` file.
    data_dir: the directory of the sets; default ``$JAXSEARCH_CONNECT4_DIR``, else the copies
      shipped with the package (:data:`DEFAULT_CONNECT4_DIR`).

  Raises:
    FileNotFoundError: the file is missing (the message names the path, the environment
      variable and the data's README).
    ValueError: a malformed line, or ``-1000`` markers that disagree with the full columns.
  """
  path = _connect4_path(name_or_path, data_dir)
  if not path.is_file():
    raise FileNotFoundError(_missing_set_message(path))
  moves, scores = c4.load_test_positions(path)
  states = c4.states_from_moves(moves)
  top = np.asarray(states.mine)[:, -1] | np.asarray(states.theirs)[:, -1]
  full = ((top[:, None] >> np.arange(c4.NUM_COLUMNS)) & 1) == 1
  marked = scores == c4.FULL_COLUMN_SCORE
  bad = np.flatnonzero(np.any(full != marked, axis=1) | np.asarray(states.terminal))
  if len(bad):
    i = int(bad[0])
    raise ValueError(f"{path}: {len(bad)} positions whose {c4.FULL_COLUMN_SCORE} markers do "
                     f"not match the full columns (or that are over), first: line {i + 1} "
                     f"{moves[i]!r} {scores[i].tolist()}")
  name = path.name[:-len(".moves")] if path.name.endswith(".moves") else path.name
  return Connect4Set(name=name, path=path, moves=list(moves), states=states, scores=scores)


def connect4_move_errors(act_fn: Union[ActFn, Agent], key: jax.Array,
                         positions: Union[Connect4Set, str, Path],
                         batch_size: Optional[int] = 1000) -> MoveReport:
  """The agent's move at every position of a test set, judged by its scores: a move is an
  error when ``sign(S_chosen) < max over legal columns of sign(S)`` (and an illegal move is
  always one). ``.error_rate`` is the set's error rate, ``.failed`` the positions.

  Args:
    act_fn: the agent.
    key: PRNG key (chunk ``i`` of ``batch_size`` positions gets ``fold_in(key, i)``).
    positions: a :class:`Connect4Set`, or a set name / path for :func:`load_connect4_set`.
    batch_size: positions per call (bounds a search's tree memory); ``None`` = all at once.
  """
  if isinstance(positions, (str, Path)):
    positions = load_connect4_set(positions)
  actions = act_on_positions(act_fn, key, positions.states, batch_size)
  scores = positions.scores
  legal_cols = scores != c4.FULL_COLUMN_SCORE
  signs = np.where(legal_cols, np.sign(scores), -2)
  ok = (actions >= 0) & (actions < c4.NUM_COLUMNS)
  col = np.clip(actions, 0, c4.NUM_COLUMNS - 1)
  chosen_legal = ok & legal_cols[np.arange(len(actions)), col]
  chosen = signs[np.arange(len(actions)), col]
  correct = chosen_legal & (chosen >= signs.max(axis=1))
  return MoveReport(states=positions.states, actions=actions, correct=correct, values=scores)


def connect4_error_rate(act_fn: Union[ActFn, Agent], key: jax.Array,
                        positions: Union[Connect4Set, str, Path],
                        batch_size: Optional[int] = 1000) -> float:
  """Move error rate of the agent on a test set (see :func:`connect4_move_errors`)."""
  return connect4_move_errors(act_fn, key, positions, batch_size).error_rate


def connect4_expected_random_error(positions: Connect4Set) -> float:
  """The exact expected error rate of a uniformly random legal move on ``positions`` (the
  README's last column: 31.1 % on Test_L3_R1)."""
  return float(np.mean(_random_error_probs(positions.scores)))


def _random_error_probs(scores: np.ndarray) -> np.ndarray:
  """``f64[P]``: per position, the share of legal columns that are errors."""
  legal = scores != c4.FULL_COLUMN_SCORE
  signs = np.where(legal, np.sign(scores), -2)
  bad = legal & (signs < signs.max(axis=1, keepdims=True))
  return bad.sum(axis=1) / legal.sum(axis=1)


def _oracle_act(table_mine, table_theirs, table_best, params, key, states):
  del params, key
  # [B, P]: which table position each state is (all 12 row bytes equal).
  match = jnp.all((states.mine[:, None, :] == table_mine[None]) &
                  (states.theirs[:, None, :] == table_theirs[None]), axis=-1)
  found = jnp.any(match, axis=-1)
  return jnp.where(found, table_best[jnp.argmax(match, axis=-1)], -1).astype(jnp.int32)


def connect4_oracle_player(positions: Connect4Set) -> Agent:
  """Plays a best-scored column at the positions of ``positions`` (looked up by board;
  ``-1``, an illegal move, elsewhere): a perfect agent on that set, for sanity checks."""
  best = np.argmax(np.where(positions.scores == c4.FULL_COLUMN_SCORE, np.iinfo(np.int32).min,
                            positions.scores), axis=1).astype(np.int32)
  # Tables are closed over as constants (jit-static via BoundFn identity), built once per call.
  table = (jnp.asarray(positions.states.mine), jnp.asarray(positions.states.theirs),
           jnp.asarray(best))
  return Agent(fn=BoundFn(_oracle_act, *table))
