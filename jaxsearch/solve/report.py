"""Reporting a guessing game's solve: the ``--json`` summary and the plot of its bounds."""

from __future__ import annotations


def plot_history(result, path, title: str) -> None:
  """PNG of the bounds (total guesses) against simulations, like seed 000's graph."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  sims = [h[0] for h in result.history]
  fig, ax = plt.subplots(figsize=(7, 4))
  ax.plot(sims, [h[2] for h in result.history], label="achievable bound (a policy reaches it)")
  if result.upper_total is not None:
    label = ("optimistic bound (none does better)" if result.upper_total_scope == "game" else
             "optimistic bound given the first guess (none opening so does better)")
    ax.plot(sims, [h[3] for h in result.history], label=label)
  ax.axhline(result.evaluation.total_guesses, color="grey", linestyle=":",
             label=f"exported policy, evaluated: {result.evaluation.total_guesses}")
  ax.set_xlabel("simulations per tree")
  ax.set_ylabel("total guesses over all secrets")
  ax.set_yscale("log")
  ax.set_title(title)
  ax.legend(fontsize=8)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def summary(puzzle, result) -> dict:
  """The ``--json`` object (its fields are described in docs/solving.md).

  ``proven_optimal`` is true only when the total is certified to be the game's optimum;
  ``proven_given_first`` when it is certified optimal among the policies that open with the
  fixed first guess (or one of the openings searched), true whenever ``proven_optimal`` is.
  ``upper_total_scope`` says what ``upper_total`` and the history's optimistic bounds bound:
  ``"game"`` (every policy) or ``"given_first"`` (the policies opening so)."""
  ev = result.evaluation
  return {"game": puzzle.name, "secrets": ev.secrets, "first_guess": result.policy.get("guess"),
          "total_guesses": ev.total_guesses,
          "expected_guesses": round(ev.expected_guesses, 6), "worst_case": ev.worst_case,
          "proven_optimal": result.proven_optimal,
          "proven_given_first": result.proven_given_first,
          "bound_total": round(result.bound_total, 3),
          "upper_total": None if result.upper_total is None else round(result.upper_total, 3),
          "upper_total_scope": result.upper_total_scope,
          "simulations": result.simulations, "nodes": result.nodes,
          "subproblems_proven": (None if result.subproblems is None else
                                 list(result.subproblems)),
          "bytes_per_node": None if result.memory is None else round(result.memory.per_node),
          "memory_estimate_gb": (None if result.memory is None else
                                 round(result.memory.total / (1 << 30), 2)),
          "seconds": round(result.seconds, 2),
          "phases": {name: round(value, 3) for name, value in result.phases.items()},
          "history": _thinned(result.history)}


def _thinned(history, points: int = 100) -> list:
  """At most ``points`` evenly spaced entries of the search's history (the last always),
  each ``[simulations, seconds, bound_total, upper_total]``, rounded."""
  step = max(1, -(-len(history) // points))
  kept = list(history[::step])
  if history and kept[-1] is not history[-1]:
    kept.append(history[-1])
  def figure(value):  # NaN (no bound yet) is not JSON
    return None if value is None or value != value else round(value, 3)
  return [[sims, round(secs, 3), figure(bound), figure(upper)]
          for sims, secs, bound, upper in kept]
