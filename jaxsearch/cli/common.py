"""What the ``jaxsearch`` verbs share: their exit-with-a-message error and argument types."""

from __future__ import annotations

import argparse
from typing import Sequence

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


def game_name(names: Sequence[str]):
  """argparse type of a game argument: one of ``names`` or ``pgx:ENV_ID`` (the id is checked
  when the game is built, where pgx is imported)."""

  def parse(text: str) -> str:
    if text in names or (text.startswith(PGX_PREFIX) and len(text) > len(PGX_PREFIX)):
      return text
    raise argparse.ArgumentTypeError(
        f"unknown game {text!r}: choose from {', '.join(names)}, or pgx:ENV_ID")

  return parse
