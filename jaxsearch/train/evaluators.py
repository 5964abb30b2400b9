"""The training loop's default evaluation of a network against the game's oracles.

:func:`default_evaluator` picks, per game, what :mod:`jaxsearch.train.evaluate` measures of
the search (at ``eval_simulations``, temperature 0, no noise) and of the raw network.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

import jax

from jaxsearch.train.config import PGX_PREFIX

if TYPE_CHECKING:
  from jaxsearch.train.loop import Trainer

Evaluator = Callable[[Any, jax.Array, bool], dict]
"""``(params, key, final) -> {name: number or dict}``; ``final`` marks the end-of-run one."""


def default_evaluator(trainer: Trainer) -> Optional[Evaluator]:
  """The game's oracle evaluation (:mod:`jaxsearch.train.evaluate`) of the search (at
  ``eval_simulations``, temperature 0, no noise) and of the raw network (argmax of the
  logits):

  * tic-tac-toe: ``optimal_move_fraction``, ``net_optimal_move_fraction`` over the 4,520
    reachable positions, ``losses_vs_perfect`` / ``games_vs_perfect`` of the search against
    the perfect player;
  * Connect Four: ``search_error`` and ``net_error`` on Test_L3_R1 and Test_L2_R2,
    ``search_vs_random`` (score rate) and, in the final evaluation with
    ``eval_uct_simulations``, ``search_vs_uct``.
  * pgx games (two players): ``search_vs_random`` and ``net_vs_random`` (score rates: win 1,
    draw 1/2, over ``eval_games`` games, half with each side first) and, in the final
    evaluation with ``eval_uct_simulations``, ``search_vs_uct``; one player: the mean game
    returns ``search_return``, ``net_return`` and ``random_return``.
  """
  if str(trainer.config.game).startswith(PGX_PREFIX):
    return _pgx_evaluator(trainer)
  if trainer.config.game == "tictactoe":
    return _tictactoe_evaluator(trainer)
  return _connect_four_evaluator(trainer)


def _tictactoe_evaluator(trainer: Trainer) -> Evaluator:
  """:func:`default_evaluator` of tic-tac-toe (see there)."""
  from jaxsearch.train import evaluate as ev
  config = trainer.config
  search = trainer.eval_search
  logits = trainer.logits  # one object: the compiled evaluation is reused across calls

  def evaluate_ttt(params, key, final):
    k1, k2, k3 = jax.random.split(key, 3)
    search_agent = ev.search_act_fn(search, params)
    net_agent = ev.greedy_act_fn(trainer.game, logits, params)
    match = ev.tictactoe_vs_perfect(search_agent, k3, num_games=config.eval_games)
    return dict(
        optimal_move_fraction=ev.tictactoe_optimal_fraction(search_agent, k1),
        net_optimal_move_fraction=ev.tictactoe_optimal_fraction(net_agent, k2),
        losses_vs_perfect=match["losses"], games_vs_perfect=match["games"])

  return evaluate_ttt


def _connect_four_evaluator(trainer: Trainer) -> Evaluator:
  """:func:`default_evaluator` of Connect Four (see there)."""
  from jaxsearch.train import evaluate as ev
  config = trainer.config
  search = trainer.eval_search
  logits = trainer.logits  # one object: the compiled evaluation is reused across calls
  sets = {}
  for name in ("Test_L3_R1", "Test_L2_R2"):
    try:
      sets[name] = ev.load_connect4_set(name)
    except FileNotFoundError as error:
      print(f"warning: {error}")
  random_agent = ev.random_player(trainer.game)
  uct_agent = (ev.uct_rollout_player(trainer.game, config.eval_uct_simulations)
               if config.eval_uct_simulations else None)

  def evaluate_c4(params, key, final):
    keys = jax.random.split(key, 4)
    search_agent = ev.search_act_fn(search, params)
    net_agent = ev.greedy_act_fn(trainer.game, logits, params)
    result = dict(
        search_error={n: round(ev.connect4_error_rate(search_agent, keys[0], s), 4)
                      for n, s in sets.items()},
        net_error={n: round(ev.connect4_error_rate(net_agent, keys[1], s), 4)
                   for n, s in sets.items()})
    if config.eval_games >= 2:
      m = ev.play_match(trainer.game, search_agent, random_agent, keys[2],
                        config.eval_games // 2 * 2)
      result["search_vs_random"] = _score_rate(m)
    if final and uct_agent is not None and config.eval_games >= 2:
      m = ev.play_match(trainer.game, search_agent, uct_agent, keys[3],
                        config.eval_games // 2 * 2)
      result["search_vs_uct"] = _score_rate(m)
    return result

  return evaluate_c4


def _pgx_evaluator(trainer: Trainer) -> Evaluator:
  """:func:`default_evaluator` of a pgx game (see there)."""
  from jaxsearch.train import evaluate as ev
  config, game = trainer.config, trainer.game
  search, logits = trainer.eval_search, trainer.logits
  random_agent = ev.random_player(game)
  alternating = getattr(trainer.module, "alternating", True)
  two_player = getattr(trainer.module, "num_players", 2) == 2
  uct_agent = (ev.uct_rollout_player(game, config.eval_uct_simulations)
               if config.eval_uct_simulations and two_player else None)

  def evaluate_pgx(params, key, final):
    keys = jax.random.split(key, 4)
    search_agent = ev.search_act_fn(search, params)
    net_agent = ev.greedy_act_fn(game, logits, params)
    if not two_player:
      return {name: round(ev.mean_return(game, agent, k, config.eval_games), 4)
              for name, agent, k in (("search_return", search_agent, keys[0]),
                                     ("net_return", net_agent, keys[1]),
                                     ("random_return", random_agent, keys[2]))}
    def match(agent, opponent, k):
      return _score_rate(ev.play_match(game, agent, opponent, k, config.eval_games,
                                       alternating=alternating))

    result = dict(search_vs_random=match(search_agent, random_agent, keys[0]),
                  net_vs_random=match(net_agent, random_agent, keys[1]))
    if final and uct_agent is not None:
      result["search_vs_uct"] = match(search_agent, uct_agent, keys[2])
    return result

  return evaluate_pgx


def _score_rate(match: dict) -> float:
  """A match's score rate (win 1, draw 1/2), to 4 decimals."""
  return round((match["wins"] + 0.5 * match["draws"]) / match["games"], 4)
