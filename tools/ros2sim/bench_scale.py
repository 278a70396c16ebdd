#!/usr/bin/env python3
"""Benchmark: generate a >= 10^7-event trace of the Autoware reference system and time it.

    /usr/bin/python3 tools/ros2sim/bench_scale.py [--out DIR] [--scale 100] [--duration 30] [--distro jazzy]

Reports the wall time of the whole generation (LTTng setup, run, stop, ground-truth merge),
the number of events in the trace (counted by babeltrace2, not by ros2sim), the trace size
and the discarded-event count LTTng reports.  The output directory is kept.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--out')
    ap.add_argument('--preset', default='autoware_reference_system_mp')
    ap.add_argument('--scale', type=float, default=100)
    ap.add_argument('--duration', type=float, default=30)
    ap.add_argument('--distro', default='jazzy')
    a = ap.parse_args()
    out = a.out or os.path.join(tempfile.mkdtemp(prefix='ros2sim-bench-'), 'run')
    subprocess.run(['make', '-C', HERE, '-s'], check=True)
    t0 = time.time()
    subprocess.run([sys.executable, os.path.join(HERE, 'ros2sim.py'), 'run', '--preset', a.preset, '--out', out,
                    '--distro', a.distro, '--scale', str(a.scale), '--duration', str(a.duration),
                    '--subbuf-size', '4M', '--num-subbuf', '8'], check=True)
    gen = time.time() - t0
    with open(os.path.join(out, 'manifest.json')) as f:
        man = json.load(f)
    t1 = time.time()
    n = 0
    for h in man['hosts']:
        p = subprocess.Popen(['babeltrace2', os.path.join(out, h['trace'])], stdout=subprocess.PIPE)
        for _ in p.stdout:
            n += 1
        if p.wait() != 0:
            sys.exit('babeltrace2 failed')
    count_s = time.time() - t1
    size = sum(os.path.getsize(os.path.join(d, f)) for h in man['hosts']
               for d, _, fs in os.walk(os.path.join(out, h['trace'])) for f in fs)
    res = {'preset': a.preset, 'distro': a.distro, 'scale': a.scale, 'duration_s': a.duration,
           'events': n, 'generation_wall_s': round(gen, 1), 'events_per_s_of_generation': round(n / gen),
           'trace_bytes': size, 'discarded_events': [h['discarded_events'] for h in man['hosts']],
           'messages': man['ground_truth_rows']['messages'], 'callback_runs': man['ground_truth_rows']['callbacks'],
           'babeltrace2_count_s': round(count_s, 1), 'out': out}
    print(json.dumps(res, indent=1))


if __name__ == '__main__':
    main()
