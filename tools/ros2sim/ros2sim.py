#!/usr/bin/env python3
"""ros2sim driver: run a described ROS 2-like system under real LTTng and keep
its trace(s), ground truth and a manifest.

    ros2sim.py run (--preset NAME | --system FILE) --out DIR [--distro humble|jazzy|rolling]
                   [--duration SECONDS] [--scale K] [--seed N] [--caret] [--dds] [--no-session]
    ros2sim.py presets
    ros2sim.py show PRESET

Each simulated host gets its own UTS + mount namespace (own hostname, private
/var/run/lttng and /dev/shm), its own lttng-sessiond and its own trace; a clock
override plugin gives it a clock offset and drift.  A host with "traced": false
has no session daemon: its processes run and write ground truth, untraced.
--no-session runs a single-host system directly, without namespaces or a session
of its own: the processes emit into whatever session is active on the machine
(e.g. `roscope record`'s).  --caret (Humble) emits what CARET adds and hides.  --dds adds the
DDS layer's events (provider dds: create_writer/reader, write with the source timestamp, read).
See docs/ros2sim.md.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

from description import DescriptionError, load_description, resolve

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, 'build')
PRESETS = os.path.join(HERE, 'presets')
DISTROS = {'humble': '4.1.1', 'jazzy': '8.2.3', 'rolling': '8.10.0'}

def apply_work_scale(R, scale):
    for c in R['cbs']:
        k, a, b, blocking = c['work']
        c['work'] = (k, a / scale, b / scale, blocking)


def write_plan(R, path, distro, t_start, t_end, grace_ns, seed, sockdir, caret=False, dds=False):
    L = ['# ros2sim plan (generated)', f'version {DISTROS[distro]}', f'run {t_start} {t_end} {grace_ns} {seed}',
         f'caret {1 if caret else 0}', f'dds {1 if dds else 0}']
    for h in R['hosts']:
        L.append(f'host {h["name"]}')
    for i, p in enumerate(R['procs']):
        L.append(f'proc {p["name"]} {p["host"]} {p["executor"]} {p["threads"]} {p["intra"]} {sockdir}/{i}.sock')
    for n in R['nodes']:
        L.append(f'node {n["proc"]} {n["name"]} {n["ns"]} {n["reentrant"]}')
    for t in R['topics']:
        L.append(f'topic {t}')
    for p in R['pubs']:
        L.append(f'pub {p["node"]} {p["topic"]} {p["depth"]}')
    for s in R['subs']:
        L.append(f'sub {s["node"]} {s["topic"]} {s["depth"]} {s["cb"]}')
    for t in R['timers']:
        L.append(f'timer {t["node"]} {t["period"]} {t["offset"]} {t["cb"]}')
    for g in R['syncs']:
        L.append(f'sync {g["node"]} {len(g["subs"])} {" ".join(map(str, g["subs"]))} '
                 f'{len(g["pubs"])} {" ".join(map(str, g["pubs"]))}')
    for c in R['cbs']:
        k, a, b, blocking = c['work']
        L.append(f'cb {c["node"]} {"timer" if c["kind"] == "timer" else "sub"} {c["entity"]} {k} {a:.0f} {b:.0f} '
                 f'{"wait" if blocking else "spin"} '
                 f'{c["mode"]} {c["sync"]} {len(c["outs"])} {" ".join(map(str, c["outs"]))} '
                 f'{len(c["ins"])} {" ".join(map(str, c["ins"]))}')
    for i, c in enumerate(R['cbs']):
        L.append(f'sym {i} {c["sym"]}')
    for p, s, intra in R['routes']:
        L.append(f'route {p} {s} {intra}')
    with open(path, 'w') as f:
        f.write('\n'.join(L) + '\n')


# --------------------------------------------------------------------------- per-host runner
def _sh(cmd, env=None, check=True):
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f'{" ".join(cmd)} failed ({r.returncode}): {r.stdout.strip()}')
    return r.stdout


def host_main(spec_path):
    """Runs inside `unshare --uts --mount`: private hostname, /var/run/lttng, /dev/shm."""
    with open(spec_path) as f:
        spec = json.load(f)
    status = {'host': spec['host'], 'ok': False}
    status_path = spec['status']
    sessiond_pid = None
    env = dict(os.environ)
    env['LTTNG_HOME'] = spec['lttng_home']
    env.update(spec['clock_env'])
    session = spec['session']
    try:
        os.makedirs('/var/run/lttng', exist_ok=True)
        _sh(['mount', '-t', 'tmpfs', '-o', 'mode=0755', 'ros2sim', '/var/run/lttng'])
        _sh(['mount', '-t', 'tmpfs', '-o', 'mode=1777', 'ros2sim', '/dev/shm'])
        _sh(['hostname', spec['hostname']])
        os.makedirs(spec['lttng_home'], exist_ok=True)
        if not spec.get('traced', True):
            # no session daemon in these namespaces: the processes cannot register, nothing is traced
            _wait_go(spec)
            status['procs'] = run_processes(spec, env)
            status['ok'] = all(p['returncode'] == 0 for p in status['procs'])
            return 0 if status['ok'] else 1
        _sh(['lttng-sessiond', '--daemonize', '--no-kernel'], env=env)
        with open('/var/run/lttng/lttng-sessiond.pid') as f:
            sessiond_pid = int(f.read().strip())
        status['sessiond_pid'] = sessiond_pid
        with open(spec['sessiond_pidfile'], 'w') as f:   # lets the driver clean up if this runner dies
            f.write(str(sessiond_pid))
        _sh(['lttng', 'create', session, f'--output={spec["trace_dir"]}'], env=env)
        ch = ['lttng', 'enable-channel', '--userspace', 'ros2', '--session', session,
              f'--subbuf-size={spec["subbuf_size"]}', f'--num-subbuf={spec["num_subbuf"]}',
              '--switch-timer=0', '--read-timer=200000']
        if spec['blocking']:
            ch.append('--blocking-timeout=inf')
        _sh(ch, env=env)
        for ev in spec['events']:
            _sh(['lttng', 'enable-event', '--userspace', ev, '--channel', 'ros2', '--session', session], env=env)
        _sh(['lttng', 'add-context', '--userspace', '--channel', 'ros2', '--session', session,
             '--type', 'vpid', '--type', 'vtid', '--type', 'procname'], env=env)
        _sh(['lttng', 'start', session], env=env)
        _wait_go(spec)
        status['procs'] = run_processes(spec, env)
        _sh(['lttng', 'stop', session], env=env)
        listing = _sh(['lttng', 'list', session, '--userspace'], env=env, check=False)
        m = re.findall(r'Discarded events:\s*(\d+)', listing)
        status['discarded_events'] = sum(int(x) for x in m) if m else None
        lp = re.findall(r'Lost packets:\s*(\d+)', listing)
        status['lost_packets'] = sum(int(x) for x in lp) if lp else 0
        _sh(['lttng', 'destroy', session], env=env)
        status['ok'] = all(p['returncode'] == 0 for p in status['procs'])
    except Exception as e:  # reported to the driver through the status file
        status['error'] = str(e)
    finally:
        if sessiond_pid:
            try:
                os.kill(sessiond_pid, signal.SIGTERM)
                for _ in range(100):
                    os.kill(sessiond_pid, 0)
                    time.sleep(0.05)
            except ProcessLookupError:
                pass
        with open(status_path, 'w') as f:
            json.dump(status, f)
    return 0 if status['ok'] else 1


def _wait_go(spec):
    """Say ready; wait for the go (the plan with a common start time)."""
    with open(spec['ready'], 'w') as f:
        f.write('ready')
    deadline = time.time() + 60
    while not os.path.exists(spec['go']):
        if time.time() > deadline:
            raise RuntimeError('no go from the driver within 60 s')
        time.sleep(0.02)


def _named_binary(spec, p):
    """The simulator under the process's name (a symlink), so that its procname is right from the
    first event on, even for events of preloaded libraries' constructors."""
    if p['name'] in ('.', '..'):
        return spec['binary']
    d = os.path.join(os.path.dirname(spec['plan']), 'bin', str(p['index']))
    os.makedirs(d, exist_ok=True)
    link = os.path.join(d, p['name'])
    if not os.path.lexists(link):
        os.symlink(spec['binary'], link)
    return link


def run_processes(spec, env):
    """Run the host's simulated processes to their end: [{'index', 'pid', 'returncode'}]."""
    penv = dict(env)
    penv['LTTNG_UST_REGISTER_TIMEOUT'] = '-1'   # register before the first (init) event
    if spec['blocking']:
        penv['LTTNG_UST_ALLOW_BLOCKING'] = '1'
    children = []
    try:
        for p in spec['procs']:
            log = open(p['log'], 'w')
            children.append((p, subprocess.Popen([_named_binary(spec, p), spec['plan'], str(p['index']), spec['gt_dir']],
                                                 env=penv, stdout=log, stderr=subprocess.STDOUT), log))
    finally:
        out = []
        for p, c, log in children:
            rc = c.wait()
            log.close()
            out.append({'index': p['index'], 'pid': c.pid, 'returncode': rc})
    return out


# --------------------------------------------------------------------------- ground truth
GT_HEADERS = {
    'messages': 'msg_id,publisher_id,topic,node,process,host,seq,vpid,tid,publisher_handle,rmw_publisher_handle,'
                'message,source_timestamp,publish_ns,callback_run,n_intra_subs,n_inter_subs',
    'links': 'msg_id,input_msg_id,kind',
    'deliveries': 'msg_id,subscription_id,topic,node,process,host,intra,status,vpid,tid,subscription_handle,'
                  'rmw_subscription_handle,callback,source_timestamp,arrive_ns,take_ns,callback_start_ns,'
                  'callback_end_ns,drop_ns,callback_run,message',
    'callbacks': 'run_id,process,host,vpid,tid,node,kind,entity_handle,callback,is_intra,start_ns,end_ns,input_msg_id',
}


def merge_ground_truth(R, gt_parts, gt_dir):
    objs = {'pub': {}, 'sub': {}, 'timer': {}, 'node': {}}
    n = len(R['procs'])
    for i in range(n):
        p = os.path.join(gt_parts, f'{i}.objects.part')
        if not os.path.exists(p):
            continue
        with open(p) as f:
            for line in f:
                k, idx, *rest = line.rstrip('\n').split(',')
                objs[k][int(idx)] = rest
    hosts = [h['name'] for h in R['hosts']]
    def pname(pi):
        return R['procs'][pi]['name']
    counts = {}
    outs = {k: open(os.path.join(gt_dir, f'{k}.csv'), 'w') for k in GT_HEADERS}
    for k, f in outs.items():
        f.write(GT_HEADERS[k] + '\n')
        counts[k] = 0
    for i in range(n):
        proc = pname(i)
        host = hosts[R['procs'][i]['host']]
        # messages: id,pub,seq,tid,vpid,addr,src,publish_ns,run,n_intra,n_inter
        path = os.path.join(gt_parts, f'{i}.messages.part')
        if os.path.exists(path):
            w = outs['messages']
            with open(path) as f:
                for line in f:
                    mid, pub, seq, tid, vpid, addr, src, pns, run, ni, nx = line.rstrip('\n').split(',')
                    pb = R['pubs'][int(pub)]
                    o = objs['pub'].get(int(pub), ['', ''])
                    w.write(f'{mid},{pub},{R["topics"][pb["topic"]]},{R["nodes"][pb["node"]]["name"]},{proc},{host},'
                            f'{seq},{vpid},{tid},{o[0]},{o[1]},{addr},{src},{pns},{i}-{run},{ni},{nx}\n')
                    counts['messages'] += 1
        path = os.path.join(gt_parts, f'{i}.links.part')
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    outs['links'].write(line)
                    counts['links'] += 1
        # deliveries: id,sub,intra,tid,vpid,status,arrive,take,cbs,cbe,drop,src,run,addr
        path = os.path.join(gt_parts, f'{i}.deliveries.part')
        if os.path.exists(path):
            w = outs['deliveries']
            with open(path) as f:
                for line in f:
                    mid, sub, intra, tid, vpid, st, arr, take, cbs, cbe, drop, src, run, addr = line.rstrip('\n').split(',')
                    sb = R['subs'][int(sub)]
                    o = objs['sub'].get(int(sub), ['', '', '', '', ''])
                    cb = o[3] if intra == '1' else o[2]
                    runs = '' if run.startswith('-') else f'{i}-{run}'
                    if st != 'taken':
                        tid, take, cbs, cbe, addr = '', '', '', '', ''
                    if st != 'dropped':
                        drop = ''
                    w.write(f'{mid},{sub},{R["topics"][sb["topic"]]},{R["nodes"][sb["node"]]["name"]},{proc},{host},'
                            f'{intra},{st},{vpid},{tid},{o[0]},{o[1]},{cb},{src if intra == "0" else ""},{arr},{take},'
                            f'{cbs},{cbe},{drop},{runs},{addr}\n')
                    counts['deliveries'] += 1
        # callbacks: run,tid,vpid,node,kind,entity,cb,intra,start,end,input
        path = os.path.join(gt_parts, f'{i}.callbacks.part')
        if os.path.exists(path):
            w = outs['callbacks']
            with open(path) as f:
                for line in f:
                    run, tid, vpid, node, kind, ent, cb, intra, st, en, inp = line.rstrip('\n').split(',')
                    w.write(f'{i}-{run},{proc},{host},{vpid},{tid},{R["nodes"][int(node)]["name"]},{kind},{ent},{cb},'
                            f'{intra},{st},{en},{inp}\n')
                    counts['callbacks'] += 1
    for f in outs.values():
        f.close()
    return counts


# --------------------------------------------------------------------------- driver
def preset_path(name):
    p = os.path.join(PRESETS, name + '.json')
    if not os.path.exists(p):
        avail = ', '.join(sorted(x[:-5] for x in os.listdir(PRESETS) if x.endswith('.json')))
        raise DescriptionError(f'no preset "{name}" (available: {avail})')
    return p


def ensure_built(distro):
    binary = os.path.join(BUILD, f'ros2sim-{distro}')
    if not os.path.exists(binary):
        r = subprocess.run(['make', '-C', HERE, '-s'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0 or not os.path.exists(binary):
            raise RuntimeError(f'building {binary} failed:\n{r.stdout}')
    return binary


def _start_plan(R, out, args, sockdir):
    """Write the plan with a common start instant shortly ahead, and say go."""
    now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    t_start = now + int((1.0 + 0.03 * len(R['procs'])) * 1e9)
    t_end = t_start + int(args.duration * 1e9)
    write_plan(R, os.path.join(out, 'run', 'plan.txt'), args.distro, t_start, t_end, int(0.3e9), args.seed, sockdir,
               caret=args.caret, dds=args.dds)
    with open(os.path.join(out, 'run', 'go'), 'w') as f:
        f.write('go')
    return t_start, t_end


def _events(args) -> list[str]:
    """The event patterns each host's session enables."""
    return ['ros2:*'] + (['ros2_caret:*'] if args.caret else []) + (['dds:*'] if args.dds else [])


def _host_spec(R, hi, out, args, binary, sockdir, tag, ref_ns):
    h = R['hosts'][hi]
    clock_env = {}
    if h['clock_offset_ns'] or h['clock_drift_ppm']:
        clock_env = {'LTTNG_UST_CLOCK_PLUGIN': os.path.join(BUILD, 'libros2sim_clock.so'),
                     'ROS2SIM_CLOCK_OFFSET_NS': str(h['clock_offset_ns']),
                     'ROS2SIM_CLOCK_DRIFT_PPM': repr(h['clock_drift_ppm']),
                     'ROS2SIM_CLOCK_REF_NS': str(ref_ns),
                     'ROS2SIM_CLOCK_UUID': str(uuid.uuid5(uuid.NAMESPACE_DNS, f'{tag}.{h["name"]}'))}
    traced = h['traced'] and not args.no_session
    return {
        'host': h['name'], 'hostname': socket.gethostname() if args.no_session else h['name'],
        'session': f'ros2sim-{tag}-{h["name"]}' if traced else None, 'traced': h['traced'],
        'trace_dir': os.path.join(out, 'traces', h['name']) if traced else None,
        'lttng_home': os.path.join(sockdir, f'home-{hi}'),
        'clock_env': clock_env, 'subbuf_size': args.subbuf_size, 'num_subbuf': args.num_subbuf,
        'events': _events(args),
        'blocking': not args.discard and not args.no_session,
        'ready': os.path.join(out, 'run', f'{hi}.ready'), 'go': os.path.join(out, 'run', 'go'),
        'status': os.path.join(out, 'run', f'{hi}.status.json'),
        'sessiond_pidfile': os.path.join(out, 'run', f'{hi}.sessiond.pid'),
        'binary': binary, 'plan': os.path.join(out, 'run', 'plan.txt'),
        'gt_dir': os.path.join(out, 'run', 'gt'),
        'procs': [{'index': i, 'name': p['name'], 'log': os.path.join(out, 'logs', f'{p["name"]}.log')}
                  for i, p in enumerate(R['procs']) if p['host'] == hi],
    }


def _run_in_namespaces(R, out, args, host_specs, sockdir):
    """One `unshare` runner per host (own hostname, session daemon, session); returns (statuses, t_start, t_end)."""
    runners = []
    try:
        for hi, spec in host_specs:
            sp = os.path.join(out, 'run', f'{hi}.host.json')
            with open(sp, 'w') as f:
                json.dump(spec, f, indent=1)
            runners.append(subprocess.Popen(
                ['unshare', '--uts', '--mount', '--fork', '--kill-child', sys.executable, os.path.abspath(__file__),
                 '_host', sp], stdout=open(os.path.join(out, 'logs', f'host-{spec["host"]}.log'), 'w'),
                stderr=subprocess.STDOUT))
        # wait until every host's session is recording
        deadline = time.time() + 60
        while not all(os.path.exists(s['ready']) for _, s in host_specs):
            for (_hi, s), r in zip(host_specs, runners):
                if r.poll() is not None:
                    st = _read_status(s)
                    raise RuntimeError(f'host {s["host"]} failed to start tracing: {st.get("error", "see logs")}')
            if time.time() > deadline:
                raise RuntimeError('hosts did not get ready within 60 s')
            time.sleep(0.02)
        t_start, t_end = _start_plan(R, out, args, sockdir)
        statuses = []
        for (_hi, s), r in zip(host_specs, runners):
            r.wait()
            statuses.append(_read_status(s))
        return statuses, t_start, t_end
    finally:
        for (_hi, s), r in zip(host_specs, runners):
            if r.poll() is None:
                r.kill()
                r.wait()
                _kill_orphan_sessiond(s)


def _run_here(R, out, args, host_specs, sockdir):
    """--no-session: the processes run here and emit into the machine's active session(s), if any."""
    t_start, t_end = _start_plan(R, out, args, sockdir)
    _hi, spec = host_specs[0]
    procs = run_processes(spec, dict(os.environ))
    return [{'host': spec['host'], 'ok': all(p['returncode'] == 0 for p in procs), 'procs': procs}], t_start, t_end


def _check_run_options(R, args):
    if args.distro not in DISTROS:
        raise DescriptionError(f'--distro must be one of {", ".join(DISTROS)}')
    if args.caret and args.distro != 'humble':
        raise DescriptionError('--caret is simulated for --distro humble only (CARET on Humble)')
    if args.no_session:
        used = sorted({p['host'] for p in R['procs']})
        h = R['hosts'][used[0]]
        if len(used) > 1 or h['clock_offset_ns'] or h['clock_drift_ppm'] or not h['traced']:
            raise DescriptionError('--no-session runs one traced host without clock offset or drift; '
                                   f'this system uses {len(used)} host(s)')


def run(args):
    src = preset_path(args.preset) if args.preset else args.system
    desc = load_description(src)
    R = resolve(desc, src, args.scale)
    _check_run_options(R, args)
    apply_work_scale(R, args.scale)
    out = os.path.abspath(args.out)
    if os.path.exists(out):
        raise FileExistsError(f'{out} already exists; ros2sim never overwrites an output directory')
    os.makedirs(out)
    binary = ensure_built(args.distro)
    for d in ('ground_truth', 'logs', 'run', 'run/gt') + (() if args.no_session else ('traces',)):
        os.makedirs(os.path.join(out, d))
    with open(os.path.join(out, 'system.json'), 'w') as f:
        json.dump(desc, f, indent=1)
    sockdir = tempfile.mkdtemp(prefix='ros2sim-')
    tag = uuid.uuid4().hex[:8]
    ref_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    host_specs = [(hi, _host_spec(R, hi, out, args, binary, sockdir, tag, ref_ns))
                  for hi in sorted({p['host'] for p in R['procs']})]
    t0_wall = time.time()
    try:
        if args.no_session:
            statuses, t_start, t_end = _run_here(R, out, args, host_specs, sockdir)
        else:
            statuses, t_start, t_end = _run_in_namespaces(R, out, args, host_specs, sockdir)
    finally:
        shutil.rmtree(sockdir, ignore_errors=True)
    counts = None if args.no_ground_truth else \
        merge_ground_truth(R, os.path.join(out, 'run', 'gt'), os.path.join(out, 'ground_truth'))
    elapsed = time.time() - t0_wall
    manifest = {
        'tool': 'ros2sim', 'distro': args.distro, 'tracetools_version': DISTROS[args.distro], 'caret': args.caret,
        'dds': args.dds,
        'session': 'external (--no-session)' if args.no_session else 'own, per host',
        'description': os.path.abspath(src), 'scale': args.scale, 'seed': args.seed,
        'duration_s': args.duration, 'start_ns': t_start, 'end_ns': t_end, 'clock_ref_ns': ref_ns,
        'channel': None if args.no_session else {
            'name': 'ros2', 'subbuf_size': args.subbuf_size, 'num_subbuf': args.num_subbuf,
            'mode': 'discard' if args.discard else 'blocking (no loss: applications wait for buffer space)',
            'buffering': 'per-uid', 'context': ['vpid', 'vtid', 'procname'],
            'events': _events(args)},
        'hosts': [], 'processes': [],
        'ground_truth': None if args.no_ground_truth else {k: f'ground_truth/{k}.csv' for k in GT_HEADERS},
        'ground_truth_rows': counts, 'wall_time_s': round(elapsed, 3),
    }
    manifest['ok'] = ok = _manifest_hosts(R, manifest, host_specs, statuses)
    with open(os.path.join(out, 'manifest.json'), 'w') as f:
        json.dump(manifest, f, indent=1)
    shutil.rmtree(os.path.join(out, 'run', 'gt'), ignore_errors=True)
    if not ok:
        errs = [h['error'] for h in manifest['hosts'] if h['error']]
        bad = [p['name'] for p in manifest['processes'] if p['returncode'] != 0]
        raise RuntimeError(f'run failed: {"; ".join(errs)} {"processes failed: " + ", ".join(bad) if bad else ""} '
                           f'(see {out}/logs)')
    disc = [h['discarded_events'] for h in manifest['hosts']]
    truth = 'no ground truth' if counts is None else f'{counts["messages"]} messages, {counts["callbacks"]} callback runs'
    print(f'ros2sim: {out}: {sum(1 for h in manifest["hosts"] if h["trace"])} trace(s), {truth}, '
          f'discarded events {disc}, {elapsed:.1f} s')
    return out


def _manifest_hosts(R, manifest, host_specs, statuses):
    ok = True
    for (hi, s), st in zip(host_specs, statuses):
        h = R['hosts'][hi]
        manifest['hosts'].append({
            'name': h['name'], 'hostname': s['hostname'], 'traced': h['traced'],
            'trace': f'traces/{h["name"]}' if s['trace_dir'] else None,
            'clock_offset_ns': h['clock_offset_ns'], 'clock_drift_ppm': h['clock_drift_ppm'],
            'clock_formula': 'trace_ns = mono + offset_ns + (mono - clock_ref_ns) * drift_ppm / 1e6',
            'clock_uuid': s['clock_env'].get('ROS2SIM_CLOCK_UUID'),
            'discarded_events': st.get('discarded_events'), 'lost_packets': st.get('lost_packets'),
            'error': st.get('error')})
        ok = ok and st.get('ok', False)
        for p in st.get('procs', []):
            pr = R['procs'][p['index']]
            manifest['processes'].append({'index': p['index'], 'name': pr['name'], 'host': h['name'],
                                          'vpid': p['pid'], 'executor': pr['executor'], 'threads': pr['threads'],
                                          'intra_process': bool(pr['intra']), 'returncode': p['returncode']})
    manifest['processes'].sort(key=lambda p: p['index'])
    return ok


def _kill_orphan_sessiond(spec):
    """The session daemon a killed host runner started (by its pid, nothing else)."""
    try:
        with open(spec['sessiond_pidfile']) as f:
            pid = int(f.read().strip())
        with open(f'/proc/{pid}/cmdline', 'rb') as f:
            if b'lttng-sessiond' not in f.read():
                return
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        pass


def _read_status(spec):
    try:
        with open(spec['status']) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError):
        return {'ok': False, 'error': f'no status from host {spec["host"]}'}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ['_host']:
        return host_main(argv[1])
    ap = argparse.ArgumentParser(prog='ros2sim', description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    r = sub.add_parser('run', help='run a system and record it')
    g = r.add_mutually_exclusive_group(required=True)
    g.add_argument('--preset')
    g.add_argument('--system', help='system description (JSON, or YAML with PyYAML)')
    r.add_argument('--out', required=True, help='output directory (must not exist)')
    r.add_argument('--distro', default='jazzy')
    r.add_argument('--duration', type=float, default=3.0, help='seconds of simulated system time')
    r.add_argument('--scale', type=float, default=1.0, help='divide timer periods and work times by K')
    r.add_argument('--seed', type=int, default=1)
    r.add_argument('--no-ground-truth', action='store_true',
                   help='do not write ground_truth/ (a trace for scale, whose truth nothing reads)')
    r.add_argument('--subbuf-size', default='1M')
    r.add_argument('--num-subbuf', type=int, default=8)
    r.add_argument('--discard', action='store_true',
                   help='discard mode like `ros2 trace` (losses are counted in the manifest); default blocks')
    r.add_argument('--dds', action='store_true',
                   help="add the DDS layer's events (provider dds, the message-flow paper's instrumentation): "
                        "create_writer/create_reader with GIDs, write with the source timestamp, read")
    r.add_argument('--caret', action='store_true',
                   help='run "with CARET" (Humble): ros2_caret:* events instead of the events CARET replaces')
    r.add_argument('--no-session', action='store_true',
                   help='one host, no namespaces and no LTTng session of its own: emit into the active session(s)')
    sub.add_parser('presets', help='list presets')
    s = sub.add_parser('show', help='print a preset')
    s.add_argument('preset')
    a = ap.parse_args(argv)
    try:
        if a.cmd == 'presets':
            for x in sorted(os.listdir(PRESETS)):
                if x.endswith('.json'):
                    with open(os.path.join(PRESETS, x)) as f:
                        print(f'{x[:-5]:32s} {json.load(f).get("description", "")}')
        elif a.cmd == 'show':
            with open(preset_path(a.preset)) as f:
                sys.stdout.write(f.read())
        else:
            # a terminated driver still stops its hosts' session daemons (finally in run())
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
            run(a)
    except (DescriptionError, FileExistsError, RuntimeError) as e:
        print(f'ros2sim: error: {e}', file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())
