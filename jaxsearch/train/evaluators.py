"""The training loop's evaluation of a network: the game-agnostic default, matches.

:func:`default_evaluator` measures the search (at ``eval_simulations``, temperature 0, no
noise) and the raw network against a random player and, at the end, against UCT with random
rollouts: what can be measured of any game without an oracle. A game's exact oracles
(tic-tac-toe minimax, the Connect Four test sets) are the application layer's
(:mod:`jaxsearch.app.evaluators`), passed to the :class:`~jaxsearch.train.trainer.Trainer` as its
``evaluator``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

import jax

from jaxsearch.train import agents, matches

if TYPE_CHECKING:
  from jaxsearch.train.trainer import Trainer

Evaluator = Callable[[Any, jax.Array, bool], dict]
"""``(params, key, final) -> {name: number or dict}``; ``final`` marks the end-of-run one."""

MakeEvaluator = Callable[["Trainer"], Optional[Evaluator]]
"""``trainer -> Evaluator`` (or ``None``: no evaluation): builds a run's evaluation from its
trainer (``eval_search``, ``logits``, ``game``, ``module``, ``config``)."""


def default_evaluator(trainer: Trainer) -> Evaluator:
  """Matches of the search (at ``eval_simulations``, temperature 0, no noise) and of the raw
  network (argmax of the logits), any game:

  * two players: ``search_vs_random`` and ``net_vs_random`` (score rates: win 1, draw 1/2,
    over ``eval_games`` games, half with each side first) and, in the final evaluation with
    ``eval_uct_simulations``, ``search_vs_uct``;
  * one player: the mean game returns ``search_return``, ``net_return`` and
    ``random_return``.

  The game's module says which (``num_players``, default 2) and whether the players take
  turns one move each (``alternating``, default ``True``).
  """
  config, game = trainer.config, trainer.game
  search, logits = trainer.eval_search, trainer.logits
  random_agent = agents.random_player(game)
  alternating = getattr(trainer.module, "alternating", True)
  two_player = getattr(trainer.module, "num_players", 2) == 2
  uct_agent = (agents.uct_rollout_player(game, config.eval_uct_simulations)
               if config.eval_uct_simulations and two_player else None)

  def evaluate_matches(params, key, final):
    keys = jax.random.split(key, 4)
    search_agent = agents.search_act_fn(search, params)
    net_agent = agents.greedy_act_fn(game, logits, params)
    if not two_player:
      return {name: round(matches.mean_return(game, agent, k, config.eval_games), 4)
              for name, agent, k in (("search_return", search_agent, keys[0]),
                                     ("net_return", net_agent, keys[1]),
                                     ("random_return", random_agent, keys[2]))}
    def match(agent, opponent, k):
      return score_rate(matches.play_match(game, agent, opponent, k, config.eval_games,
                                           alternating=alternating))

    result = dict(search_vs_random=match(search_agent, random_agent, keys[0]),
                  net_vs_random=match(net_agent, random_agent, keys[1]))
    if final and uct_agent is not None:
      result["search_vs_uct"] = match(search_agent, uct_agent, keys[2])
    return result

  return evaluate_matches


def score_rate(match: dict) -> float:
  """A match's score rate (win 1, draw 1/2; :func:`jaxsearch.train.matches.play_match`'s
  counts), to 4 decimals."""
  return round((match["wins"] + 0.5 * match["draws"]) / match["games"], 4)
