"""What the ``jaxsearch`` verbs share: their exit-with-a-message error, argument types, and
the checks that refuse bad input before any work starts (docs/bad_input.md)."""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

PGX_PREFIX = "pgx:"  # `play pgx:othello`: any pgx environment through games.pgx_env


class CommandError(Exception):
  """A verb stops with ``message`` (one line on stderr, already naming the verb) and exit
  ``status``."""

  def __init__(self, message: str, status: int = 2):
    super().__init__(message)
    self.status = status


class ArgumentParser(argparse.ArgumentParser):
  """argparse's parser, but a usage error is the one line that matters and where to read
  more, not the command's whole usage first (``jaxsearch solve`` has two dozen options)."""

  def error(self, message: str):
    self.exit(2, f"{self.prog}: error: {message}\n(`{self.prog} --help` lists the options)\n")


def int_at_least(minimum: int, kind: str):
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


positive_int = int_at_least(1, "a positive integer")  # sizes
non_negative_int = int_at_least(0, "a non-negative integer")  # counts that may be 0


def float_at_least(minimum: float, kind: str, *, strict: bool = False,
                   allow_inf: bool = False):
  """argparse type of a float option of at least ``minimum`` (above it with ``strict``);
  ``kind`` names what is expected in the message.

  NaN is always refused: every comparison with it is false, so a NaN budget would silently
  switch its check off (``solve --seconds nan`` searched with no time limit). ``+inf`` is
  refused unless ``allow_inf`` (where it means "no limit"), ``-inf`` always."""
  def parse(text: str) -> float:
    try:
      value = float(text)
    except ValueError:
      raise argparse.ArgumentTypeError(f"expected {kind}, got {text!r}") from None
    if (math.isnan(value) or (math.isinf(value) and not (allow_inf and value > 0))
        or value < minimum or (strict and value == minimum)):
      raise argparse.ArgumentTypeError(f"expected {kind}, got {text}")
    return value
  return parse


positive_float = float_at_least(0.0, "a positive finite number", strict=True)  # GB, minutes
non_negative_float = float_at_least(0.0, "a non-negative finite number")
# A time budget: 0 is meaningful (solve: one chunk; certificates: no exact search) and so is
# inf (no time limit: the search ends when proven or out of nodes or simulations).
time_limit = float_at_least(0.0, "a non-negative number of seconds (inf: no limit)",
                            allow_inf=True)


def int_between(low: int, high: int):
  """argparse type of an integer option in ``[low, high]``: a usage error naming the
  option otherwise."""
  def parse(text: str) -> int:
    try:
      value = int(text)
    except ValueError:
      raise argparse.ArgumentTypeError(f"expected an integer from {low} to {high}, got "
                                       f"{text!r}") from None
    if not low <= value <= high:
      raise argparse.ArgumentTypeError(f"expected an integer from {low} to {high}, got "
                                       f"{value}")
    return value
  return parse


MEMORY_GB = (0.001, 1e9)  # --memory's range: a megabyte to more than any machine holds


def memory_gb(text: str) -> float:
  """argparse type of ``--memory``: a number of GB in :data:`MEMORY_GB` (beyond it the bytes
  would overflow to ``inf``, or round to nothing)."""
  low, high = MEMORY_GB
  try:
    value = positive_float(text)
  except argparse.ArgumentTypeError:
    value = None
  if value is None or not low <= value <= high:
    raise argparse.ArgumentTypeError(f"expected a number of GB from 0.001 to 1e9, got "
                                     f"{text}")
  return value


def prng_seed(text: str) -> int:
  """argparse type of ``--seed``: an integer from 0 to 2**32 - 1 (:mod:`jaxsearch.seeds`:
  what ``jax.random.PRNGKey`` tells apart), refused while parsing rather than as an
  ``OverflowError`` once the run is built."""
  from jaxsearch.seeds import MAX_SEED, seed_problem
  try:
    value = int(text)
  except ValueError:
    raise argparse.ArgumentTypeError(f"expected an integer from 0 to {MAX_SEED}, "
                                     f"got {text!r}") from None
  problem = seed_problem(value)
  if problem is not None:
    raise argparse.ArgumentTypeError(f"the seed {problem}")
  return value


def game_name(names: Sequence[str]):
  """argparse type of a game argument: one of ``names`` or ``pgx:ENV_ID`` (the id is checked
  when the game is built, where pgx is imported)."""

  def parse(text: str) -> str:
    if text in names or (text.startswith(PGX_PREFIX) and len(text) > len(PGX_PREFIX)):
      return text
    raise argparse.ArgumentTypeError(
        f"unknown game {text!r}: choose from {', '.join(names)}, or pgx:ENV_ID")

  return parse


# ---- output paths, checked before the run (so that a run's result is never lost) ------------
#
# These raise OSError subclasses (ValueError for a bad suffix): `jaxsearch.cli.main` prints
# them as one line naming the verb, with exit status 2.


def check_writable(path, option: str, *, folder: bool = False, replaced: bool = False) -> None:
  """Raises unless ``path`` (given as ``option``) can be written: a file whose folder exists
  and may be written in, not a folder; with ``folder``, a folder that exists or can be made
  (its nearest existing ancestor is a folder that may be written in).

  ``replaced``: the writer makes a temporary file in the folder and renames it over ``path``
  (``policy_file.save``), so the folder must be writable even where the file exists.

  Raises:
    IsADirectoryError, NotADirectoryError, FileNotFoundError, PermissionError: saying why,
      naming ``option`` and ``path``.
  """
  path = Path(path)
  where = f"{option} {path}"
  if folder:
    if path.exists():
      if not path.is_dir():
        raise NotADirectoryError(f"{where}: is a file, not a folder")
      if not os.access(path, os.W_OK | os.X_OK):
        raise PermissionError(f"{where}: no permission to write in that folder")
      return
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
      ancestor = ancestor.parent
    if not ancestor.is_dir():
      raise NotADirectoryError(f"{where}: cannot make the folder: {ancestor} is a file")
    if not os.access(ancestor, os.W_OK | os.X_OK):
      raise PermissionError(f"{where}: cannot make the folder: no permission to write in "
                            f"{ancestor}")
    return
  if path.is_dir():
    raise IsADirectoryError(f"{where}: is a folder; give a file name")
  parent = path.parent  # Path("x").parent is Path("."), the working folder
  if not parent.exists():
    raise FileNotFoundError(f"{where}: the folder {parent} does not exist; create it first")
  if not parent.is_dir():
    raise NotADirectoryError(f"{where}: {parent} is not a folder")
  if path.exists() and not replaced:
    if not os.access(path, os.W_OK):
      raise PermissionError(f"{where}: no permission to write that file")
  elif not os.access(parent, os.W_OK | os.X_OK):
    raise PermissionError(f"{where}: no permission to write in {parent}")


def check_draw_file(path, option: str = "--draw") -> None:
  """A tree drawing's file (:func:`jaxsearch.viz.draw`): a suffix it draws to, writable."""
  from jaxsearch import viz
  suffixes = viz.SOURCE_SUFFIXES + viz.RENDERED_SUFFIXES
  if Path(path).suffix.lower() not in suffixes:
    raise ValueError(f"{option} {path}: the file must end in {', '.join(suffixes)}")
  check_writable(path, option)


MATPLOTLIB_INSTALL = "pip install matplotlib"


def check_plot_file(path, option: str, verb: str) -> None:
  """``option``'s plot: matplotlib importable (else :class:`CommandError` with the install
  command; ``verb`` names the command, e.g. ``"jaxsearch solve"``) and, where ``path`` is
  given, a format matplotlib writes (the suffix; none: PNG) and a writable file."""
  try:  # a core dependency, but an environment may lack it (or a broken install)
    importlib.import_module("matplotlib")  # first: a submodule imported already would not tell
    from matplotlib.backend_bases import FigureCanvasBase
  except ImportError as error:
    raise CommandError(f"{verb}: {option} needs matplotlib, which cannot be imported "
                       f"({error}); install it with `{MATPLOTLIB_INSTALL}`") from None
  if path is None:
    return
  suffix = Path(path).suffix.lower().lstrip(".")
  formats = FigureCanvasBase.get_supported_filetypes()
  if suffix and suffix not in formats:
    raise ValueError(f"{option} {path}: matplotlib cannot write .{suffix} files; use one of "
                     f"{', '.join('.' + f for f in sorted(formats))}")
  check_writable(path, option)


# ---- jaxsearch solve: everything that can be checked before the puzzle is built ------------


def solvable(args: argparse.Namespace):
  """The game ``jaxsearch solve`` solves (:class:`jaxsearch.games.solve_defaults.SolvableGame`:
  its defaults, its puzzle, its trees), by its name on the command line."""
  from jaxsearch.games.solve_defaults import SOLVABLE
  return SOLVABLE[args.game]


def searches_first_guess(args: argparse.Namespace) -> bool:
  """Whether ``jaxsearch solve args`` searches the first guess as a root decision over
  batches of sub-problem trees: a game without openings up to symmetry, no ``--first``, no
  ``--no-openings``."""
  return (args.first is None and args.openings
          and not solvable(args).openings_up_to_symmetry)


def check_solve_input(args: argparse.Namespace) -> None:
  """``jaxsearch solve``'s checks before any work: the output files and the node budget (the
  option types refuse the rest while parsing)."""
  if args.export:
    check_writable(args.export, "--export", replaced=True)  # policy_file.save renames
  if args.plot:
    check_plot_file(args.plot, "--plot", "jaxsearch solve")
  if args.draw:
    check_draw_file(args.draw, "--draw")
  if getattr(args, "checkpoint", None):  # saved to as the search goes: made, parents too
    if searches_first_guess(args):
      raise CommandError(f"jaxsearch solve {args.game}: --checkpoint is not supported by the "
                         "search over first guesses; fix the first guess (--first WORD) or "
                         "search one tree (--no-openings)")
    check_writable(args.checkpoint, "--checkpoint", folder=True)
  need = solve_node_minimum(args)
  if need is None:
    return
  if args.nodes is not None and args.nodes < need[0]:
    raise CommandError(f"jaxsearch solve: --nodes {args.nodes} is too small: {need[1]}; "
                       f"pass --nodes {need[0]} or more")
  default = solvable(args).defaults.nodes
  if args.nodes is None and default < need[0]:
    # The default budget is not the user's choice: raise it, and say so.
    print(f"jaxsearch solve: the default node budget {default} is below what this run "
          f"needs ({need[1]}); using --nodes {need[0]}", file=sys.stderr)
    args.nodes = need[0]


def solve_node_minimum(args: argparse.Namespace) -> Optional[tuple[int, str]]:
  """``(minimum, why)``: the least ``--nodes`` with which ``jaxsearch solve args`` runs as
  asked, or ``None`` where it cannot tell (the puzzle's own checks will refuse its sizes,
  lists or ``--first``; or an opening solves every secret, and nothing is searched).

  This mirrors the solver without building the puzzle (seconds to a minute): one tree needs
  ``--chunk + 1`` nodes (:class:`jaxsearch.solve.SolveOptions`); a batch of trees, one per
  feedback of each first guess (``--first``, else the game's openings up to symmetry), shares
  ``--nodes`` out and gives each tree at least ``subproblem_min_nodes(num_outcomes)`` nodes
  (:meth:`jaxsearch.solve.SolveOptions.for_trees`), which silently grew a smaller budget (3
  to 2964 for 4×6). The game counts its trees
  (:attr:`jaxsearch.games.solve_defaults.SolvableGame.count_trees`);
  tests/test_input_checks.py checks the mirror against the solver's own counts."""
  game = solvable(args)
  chunk = args.chunk or game.defaults.chunk
  one_tree = chunk + 1
  counted = game.count_trees(args)
  if counted is None:
    return None
  if counted.trees is None:  # one search from the start
    return one_tree, f"one tree needs --chunk + 1 = {one_tree} nodes"
  if min(counted.trees) == 0:  # a first guess that solves every secret: the solver stops there
    return None
  from jaxsearch.guessing.puzzle import subproblem_min_nodes
  grown = subproblem_min_nodes(counted.num_outcomes)
  per_tree = max(grown, one_tree)
  reason = (f"4 × {counted.num_outcomes} feedbacks + 1" if per_tree == grown
            else "--chunk + 1")
  total = sum(counted.trees)
  hint = (" (or --no-openings: one tree)"
          if game.openings_up_to_symmetry and not args.first else "")
  return total * per_tree, (f"{total} trees ({counted.what}: one per feedback but the solved "
                            f"one) each need {reason} = {per_tree} nodes, {total * per_tree} "
                            f"in all{hint}")
