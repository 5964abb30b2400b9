"""The training loop's evaluation of the games that have exact oracles.

Each function is a :data:`jaxsearch.train.evaluators.MakeEvaluator`: it builds, from a
trainer, what :mod:`jaxsearch.app.evaluate` measures of the search (at ``eval_simulations``,
temperature 0, no noise) and of the raw network (argmax of the logits). The registry
(:mod:`jaxsearch.app.registry`) says which game uses which; a game without one (pgx) gets the
library's matches, :func:`jaxsearch.train.evaluators.default_evaluator`.

JAX and the oracles are imported when an evaluation is built, not with this module: the
registry refers to these functions and the command line reads the registry before it imports
anything heavy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# The Connect Four sets a training run is evaluated on (of the three that ship).
CONNECT4_EVALUATED = ("Test_L3_R1", "Test_L2_R2")

if TYPE_CHECKING:
  from jaxsearch.train.evaluators import Evaluator
  from jaxsearch.train.trainer import Trainer


def tictactoe(trainer: Trainer) -> Evaluator:
  """Tic-tac-toe: ``optimal_move_fraction``, ``net_optimal_move_fraction`` over the 4,520
  reachable positions, ``losses_vs_perfect`` / ``games_vs_perfect`` of the search against
  the perfect player."""
  import jax

  from jaxsearch.app import evaluate as ev
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


def connect_four(trainer: Trainer) -> Evaluator:
  """Connect Four: ``search_error`` and ``net_error`` on Test_L3_R1 and Test_L2_R2,
  ``search_vs_random`` (score rate) and, in the final evaluation with
  ``eval_uct_simulations``, ``search_vs_uct``."""
  import jax

  from jaxsearch.app import evaluate as ev
  from jaxsearch.train.evaluators import score_rate
  config = trainer.config
  search = trainer.eval_search
  logits = trainer.logits  # one object: the compiled evaluation is reused across calls
  sets = {}
  for name in CONNECT4_EVALUATED:
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
      result["search_vs_random"] = score_rate(m)
    if final and uct_agent is not None and config.eval_games >= 2:
      m = ev.play_match(trainer.game, search_agent, uct_agent, keys[3],
                        config.eval_games // 2 * 2)
      result["search_vs_uct"] = score_rate(m)
    return result

  return evaluate_c4
