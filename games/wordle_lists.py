"""Wordle's word lists: the copies shipped with the package, ``$WORDLE_DATA``, and reading and
checking a list (one lowercase 5-letter word per line), with errors that say which file is
missing and how to supply it. :mod:`jaxsearch.games.wordle` re-exports the public names."""

from __future__ import annotations

import importlib.resources
import os
import re
from pathlib import Path
from typing import Optional, Sequence

# The lists shipped in jaxsearch/data/wordle (README.md there: source, MIT licence,
# checksums): (answers, guesses) file names of each pair, and each file's word count.
LISTS = {
    "nyt": ("wordlist_nyt20230701_hidden", "wordlist_nyt20220830_all"),
    "orig": ("wordlist_orig_hidden", "wordlist_orig_all"),
}
EXPECTED_COUNTS = {
    "wordlist_nyt20230701_hidden": 3158,
    "wordlist_nyt20220830_all": 14855,
    "wordlist_orig_hidden": 2315,
    "wordlist_orig_all": 12972,
}
_WORD = re.compile(r"[a-z]{5}")


def check_words(words: Sequence[str], where: str) -> None:
  if isinstance(words, str):
    raise TypeError(f"{where}: expected a sequence of words, got the string {words!r}")
  bad = [w for w in words if not isinstance(w, str) or not _WORD.fullmatch(w)]
  if bad:
    raise ValueError(f"{where}: {len(bad)} words are not 5 lowercase ASCII letters, e.g. "
                     f"{bad[:5]!r}")


def word_list(words, where: str, name: str) -> list[str]:
  """``words`` (any iterable of words but a string: a list, a tuple, a generator...) as a
  checked list; ``where`` and ``name`` name the function and the argument in errors.

  A generator is read once, here: checking it first and listing it after would find it
  empty. A set is refused, its order (and so the secrets' and the guesses' indices, which
  break ties in the search) changing from one process to the next."""
  if words is None or isinstance(words, (str, bytes)) or not hasattr(words, "__iter__"):
    raise TypeError(f"{where}: {name} must be a list of 5-letter lowercase words, got "
                    f"{words!r}" + (" (a string: put it in a list)"
                                    if isinstance(words, (str, bytes)) else ""))
  if isinstance(words, (set, frozenset)):
    raise TypeError(f"{where}: {name} must be a list of 5-letter lowercase words in a fixed "
                    f"order, got a {type(words).__name__}: pass sorted({name})")
  words = list(words)
  check_words(words, f"{where} {name}")
  return words


def word_list_path(path, where: str, name: str) -> Path:
  """``path`` of a word-list file as a :class:`Path`; a clear :class:`TypeError` for
  anything else (words in memory go to :func:`make`)."""
  if not isinstance(path, (str, os.PathLike)):
    raise TypeError(f"{where}: {name} must be the path of a word-list file (str or "
                    f"os.PathLike), got {'None' if path is None else 'a ' + type(path).__name__}"
                    f"; for words in memory use wordle.make(answers, guesses)")
  return Path(path)


def shipped_data_dir() -> Path:
  """The folder of the word lists that ship with the package (``jaxsearch/data/wordle``: the
  four lists of :data:`EXPECTED_COUNTS`, their MIT licence and a README.md with their source
  and checksums)."""
  return Path(str(importlib.resources.files("jaxsearch") / "data" / "wordle"))


def default_data_dir() -> Path:
  """``$WORDLE_DATA`` if set, else the copies shipped with the package
  (:func:`shipped_data_dir`)."""
  env = os.environ.get("WORDLE_DATA")
  if env:
    return Path(env)
  return shipped_data_dir()


def default_paths(lists: str = "nyt") -> tuple[Path, Path]:
  """``(answers_path, guesses_path)`` of one pair of lists in :func:`default_data_dir`:
  ``"nyt"`` (3158 / 14855, the AVTS article's) or ``"orig"`` (2315 / 12972). Under
  ``$WORDLE_DATA`` the files may not exist; :func:`load_words` then says which one is
  missing."""
  if lists not in LISTS:
    raise ValueError(f"unknown Wordle lists {lists!r}; expected one of {sorted(LISTS)}")
  folder = default_data_dir()
  return tuple(folder / name for name in LISTS[lists])


def _missing_list_message(path: Path) -> str:
  """Why ``path`` (a word list that does not exist) is needed and how to supply it."""
  answers, guesses = next((files for files in LISTS.values() if path.name in files),
                          LISTS["nyt"])
  shipped = shipped_data_dir()
  text = (f"Wordle word list not found: {path}. Wordle needs exactly two files: an answers "
          f"list and a guesses list (which includes the answers). The package ships them "
          f"({answers}, {EXPECTED_COUNTS[answers]} answers, and {guesses}, "
          f"{EXPECTED_COUNTS[guesses]} guesses, in {shipped}) and uses them unless --answers "
          f"and --guesses (jaxsearch solve wordle) or $WORDLE_DATA (a folder holding files of "
          f"those names) override them.")
  env = os.environ.get("WORDLE_DATA")
  if path.parent.resolve() == shipped.resolve():
    text += " This file is one of the shipped copies: the install is broken, reinstall jaxsearch."
  elif env:
    text += (f" $WORDLE_DATA is {env!r}: point it at a folder holding both files, or unset it "
             f"to use the shipped copies.")
  return text


def load_words(path, expected_count: Optional[int] = None) -> list[str]:
  """Reads a word list: one lowercase 5-letter word per line (blank lines ignored).

  Raises:
    FileNotFoundError: the file is missing (the message names it, the two lists Wordle needs,
      the overrides ``--answers`` / ``--guesses`` and ``$WORDLE_DATA``, and the shipped copies).
    ValueError: a line is not a 5-letter lowercase word, a word repeats, or the number of
      words differs from ``expected_count``.
  """
  path = word_list_path(path, "wordle.load_words", "path")
  if not path.is_file():
    raise FileNotFoundError(_missing_list_message(path))
  words = []
  lines = path.read_text(encoding="ascii", errors="replace").splitlines()
  for number, line in enumerate(lines, start=1):
    word = line.strip()
    if not word:
      continue
    if not _WORD.fullmatch(word):
      raise ValueError(f"{path}:{number}: {word!r} is not a 5-letter lowercase word")
    words.append(word)
  if len(set(words)) != len(words):
    seen, dups = set(), []
    for w in words:
      if w in seen:
        dups.append(w)
      seen.add(w)
    raise ValueError(f"{path}: repeated words {dups[:5]!r}")
  if expected_count is not None and len(words) != expected_count:
    raise ValueError(f"{path}: expected {expected_count} words, found {len(words)}")
  return words
