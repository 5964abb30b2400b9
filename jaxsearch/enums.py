"""The named modes of a search, as ``str`` enums (:class:`jaxsearch.search.SearchConfig`,
:class:`jaxsearch.policies.Search`, and the training run's :class:`jaxsearch.train.TrainConfig`).

Each is a ``str`` enum (:class:`enum.StrEnum`): a member equals, prints and serialises as its
string (``Backup.BELLMAN == "bellman"``), so options may be given either way; a config turns
strings into members once, when it is built (:func:`coerce`), and the code compares members
only.
"""

from __future__ import annotations

import enum
from typing import Optional, TypeVar


class OutcomeRule(enum.StrEnum):
  """How the descent picks an outcome at a chance record.

  ``BALANCED``: ``argmax p(o) / (n(o) + 1)`` (no randomness); ``SAMPLE``: ``o ~ p``; ``GAP``
  (Bellman backup): the outcome whose child has the widest probability-weighted gap between
  its optimistic and achievable bounds, ``BALANCED`` among ties.
  """

  BALANCED = "balanced"
  SAMPLE = "sample"
  GAP = "gap"


class SolveMethod(enum.StrEnum):
  """How a guessing game whose first guesses are all covered (up to its symmetry) is solved.

  ``AUTO``: the game's exact search of the whole game first
  (:func:`jaxsearch.guessing.exact_game.exact_first`), given three quarters of the search's
  time; where it does not prove the optimum in that time, the trees. ``TREE``: the trees
  only.
  """

  AUTO = "auto"
  TREE = "tree"


class Backup(enum.StrEnum):
  """``MEAN``: running means of sampled returns (AlphaZero, MuZero, UCT). ``BELLMAN``: AVTS's
  Bellman backup over every outcome of an expanded action (docs/algorithms.md §2)."""

  MEAN = "mean"
  BELLMAN = "bellman"


class SubtreeEntropy(enum.StrEnum):
  """The subtree entropy a search keeps (docs/algorithms.md §4): ``FULL`` (chain rule over the
  whole subtree) or ``ONE_LEVEL`` (a node's own playout-policy entropy)."""

  FULL = "full"
  ONE_LEVEL = "one_level"


class EntropyPolicy(enum.StrEnum):
  """The playout policy defining the subtree entropy's leaf distribution: ``PI_HAT``
  ``π̂(a) = (1 + n(a)) / (|A| + N)`` or ``PIBAR`` (π̄, Grill et al. 2020)."""

  PI_HAT = "pi_hat"
  PIBAR = "pibar"


class Variance(enum.StrEnum):
  """The AVTS variance model of the debiased values (:mod:`jaxsearch.debias`): ``AVTS``
  (squared changes of q̂3, drift-inflated; the default), ``CENTRED`` (the article's sample
  variance of each bucket), ``REFERENCE`` (the reference code's) or ``OFF`` (σ² = 0)."""

  AVTS = "avts"
  REFERENCE = "reference"
  CENTRED = "centred"
  OFF = "off"


class RootPolicy(enum.StrEnum):
  """Where a search's action comes from: the root's ``VISITS``, π̄ at the root (``PIBAR``,
  Grill et al.'s ACT) or Gumbel MuZero's ``SEQUENTIAL_HALVING`` winner (a search with a Gumbel
  root only)."""

  VISITS = "visits"
  PIBAR = "pibar"
  SEQUENTIAL_HALVING = "sequential_halving"


class PolicyTarget(enum.StrEnum):
  """What a learner regresses its policy to (``PolicyOutput.policy_target``): the ``VISITS``
  distribution (``action_weights``; no separate target), π̄ at the root (``PIBAR``, Grill et
  al.'s LEARN) or Gumbel MuZero's ``IMPROVED`` policy π′ (a search with a Gumbel root only)."""

  VISITS = "visits"
  PIBAR = "pibar"
  IMPROVED = "improved"


class VisitConvention(enum.StrEnum):
  """PUCT's ``N``: the ``NODE``'s visit count, ``1 + Σ n(a)`` once expanded (mctx), or the
  ``CHILDREN``'s sum ``Σ n(a)`` (the AlphaZero paper's ``Σ_b N(s, b)``)."""

  NODE = "node"
  CHILDREN = "children"


class PriorSource(enum.StrEnum):
  """PUCT's prior π: the softmax of the estimator's prior ``LOGITS``, or of its action values
  q̂1 (``ACTION_VALUES``: the AVTS article's PUCT without a policy head), over the selectable
  slots."""

  LOGITS = "logits"
  ACTION_VALUES = "action_values"


class QNormalize(enum.StrEnum):
  """Gumbel MuZero's min-max rescale of completed Q to ``[0, 1]``: over the ``LEGAL`` slots,
  over ``ALL`` slots (mctx), or ``NONE``."""

  LEGAL = "legal"
  ALL = "all"
  NONE = "none"


class ValueSource(enum.StrEnum):
  """What plays v̂ in Gumbel MuZero's ``v_mix`` at interior nodes: the ``NODE``'s value, or
  the estimator's value ``RECOVER``-ed from a running-mean backup."""

  NODE = "node"
  RECOVER = "recover"


class PathUpdate(enum.StrEnum):
  """How the running-mean backup writes a simulation's path into the tree (the same values
  either way): ``PER_LEVEL``, a loop of one ``[B]`` write per level, as many trips as the
  longest path (fewest bytes: a CPU's fastest), or ``WHOLE_PATH``, one ``[B, D]`` write per
  array with no loop (on a GPU each trip of a data-dependent loop waits for the device to
  hand its condition to the host, which costs more than writing the whole path buffer)."""

  PER_LEVEL = "per_level"
  WHOLE_PATH = "whole_path"


class SearchPolicy(enum.StrEnum):
  """The search a training run plays and learns with (``TrainConfig.policy``): ``ALPHAZERO``
  (PUCT with root Dirichlet noise), ``AVTS`` (the Bellman backup; the network gets an
  action-value head) or ``GUMBEL`` (Gumbel MuZero: the Gumbel draw explores, the improved
  policy is the target)."""

  ALPHAZERO = "alphazero"
  AVTS = "avts"
  GUMBEL = "gumbel"


class ValueTarget(enum.StrEnum):
  """What a training position's value is regressed to: the game's ``OUTCOME`` (its return from
  that ply), the ``SEARCH``'s root value, their mean (``MIX``), or MuZero's bootstrapped
  ``N_STEP`` return (the next ``n`` rewards, then the search's root value ``n`` plies on)."""

  OUTCOME = "outcome"
  SEARCH = "search"
  MIX = "mix"
  N_STEP = "n_step"


class ValueScaleKind(enum.StrEnum):
  """How a game's values are put in the value head's ``[-1, 1]``: ``IDENTITY``, ``LINEAR``
  over the game's range, MuZero's transform ``MUZERO``, or ``AUTO`` (chosen from the game's
  declared range: :func:`jaxsearch.train.value_scale.for_game`)."""

  AUTO = "auto"
  IDENTITY = "identity"
  LINEAR = "linear"
  MUZERO = "muzero"


E = TypeVar("E", bound=enum.Enum)


def coerce(kind: type[E], value, name: str) -> E:
  """``value`` (a member or its string) as a member of ``kind``; a ``ValueError`` naming
  ``name`` and the valid values otherwise."""
  try:
    return kind(value)
  except ValueError:
    valid = ", ".join(repr(member.value) for member in kind)
    raise ValueError(f"{name} must be one of {valid}, got {value!r}") from None


class TrainPreset(enum.StrEnum):
  """Which of a game's two presets a configuration was built from
  (:func:`jaxsearch.app.training.preset`): ``CPU`` (sized for a few CPU cores) or
  ``ACCELERATOR`` (a GPU or TPU: thousands of self-play games a step, a bigger network,
  bfloat16 convolutions, the steps between metric reads in one device loop)."""

  CPU = "cpu"
  ACCELERATOR = "accelerator"

  @classmethod
  def for_backend(cls, backend: Optional[str] = None) -> "TrainPreset":
    """The preset for a JAX backend's name (``"cpu"``, ``"gpu"``, ``"tpu"``, ...; default:
    ``jax.default_backend()``): ``CPU`` for ``"cpu"``, ``ACCELERATOR`` for any other."""
    if backend is None:
      import jax  # only here: importing this module stays cheap
      backend = jax.default_backend()
    return cls.CPU if backend == "cpu" else cls.ACCELERATOR


class ComputeDtype(enum.StrEnum):
  """The network's arithmetic (``TrainConfig.compute_dtype``): ``FLOAT32`` everywhere, or
  ``BFLOAT16`` in the trunk's matrix products and convolutions (the parameters, the optimiser
  state, the normalisations, the residual stream and the output heads stay ``float32``;
  :mod:`jaxsearch.train.networks`)."""

  FLOAT32 = "float32"
  BFLOAT16 = "bfloat16"
