"""tests/conftest.py's rule: under ``CI=true`` a skipped test is a failure (the tests that need
``mctx`` or the shared data must not pass silently where those are missing); locally it skips.

The hook's function is checked on pytest's own report objects, in this process (a pytest
run in a subprocess would pay for another JAX start-up)."""

import pytest

import conftest


def _skip_report(when="call", xfail=False):
  report = pytest.TestReport("tests/test_x.py::test_x", ("tests/test_x.py", 1, "test_x"), {},
                             "skipped", ("tests/test_x.py", 3, "Skipped: shared data not found"),
                             when)
  if xfail:
    report.wasxfail = "known"
  return report


def test_skips_fail_under_ci_and_skip_locally(monkeypatch):
  monkeypatch.setattr(conftest, "IN_CI", True)
  for when in ("setup", "call"):
    report = _skip_report(when)
    conftest._fail_skip_under_ci(report)
    assert report.failed and "skipped under CI=true" in str(report.longrepr)
    assert "shared data not found" in str(report.longrepr)
  collected = pytest.CollectReport("tests/test_x.py", "skipped",
                                   ("tests/test_x.py", 1, "Skipped: could not import 'mctx'"), [])
  conftest._fail_skip_under_ci(collected)
  assert collected.failed and "mctx" in str(collected.longrepr)
  expected_failure = _skip_report(xfail=True)  # an xfail is reported as skipped: left alone
  conftest._fail_skip_under_ci(expected_failure)
  assert expected_failure.skipped
  monkeypatch.setattr(conftest, "IN_CI", False)
  local = _skip_report()
  conftest._fail_skip_under_ci(local)
  assert local.skipped

