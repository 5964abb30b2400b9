"""``jaxsearch play``: a game against the search in the terminal (batch of 1, temperature 0,
subtree reuse); ``--checkpoint`` plays a network trained by ``jaxsearch train``."""

from __future__ import annotations

import argparse
import dataclasses
import functools
from typing import Callable, Optional, Sequence

from jaxsearch.app import registry
from jaxsearch.app.registry import PlaySpec
from jaxsearch.cli.common import CommandError, check_draw_file, game_name, prng_seed


@dataclasses.dataclass(frozen=True)
class _Searcher:
  """The jitted functions one ``play`` game runs.

  Attributes:
    search: ``(params, key, states[1], tree) -> PolicyOutput`` of one move.
    empty_tree: ``(key, states[1]) -> Tree`` an empty tree of the search's own layout (the
      first move's; later ones get the ``reroot``-ed tree).
    reroot: keeps the subtree under the move played (:func:`jaxsearch.reroot`).
    step: the game's ``step`` of one (unbatched) state.
    legal_actions: ``state -> bool[A]``.
    max_nodes: the trees' size.
    simulations: search simulations per move.
  """

  search: Callable
  empty_tree: Callable
  reroot: Callable
  step: Callable
  legal_actions: Callable
  max_nodes: int
  simulations: int


def _spec(game: str) -> PlaySpec:
  """How ``play`` presents ``game`` (the registry's, known before the game is imported)."""
  return registry.entry(game, "play").play


def _game_module(game: str):
  """The game's module (``GAME``, ``render``); for ``pgx:ENV_ID`` the equivalent namespace of
  :func:`jaxsearch.games.pgx_env.module_for` (ImportError without pgx, ValueError for an
  unknown id): :meth:`jaxsearch.app.registry.GameEntry.load`."""
  return registry.entry(game, "play").load()


def add_parser(commands) -> None:
  """The ``play`` verb's arguments, on the subparsers ``commands``."""
  play = commands.add_parser(
      "play", help="play a game against the search in the terminal",
      description="Play against the search (batch of 1, temperature 0, subtree reuse).")
  playable = sorted(registry.names("play"))
  play.add_argument("game", type=game_name(playable),
                    help=f"{', '.join(playable)}, or pgx:ENV_ID (any pgx environment, "
                         f"e.g. pgx:othello, pgx:2048; needs pgx)")
  play.add_argument("--simulations", type=int, default=None,
                    help="simulations per search move (default: 2000 tictactoe, "
                         "1000 connect_four)")
  play.add_argument("--rule", choices=["uct", "puct"], default="uct",
                    help="selection rule; both use random-rollout values, PUCT a uniform "
                         "prior (default: uct)")
  play.add_argument("--first", choices=["human", "search"], default="human",
                    help="who moves first (default: human)")
  play.add_argument("--seed", type=prng_seed, default=0,
                    help="PRNG seed, 0 to 2**32 - 1 (default: 0)")
  play.add_argument("--draw", default=None, metavar="FILE",
                    help="after each search move, draw its tree to FILE, replacing the "
                         "previous move's (.dot, .svg, .png or .pdf; moves numbered as you "
                         "type them; each node's 6 most visited moves and 12 per level, the "
                         "rest summarised in a '+k more' box). The first drawing prints where "
                         "it went: without Graphviz's `dot` program, that is FILE with the "
                         "suffix .dot, and one warning says how to render it")
  play.add_argument("--draw-depth", type=int, default=2, metavar="D",
                    help="levels below the root to draw (default 2)")
  play.add_argument("--checkpoint", default=None, metavar="DIR",
                    help="play the network trained by `jaxsearch train` in DIR (its newest "
                         "checkpoint; PUCT with network values and prior, default "
                         "simulations: the run's evaluation budget)")


def run(args: argparse.Namespace) -> int:
  """``jaxsearch play``; returns the exit status."""
  spec = _spec(args.game)
  # The options first: importing the game (and pgx) takes seconds.
  simulations = args.simulations if args.simulations is not None else spec.default_simulations
  if simulations < 1:
    raise CommandError(f"jaxsearch play: --simulations must be >= 1, got {simulations}")
  _check_draw(args.draw, args.draw_depth)
  try:
    module = _game_module(args.game)
  except ImportError as error:
    raise CommandError(f"jaxsearch play: {error}") from None
  if args.checkpoint:
    searcher = _trained_search(args.checkpoint, args.game, args.simulations)
  else:
    searcher = _jitted(args.game, args.rule, simulations)
  return _play_game(args, spec, module, searcher)


def _play_game(args: argparse.Namespace, spec: PlaySpec, module, searcher: _Searcher) -> int:
  """Plays one game in the terminal; returns the exit status."""
  import jax
  import jax.numpy as jnp
  import numpy as np

  game = module.GAME
  key = jax.random.PRNGKey(args.seed)
  key, init_key = jax.random.split(key)
  state = game.init(init_key)
  tree = searcher.empty_tree(key, jax.tree.map(lambda x: x[None], state))
  _introduce(args, module, state, searcher.simulations)
  drawer = _TreeDrawer(args.draw, args.draw_depth, game.name) if args.draw else None
  searched = False  # until the first search, the tree is empty and rerooting is pointless
  # Who moves next follows the discounts: -1 hands the turn over, +1 keeps it (a backgammon
  # turn, every move of a one-player game).
  human_to_move = args.first == "human"
  try:
    while True:
      print()
      print(module.render(state))
      legal = np.asarray(searcher.legal_actions(state))
      if not legal.any():  # cannot happen after a non-terminal step; guards odd games
        print("Draw: no legal move left.")
        return 0
      if human_to_move:
        action = _ask_move(legal.tolist(), spec)
        if action is None:
          print("Bye.")
          return 0
      else:
        if not searched:
          print("(the first search move compiles; a few seconds...)", flush=True)
          searched = True
        key, search_key = jax.random.split(key)
        action, tree = _search_move(searcher, search_key, state, tree, drawer)
      key, outcome = _chance_outcome(game, key, state, action)
      # Keep the subtree under the move actually played; an unexpanded child gives an empty
      # row, which the next search restarts from the state it is given.
      if searched:
        tree = searcher.reroot(tree, jnp.array([action], jnp.int32),
                               jnp.array([outcome], jnp.int32))
      result = searcher.step(state, jnp.int32(action), jnp.int32(outcome))
      state = result.state
      if bool(result.terminal):
        _announce_result(module, state, result, human_to_move)
        return 0
      if float(result.discount) < 0:
        human_to_move = not human_to_move
  except KeyboardInterrupt:
    print("\nInterrupted.")
    return 130


def _introduce(args: argparse.Namespace, module, state, simulations: int) -> None:
  """Prints who plays whom, with what search."""
  human_moves_first = args.first == "human"
  opponent = (f"the trained network's search ({args.checkpoint})" if args.checkpoint else
              f"{args.rule.upper()}")
  values = "network values" if args.checkpoint else "rollout values"
  print(f"{module.GAME.name}: you play {'first' if human_moves_first else 'second'} against "
        f"{opponent} with {simulations} simulations a move ({values}).")
  if getattr(module, "num_players", 2) == 2 and hasattr(module, "current_player"):
    first = int(module.current_player(state))  # pgx: X is player 0, who need not start
    print(f"You play {'X' if (first == 0) == human_moves_first else 'O'}.")


def _search_move(searcher: _Searcher, key, state, tree, drawer=None):
  """The search's move from ``state`` and the tree it leaves, printed (and drawn by
  ``drawer``, a :class:`_TreeDrawer`, with ``--draw``)."""
  import jax
  import numpy as np

  out = searcher.search(None, key, jax.tree.map(lambda x: x[None], state), tree)
  action = int(out.action[0])
  visits = np.asarray(out.visit_counts[0])
  print(f"search plays {action + 1} (value {float(out.root_value[0]):+.2f}, "
        f"{int(visits[action])}/{int(visits.sum())} visits)")
  if drawer is not None:
    drawer(out.tree)
  return action, out.tree


def _check_draw(path: Optional[str], depth: int) -> None:
  """``--draw``'s file (a suffix viz draws to, writable: it is written after every search
  move) and ``--draw-depth`` (with or without ``--draw``), checked before the game starts."""
  if depth < 0:
    raise CommandError(f"jaxsearch play: --draw-depth must be >= 0, got {depth}")
  if path:
    check_draw_file(path, "--draw")


class _TreeDrawer:
  """``--draw FILE``: draws each search move's tree to ``FILE``, replacing the previous one.

  The first drawing prints where it went (``FILE``, or ``FILE.dot`` without Graphviz's
  ``dot`` program, after viz's one warning); later ones draw silently.

  Args:
    path: the file (``.dot``, ``.gv``, ``.svg``, ``.png`` or ``.pdf``).
    depth: levels below the root to draw.
    game_name: for the drawing's title.
  """

  def __init__(self, path: str, depth: int, game_name: str):
    self.path, self.depth, self.game_name = path, depth, game_name
    self.moves = 0

  def __call__(self, tree) -> None:
    from jaxsearch import viz

    self.moves += 1
    written = viz.draw(tree, self.path, max_depth=self.depth, quiet=self.moves > 1,
                       action_names=lambda action: str(action + 1),
                       title=f"{self.game_name}: search before its move {self.moves}")
    if self.moves == 1:
      print(f"Search tree drawn to {written} (redrawn after each search move).")


def _chance_outcome(game, key, state, action: int):
  """``(key, outcome)``: the outcome the game takes after ``action`` (0 without chance),
  drawn with a split of ``key``."""
  import jax
  import jax.numpy as jnp

  if game.num_outcomes <= 1:
    return key, 0
  key, chance_key = jax.random.split(key)
  probs = game.outcome_probs(state, jnp.int32(action))
  return key, int(jax.random.categorical(chance_key, jnp.log(probs)))


def _announce_result(module, state, result, human_made_last_move: bool) -> None:
  """Prints the final position and who won."""
  print()
  print(module.render(state))
  reward = float(result.reward)  # to the player who made the last move
  if reward == 0:
    print("Draw." if getattr(module, "num_players", 2) == 2 else "Game over.")
  elif getattr(module, "num_players", 2) == 1:
    print(f"Game over; the last move scored {reward:g}.")
  else:
    print("You win!" if (reward > 0) == human_made_last_move else "The search wins.")


def _ask_move(legal: Sequence[bool], spec: PlaySpec) -> Optional[int]:
  """Prompts until the person enters a legal action; ``None`` on ``q`` or end of input.

  Args:
    legal: ``bool[A]`` legal actions of the position (action ``a`` is typed as ``a + 1``).
    spec: the game's description, for the wording of the messages.
  """
  num_actions = len(legal)
  prompt = f"Your move (1-{num_actions}, q to quit): "
  while True:
    try:
      text = input(prompt).strip()
    except EOFError:
      print()  # the prompt left the cursor mid-line
      return None
    if text.lower() in ("q", "quit", "exit"):
      return None
    try:
      label = int(text)
    except ValueError:
      print(f"{text!r} is not a number: type a {spec.unit} 1-{num_actions}, or q to quit.")
      continue
    if not 1 <= label <= num_actions:
      print(f"{label} is out of range: {spec.unit}s are numbered 1-{num_actions}.")
      continue
    if not legal[label - 1]:
      free = ", ".join(str(a + 1) for a, ok in enumerate(legal) if ok)
      print(f"{spec.taken.format(label=label)}; legal {spec.unit}s: {free}.")
      continue
    return label - 1


def _empty_tree(search, params) -> Callable:
  """``(key, states) -> Tree``: an empty tree (no node yet) of ``search``'s own layout, which
  depends on its backup, rule and estimator; the first search starts from the states."""

  def empty(key, states):
    tree = search.init_tree(params, key, states)
    return tree.replace(num_nodes=0 * tree.num_nodes)

  return empty


@functools.lru_cache(maxsize=None)
def _jitted(game: str, rule: str, simulations: int) -> _Searcher:
  """The jitted functions of one ``play`` setting (rollout values, UCT or PUCT).

  Cached so that playing again with the same settings in one process (tests, notebooks)
  reuses the compiled search instead of paying several seconds of compilation again.
  """
  import jax

  import jaxsearch as js

  game_def = _game_module(game).GAME
  # Room for a reused subtree plus a full search's new nodes; a tree that still fills up
  # stops growing and keeps backing up values (SearchConfig needs max_nodes >= S + 1).
  max_nodes = 2 * simulations + 2
  estimator = js.estimators.rollout(game_def, num_rollouts=4)
  policy = js.policies.uct if rule == "uct" else js.policies.puct  # PUCT: a uniform prior
  search = policy(game_def, estimator, num_simulations=simulations, max_nodes=max_nodes)
  # One compile each: the tree is always passed (an empty one at first) so its pytree
  # structure, and so the jit cache key, never changes between moves.
  return _Searcher(search=jax.jit(search), empty_tree=jax.jit(_empty_tree(search, None)),
                   reroot=jax.jit(js.reroot),
                   step=jax.jit(game_def.step), legal_actions=jax.jit(game_def.legal_actions),
                   max_nodes=max_nodes, simulations=simulations)


def _trained_search(checkpoint: str, game: str, simulations: Optional[int]) -> _Searcher:
  """``play --checkpoint``: a trained network's search (PUCT or the run's policy, temperature
  0, no noise)."""
  import jax

  import jaxsearch as js
  from jaxsearch.app import training
  from jaxsearch.train import checkpoint as checkpoint_lib

  try:
    trainer, params = training.load_trained(checkpoint)
  except (FileNotFoundError, checkpoint_lib.CheckpointError) as error:
    raise CommandError(f"jaxsearch play: cannot load --checkpoint {checkpoint}: "
                       f"{error}") from None
  if trainer.config.game != game:
    raise CommandError(f"jaxsearch play: {checkpoint} was trained on {trainer.config.game}, "
                       f"not {game}")
  simulations = simulations or trainer.config.eval_simulations
  max_nodes = 2 * simulations + 2
  configured = trainer.make_search(simulations, max_nodes, 0.0)
  search = jax.jit(configured)

  def search_fn(_, key, states, tree):
    return search(params, key, states, tree)

  return _Searcher(search=search_fn, empty_tree=jax.jit(_empty_tree(configured, params)),
                   reroot=jax.jit(js.reroot),
                   step=jax.jit(trainer.game.step),
                   legal_actions=jax.jit(trainer.game.legal_actions), max_nodes=max_nodes,
                   simulations=simulations)
