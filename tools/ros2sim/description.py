"""ros2sim's system descriptions (docs/ros2sim.md): a description file read and
checked, and resolved into the flat tables the plan is written from (`resolve`)."""
import json
import re

DEFAULT_HOST = 'ros2sim-host'


class DescriptionError(Exception):
    pass


# --------------------------------------------------------------------------- description
def load_description(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise DescriptionError(f'{path}: cannot read: {e.strerror}') from None
    if path.endswith(('.yaml', '.yml')):
        try:
            import yaml
        except ImportError:
            raise DescriptionError(f'{path}: YAML needs PyYAML (python3-yaml); or give JSON') from None
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise DescriptionError(f'{path}: not valid YAML: {e}') from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DescriptionError(f'{path}: not valid JSON: line {e.lineno} column {e.colno}: {e.msg}') from None


def _work_ns(w, where):
    """Work of a callback in ns: (distribution, a, b, blocking)."""
    if w is None:
        return ('fixed', 0.0, 0.0, False)
    if isinstance(w, (int, float)):
        return ('fixed', float(w) * 1e3, 0.0, False)
    if not isinstance(w, dict):
        raise DescriptionError(f'{where}.work: expected an object like {{"dist": "uniform", "min_us": 100, "max_us": 200}}')
    blocking = w.get('blocking', False)
    if not isinstance(blocking, bool):
        raise DescriptionError(f'{where}.work.blocking: true or false expected')
    return _work_dist(w, where) + (blocking,)


def _work_dist(w, where):
    d = w.get('dist', 'fixed')
    try:
        if d == 'fixed':
            return ('fixed', float(w['us']) * 1e3, 0.0)
        if d == 'uniform':
            lo, hi = float(w['min_us']) * 1e3, float(w['max_us']) * 1e3
            if hi < lo:
                raise DescriptionError(f'{where}.work: max_us < min_us')
            return ('uniform', lo, hi)
        if d == 'normal':
            return ('normal', float(w['mean_us']) * 1e3, float(w['std_us']) * 1e3)
        if d == 'exponential':
            return ('exponential', float(w['mean_us']) * 1e3, 0.0)
    except KeyError as e:
        raise DescriptionError(f'{where}.work: distribution "{d}" needs field {e.args[0]}') from None
    except (TypeError, ValueError):
        raise DescriptionError(f'{where}.work: numbers expected') from None
    raise DescriptionError(f'{where}.work.dist: unknown distribution "{d}" (fixed, uniform, normal, exponential)')


def _topic(name):
    return name if name.startswith('/') else '/' + name


def _class_name(node):
    parts = re.split(r'[^A-Za-z0-9]+', node)
    c = ''.join(p[:1].upper() + p[1:] for p in parts if p)
    if not c or c[0].isdigit():
        c = 'N' + c
    return c if c.endswith('Node') else c + 'Node'


def resolve(desc, src, scale=1.0):
    """Validate a system description and resolve it into flat tables."""
    if not isinstance(desc, dict):
        raise DescriptionError(f'{src}: top level must be an object with "processes"')
    if scale <= 0:
        raise DescriptionError('--scale must be > 0')
    r = _Resolver(src, scale)
    r.hosts(desc.get('hosts') or [{'name': DEFAULT_HOST}])
    procs = desc.get('processes')
    if not isinstance(procs, list) or not procs:
        raise DescriptionError(f'{src}: "processes" must be a non-empty list')
    for pi, p in enumerate(procs):
        r.process(pi, p)
    r.link_callbacks()
    r.link_sync_groups()
    r.routes()
    return r.R


class _Resolver:
    """The flat tables of a system description, filled part by part (`resolve`)."""

    def __init__(self, src, scale):
        self.src, self.scale = src, scale
        self.R = {'hosts': [], 'procs': [], 'nodes': [], 'topics': [], 'pubs': [], 'subs': [], 'timers': [],
                  'cbs': [], 'syncs': [], 'routes': []}
        self.host_idx, self.topic_idx = {}, {}
        self.pub_by, self.sub_by = {}, {}  # (node index, topic) -> pub / sub index
        self.pnames = set()
        self.pending = []  # callbacks whose publish/input lists are resolved after all nodes exist

    def tid(self, name):
        t = _topic(name)
        if t not in self.topic_idx:
            self.topic_idx[t] = len(self.R['topics'])
            self.R['topics'].append(t)
        return self.topic_idx[t]

    def hosts(self, hosts):
        src, R = self.src, self.R
        for i, h in enumerate(hosts):
            if not isinstance(h, dict) or 'name' not in h:
                raise DescriptionError(f'{src}: hosts[{i}]: needs a "name"')
            if not re.fullmatch(r'[A-Za-z0-9][A-Za-z0-9-]{0,62}', h['name']):
                raise DescriptionError(f'{src}: hosts[{i}].name "{h["name"]}" is not a valid hostname')
            if h['name'] in self.host_idx:
                raise DescriptionError(f'{src}: hosts[{i}]: duplicate host "{h["name"]}"')
            self.host_idx[h['name']] = i
            traced = h.get('traced', True)
            if not isinstance(traced, bool):
                raise DescriptionError(f'{src}: hosts[{i}].traced must be true or false')
            R['hosts'].append({'name': h['name'], 'clock_offset_ns': int(h.get('clock_offset_ns', 0)),
                               'clock_drift_ppm': float(h.get('clock_drift_ppm', 0.0)), 'traced': traced})

    def process(self, pi, p):
        R, where = self.R, f'{self.src}: processes[{pi}]'
        if not isinstance(p, dict) or 'name' not in p:
            raise DescriptionError(f'{where}: needs a "name"')
        if p['name'] in self.pnames:
            raise DescriptionError(f'{where}: duplicate process name "{p["name"]}"')
        if not re.fullmatch(r'[A-Za-z0-9_.-]{1,15}', p['name']):
            raise DescriptionError(f'{where}.name "{p["name"]}": 1-15 characters [A-Za-z0-9_.-] (it becomes procname)')
        self.pnames.add(p['name'])
        host = p.get('host', R['hosts'][0]['name'])
        if host not in self.host_idx:
            raise DescriptionError(f'{where}.host "{host}" is not in "hosts"')
        ex = p.get('executor', 'single')
        if isinstance(ex, str):
            ex = {'type': ex}
        etype = ex.get('type', 'single')
        if etype not in ('single', 'multi'):
            raise DescriptionError(f'{where}.executor: type must be "single" or "multi", not "{etype}"')
        threads = int(ex.get('threads', 1 if etype == 'single' else 2))
        if threads < 1:
            raise DescriptionError(f'{where}.executor.threads must be >= 1')
        R['procs'].append({'name': p['name'], 'host': self.host_idx[host], 'executor': etype, 'threads': threads,
                           'intra': 1 if p.get('intra_process', False) else 0})
        nodes = p.get('nodes')
        if not isinstance(nodes, list) or not nodes:
            raise DescriptionError(f'{where}: "nodes" must be a non-empty list')
        for ni, n in enumerate(nodes):
            self.node(pi, f'{where}.nodes[{ni}]', n)

    def node(self, pi, nw, n):
        R = self.R
        if not isinstance(n, dict) or 'name' not in n:
            raise DescriptionError(f'{nw}: needs a "name"')
        if not re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', n['name']):
            raise DescriptionError(f'{nw}.name "{n["name"]}" is not a valid ROS node name')
        nidx = len(R['nodes'])
        R['nodes'].append({'proc': pi, 'name': n['name'], 'ns': n.get('namespace', '/'),
                           'reentrant': 1 if n.get('reentrant', False) else 0})
        cls = _class_name(n['name'])
        for k, pb in enumerate(n.get('publishers', [])):
            if isinstance(pb, str):
                pb = {'topic': pb}
            t = self.tid(pb['topic'])
            if (nidx, t) in self.pub_by:
                raise DescriptionError(f'{nw}.publishers[{k}]: node already publishes {R["topics"][t]}')
            self.pub_by[(nidx, t)] = len(R['pubs'])
            R['pubs'].append({'node': nidx, 'topic': t, 'depth': int(pb.get('depth', 10))})
        for k, sb in enumerate(n.get('subscriptions', [])):
            self.subscription(nidx, cls, f'{nw}.subscriptions[{k}]', sb)
        for k, tm in enumerate(n.get('timers', [])):
            self.timer(nidx, cls, k, f'{nw}.timers[{k}]', tm)
        for k, sg in enumerate(n.get('sync_groups', [])):
            gw = f'{nw}.sync_groups[{k}]'
            ins = sg.get('inputs', [])
            if len(ins) < 2:
                raise DescriptionError(f'{gw}: "inputs" needs at least 2 subscribed topics')
            R['syncs'].append({'node': nidx, 'ins': ins, 'outs': sg.get('publish', []), 'where': gw})

    def subscription(self, nidx, cls, sw, sb):
        R = self.R
        if not isinstance(sb, dict) or 'topic' not in sb:
            raise DescriptionError(f'{sw}: needs a "topic"')
        t = self.tid(sb['topic'])
        if (nidx, t) in self.sub_by:
            raise DescriptionError(f'{sw}: node already subscribes to {R["topics"][t]}')
        depth = int(sb.get('depth', 10))
        if depth < 1:
            raise DescriptionError(f'{sw}.depth must be >= 1')
        si = len(R['subs'])
        self.sub_by[(nidx, t)] = si
        ci = len(R['cbs'])
        R['subs'].append({'node': nidx, 'topic': t, 'depth': depth, 'cb': ci})
        w = _work_ns(sb.get('work'), sw)
        R['cbs'].append({'node': nidx, 'kind': 'sub', 'entity': si, 'work': w, 'mode': 'sink',
                         'sync': -1, 'outs': [], 'ins': [],
                         'sym': f'std::_Bind<void ({cls}::*({cls}*, std::_Placeholder<1>))'
                                f'(std::shared_ptr<std_msgs::msg::String_<std::allocator<void> > const>)>'})
        self.pending.append((ci, sb.get('publish', []), [], sw))

    def timer(self, nidx, cls, k, tw, tm):
        R = self.R
        if not isinstance(tm, dict) or ('period_ms' not in tm and 'period_us' not in tm):
            raise DescriptionError(f'{tw}: needs "period_ms" (or "period_us")')
        period = float(tm['period_ms']) * 1e6 if 'period_ms' in tm else float(tm['period_us']) * 1e3
        period = int(period / self.scale)
        if period <= 0:
            raise DescriptionError(f'{tw}: period must be > 0 (after --scale)')
        offset = int(float(tm.get('offset_ms', 0)) * 1e6 / self.scale)
        ci = len(R['cbs'])
        R['timers'].append({'node': nidx, 'period': period, 'offset': offset, 'cb': ci})
        R['cbs'].append({'node': nidx, 'kind': 'timer', 'entity': len(R['timers']) - 1,
                         'work': _work_ns(tm.get('work'), tw), 'mode': 'source', 'sync': -1,
                         'outs': [], 'ins': [],
                         'sym': f'std::_Bind<void ({cls}::*({cls}*))()>' if k == 0 else
                                f'{cls}::{cls}(rclcpp::NodeOptions const&)::{{lambda()#{k}}}'})
        self.pending.append((ci, tm.get('publish', []), tm.get('inputs', []), tw))

    def _index(self, table, n, t, what):
        """The publisher or subscription of node `n` on topic `t` (`table`: pub_by or sub_by), or the error `what`."""
        key = (n, self.topic_idx.get(_topic(t)))
        if key not in table:
            raise DescriptionError(what)
        return table[key]

    def link_callbacks(self):
        """Each callback's publish and input lists, and its mode."""
        for ci, outs, ins, where in self.pending:
            c = self.R['cbs'][ci]
            n = c['node']
            name = self.R['nodes'][n]['name']
            for t in outs:
                c['outs'].append(self._index(self.pub_by, n, t, f'{where}.publish: node "{name}" has no publisher on {_topic(t)}'))
            for t in ins:
                c['ins'].append(self._index(self.sub_by, n, t, f'{where}.inputs: node "{name}" has no subscription to {_topic(t)}'))
            if c['kind'] == 'sub':
                c['mode'] = 'direct' if c['outs'] else 'sink'
            else:
                c['mode'] = 'async' if c['ins'] else 'source'

    def link_sync_groups(self):
        R = self.R
        for gi, g in enumerate(R['syncs']):
            n = g['node']
            subs_i = [self._index(self.sub_by, n, t, f'{g["where"]}.inputs: node has no subscription to {_topic(t)}') for t in g['ins']]
            pubs_i = [self._index(self.pub_by, n, t, f'{g["where"]}.publish: node has no publisher on {_topic(t)}') for t in g['outs']]
            for si in subs_i:
                c = R['cbs'][R['subs'][si]['cb']]
                if c['mode'] == 'sync':
                    raise DescriptionError(f'{g["where"]}: {R["topics"][R["subs"][si]["topic"]]} is in two sync groups')
                if c['outs']:
                    raise DescriptionError(f'{g["where"]}: a sync-group subscription cannot also "publish" directly')
                c['mode'] = 'sync'
                c['sync'] = gi
            g['subs'], g['pubs'] = subs_i, pubs_i

    def routes(self):
        """Every publisher reaches every subscription of its topic."""
        R = self.R
        for pi, pb in enumerate(R['pubs']):
            pproc = R['nodes'][pb['node']]['proc']
            for si, sb in enumerate(R['subs']):
                if sb['topic'] != pb['topic']:
                    continue
                sproc = R['nodes'][sb['node']]['proc']
                intra = 1 if (pproc == sproc and R['procs'][pproc]['intra']) else 0
                R['routes'].append((pi, si, intra))
