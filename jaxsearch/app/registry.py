"""The one registry of games: a game's name -> its module, its training preset and evaluation,
how ``jaxsearch play`` presents it, and whether it has policy files (and their reader).

Every place that turns a name into a game reads it: ``jaxsearch train`` (through
:mod:`jaxsearch.app.training`), ``jaxsearch play``, ``jaxsearch evaluate`` and the policy-file
reader (:func:`register_policy_files` plugs the games with policy files into
:mod:`jaxsearch.guessing.policy_file`, which knows no game). The library proper never reads it: it is
given a game's module (:class:`jaxsearch.train.trainer.Trainer`) or a
:class:`~jaxsearch.guessing.policy_file.FileGame`.

    entry("connect_four").load()          # the module jaxsearch.games.connect_four
    entry("pgx:othello").load()           # pgx_env.module_for("pgx:othello")
    names("training")                     # ('tictactoe', 'connect_four'), plus pgx:ENV_ID
    register_policy_files()               # policy_file reads Mastermind and Wordle files

Importing this module is cheap (no JAX): a game's module is imported when its entry is
loaded, so the command line lists the games before it imports anything heavy.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable, Optional

from jaxsearch.app import evaluators, presets

PGX_PREFIX = "pgx:"  # "pgx:ENV_ID": any pgx environment, through jaxsearch.games.pgx_env


@dataclasses.dataclass(frozen=True)
class TrainingSpec:
  """How ``jaxsearch train`` trains a game.

  Attributes:
    preset: ``(name, which) -> dict`` of the game's
      :class:`~jaxsearch.train.config.TrainConfig` fields for the
      :class:`~jaxsearch.enums.TrainPreset` ``which`` (default ``CPU``;
      :mod:`jaxsearch.app.presets`).
    evaluator: builds the run's evaluation from the trainer
      (:data:`jaxsearch.train.evaluators.MakeEvaluator`, the game's exact oracles:
      :mod:`jaxsearch.app.evaluators`); ``None``: the library's matches against a random
      player and UCT (:func:`jaxsearch.train.evaluators.default_evaluator`).
    minutes: ``jaxsearch train``'s budget unless ``--minutes`` or ``--steps`` says otherwise.
  """

  preset: Callable[..., dict]
  evaluator: Optional[Callable] = None
  minutes: float = 30.0


@dataclasses.dataclass(frozen=True)
class PlaySpec:
  """How ``jaxsearch play`` presents a game.

  Attributes:
    default_simulations: search simulations per move unless ``--simulations`` says otherwise.
    unit: what a person picks ("cell", "column"); action ``a`` is shown as ``a + 1``.
    taken: why a legal-range choice is illegal, formatted with ``{label}``.
  """

  default_simulations: int
  unit: str
  taken: str


@dataclasses.dataclass(frozen=True)
class GameEntry:
  """One game of the registry.

  Attributes:
    name: the game's name (a pgx game's full ``"pgx:ENV_ID"``).
    module: the module that defines it (imported by :meth:`load`).
    build: the name of the module's function that builds the game from its full name
      (``pgx_env.module_for``), for a family of games under one entry; ``None``: the module
      is the game (``GAME``, ``observe``, ``render``).
    training: how ``jaxsearch train`` trains it (``None``: not trainable).
    play: how ``jaxsearch play`` presents it (``None``: not playable).
    policy_files: it has policy files (:mod:`jaxsearch.guessing.policy_file`), read by its module's
      ``POLICY_FILES`` (a :class:`~jaxsearch.guessing.policy_file.FileGame`).
  """

  name: str
  module: str
  build: Optional[str] = None
  training: Optional[TrainingSpec] = None
  play: Optional[PlaySpec] = None
  policy_files: bool = False

  def load(self) -> Any:
    """The game's module (or, for a family, the namespace its ``build`` makes): ``GAME``,
    ``observe``, ``render``, ... Imports it (JAX; a pgx game imports pgx: ``ImportError``
    without it, ``ValueError`` for an unknown environment)."""
    module = importlib.import_module(self.module)
    return getattr(module, self.build)(self.name) if self.build else module

  def file_game(self) -> Any:
    """The :class:`~jaxsearch.guessing.policy_file.FileGame` that reads the game's policy files."""
    if not self.policy_files:
      raise ValueError(f"game {self.name!r} has no policy files")
    return self.load().POLICY_FILES


GAMES: dict[str, GameEntry] = {entry.name: entry for entry in (
    GameEntry("tictactoe", "jaxsearch.games.tictactoe",
              training=TrainingSpec(presets.tictactoe, evaluators.tictactoe, minutes=4.5),
              play=PlaySpec(2000, "cell", "cell {label} is already taken")),
    GameEntry("connect_four", "jaxsearch.games.connect_four",
              training=TrainingSpec(presets.connect_four, evaluators.connect_four),
              play=PlaySpec(1000, "column", "column {label} is full")),
    GameEntry("mastermind", "jaxsearch.games.mastermind", policy_files=True),
    GameEntry("wordle", "jaxsearch.games.wordle", policy_files=True),
)}
"""The named games, in the order the command line lists them."""

PGX = GameEntry(PGX_PREFIX + "ENV_ID", "jaxsearch.games.pgx_env", build="module_for",
                training=TrainingSpec(presets.pgx),
                play=PlaySpec(200, "move", "move {label} is not legal here"))
"""Every pgx environment, ``"pgx:ENV_ID"`` (:func:`entry` names it)."""

FEATURES = ("training", "play", "policy_files")
# How an error names a game of each feature.
_KIND = {None: "game", "training": "game to train", "play": "game to play",
         "policy_files": "game with policy files"}


def _check_feature(feature: Optional[str]) -> None:
  if feature is not None and feature not in FEATURES:
    raise ValueError(f"feature must be one of {FEATURES}, got {feature!r}")


def names(feature: Optional[str] = None) -> tuple[str, ...]:
  """The named games (pgx's ``"pgx:ENV_ID"`` aside) that have ``feature`` (one of
  :data:`FEATURES`; ``None``: all)."""
  _check_feature(feature)
  return tuple(name for name, entry in GAMES.items()
               if feature is None or getattr(entry, feature))


def entry(name: str, feature: Optional[str] = None) -> GameEntry:
  """The registry's entry of game ``name`` (``"pgx:ENV_ID"``: :data:`PGX` under that name).

  Raises:
    ValueError: no such game, or (with ``feature``) one without it; the message lists the
      games that have it.
  """
  _check_feature(feature)
  if isinstance(name, str) and name in GAMES:
    found = GAMES[name]
  elif isinstance(name, str) and name.startswith(PGX_PREFIX) and len(name) > len(PGX_PREFIX):
    found = dataclasses.replace(PGX, name=name)
  else:
    found = None
  if found is None or (feature is not None and not getattr(found, feature)):
    known = list(names(feature)) + ([PGX.name] if feature is None or getattr(PGX, feature)
                                     else [])
    raise ValueError(f"unknown {_KIND[feature]} {name!r}: expected one of {', '.join(known)}")
  return found


def game_module(name: str) -> Any:
  """The module of game ``name`` (:meth:`GameEntry.load`)."""
  return entry(name).load()


def register_policy_files() -> None:
  """Makes :mod:`jaxsearch.guessing.policy_file` read the policy files of every game of the registry
  that has them (their modules are imported when a file needs them)."""
  from jaxsearch.guessing import policy_file

  policy_file.register_games(names("policy_files"),
                             lambda name: GAMES[name].file_game())
