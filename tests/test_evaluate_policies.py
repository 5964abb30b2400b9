"""``jaxsearch evaluate`` and :mod:`jaxsearch.guessing.policy_file` on legal policies that are bad or
deep: a policy that wastes guesses is evaluated at its cost (only a missed secret or an
invalid guess is rejected); trees thousands of guesses deep are written, read and evaluated
without recursion; files are written with the usual mode."""

import json
import os
import stat

import pytest

from jaxsearch import cli
from jaxsearch.guessing import policy_file as pf
from jaxsearch.app import registry

registry.register_policy_files()

DEPTH = 3000


def _wasteful_chain(depth: int) -> dict:
  """Mastermind 1×2 (secrets 1 and 2): guess 1 ``depth - 1`` times, then 2. Legal — the
  guesses are valid and every secret is found — and wasteful: 2 takes ``depth`` guesses."""
  node = {"guess": "2"}
  for _ in range(depth - 1):
    node = {"guess": "1", "children": {"b0w0": node}}
  return node


def _write(path, policy, pegs=1, colours=2):
  path.write_text(json.dumps({"format": pf.FORMAT, "game": "mastermind", "pegs": pegs,
                            "colours": colours, "policy": policy}))
  return str(path)


def test_a_wasteful_policy_is_evaluated_not_rejected(tmp_path, capsys):
  """2×2: 22 is guessed after 11 six times (7 guesses for one of 4 secrets, more than the
  number of secrets plus one)."""
  good = {"guess": "11", "children": {
      "b1w0": {"guess": "12", "children": {"b0w2": {"guess": "21", "children": {}}}},
      "b0w0": {"guess": "22"}}}
  chain = {"guess": "22"}
  for _ in range(6):
    chain = {"guess": "11", "children": {"b0w0": chain, "b1w0": good["children"]["b1w0"]}}
  assert cli.main(["evaluate", _write(tmp_path / "wasteful.json", chain, pegs=2), "--json"]) == 0
  found = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
  # 11 at 1; 12 at 2 and 21 at 3 (the b1w0 branch); 22 after six guesses of 11: at 7.
  assert found["total_guesses"] == 1 + 2 + 3 + 7 and found["worst_case"] == 7
  # Still rejected: a secret the policy never finds, and an invalid guess.
  missing = json.loads(json.dumps(chain))
  del missing["children"]["b1w0"]
  assert cli.main(["evaluate", _write(tmp_path / "missing.json", missing, pegs=2)]) == 1
  assert "'12'" in capsys.readouterr().err
  invalid = json.loads(json.dumps(chain))
  invalid["children"]["b0w0"]["guess"] = "33"
  assert cli.main(["evaluate", _write(tmp_path / "invalid.json", invalid, pegs=2)]) == 1
  assert "'33'" in capsys.readouterr().err


def test_a_policy_thousands_of_guesses_deep_is_saved_read_and_evaluated(tmp_path, capsys):
  policy = _wasteful_chain(DEPTH)
  with pytest.raises(RecursionError):  # what Python's json module alone does
    json.dumps(policy)
  path = tmp_path / "deep.json"
  pf.save(path, {"game": "mastermind", "pegs": 1, "colours": 2}, policy)
  with pytest.raises(RecursionError):
    json.loads(path.read_text())
  header, loaded = pf.load(path)
  # (``==`` on such trees recurses too: compare their texts.)
  assert pf.dumps(loaded) == pf.dumps(policy) == path.read_text().strip()[
      path.read_text().index('"policy":') + len('"policy":'):-1]
  assert header["pegs"] == 1
  result = pf.evaluate_file(path)
  assert result.total_guesses == 1 + DEPTH and result.histogram == {1: 1, DEPTH: 1}
  assert cli.main(["evaluate", str(path), "--json"]) == 0
  found = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
  assert found["total_guesses"] == 1 + DEPTH and found["worst_case"] == DEPTH
  # Deep and broken: the error names the path, thousands of steps long.
  node = loaded
  while node["guess"] == "1":
    node = node["children"]["b0w0"]
  node["guess"] = "1"  # the last node no longer finds 2
  with pytest.raises(pf.PolicyError, match="no child for feedback 'b0w0'") as info:
    pf.evaluate(loaded, ["1", "2"], pf.file_game("mastermind").resolve(header, None)[2])
  assert len(info.value.path) == DEPTH


@pytest.mark.parametrize("indent", [None, 1])
def test_the_deep_json_writer_and_reader_agree_with_the_json_module(indent):
  """Below the depth where the json module gives up, the loops write and read exactly what it
  does, annotations of every JSON type included; they reject what it rejects."""
  value = {"a": [1, 2.5, -3e-7, True, False, None, "é\"\\\n", [], {}], "b": {"c": {}}}
  for depth in range(40):
    value = {"guess": str(depth), "children": {"x": value, "y": [{"n": depth}, []]},
             "note": [[[]]], 1: "one", None: 0.1}
  expected = json.dumps(value, indent=indent,
                        separators=(",", ":") if indent is None else None)
  assert pf._dumps_deep(value, indent) == expected
  assert pf._loads_deep(expected) == json.loads(expected)
  assert pf._loads_deep(" [ 1 , {\"k\" : [ ] } ] ") == [1, {"k": []}]
  for bad in ("", "[1,]", "{\"a\" 1}", "{1: 2}", "[1 2]", "[1] x", "{\"a\": [}", "[", "tru"):
    with pytest.raises(json.JSONDecodeError):
      json.loads(bad)
    with pytest.raises(json.JSONDecodeError):
      pf._loads_deep(bad)
  loop = []
  loop.append(loop)
  with pytest.raises(ValueError, match="Circular"):
    pf._dumps_deep(loop, None)


def test_saved_files_get_the_usual_mode(tmp_path):
  """Not the private 0600 of a temporary file: 0666 less the umask for a new file, the
  existing file's mode when one is replaced."""
  header = {"game": "mastermind", "pegs": 1, "colours": 2}
  policy = _wasteful_chain(2)
  old = os.umask(0o022)
  try:
    pf.save(tmp_path / "new.json", header, policy)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o644
    os.umask(0o027)
    pf.save(tmp_path / "private.json", header, policy)
    assert stat.S_IMODE((tmp_path / "private.json").stat().st_mode) == 0o640
    os.chmod(tmp_path / "new.json", 0o664)
    pf.save(tmp_path / "new.json", header, policy)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o664
  finally:
    os.umask(old)
  assert sorted(p.name for p in tmp_path.iterdir()) == ["new.json", "private.json"]
