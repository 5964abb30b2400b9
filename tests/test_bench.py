"""The benchmark's kernel count, read off optimised HLO."""

import jax

from jaxsearch.app import bench

_HLO = """HloModule toy

%body (arg: (s32[], f32[4])) -> (s32[], f32[4]) {
  %arg = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%arg), index=0
  %x = f32[4]{0} get-tuple-element(%arg), index=1
  %level = (s32[], f32[4]{0}) while(%arg), condition=%inner_cond, body=%inner_body
  %y = f32[4]{0} fusion(%x), kind=kLoop, calls=%fused
  %z = f32[4]{0} sort(%y), dimensions={0}
  ROOT %t = (s32[], f32[4]{0}) tuple(%i, %z)
}

%cond (arg: (s32[], f32[4])) -> pred[] {
  %arg = (s32[], f32[4]{0}) parameter(0)
  ROOT %lt = pred[] fusion(%arg), kind=kLoop, calls=%fused_lt
}

%inner_body (arg: (s32[], f32[4])) -> (s32[], f32[4]) {
  %arg = (s32[], f32[4]{0}) parameter(0)
  %a = f32[4]{0} fusion(%arg), kind=kLoop, calls=%fused_a
  ROOT %b = (s32[], f32[4]{0}) tuple(%arg, %a)
}

%inner_cond (arg: (s32[], f32[4])) -> pred[] {
  %arg = (s32[], f32[4]{0}) parameter(0)
  ROOT %c = pred[] fusion(%arg), kind=kLoop, calls=%fused_c
}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]{0}) tuple(%zero, %p)
  %small = (s32[], f32[4]{0}) while(%init), condition=%inner_cond, body=%inner_body
  %loop = (s32[], f32[4]{0}) while(%init), condition=%cond, body=%body
  ROOT %out = f32[4]{0} get-tuple-element(%loop), index=1
}
"""


def test_kernel_counts_of_a_known_module():
  # Outer loop: fusion + sort in the body, one fusion in the condition (the nested while and
  # the bookkeeping are not kernels); per level: the inner body's and condition's fusions.
  assert bench.kernel_counts(_HLO) == {"per_simulation": 3, "per_level": 2}


def test_kernel_counts_of_a_compiled_search():
  import jaxsearch as js
  from jaxsearch.games import hashed

  game = hashed.make(4)
  search = js.policies.puct(game, hashed.estimator(4), num_simulations=2)
  roots = hashed.distinct_roots(game, 2)
  compiled = jax.jit(lambda key, states: search(None, key, states)).lower(
      jax.random.PRNGKey(0), roots).compile()
  counts = bench.kernel_counts(compiled.as_text())
  assert counts["per_simulation"] > 10 and counts["per_level"] > 0
  assert bench.kernel_counts("HloModule empty\n") == {"per_simulation": 0, "per_level": 0}


def test_depths_of_a_hand_built_tree():
  """The depth figures read created nodes only: the root and unused rows do not count."""
  import jax.numpy as jnp
  from jaxsearch import tree as tree_lib

  tree = tree_lib.allocate(2, 5, 2, 1, jnp.zeros(()))
  depth = jnp.array([[0, 1, 2, 3, 9], [0, 1, 1, 9, 9]], jnp.int32)
  tree = tree.replace(nodes=tree.nodes.replace(depth=depth),
                      num_nodes=jnp.array([4, 3], jnp.int32))
  # Created non-root nodes: depths 1, 2, 3 and 1, 1; deepest 3 and 1.
  assert bench._depths(tree) == {"mean_node_depth_ours": 1.6, "mean_max_depth_ours": 2.0}


def test_compile_all_on_threads_matches_one_by_one():
  """Compiling on worker threads gives the same programs (same results) and one timing per
  job; a program's device bytes are positive where the backend reports them."""
  import jax.numpy as jnp
  jobs = {"double": (lambda x: 2 * x, (jnp.arange(4.0),)),
          "square": (lambda x: x * x, (jnp.arange(4.0),))}
  threaded = bench.compile_all(jobs, workers=2)
  serial = bench.compile_all(jobs, workers=1)
  assert set(threaded) == set(jobs)
  for name, (fn, args) in jobs.items():
    program, seconds = threaded[name]
    assert seconds > 0
    assert list(program(*args)) == list(serial[name][0](*args)) == list(fn(*args))
    size = bench.program_bytes(program)
    assert size is None or size >= 16  # one f32[4] output at least
  assert bench.peak_device_bytes() is None or bench.peak_device_bytes() > 0


def test_measure_without_mctx_reports_ours_alone():
  """A workload built without mctx times our two searches and gives no ratio."""
  workload = bench.hashed(4, 4, num_actions=4, with_mctx=False)
  assert set(workload.systems) == {"ours", "ours_gumbel"}
  record = bench.run_workload(workload, repeats=1)
  assert record["sims_per_s_ours"] > 0 and record["sims_per_s_ours_gumbel"] > 0
  assert "speedup_vs_mctx_muzero" not in record
  assert record["batch"] == 4 and record["simulations"] == 4


def test_ratio_range_pairs_the_rounds():
  """Each round's ratio divides that round's times (mctx's over ours), not sorted lists."""
  assert bench.ratio_range([1.0, 2.0, 4.0], [2.0, 3.0, 4.0]) == [1.0, 2.0]
  assert bench.ratio_range([3.0], [1.5]) == [0.5, 0.5]

