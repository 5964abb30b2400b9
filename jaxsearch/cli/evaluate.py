"""``jaxsearch evaluate``: re-evaluates an exported policy exactly over every secret."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jaxsearch.cli.common import CommandError


def add_parser(commands) -> None:
  """The ``evaluate`` verb's arguments, on the subparsers ``commands``."""
  evaluate = commands.add_parser(
      "evaluate", help="evaluate an exported policy exactly",
      description="Re-evaluates an exported policy (jaxsearch solve --export) over every "
                  "secret; a policy that misses a secret or plays an invalid guess is rejected "
                  "with the failing path. A legal policy that wastes guesses is evaluated at "
                  "its cost.")
  evaluate.add_argument("file")
  evaluate.add_argument("--json", action="store_true", help="end with one JSON line")


def run(args: argparse.Namespace) -> int:
  """``jaxsearch evaluate``; returns the exit status (1 for an invalid policy)."""
  from jaxsearch.guessing import policy_file
  from jaxsearch.app import registry
  registry.register_policy_files()  # the games whose files this reads, imported when needed
  try:  # policy_file.evaluate_file, keeping the header
    header, policy = policy_file.load(args.file)
    secrets, guesses, score = policy_file.game_from_file_header(
        header, base_dir=Path(args.file).parent)
    # Where the file's game allows only the secrets as guesses (Mastermind), say so as a
    # list of allowed guesses: the library's hint names a Python argument, which a
    # command-line user cannot pass.
    evaluation = policy_file.evaluate(policy, secrets, score,
                                      guesses=list(secrets) if guesses is None else guesses)
  except FileNotFoundError as error:
    raise CommandError(f"jaxsearch evaluate: {error}") from None
  except ValueError as error:  # PolicyError and malformed files
    raise CommandError(f"jaxsearch evaluate: the policy is invalid: {error}", status=1) from None
  print(f"{header['game']}: {evaluation.total_guesses} guesses over {evaluation.secrets} "
        f"secrets (mean {evaluation.expected_guesses:.4f}, worst {evaluation.worst_case})")
  if args.json:
    print(json.dumps({"game": header["game"], "secrets": evaluation.secrets,
                      "total_guesses": evaluation.total_guesses,
                      "expected_guesses": round(evaluation.expected_guesses, 6),
                      "worst_case": evaluation.worst_case,
                      "histogram": {str(k): v for k, v in evaluation.histogram.items()}}))
  return 0
