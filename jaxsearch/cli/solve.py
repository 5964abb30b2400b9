"""``jaxsearch solve``: Mastermind or Wordle by anytime AVTS with certified bounds; the policy
found is exported and evaluated exactly over every secret.

The games it solves, their defaults and puzzles come from
:mod:`jaxsearch.games.solve_defaults` (this module names no game); the command line becomes
one :class:`jaxsearch.solve.SolveOptions`, checked before the puzzle is built."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time

from jaxsearch.cli.common import (CommandError, check_solve_input, int_between, memory_gb,
                                  non_negative_float, non_negative_int, positive_int,
                                  prng_seed, searches_first_guess, solvable, time_limit)
from jaxsearch.games.solve_defaults import SOLVABLE


def add_parser(commands) -> None:
  """The ``solve`` verb's arguments, on the subparsers ``commands``."""
  solve = commands.add_parser(
      "solve", help="solve Mastermind or Wordle with certified bounds (anytime AVTS)",
      description="Anytime AVTS search with an achievable bound (a policy reaches it) and an "
                  "optimistic bound (no policy does better); the policy found is exported and "
                  "evaluated exactly over every secret, and that evaluation is the reported "
                  "figure.")
  _add_problem_arguments(solve)
  _add_budget_arguments(solve)
  _add_output_arguments(solve)


def _add_problem_arguments(solve: argparse.ArgumentParser) -> None:
  """Which puzzle: the game, its size or word lists, the first guess."""
  solve.add_argument("game", choices=list(SOLVABLE))
  solve.add_argument("--pegs", type=int_between(1, MAX_PEGS), default=4,
                     help=f"Mastermind pegs, 1 to {MAX_PEGS} (default 4)")
  solve.add_argument("--colours", type=int_between(1, MAX_COLOURS), default=6,
                     help=f"Mastermind colours, 1 to {MAX_COLOURS} (default 6); at most "
                          f"{MAX_CODES} codes (colours to the power pegs)")
  solve.add_argument("--answers", default=None,
                     help="Wordle answer list (default: the list in $WORDLE_DATA, else the one "
                          "shipped with the package)")
  solve.add_argument("--guesses", default=None, help="Wordle allowed-guess list")
  solve.add_argument("--first", default=None,
                     help="fix the first guess and solve every feedback's sub-problem as one "
                          "batch; a proof is then of the best total given that guess "
                          "(proven_given_first), not of the game's optimum")
  solve.add_argument("--no-openings", dest="openings", action="store_false",
                     help="search from the empty board in one tree. The default without "
                          "--first: Mastermind searches one batch of trees per first guess "
                          "up to symmetry (1111, 1112, 1122, 1123, 1234 for 4×6); Wordle "
                          "searches the first guess too, as a decision above batches of "
                          "trees of each visited first guess's feedbacks")
  solve.add_argument("--method", choices=["auto", "tree"], default="auto",
                     help="auto (default): where the first guesses are all searched "
                          "(Mastermind without --first), the game's exact search solves the "
                          "whole game first, with 3/4 of the search's time at most, and the "
                          "trees are searched only where it does not prove the optimum by "
                          "then (or with --checkpoint); tree: the trees only (implied by "
                          "--plot and --draw, which show the trees' search)")


# Mastermind's sizes (jaxsearch.games.mastermind.make's limits: colours are digits, and the
# feedback table of every pair of codes stays within 1 GiB), checked here so that a refusal
# names the flag typed, not the function behind it.
MAX_PEGS, MAX_COLOURS, MAX_CODES = 21, 9, 32768


def check_sizes(args: argparse.Namespace) -> None:
  """Mastermind's ``--pegs`` and ``--colours`` together: at most :data:`MAX_CODES` codes
  (each alone is checked while parsing)."""
  if args.game == "mastermind" and args.colours ** args.pegs > MAX_CODES:
    raise CommandError(f"jaxsearch solve: --pegs {args.pegs} --colours {args.colours} make "
                       f"{args.colours ** args.pegs} codes, too many (at most {MAX_CODES}); "
                       f"lower --pegs or --colours")


def _per_game(default, searching_first: bool = False) -> str:
  """Each game's default of an option, for its help: ``"32 for mastermind, 4 for wordle"``,
  or one value where they agree (``default``:
  :class:`jaxsearch.games.solve_defaults.SolveDefaults` -> the value; ``searching_first``:
  only the games whose first guess is searched too, by name)."""
  values = {name: default(game.defaults) for name, game in SOLVABLE.items()
            if not (searching_first and game.openings_up_to_symmetry)}
  if len(set(values.values())) == 1 and not searching_first:
    return f"{next(iter(values.values()))}"
  return ", ".join(f"{value} for {name}" for name, value in values.items())


def _add_budget_arguments(solve: argparse.ArgumentParser) -> None:
  """How much search: time, simulations, nodes, slots, the certificates' exact search."""
  solve.add_argument("--seconds", type=time_limit, default=None,
                     help="the whole run's time budget, compilation included (default "
                          f"{_per_game(lambda d: f'{d.seconds:g}')}; "
                          f"{_per_game(lambda d: f'{d.first_guess_seconds:g}', True)} "
                          "where the first guess is searched too, without --first). The "
                          "search stops by a share of it ("
                          f"{_per_game(lambda d: f'{d.search_share}')}) or earlier, "
                          "proven, leaving the rest to extracting the policy and the "
                          "certificates; the run says at its start when each phase ends. At "
                          "least one chunk is searched and the extraction is never cut short")
  solve.add_argument("--simulations", type=positive_int, default=None,
                     help="simulation budget per tree (default: none)")
  solve.add_argument("--chunk", type=positive_int, default=None,
                     help="simulations per jitted call (the progress and the time budget are "
                          f"checked between calls; default {_per_game(lambda d: d.chunk)})")
  solve.add_argument("--leaves-per-step", type=positive_int, default=None, metavar="K",
                     help="paths each tree descends in one step of a chunk, at most --chunk "
                          "(default: by the backend and the number of trees: 1 on a CPU; on "
                          "an accelerator the largest power of two up to 16 that keeps trees "
                          "× K within 1024)")
  solve.add_argument("--nodes", type=positive_int, default=None,
                     help="node budget, shared out between the trees of a batch (default "
                          f"{_per_game(lambda d: d.nodes)}: about 3.7 GB for a 5-minute run)")
  solve.add_argument("--slots", type=non_negative_int, default=None,
                     help="guesses kept per node, the top ones by the estimator (0 = all; "
                          f"default {_per_game(lambda d: d.slots)})")
  solve.add_argument("--bound-slots", type=non_negative_int, default=None,
                     help="of those, how many hold the guesses with the best admissible "
                          "bounds instead: a cut guess's bound floors its node's, so a proof "
                          "needs them (default: a share of --slots, "
                          f"{_per_game(lambda d: d.bound_share)})")
  solve.add_argument("--exact-search", type=non_negative_int, default=None, metavar="N",
                     help="the certificates settle guesses at nodes of at most N secrets by "
                          "exact depth-first search where the tree cannot (default 512; 0: "
                          "the tree alone)")
  solve.add_argument("--certify-seconds", type=time_limit, default=None, metavar="S",
                     help="at most S seconds for the certificates' exact search (default: "
                          "what --seconds leaves them); the search then leaves them S if "
                          "that is less than their share. What they cannot show in time is "
                          "not claimed")
  solve.add_argument("--memory", type=memory_gb, default=None,
                     help="memory budget in GB, 0.001 to 1e9 (default: the memory "
                          "available); a run whose estimate exceeds it is refused before "
                          "anything is built, with the estimate")
  solve.add_argument("--seed", type=prng_seed, default=0,
                     help="PRNG seed, 0 to 2**32 - 1 (default 0)")


def _add_output_arguments(solve: argparse.ArgumentParser) -> None:
  """What to write: the policy, a plot, a drawing, JSON."""
  solve.add_argument("--export", default=None, help="write the policy as JSON to this file")
  solve.add_argument("--plot", default=None,
                     help="write a PNG of the bounds after each chunk to this file, against "
                          "simulations and seconds")
  solve.add_argument("--draw", default=None, metavar="FILE",
                     help="draw the search behind the exported policy to FILE (.dot, .svg or "
                          ".png; without Graphviz's `dot` program, FILE.dot is written): its "
                          "first guess over the trees of that guess's feedbacks, or with "
                          "--no-openings the one tree, that guess in blue")
  solve.add_argument("--draw-depth", type=non_negative_int, default=1, metavar="D",
                     help="guesses deep to draw, the first guess included (default 1)")
  solve.add_argument("--json", action="store_true", help="end with one JSON line")
  solve.add_argument("--quiet", action="store_true",
                     help="no progress on stderr (a bar on a terminal; elsewhere plain lines: "
                          "one every 5 seconds, then the final bounds)")
  solve.add_argument("--checkpoint", default=None, metavar="DIR",
                     help="save the run's state to DIR as it goes (the search every "
                          "--checkpoint-seconds and at its end, then each certificate), "
                          "atomically, so that a killed run can go on with --resume; a DIR "
                          "that already holds a run's state is refused without --resume")
  solve.add_argument("--resume", action="store_true",
                     help="go on from the state saved in --checkpoint DIR (the same game and "
                          "options; the search's share of --seconds and --simulations count "
                          "the search already done); a DIR holding no state starts afresh")
  solve.add_argument("--checkpoint-seconds", type=non_negative_float, default=10.0,
                     metavar="S",
                     help="with --checkpoint: seconds of search between saves of its state "
                          "(default 10; 0: after every chunk; a slow save pushes the next "
                          "back, so saving takes at most about a fifth of the time)")


def run(args: argparse.Namespace) -> int:
  """``jaxsearch solve``; returns the exit status."""
  clock_start = time.monotonic()  # --seconds counts from here
  check_sizes(args)
  check_solve_input(args)  # output files, node budget: refused before any work
  from jaxsearch.guessing import policy_file
  from jaxsearch import guessing as guessing_lib

  started = time.perf_counter()
  num_slots = _fill_budget_defaults(args)
  _check_resume(args)
  _check_checkpoint_free(args)  # another run's folder: refused before anything is built
  options = _solve_options(args, num_slots)  # every option checked before the puzzle is built
  _check_memory(args, options)  # from the sizes alone: nothing built, compiled or written
  puzzle, title = _puzzle(args)
  result = _search(args, puzzle, title, options, clock_start)
  summary = guessing_lib.summary(puzzle, result)
  summary["seconds"] = round(time.perf_counter() - started, 2)
  if args.export:
    policy_file.save(args.export, puzzle.header, result.policy)
  if args.plot:
    guessing_lib.plot_history(result, args.plot, title)
  if args.draw:
    _draw_solver_tree(result, args, puzzle, title)
  _report(args, result, title)
  if args.json:
    print(json.dumps(summary))
  return 0


def _puzzle(args: argparse.Namespace):
  """``(puzzle, title)`` of the command line's game (built by the game,
  :attr:`jaxsearch.games.solve_defaults.SolvableGame.puzzle`), with ``--exact-search``
  applied and ``--first`` checked."""
  game = solvable(args)
  try:
    puzzle, title = game.puzzle(args)
  except game.input_errors as error:  # e.g. a word list missing or malformed
    raise CommandError(f"jaxsearch solve {game.name}: {error}") from None
  if args.exact_search is not None:
    puzzle = dataclasses.replace(
        puzzle, exact=dataclasses.replace(puzzle.exact, search_secrets=args.exact_search))
  if args.first is not None and args.first not in puzzle.guess_names:
    raise CommandError(f"jaxsearch solve: --first {args.first!r} is not an allowed guess")
  return puzzle, title


def _fill_budget_defaults(args: argparse.Namespace):
  """Sets the game's defaults (:class:`jaxsearch.games.solve_defaults.SolveDefaults`) of
  ``--seconds``, ``--slots``, ``--bound-slots``, ``--nodes`` and ``--chunk`` in ``args``;
  returns the slots per node (``None``: all)."""
  defaults = solvable(args).defaults
  if args.slots is None:
    args.slots = defaults.slots
  if args.bound_slots is None:
    args.bound_slots = defaults.bound_slots(args.slots)
  if args.nodes is None:
    args.nodes = defaults.nodes
  if args.seconds is None:
    args.seconds = (defaults.first_guess_seconds if searches_first_guess(args)
                    else defaults.seconds)
  if args.chunk is None:
    args.chunk = defaults.chunk
  num_slots = None if args.slots == 0 else args.slots
  if args.bound_slots < 0 or (num_slots is not None and args.bound_slots >= num_slots):
    raise CommandError(f"jaxsearch solve: --bound-slots must be in [0, --slots), got "
                       f"{args.bound_slots} with --slots {args.slots}")
  return num_slots


def _solve_options(args: argparse.Namespace, num_slots):
  """The command line's :class:`jaxsearch.solve.SolveOptions` (its defaults filled in)."""
  from jaxsearch.solve import SolveOptions
  share = float(solvable(args).defaults.search_share)
  if args.leaves_per_step is not None and args.leaves_per_step > args.chunk:
    raise CommandError(f"jaxsearch solve: --leaves-per-step {args.leaves_per_step} is larger "
                       f"than --chunk {args.chunk}, the paths of one chunk; lower it or "
                       f"raise --chunk")
  # --seconds is the whole run's; the search's own limit (every run's search, with
  # --resume) is its share, and this run's clock stops it too (Budget.clock).
  return SolveOptions.from_keywords(
      "jaxsearch solve", seconds=args.seconds * share, run_seconds=args.seconds,
      search_share=share, max_simulations=args.simulations,
      chunk=args.chunk, leaves_per_step=args.leaves_per_step, max_nodes=args.nodes,
      num_slots=num_slots,
      bound_slots=args.bound_slots, seed=args.seed,
      certify_seconds=_certify_seconds(args),
      memory=None if args.memory is None else args.memory * (1 << 30),
      checkpoint=args.checkpoint, resume=args.resume,
      checkpoint_seconds=args.checkpoint_seconds)


def _certify_seconds(args: argparse.Namespace) -> float:
  """``--certify-seconds``, or by default what ``--seconds`` leaves the certificates (600 s
  where ``--seconds`` is ``inf``)."""
  if args.certify_seconds is not None:
    return args.certify_seconds
  return math.inf if math.isfinite(args.seconds) else 600.0


def _check_memory(args: argparse.Namespace, options) -> None:
  """Refuses the run, before anything is built, where its memory estimate from the game's
  sizes (:func:`jaxsearch.memory.estimate_from_sizes`) exceeds ``--memory`` or the memory
  available. The search over first guesses holds ``live_openings`` first guesses' trees,
  each batch at most the game's feedbacks padded to ``pad_rows``."""
  from jaxsearch.memory import MemoryBudgetError, check_memory, estimate_from_sizes
  from jaxsearch.guessing.root import RootOptions
  game = solvable(args)
  sizes = game.sizes(args)
  if sizes is None:
    return  # sizes the game refuses in its own words; the solver checks again
  count = game.count_trees(args)
  if searches_first_guess(args):
    batch = RootOptions().most_trees(sizes.outcomes, sizes.secrets)  # the solver's own count
  elif count is None:
    return
  else:
    batch = None if count.trees is None else max(sum(count.trees), 1)
  try:
    check_memory(estimate_from_sizes(sizes, options, batch), options.capacity.memory)
  except MemoryBudgetError as error:
    if not _exact_may_solve(args):
      raise CommandError(f"jaxsearch solve: refused: {error}") from None
    if not args.quiet:
      print(f"jaxsearch solve: the trees would not fit: {error} The exact search of the whole "
            "game needs far less: it alone is tried, with the whole search time.",
            file=sys.stderr)


def _exact_may_solve(args: argparse.Namespace) -> bool:
  """Whether the exact search of the whole game is tried first (``--method auto``, every
  first guess searched, no checkpoint, the exact search on)."""
  return (_method(args) == "auto" and args.first is None and args.openings
          and solvable(args).openings_up_to_symmetry and args.checkpoint is None
          and args.exact_search != 0)


def _plan(options, clock_start: float) -> str:
  """What the run will spend, in words: when the search stops and when the run does."""
  clock = options.budget.clock(clock_start)
  if clock.run_ends is None or not math.isfinite(clock.run_ends):
    return "compiling, then searching with no time limit"
  search = clock.search_ends - clock_start
  total = clock.run_ends - clock_start
  return (f"budget {total:g} s in all: compiling and searching until {search:.0f} s at most "
          f"(at least one chunk), then extracting the policy (not cut short) and the "
          f"certificates until {total:g} s")


def _search(args: argparse.Namespace, puzzle, title: str, options, clock_start: float):
  """The solver's result (:func:`jaxsearch.guessing.solve_puzzle`), with its progress: a bar
  on a terminal, plain lines elsewhere (:class:`jaxsearch.guessing.report.ProgressReporter`)."""
  from jaxsearch import guessing as guessing_lib
  from jaxsearch import solve as solve_lib
  from jaxsearch.guessing.result import covers_every_opening
  from jaxsearch.guessing.report import ProgressReporter
  from jaxsearch.guessing.root import RootOptions

  # With --first the optimistic bound is only over the policies that open so (unless that
  # guess is the game's only first guess up to symmetry): say so beside it.
  conditional = args.first is not None and not covers_every_opening(puzzle, [args.first])
  given = args.first.replace("{", "{{").replace("}", "}}") if conditional else ""
  upper_label = f"≥ {{:.1f}} given the first guess {given}" if conditional else "≥ {:.1f}"
  with ProgressReporter(title, args.seconds, max_simulations=args.simulations,
                        quiet=args.quiet, upper_label=upper_label,
                        first_guess=args.first if conditional else None,
                        plan=_plan(options, clock_start), started=clock_start) as progress:
    openings = (puzzle.openings if args.openings and args.first is None else None)
    root = RootOptions() if searches_first_guess(args) else None
    try:
      result = guessing_lib.solve_puzzle(puzzle, first=args.first, openings=openings, root=root,
                                      options=options, on_chunk=progress.chunk,
                                      on_phase=_phase_reporter(progress),
                                      started=clock_start, method=_method(args))
    except solve_lib.MemoryBudgetError as error:
      progress.stop()
      raise CommandError(f"jaxsearch solve: refused: {error}") from None
    except solve_lib.CheckpointError as error:
      progress.stop()
      raise CommandError(f"jaxsearch solve: --checkpoint: {error}") from None
    progress.finish(result)  # the result's bounds, not the last chunk's
    return result


def _method(args: argparse.Namespace) -> str:
  """``--method``; ``tree`` where ``--plot`` or ``--draw`` asks to see the trees' search."""
  return "tree" if args.plot or args.draw else args.method


def _phase_reporter(progress):
  """``progress.phase`` (:class:`jaxsearch.guessing.report.ProgressReporter`), and, as the
  exact certificates start, a line saying where they run: how many worker processes, and
  whether the memory capped them below the cores."""
  def phase(info: dict) -> None:
    plan = info.get("workers")
    if plan is not None and not progress.quiet:
      text = f"exact certificates {plan.describe()}"
      if progress.live:
        progress.console.print(f"solving {progress.title}: {text}", markup=False,
                               highlight=False)
      else:
        print(f"solving {progress.title} [{progress.clock() - progress.started:.1f} s]: "
              f"{text}", file=progress.console.file, flush=True)
    progress.phase(info)

  return phase


def _check_checkpoint_free(args: argparse.Namespace) -> None:
  """``--checkpoint DIR`` held by another live run: refused now, naming its process, rather
  than after the puzzle is built (the run takes the lock itself when it opens DIR)."""
  from jaxsearch import dir_lock
  if args.checkpoint is None:
    return
  try:
    dir_lock.check_free(args.checkpoint, what=f"checkpoint {args.checkpoint}")
  except dir_lock.DirectoryLocked as error:
    raise CommandError(f"jaxsearch solve: --checkpoint: {error}") from None


def _check_resume(args: argparse.Namespace) -> None:
  """``--resume`` needs ``--checkpoint``; says what a resumed run goes on from (or that the
  directory holds nothing yet, and the run starts afresh)."""
  from jaxsearch.solve import checkpoint as checkpoint_lib
  if not args.resume:
    return
  if args.checkpoint is None:
    raise CommandError("jaxsearch solve: --resume needs --checkpoint DIR, the directory of "
                       "the run to go on with")
  try:
    saved = checkpoint_lib.saved_progress(args.checkpoint)
  except checkpoint_lib.CheckpointError as error:
    raise CommandError(f"jaxsearch solve: --checkpoint: {error}") from None
  if saved is None:
    print(f"jaxsearch solve: --resume: {args.checkpoint} holds no saved run yet; starting "
          f"afresh", file=sys.stderr)
  else:
    print(f"jaxsearch solve: --resume: {args.checkpoint} holds a run saved at "
          f"{saved['simulations']} simulations ({saved['seconds']:.1f} s of search)",
          file=sys.stderr)


def _report(args: argparse.Namespace, result, title: str) -> None:
  """Prints the evaluated total and what is proven of it: optimal for the game, or only
  optimal given the first guess (``--first``), or a bound no policy beats."""
  ev = result.evaluation
  # The claims are conditional only with --first (the openings searched otherwise cover
  # every first guess up to symmetry).
  first = result.policy.get("guess") if args.first is None else args.first
  if result.proven_optimal:
    verdict = "proven optimal"
  elif result.proven_given_first:
    verdict = (f"proven optimal given the first guess {first} (not proven optimal for the "
               f"game: another first guess may do better)")
  elif result.upper_total is None:
    verdict = "not proven optimal"
  elif result.upper_total_scope == "game":
    verdict = f"not proven: no policy does better than {result.upper_total:.1f}"
  else:
    verdict = (f"not proven: no policy opening with {first} does better than "
               f"{result.upper_total:.1f}")
  if result.subproblems is not None and not result.proven_given_first:
    proven, total = result.subproblems
    verdict += f" ({proven} of {total} sub-problems after the first guess proven optimal)"
  print(f"{title}: {ev.total_guesses} guesses over {ev.secrets} secrets "
        f"(mean {ev.expected_guesses:.4f}, worst {ev.worst_case}), evaluated exactly; {verdict}."
        + (f" Policy written to {args.export}." if args.export else "")
        + (f" Plot written to {args.plot}." if args.plot else ""))
  if result.root is not None:
    print(_first_guesses_line(result.root))


def _first_guesses_line(root) -> str:
  """What the search over first guesses did, in one line."""
  visited = sorted(root.openings, key=lambda o: -o.visits)
  shown = ", ".join(f"{o.guess} ({o.visits})" for o in visited[:6])
  more = f" and {len(visited) - 6} more" if len(visited) > 6 else ""
  return (f"First guesses searched (root visits): {shown}{more}. Of the "
          f"{root.first_guesses} first guesses, {root.ruled_out} are shown unable to beat "
          f"this policy (exact bounds or certificates), {root.open} are open.")


def _draw_solver_tree(result, args: argparse.Namespace, puzzle, title: str) -> None:
  """Draws the search behind the exported policy to ``args.draw``: with openings (or
  ``--first``), the policy's first guess over its feedbacks' sub-problem trees; from the
  empty board (``--no-openings``), the one tree, the policy's first guess marked
  (:func:`jaxsearch.guessing.report.draw_search`)."""
  from jaxsearch.guessing.report import draw_search
  drawn = draw_search(puzzle, result, args.draw, depth=args.draw_depth, title=title,
                      fixed_first=args.first is not None)
  if drawn is None:
    print(f"jaxsearch solve: --draw: nothing was searched (the first guess "
          f"{result.policy['guess']} solves every secret), so there is no tree to draw",
          file=sys.stderr)
    return
  written, caption = drawn
  print(f"Tree drawn to {written}: {caption.split(': ', 1)[1]}.")
