#!/usr/bin/env python3
"""The example Ricart-Agrawala node, slowed down: it works 60 ms on every line before handling
it (as a node descheduled on a busy machine would), longer than the lab's 20 ms quiet period.
It still writes lab_done after each line, so the lab knows it is not finished."""
import os
import runpy
import sys
import time


class Slow:
    def __init__(self, f):
        self.f = f

    def __iter__(self):
        return self

    def __next__(self):
        line = self.f.readline()
        if not line:
            raise StopIteration
        time.sleep(0.06)
        return line


sys.stdin = Slow(sys.stdin)
here = os.path.dirname(os.path.abspath(__file__))
runpy.run_path(os.path.join(here, "../../../../lab/examples/mutex_ra.py"), run_name="__main__")
