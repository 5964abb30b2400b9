"""mctx's own test suite, unchanged, run against ``jaxsearch.compat`` standing in for mctx.

The test files are the ones installed with mctx (``mctx/_src/tests``); they are run by
pytest in a subprocess in which ``sys.modules["mctx"]`` is ``jaxsearch.compat`` and the
private modules the tests import (``mctx._src.policies``, ``.qtransforms``,
``.seq_halving``) are compat's modules of the same names. Nothing of mctx is imported there
(checked). ``tree_test.py`` opens its expected trees by the relative path
``../mctx/_src/tests/test_data/...``, so the subprocess runs in a scratch directory beside a
link to the installed package.

The whole suite (24 cases) takes one to three minutes on a loaded two-core CPU (``slow``);
the default run takes the 17 cases that compile at most one search.
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest

mctx = pytest.importorskip("mctx")

TESTS = pathlib.Path(mctx.__file__).parent / "_src" / "tests"
FILES = ("mctx_test.py", "policies_test.py", "qtransforms_test.py", "seq_halving_test.py",
         "tree_test.py")

_RUNNER = r"""
import json, sys, types
import pytest
import jaxsearch.compat as compat
from jaxsearch.compat import (action_selection, base, policies, qtransforms, search,
                              seq_halving, tree)

src = types.ModuleType("mctx._src")
src.__path__ = []
modules = dict(action_selection=action_selection, base=base, policies=policies,
               qtransforms=qtransforms, search=search, seq_halving=seq_halving, tree=tree)
for name, module in modules.items():
  setattr(src, name, module)
  sys.modules["mctx._src." + name] = module
sys.modules["mctx"] = compat
sys.modules["mctx._src"] = src

outcomes = {}


class Collect:
  def pytest_runtest_logreport(self, report):
    if report.when == "call" or report.outcome != "passed":
      outcomes.setdefault(report.nodeid.split("::", 1)[-1], report.outcome)


args = sys.argv[2:]
code = pytest.main(args, plugins=[Collect()])
real_mctx = [name for name in sys.modules
             if name.startswith("mctx") and getattr(sys.modules[name], "__file__", None)
             and "site-packages" in sys.modules[name].__file__
             and "/mctx/" in sys.modules[name].__file__.replace("\\", "/")
             and not name.endswith("_test")]
with open(sys.argv[1], "w") as f:
  json.dump(dict(code=int(code), outcomes=outcomes, real_mctx=real_mctx), f)
"""


def _run_suite(tmp_path, selection):
  """Runs mctx's test files (``selection``: pytest arguments relative to the tests folder)
  against jaxsearch.compat; returns ``{test id: outcome}``."""
  (tmp_path / "mctx").symlink_to(TESTS.parent.parent, target_is_directory=True)
  workdir = tmp_path / "run"
  workdir.mkdir()
  (workdir / "pytest.ini").write_text("[pytest]\n")
  result_file = tmp_path / "result.json"
  args = [item if item.startswith("-") or item.startswith("not ") else str(TESTS / item)
          for item in selection]
  env = dict(os.environ, JAX_PLATFORMS="cpu")
  proc = subprocess.run(
      [sys.executable, "-c", _RUNNER, str(result_file), "-q", "-p", "no:cacheprovider",
       "-c", str(workdir / "pytest.ini"), "--rootdir", str(workdir), *args],
      cwd=workdir, env=env, capture_output=True, text=True, timeout=900)
  assert result_file.exists(), proc.stdout[-4000:] + proc.stderr[-4000:]
  result = json.loads(result_file.read_text())
  assert result["real_mctx"] == [], f"the real mctx was imported: {result['real_mctx']}"
  return result, proc.stdout[-6000:]


def _assert_all_passed(result, log, expected_count):
  failed = {name: outcome for name, outcome in result["outcomes"].items()
            if outcome != "passed"}
  assert not failed, f"{failed}\n{log}"
  assert len(result["outcomes"]) == expected_count, (sorted(result["outcomes"]), log)
  assert result["code"] == 0, log


def test_mctx_suite_fast_cases_pass_unchanged(tmp_path):
  """The cases that compile at most one search: the imports, mctx's policy helpers
  (temperature, masking), ``test_muzero_policy``, the mixed value and the Sequential Halving
  schedules (17 of the 24 cases; the Gumbel and Stochastic MuZero cases run in the slow test
  and, against the real mctx, in test_mctx_parity.py)."""
  result, log = _run_suite(tmp_path, ["mctx_test.py", "policies_test.py",
                                      "qtransforms_test.py", "seq_halving_test.py",
                                      "-k", "not gumbel and not stochastic"])
  _assert_all_passed(result, log, 1 + 7 + 2 + 7)


@pytest.mark.slow
def test_mctx_suite_passes_unchanged(tmp_path):
  """All five files, including the four stored search trees of ``tree_test.py`` (MuZero with
  both Q transforms, Gumbel MuZero with and without rewards), reproduced node by node."""
  result, log = _run_suite(tmp_path, list(FILES))
  _assert_all_passed(result, log, 1 + 10 + 2 + 7 + 4)
