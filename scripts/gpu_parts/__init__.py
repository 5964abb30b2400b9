"""The parts of ``scripts/gpu_check.py``, each run in a process of its own."""
