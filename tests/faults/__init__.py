"""Fault injection for roscope's trace reader (used by tests/test_faults.py).

* ``bases``: the undamaged real traces the damage is made from, with their
  packets (from LTTng's index files) and babeltrace2's reading of every packet
  (bt2, the independent oracle);
* ``mutations``: damage generated from a seed (truncations, bit flips, packet
  header flips, garbage and zero blocks, bad sizes, bad UUIDs, bad
  timestamps, in stream files and in metadata), applied to a working copy and
  undone;
* ``worker``: a process that reads damaged traces with ``roscope._core.Trace``
  and checks what it read against the oracle, case after case;
* ``runner``: runs the cases in a few worker processes with a timeout per
  case (a hang or a crash is a result, not the end of the run), runs
  ``babeltrace2`` on the same damaged input, and sums up the figures.
"""
