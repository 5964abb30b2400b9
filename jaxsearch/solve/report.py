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
    ax.plot(sims, [h[3] for h in result.history], label="optimistic bound (none does better)")
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
  """The ``--json`` object."""
  ev = result.evaluation
  return {"game": puzzle.name, "secrets": ev.secrets, "first_guess": result.policy.get("guess"),
          "total_guesses": ev.total_guesses,
          "expected_guesses": round(ev.expected_guesses, 6), "worst_case": ev.worst_case,
          "proven_optimal": result.proven_optimal,
          "bound_total": round(result.bound_total, 3),
          "upper_total": None if result.upper_total is None else round(result.upper_total, 3),
          "simulations": result.simulations, "nodes": result.nodes,
          "subproblems_proven": (None if result.subproblems is None else
                                 list(result.subproblems)),
          "bytes_per_node": None if result.memory is None else round(result.memory.per_node),
          "memory_estimate_gb": (None if result.memory is None else
                                 round(result.memory.total / (1 << 30), 2)),
          "seconds": round(result.seconds, 2)}
