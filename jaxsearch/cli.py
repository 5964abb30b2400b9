"""The ``jaxsearch`` command line: play a game against the search, run the benchmark.

    jaxsearch --help
    jaxsearch play tictactoe [--simulations 2000] [--rule uct|puct] [--first human|search]
    jaxsearch play connect_four [--simulations 1000] [--checkpoint DIR] [--draw F] ...
    jaxsearch play pgx:ENV_ID [...]        (any pgx environment, e.g. pgx:othello, pgx:2048)
    jaxsearch train tictactoe|connect_four|pgx:ENV_ID [--minutes M] [--policy P] [--out DIR] [--resume]
        [--plot] [--json] [--seed S] [--steps N] [--set KEY=VALUE ...]
    jaxsearch bench [--quick] [--repeats N] [--only ...]
    jaxsearch solve mastermind [--pegs 4 --colours 6] [--seconds 60] [--export F] [--json] [--plot F]
        [--draw F]
    jaxsearch solve wordle [--answers FILE --guesses FILE] [--first WORD] [...]
    jaxsearch evaluate F

JAX is imported inside the subcommands only (and ``jaxsearch`` loads its submodules lazily),
so ``--help`` answers in about 0.1 s. Compiled programs are kept between runs in JAX's
persistent cache (:func:`compile_cache_dir`; ``JAXSEARCH_CACHE_DIR=`` turns it off).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import os
import sys
from pathlib import Path
from typing import Optional, Sequence


@dataclasses.dataclass(frozen=True)
class _GameSpec:
  """What ``play`` needs to know about a game before importing it (no JAX here).

  Attributes:
    module: the module under ``games`` exposing ``GAME`` and ``render``.
    default_simulations: search simulations per move unless ``--simulations`` says otherwise.
    unit: what a person picks ("cell", "column"); action ``a`` is shown as ``a + 1``.
    taken: why a legal-range choice is illegal, formatted with ``{label}``.
  """

  module: str
  default_simulations: int
  unit: str
  taken: str


_GAMES = {
    "tictactoe": _GameSpec("tictactoe", 2000, "cell", "cell {label} is already taken"),
    "connect_four": _GameSpec("connect_four", 1000, "column", "column {label} is full"),
}

_PGX = "pgx:"  # `play pgx:othello`: any pgx environment through games.pgx_env
_PGX_SPEC = _GameSpec("pgx_env", 200, "move", "move {label} is not legal here")


def _spec(game_name: str) -> _GameSpec:
  return _PGX_SPEC if game_name.startswith(_PGX) else _GAMES[game_name]


def _game_module(game_name: str):
  """The game's module (``GAME``, ``render``); for ``pgx:ENV_ID`` the equivalent namespace of
  :func:`games.pgx_env.module_for` (ImportError without pgx, ValueError for an unknown id)."""
  if game_name.startswith(_PGX):
    from games import pgx_env
    return pgx_env.module_for(game_name)
  return importlib.import_module(f"games.{_GAMES[game_name].module}")


# ---- play --------------------------------------------------------------------------------------

def _ask_move(legal: Sequence[bool], spec: _GameSpec) -> Optional[int]:
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


@functools.lru_cache(maxsize=None)
def _jitted(game_name: str, rule: str, simulations: int):
  """The jitted search, reroot, step and legal-action functions of one ``play`` setting, and
  the trees' ``max_nodes``.

  Cached so that playing again with the same settings in one process (tests, notebooks)
  reuses the compiled search instead of paying several seconds of compilation again.
  """
  import jax

  import jaxsearch as js

  game = _game_module(game_name).GAME
  # Room for a reused subtree plus a full search's new nodes; a tree that still fills up
  # stops growing and keeps backing up values (SearchConfig needs max_nodes >= S + 1).
  max_nodes = 2 * simulations + 2
  estimator = js.estimators.rollout(game, num_rollouts=4)
  if rule == "uct":
    search = js.policies.uct(game, estimator, num_simulations=simulations, max_nodes=max_nodes)
  else:  # PUCT with the rollout estimator's uniform prior
    search = js.policies.puct(game, estimator, num_simulations=simulations, max_nodes=max_nodes)
  # One compile each: the tree is always passed (an empty one at first) so its pytree
  # structure, and so the jit cache key, never changes between moves.
  return (jax.jit(search), jax.jit(js.reroot), jax.jit(game.step),
          jax.jit(game.legal_actions), max_nodes)


def _play(args: argparse.Namespace) -> int:
  import jax
  import jax.numpy as jnp
  import numpy as np

  import jaxsearch as js

  spec = _spec(args.game)
  try:
    module = _game_module(args.game)
  except ImportError as error:
    print(f"jaxsearch play: {error}", file=sys.stderr)
    return 2
  game = module.GAME
  simulations = args.simulations if args.simulations is not None else spec.default_simulations
  if simulations < 1:
    print(f"--simulations must be >= 1, got {simulations}", file=sys.stderr)
    return 2
  if args.checkpoint:
    trained = _trained_search(args.checkpoint, args.game, args.simulations)
    if isinstance(trained, int):
      return trained
    search_fn, reroot, step, legal_fn, max_nodes, simulations = trained
  else:
    search_fn, reroot, step, legal_fn, max_nodes = _jitted(args.game, args.rule, simulations)

  key = jax.random.PRNGKey(args.seed)
  key, init_key = jax.random.split(key)
  state = game.init(init_key)
  tree = js.tree.allocate(1, max_nodes, game.num_actions, game.num_outcomes, state)
  human_moves_first = args.first == "human"
  opponent = (f"the trained network's search ({args.checkpoint})" if args.checkpoint else
              f"{args.rule.upper()}")
  values = "network values" if args.checkpoint else "rollout values"
  print(f"{game.name}: you play {'first' if human_moves_first else 'second'} against "
        f"{opponent} with {simulations} simulations a move ({values}).")
  if getattr(module, "num_players", 2) == 2 and hasattr(module, "current_player"):
    first = int(module.current_player(state))  # pgx: X is player 0, who need not start
    print(f"You play {'X' if (first == 0) == human_moves_first else 'O'}.")
  searched = False  # until the first search, the tree is empty and rerooting is pointless
  # Who moves next follows the discounts: -1 hands the turn over, +1 keeps it (a backgammon
  # turn, every move of a one-player game).
  human_to_move = human_moves_first
  try:
    while True:
      print()
      print(module.render(state))
      legal = np.asarray(legal_fn(state))
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
        out = search_fn(None, search_key, jax.tree.map(lambda x: x[None], state), tree)
        action = int(out.action[0])
        visits = np.asarray(out.visit_counts[0])
        print(f"search plays {action + 1} (value {float(out.root_value[0]):+.2f}, "
              f"{int(visits[action])}/{int(visits.sum())} visits)")
        tree = out.tree
        if args.draw:
          from jaxsearch import viz
          viz.draw(out.tree, args.draw, max_depth=args.draw_depth,
                   title=f"{game.name}: search before its move")
      outcome = 0
      if game.num_outcomes > 1:  # chance: draw the outcome the game takes
        key, chance_key = jax.random.split(key)
        probs = game.outcome_probs(state, jnp.int32(action))
        outcome = int(jax.random.categorical(chance_key, jnp.log(probs)))
      # Keep the subtree under the move actually played; an unexpanded child gives an empty
      # row, which the next search restarts from the state it is given.
      if searched:
        tree = reroot(tree, jnp.array([action], jnp.int32), jnp.array([outcome], jnp.int32))
      result = step(state, jnp.int32(action), jnp.int32(outcome))
      state = result.state
      if bool(result.terminal):
        print()
        print(module.render(state))
        reward = float(result.reward)  # to the player who made the last move
        if reward == 0:
          print("Draw." if getattr(module, "num_players", 2) == 2 else "Game over.")
        elif getattr(module, "num_players", 2) == 1:
          print(f"Game over; the last move scored {reward:g}.")
        else:
          print("You win!" if (reward > 0) == human_to_move else "The search wins.")
        return 0
      if float(result.discount) < 0:
        human_to_move = not human_to_move
  except KeyboardInterrupt:
    print("\nInterrupted.")
    return 130


def _trained_search(checkpoint: str, game_name: str, simulations: Optional[int]):
  """``play --checkpoint``: the jitted functions of ``_jitted`` for a trained network's search
  (PUCT or the run's policy, temperature 0, no noise), plus the simulations used; an exit
  status on error."""
  import jax

  import jaxsearch as js
  from jaxsearch.train import checkpoint as checkpoint_lib
  from jaxsearch.train import loop

  try:
    trainer, params = loop.load_trained(checkpoint)
  except (FileNotFoundError, checkpoint_lib.CheckpointError) as error:
    print(f"jaxsearch play: cannot load --checkpoint {checkpoint}: {error}", file=sys.stderr)
    return 2
  if trainer.config.game != game_name:
    print(f"jaxsearch play: {checkpoint} was trained on {trainer.config.game}, not "
          f"{game_name}", file=sys.stderr)
    return 2
  simulations = simulations or trainer.config.eval_simulations
  max_nodes = 2 * simulations + 2
  configured = trainer.make_search(simulations, max_nodes, 0.0)
  search = jax.jit(configured)
  game = trainer.game
  fresh_tree = jax.jit(configured.init_tree)
  shapes = {}

  def search_fn(_, key, states, tree):
    # `play` allocates a plain PUCT tree; an AVTS (Bellman) search needs its own kind.
    if "tree" not in shapes:
      shapes["tree"] = jax.eval_shape(configured.init_tree, params, key, states)
    if jax.tree.map(lambda x: (x.shape, x.dtype), shapes["tree"]) != jax.tree.map(
        lambda x: (x.shape, x.dtype), tree):
      tree = fresh_tree(params, key, states)
      tree = tree.replace(num_nodes=0 * tree.num_nodes)
    return search(params, key, states, tree)

  return (search_fn, jax.jit(js.reroot), jax.jit(game.step), jax.jit(game.legal_actions),
          max_nodes, simulations)


# ---- train -------------------------------------------------------------------------------------

def _parse_overrides(pairs: Sequence[str], config_cls) -> dict:
  """``KEY=VALUE`` strings -> TrainConfig overrides, each value parsed as JSON when it can be
  (``hidden=[32,32]``, ``c=null``), else kept as a string."""
  import dataclasses as dc
  import json

  names = {f.name for f in dc.fields(config_cls)}
  out = {}
  for pair in pairs:
    key, sep, text = pair.partition("=")
    key = key.strip().replace("-", "_")
    if not sep or key not in names:
      raise ValueError(f"--set {pair!r}: expected KEY=VALUE with KEY one of "
                       f"{', '.join(sorted(names))}")
    try:
      value = json.loads(text)
    except json.JSONDecodeError:
      value = text
    out[key] = tuple(value) if isinstance(value, list) else value
  return out


def _train(args: argparse.Namespace) -> int:
  import json
  import time

  started = time.perf_counter()  # --minutes counts from here: imports and compiles included
  from rich.console import Console

  from jaxsearch.train import checkpoint as checkpoint_lib
  from jaxsearch.train import loop

  try:
    overrides = _parse_overrides(args.set or [], loop.TrainConfig)
    overrides["seed"] = args.seed
    if args.policy:
      overrides["policy"] = args.policy
    if args.devices is not None:
      overrides["devices"] = args.devices
    config = loop.preset(args.game, **overrides)
    loop.sharding.resolve_devices(config.devices or None)  # a clear error before building
  except (TypeError, ValueError, ImportError) as error:
    print(f"jaxsearch train: {error}", file=sys.stderr)
    return 2
  minutes = args.minutes
  if minutes is None and args.steps is None:
    minutes = 4.5 if args.game == "tictactoe" else 30.0
  out = Path(args.out or f"train_{args.game.replace(':', '_')}")
  if not args.resume and (out / "checkpoints").is_dir() and any((out / "checkpoints").iterdir()):
    print(f"jaxsearch train: {out} already holds checkpoints; pass --resume to continue that "
          f"run, or choose another --out", file=sys.stderr)
    return 2
  console = Console(stderr=True)
  try:
    trainer = loop.Trainer(config, out_dir=out)
    summary = trainer.run(steps=args.steps or 0, minutes=minutes or 0.0, resume=args.resume,
                          progress=not args.quiet, plot=args.plot, console=console,
                          started=started)
  except checkpoint_lib.CheckpointError as error:
    print(f"jaxsearch train: cannot resume: {error}", file=sys.stderr)
    return 2
  except KeyboardInterrupt:
    print(f"\nInterrupted; the last completed step is checkpointed in {out}: add --resume "
          f"to continue.", file=sys.stderr)
    return 130
  shown = {k: v for k, v in summary.items() if k not in ("out_dir",)}
  print(f"{config.game}: {summary['steps']} steps, {summary['positions']} self-play positions, "
        f"{summary['updates']} updates in {summary['minutes']:.2f} min; final evaluation: "
        + ", ".join(f"{k}={v}" for k, v in shown.items()
                    if k not in ("steps", "positions", "updates", "minutes", "games", "plot"))
        + f". Metrics: {out / 'metrics.jsonl'}"
        + (f", plot: {summary['plot']}" if summary.get("plot") else ""))
  if args.json:
    print(json.dumps(summary))
  return 0


# ---- bench -------------------------------------------------------------------------------------

def _bench(argv: Sequence[str]) -> int:
  from jaxsearch import bench
  return int(bench.main(list(argv)) or 0)


# ---- solve / evaluate --------------------------------------------------------------------------

def _solve(args: argparse.Namespace) -> int:
  import json
  import time

  from rich.console import Console
  from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

  from jaxsearch import policy_file
  from jaxsearch import solve as solve_lib

  console = Console(stderr=True)
  started = time.perf_counter()
  if args.game == "mastermind":
    from games import mastermind
    puzzle = mastermind.puzzle(args.pegs, args.colours)
    title = f"Mastermind {args.pegs}×{args.colours}"
  else:
    from games import wordle
    answers, guesses = args.answers, args.guesses
    if answers is None or guesses is None:
      default_answers, default_guesses = wordle.default_paths()
      answers = answers or default_answers
      guesses = guesses or default_guesses
    try:
      puzzle = wordle.puzzle(answers, guesses)
    except (FileNotFoundError, ValueError) as error:
      print(f"jaxsearch solve wordle: {error}", file=sys.stderr)
      return 2
    title = f"Wordle {len(puzzle.secrets)}/{len(puzzle.guess_names)}"
  if args.exact_search is not None:
    puzzle = dataclasses.replace(
        puzzle, exact=dataclasses.replace(puzzle.exact, search_secrets=args.exact_search))
  if args.first is not None and args.first not in puzzle.guess_names:
    print(f"jaxsearch solve: --first {args.first!r} is not an allowed guess", file=sys.stderr)
    return 2
  # Mastermind: 128 slots, 96 of them for the best bounds, which certifies 4×6 in about a
  # minute; Wordle's nodes are larger (243 feedbacks), so 64 by q̂1 only.
  slots, bound_slots = (args.slots, args.bound_slots)
  if slots is None:
    slots = 128 if args.game == "mastermind" else 64
  if bound_slots is None:
    bound_slots = 3 * slots // 4 if args.game == "mastermind" else 0
  args.slots, args.bound_slots = slots, bound_slots
  if args.nodes is None:
    args.nodes = 200_000 if args.game == "mastermind" else 120_000
  if args.chunk is None:
    # The time budget is checked between chunks: a Wordle chunk of one batch of trees is
    # ~150 expansions per simulation, each scoring every guess for up to 243 feedbacks.
    args.chunk = 32 if args.game == "mastermind" else 4
  num_slots = None if args.slots == 0 else args.slots
  if args.bound_slots < 0 or (num_slots is not None and args.bound_slots >= num_slots):
    print(f"jaxsearch solve: --bound-slots must be in [0, --slots), got {args.bound_slots} "
          f"with --slots {args.slots}", file=sys.stderr)
    return 2
  with Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                TextColumn("{task.fields[status]}"), TimeElapsedColumn(),
                console=console, disable=args.quiet) as progress:
    task = progress.add_task(f"solving {title}", total=args.seconds, status="compiling…")

    def on_chunk(info):
      upper = "" if info["upper"] is None else f" ≥ {info['upper']:.1f}"
      rate = info["simulations"] / max(info["seconds"], 1e-9)
      ending = info["proven"] or info["seconds"] >= args.seconds
      progress.update(task, completed=min(info["seconds"], args.seconds), status=(
          f"total guesses ≤ {info['bound']:.1f}{upper} · {info['simulations']} sims "
          f"({rate:.0f}/s) · {info['nodes']} nodes"
          + (" · extracting and evaluating the policy…" if ending else "")))

    openings = (puzzle.openings if args.openings and args.first is None else None)
    try:
      result = solve_lib.solve_puzzle(
          puzzle, first=args.first, openings=openings, seconds=args.seconds,
          max_simulations=args.simulations,
          chunk=args.chunk, max_nodes=args.nodes, num_slots=num_slots,
          bound_slots=args.bound_slots, seed=args.seed, certify_seconds=args.certify_seconds,
          memory=None if args.memory is None else args.memory * (1 << 30),
          on_chunk=on_chunk)
    except solve_lib.MemoryBudgetError as error:
      progress.stop()
      print(f"jaxsearch solve: refused: {error}", file=sys.stderr)
      return 2
  summary = solve_lib.summary(puzzle, result)
  summary["seconds"] = round(time.perf_counter() - started, 2)
  if args.export:
    policy_file.save(args.export, puzzle.header, result.policy)
  if args.plot:
    solve_lib.plot_history(result, args.plot, title)
  if args.draw:
    _draw_solver_tree(result.trees, args.draw, args.draw_depth, puzzle, title)
  ev = result.evaluation
  verdict = ("proven optimal" + (f" given the first guess {args.first}" if args.first else "")
             if result.proven_optimal else (
      "not proven optimal" if result.upper_total is None else
      f"not proven: no policy does better than {result.upper_total:.1f}"))
  if result.subproblems is not None and not result.proven_optimal:
    proven, total = result.subproblems
    verdict += f" ({proven} of {total} sub-problems after the first guess proven optimal)"
  print(f"{title}: {ev.total_guesses} guesses over {ev.secrets} secrets "
        f"(mean {ev.expected_guesses:.4f}, worst {ev.worst_case}), evaluated exactly; {verdict}."
        + (f" Policy written to {args.export}." if args.export else "")
        + (f" Plot written to {args.plot}." if args.plot else ""))
  if args.json:
    print(json.dumps(summary))
  return 0


def _draw_solver_tree(trees, path: str, depth: int, puzzle, title: str) -> None:
  """Draws tree 0 of the solver's batch, guesses and feedbacks named, to ``path``."""
  from jaxsearch import viz
  if trees is None:
    print("jaxsearch solve: --draw: the solver returned no tree to draw", file=sys.stderr)
    return
  # A list: one batch of one tree per sub-problem (the solver regrew the open ones).
  batch = len(trees) if isinstance(trees, list) else len(trees.num_nodes)
  trees = trees[0] if isinstance(trees, list) else trees
  names = list(puzzle.guess_names)
  written = viz.draw(trees, path, 0, max_depth=depth, max_children=4, left_to_right=True,
                     action_names=names,
                     outcome_names=puzzle.outcome_name,
                     title=f"{title}: search tree" + (f" 1 of {batch} (the first "
                                                       f"sub-problem)" if batch > 1 else ""))
  print(f"Tree drawn to {written}.")


def _evaluate(args: argparse.Namespace) -> int:
  import json

  import games
  from jaxsearch import policy_file
  games.register_policy_files()  # the games whose files this reads, imported when needed
  try:
    evaluation = policy_file.evaluate_file(args.file)
  except FileNotFoundError as error:
    print(f"jaxsearch evaluate: {error}", file=sys.stderr)
    return 2
  except ValueError as error:  # PolicyError and malformed files
    print(f"jaxsearch evaluate: the policy is invalid: {error}", file=sys.stderr)
    return 1
  header, _ = policy_file.load(args.file)
  print(f"{header['game']}: {evaluation.total_guesses} guesses over {evaluation.secrets} "
        f"secrets (mean {evaluation.expected_guesses:.4f}, worst {evaluation.worst_case})")
  if args.json:
    print(json.dumps({"game": header["game"], "secrets": evaluation.secrets,
                      "total_guesses": evaluation.total_guesses,
                      "expected_guesses": round(evaluation.expected_guesses, 6),
                      "worst_case": evaluation.worst_case,
                      "histogram": {str(k): v for k, v in evaluation.histogram.items()}}))
  return 0


# ---- entry point -------------------------------------------------------------------------------

def _int_at_least(minimum: int, kind: str):
  """argparse type of an integer option of at least ``minimum`` (``kind`` names it in the
  message): a usage error naming the option, not a traceback later."""
  def parse(text: str) -> int:
    try:
      value = int(text)
    except ValueError:
      raise argparse.ArgumentTypeError(f"expected {kind}, got {text!r}") from None
    if value < minimum:
      raise argparse.ArgumentTypeError(f"expected {kind}, got {value}")
    return value
  return parse


_positive_int = _int_at_least(1, "a positive integer")  # sizes
_non_negative_int = _int_at_least(0, "a non-negative integer")  # counts that may be 0


def _game_name(names: Sequence[str]):
  """argparse type of a game argument: one of ``names`` or ``pgx:ENV_ID`` (the id is checked
  when the game is built, where pgx is imported)."""

  def parse(text: str) -> str:
    if text in names or (text.startswith(_PGX) and len(text) > len(_PGX)):
      return text
    raise argparse.ArgumentTypeError(
        f"unknown game {text!r}: choose from {', '.join(names)}, or pgx:ENV_ID")

  return parse


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
      prog="jaxsearch", description="Monte-Carlo tree search as pure, batched, jitted JAX.")
  commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

  play = commands.add_parser(
      "play", help="play a game against the search in the terminal",
      description="Play against the search (batch of 1, temperature 0, subtree reuse).")
  play.add_argument("game", type=_game_name(sorted(_GAMES)),
                    help=f"{', '.join(sorted(_GAMES))}, or pgx:ENV_ID (any pgx environment, "
                         f"e.g. pgx:othello, pgx:2048; needs pgx)")
  play.add_argument("--simulations", type=int, default=None,
                    help="simulations per search move (default: 2000 tictactoe, "
                         "1000 connect_four)")
  play.add_argument("--rule", choices=["uct", "puct"], default="uct",
                    help="selection rule; both use random-rollout values, PUCT a uniform "
                         "prior (default: uct)")
  play.add_argument("--first", choices=["human", "search"], default="human",
                    help="who moves first (default: human)")
  play.add_argument("--seed", type=int, default=0, help="PRNG seed (default: 0)")
  play.add_argument("--draw", default=None, metavar="FILE",
                    help="after each search move, draw its tree to FILE (.dot, .svg or .png; "
                         "without Graphviz's `dot` program, FILE.dot is written instead)")
  play.add_argument("--draw-depth", type=int, default=2, metavar="D",
                    help="levels below the root to draw (default 2)")
  play.add_argument("--checkpoint", default=None, metavar="DIR",
                    help="play the network trained by `jaxsearch train` in DIR (its newest "
                         "checkpoint; PUCT with network values and prior, default "
                         "simulations: the run's evaluation budget)")

  train = commands.add_parser(
      "train", help="AlphaZero-style training: self-play with the batched search",
      description="Trains a Flax network by self-play with the batched search (one search "
                  "per move for a batch of games), evaluates it against exact oracles, and "
                  "checkpoints it (orbax) so that --resume continues exactly.")
  train.add_argument("game", type=_game_name(("tictactoe", "connect_four")),
                     help="tictactoe, connect_four, or pgx:ENV_ID (any pgx environment, e.g. "
                          "pgx:othello; needs pgx)")
  train.add_argument("--minutes", type=float, default=None,
                     help="wall-clock budget, imports and compilation included; stops at a "
                          "step boundary, then checkpoints and evaluates (default: 4.5 "
                          "tictactoe, 30 connect_four, unless --steps)")
  train.add_argument("--steps", type=_positive_int, default=None,
                     help="stop after this many steps in total (deterministic)")
  train.add_argument("--policy", choices=["alphazero", "avts", "gumbel"], default=None,
                     help="self-play search (default: the game's preset, alphazero = PUCT + "
                          "root noise for tictactoe, gumbel for connect_four)")
  train.add_argument("--out", default=None,
                     help="output directory: metrics.jsonl, checkpoints/, config.json, "
                          "training.png (default ./train_GAME)")
  train.add_argument("--resume", action="store_true",
                     help="continue the run in --out from its newest checkpoint")
  train.add_argument("--plot", action="store_true", help="write training.png in --out")
  train.add_argument("--json", action="store_true",
                     help="end with one JSON line: the final evaluation and the run's size")
  train.add_argument("--seed", type=int, default=0, help="PRNG seed (default 0)")
  train.add_argument("--devices", type=int, default=None,
                     help="split self-play and updates over this many devices (default: one)")
  train.add_argument("--set", action="append", metavar="KEY=VALUE",
                     help="override a TrainConfig field (repeatable), e.g. --set "
                          "simulations=64 --set hidden=[128,128]")
  train.add_argument("--quiet", action="store_true", help="no progress bar")

  solve = commands.add_parser(
      "solve", help="solve Mastermind or Wordle with certified bounds (anytime AVTS)",
      description="Anytime AVTS search with an achievable bound (a policy reaches it) and an "
                  "optimistic bound (no policy does better); the policy found is exported and "
                  "evaluated exactly over every secret, and that evaluation is the reported "
                  "figure.")
  solve.add_argument("game", choices=["mastermind", "wordle"])
  solve.add_argument("--pegs", type=int, default=4, help="Mastermind pegs (default 4)")
  solve.add_argument("--colours", type=int, default=6, help="Mastermind colours (default 6)")
  solve.add_argument("--answers", default=None,
                     help="Wordle answer list (default: ../shared/data/wordle or $WORDLE_DATA)")
  solve.add_argument("--guesses", default=None, help="Wordle allowed-guess list")
  solve.add_argument("--first", default=None,
                     help="fix the first guess and solve every feedback's sub-problem as one "
                          "batch")
  solve.add_argument("--no-openings", dest="openings", action="store_false",
                     help="Mastermind: search from the empty board in one tree instead of one "
                          "batch of trees per first guess up to symmetry (1111, 1112, 1122, "
                          "1123, 1234 for 4×6), the default")
  solve.add_argument("--seconds", type=float, default=60.0,
                     help="search time budget, checked between chunks (default 60)")
  solve.add_argument("--simulations", type=_positive_int, default=None,
                     help="simulation budget per tree (default: none)")
  solve.add_argument("--chunk", type=_positive_int, default=None,
                     help="simulations per jitted call (the progress and the time budget are "
                          "checked between calls; default 32 for Mastermind, 4 for Wordle)")
  solve.add_argument("--nodes", type=_positive_int, default=None,
                     help="node budget, shared out between the trees of a batch (default "
                          "200000 for Mastermind, 120000 for Wordle: about 3.7 GB for a "
                          "5-minute run)")
  solve.add_argument("--slots", type=int, default=None,
                     help="guesses kept per node, the top ones by the estimator (0 = all; "
                          "default 128 for Mastermind, 64 for Wordle)")
  solve.add_argument("--bound-slots", type=int, default=None,
                     help="of those, how many hold the guesses with the best admissible "
                          "bounds instead: a cut guess's bound floors its node's, so a proof "
                          "needs them (default: three quarters of --slots for Mastermind, 0 "
                          "for Wordle)")
  solve.add_argument("--exact-search", type=_non_negative_int, default=None, metavar="N",
                     help="the certificates settle guesses at nodes of at most N secrets by "
                          "exact depth-first search where the tree cannot (default 512; 0: "
                          "the tree alone)")
  solve.add_argument("--certify-seconds", type=float, default=600.0, metavar="S",
                     help="time the certificates may spend in that exact search after the "
                          "search (default 600); what they cannot show by then is not claimed")
  solve.add_argument("--memory", type=float, default=None,
                     help="memory budget in GB (default: the memory available); a run whose "
                          "estimate exceeds it is refused before it starts, with the estimate")
  solve.add_argument("--seed", type=int, default=0)
  solve.add_argument("--export", default=None, help="write the policy as JSON to this file")
  solve.add_argument("--plot", default=None, help="write a PNG of the bounds to this file")
  solve.add_argument("--draw", default=None, metavar="FILE",
                     help="draw the search tree (the first of the batch) to FILE (.dot, .svg "
                          "or .png; without Graphviz's `dot` program, FILE.dot is written)")
  solve.add_argument("--draw-depth", type=int, default=1, metavar="D",
                     help="guesses deep to draw (default 1)")
  solve.add_argument("--json", action="store_true", help="end with one JSON line")
  solve.add_argument("--quiet", action="store_true", help="no progress bar")

  evaluate = commands.add_parser(
      "evaluate", help="evaluate an exported policy exactly",
      description="Re-evaluates an exported policy (jaxsearch solve --export) over every "
                  "secret; a policy that misses a secret is rejected with the failing path.")
  evaluate.add_argument("file")
  evaluate.add_argument("--json", action="store_true", help="end with one JSON line")

  # The benchmark's own options are forwarded untouched (see main), so they cannot drift
  # from jaxsearch.bench; `jaxsearch bench --help` prints the benchmark's help.
  commands.add_parser(
      "bench", add_help=False,
      help="throughput benchmark vs mctx (--quick, --repeats N, --only ...)",
      description="Runs jaxsearch.bench; see `jaxsearch bench --help`.")
  return parser


def compile_cache_dir() -> Optional[str]:
  """Where the CLI keeps compiled XLA programs between runs: ``$JAXSEARCH_CACHE_DIR``
  (empty: no cache), else ``$XDG_CACHE_HOME/jaxsearch/xla`` or ``~/.cache/jaxsearch/xla``."""
  configured = os.environ.get("JAXSEARCH_CACHE_DIR")
  if configured is not None:
    return configured or None
  base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
  return os.path.join(base, "jaxsearch", "xla")


def _use_compile_cache() -> None:
  """JAX's persistent compilation cache: a search program costs ~10 s to compile on 2 CPU
  cores and ~1 s to load, so every run after the first starts searching sooner (the cache is
  keyed by the program, the options and the JAX version, so it is never stale)."""
  import jax
  directory = compile_cache_dir()
  if directory is None or jax.config.jax_compilation_cache_dir:
    return  # off, or the caller configured one
  jax.config.update("jax_compilation_cache_dir", directory)
  jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Runs the ``jaxsearch`` command; returns the exit status."""
  parser = _parser()
  args, extra = parser.parse_known_args(argv)
  if args.command != "bench":
    _use_compile_cache()
  if args.command != "bench" and extra:
    parser.error(f"unrecognized arguments: {' '.join(extra)}")
  verbs = {"play": _play, "train": _train, "solve": _solve, "evaluate": _evaluate,
           "bench": lambda _: _bench(extra)}
  try:
    return verbs[args.command](args)
  except (ValueError, OSError) as error:
    # Bad input found past the parser (a size the game or the search refuses, a file that
    # cannot be read or written): one line naming the verb, exit status 2, no traceback.
    # The verbs catch what they can word better themselves (e.g. the Wordle lists).
    message = " ".join(str(error).split()) or type(error).__name__
    print(f"jaxsearch {args.command}: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":
  sys.exit(main())
