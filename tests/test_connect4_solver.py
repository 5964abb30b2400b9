"""tests/connect4_solver.py: an exact solver that re-derives the scores of the shipped Connect
Four test sets (the end-game set in full, samples of the others), the score convention on the
test protocol's worked examples, and its refusal of invalid move strings."""

import json
from pathlib import Path

import pytest

import connect4_solver as solver_lib

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "jaxsearch" / "data" / "connect4"


def _lines(name, every=1, limit=None):
  lines = (DATA / name).read_text().splitlines()[::every]
  return lines[:limit]


def test_score_convention_examples():
  # Pons' test protocol: "4455" is won with the mover's 4th stone (22 - 4), "44455554221" lost
  # to the opponent's 7th stone (7 - 22).
  assert solver_lib.solve("4455") == 18
  assert solver_lib.solve("44455554221") == -15
  # The end-game position of the first line of Test_L3_R1.moves: its column scores.
  moves, *scores = _lines("Test_L3_R1.moves", limit=1)[0].split()
  columns = solver_lib.score_columns(moves)
  assert [-1000 if s is None else s for s in columns] == [int(s) for s in scores]
  assert max(s for s in columns if s is not None) == solver_lib.solve(moves)
  # A win with the next stone: (42 + 1 - n) // 2 with n moves played; the opponent's next
  # stone: -(42 - n) // 2.
  assert solver_lib.solve("121212") == (43 - 6) // 2
  assert solver_lib.solve("27374") == -((42 - 5) // 2)  # two threats: the mover loses


def test_rescores_every_end_game_position():
  """All 1000 lines of Test_L3_R1 (``MOVES SCORE``), every 4th of Test_L3_R1.moves (the score
  of each column), and the first 100 of the middle-game Test_L2_R1: about 1 s on one core."""
  solver = solver_lib.Solver()
  for name, every, limit in (("Test_L3_R1", 1, None), ("Test_L3_R1.moves", 4, None),
                             ("Test_L2_R1", 1, 100)):
    lines = _lines(name, every, limit)
    result = solver_lib.check_lines(lines, solver)
    assert result["positions"] == len(lines) > 0, name
    assert result["matched"] == len(lines), (name, result["mismatches"][:5])


def test_a_wrong_score_is_reported():
  line = _lines("Test_L3_R1", limit=1)[0]
  moves, score = line.split()
  result = solver_lib.check_lines([f"{moves} {int(score) + 1}", line, ""])
  assert result["positions"] == 2 and result["matched"] == 1
  assert result["mismatches"] == [dict(line=1, moves=moves, expected=int(score) + 1,
                                       found=int(score))]
  with pytest.raises(ValueError, match="MOVES SCORE"):
    solver_lib.check_lines([f"{moves} 1 2"])


@pytest.mark.parametrize("moves, reason", [
    ("4480", "not a column"), ("1111111", "full column"), ("12121213", "after the game was won"),
    ("1212121", "game is over")])
def test_invalid_move_strings(moves, reason):
  with pytest.raises(ValueError, match=reason):
    solver_lib.solve(moves)


def test_command_line_prints_one_json_line(capsys, tmp_path):
  status = solver_lib.main(["--limit", "20", str(DATA / "Test_L3_R1")])
  out = capsys.readouterr().out.strip().splitlines()
  assert status == 0 and len(out) == 1
  result = json.loads(out[0])
  assert result["positions"] == result["matched"] == 20 and result["all_matched"]
  bad = tmp_path / "bad"
  bad.write_text("4455 17\n")
  assert solver_lib.main([str(bad)]) == 1
  result = json.loads(capsys.readouterr().out)
  assert result["matched"] == 0 and result["files"][0]["mismatches"][0]["found"] == 18
