"""A plain-Python reference implementation of the data-flow paper's Algorithm 1.

It is what a Python tool does (dicts and lists, recursion with a visited set,
no subtree cache), on the same database and with the same dependency rules as
roscope's Rust implementation (`crates/flow`), written separately from it: its
own SQL reads of the model, its own implicit-dependency rules (`implicit_pairs`)
and latency breakdown (`breakdown`). `bench/flow.py` times both on the same input
in the same run; tests/test_flow_reference.py checks that both find the same
flows, paths and latencies.
"""
from __future__ import annotations

import bisect
import re
import sys
from collections import defaultdict


def load(db):
    con = db.con
    cb_kind, cb_node, cb_sub = {}, {}, {}
    for cid, kind, node, owner in con.execute("SELECT callback_id, kind, node_id, owner_id FROM callbacks").fetchall():
        cb_kind[cid], cb_node[cid] = kind, node
        cb_sub[cid] = owner if kind == "subscription" else None
    sub_topic = dict(con.execute("SELECT subscription_id, name FROM subscriptions").fetchall())
    pub_topic = dict(con.execute("SELECT publisher_id, name FROM publishers").fetchall())
    runs = {}
    runs_of_cb = defaultdict(list)
    for rid, cid, s, e in con.execute("SELECT run_id, callback_id, start_ts, end_ts FROM callback_runs ORDER BY start_ts, run_id").fetchall():
        runs[rid] = (cid, s, e)
        runs_of_cb[cid].append(rid)
    starts_of_cb = {c: [runs[r][1] for r in rs] for c, rs in runs_of_cb.items()}
    pubs = {}
    pubs_of_topic = defaultdict(list)
    for pid, pu, run, ts in con.execute(
            "SELECT publication_id, publisher_id, run_id, coalesce(rclcpp_ts, rcl_ts, rmw_ts, ts) FROM publications ORDER BY 4, 1").fetchall():
        pubs[pid] = (pu, run, ts)
        if pu is not None and pub_topic.get(pu) is not None:
            pubs_of_topic[pub_topic[pu]].append(pid)
    pub_ts_of_topic = {t: [pubs[p][2] for p in ps] for t, ps in pubs_of_topic.items()}
    input_of_run = {}
    for pid, rid in con.execute("SELECT publication_id, run_id FROM links WHERE run_id IS NOT NULL").fetchall():
        cur = input_of_run.get(rid)
        if cur is None or pubs[pid][2] > pubs[cur][2]:
            input_of_run[rid] = pid
    return dict(cb_kind=cb_kind, cb_node=cb_node, cb_sub=cb_sub, sub_topic=sub_topic, pub_topic=pub_topic, runs=runs,
                runs_of_cb=runs_of_cb, starts_of_cb=starts_of_cb, pubs=pubs, pubs_of_topic=pubs_of_topic,
                pub_ts_of_topic=pub_ts_of_topic, input_of_run=input_of_run)


def flows_for_outputs(M, implicit_in, is_input, outputs):
    """Yields each data flow (a list of ('p'|'r', id), forward in time) of the output publications."""
    runs, pubs = M["runs"], M["pubs"]

    def latest_before(cb, t, completed):
        rs, ss = M["runs_of_cb"].get(cb, []), M["starts_of_cb"].get(cb, [])
        k = bisect.bisect_left(ss, t)
        for r in reversed(rs[:k]):
            e = runs[r][2]
            if not completed or (e is not None and e <= t):
                return r
        return None

    def topic_of_pub(p):
        pu = pubs[p][0]
        return M["pub_topic"].get(pu) if pu is not None else None

    def d_cp(r):
        p = M["input_of_run"].get(r)
        if p is not None:
            return p
        cb = runs[r][0]
        s = M["cb_sub"].get(cb)
        t = M["sub_topic"].get(s) if s is not None else None
        if t is None:
            return None
        ts = M["pub_ts_of_topic"].get(t, [])
        k = bisect.bisect_left(ts, runs[r][1])
        return M["pubs_of_topic"][t][k - 1] if k > 0 else None

    def tree(i, V, is_dep_cb, path, out):
        kind, ident = i
        if kind == "p":
            topic = topic_of_pub(ident)
            if topic in V:
                return
            V2 = V | {topic}
            path.append(i)
            r = pubs[ident][1]
            if r is not None:
                tree(("r", r), V2, False, path, out)
            path.pop()
        else:
            cb = runs[ident][0]
            if ("cb", cb) in V:
                return
            V2 = V | {("cb", cb)}
            path.append(i)
            prev = path[-2] if len(path) >= 2 else None
            if prev is not None and prev[0] == "p" and is_input(topic_of_pub(prev[1])):
                out.append(list(reversed(path)))
            if M["cb_kind"].get(cb) == "subscription":
                p = d_cp(ident)
                if p is not None:
                    tree(("p", p), V2, False, path, out)
            if not is_dep_cb:
                for d in implicit_in.get(cb, ()):
                    x = latest_before(d, runs[ident][1], True)
                    if x is not None:
                        tree(("r", x), V2, True, path, out)
            path.pop()

    for o in outputs:
        out = []
        tree(("p", o), frozenset(), False, [], out)
        yield from out


def breakdown(M, steps) -> tuple[int, int, int, int]:
    """(latency, communication, idle, computation) of a flow: publication to run is
    communication, run to a publication it made is computation, run to a later run
    of the same node is the first run's duration (computation) then idle."""
    runs, pubs = M["runs"], M["pubs"]

    def t(s):
        return pubs[s[1]][2] if s[0] == "p" else runs[s[1]][1]

    com = idle = calc = 0
    for a, b in zip(steps, steps[1:]):
        if (a[0], b[0]) == ("p", "r"):
            com += t(b) - t(a)
        elif (a[0], b[0]) == ("r", "p"):
            calc += t(b) - t(a)
        elif (a[0], b[0]) == ("r", "r"):
            end = runs[a[1]][2]
            d = end - t(a) if end is not None else t(b) - t(a)
            calc += d
            idle += t(b) - t(a) - d
    return t(steps[-1]) - t(steps[0]), com, idle, calc


def path_of(M, steps) -> tuple:
    """The path of a flow: its callback / topic sequence."""
    return tuple(("c", M["runs"][i][0]) if k == "r" else ("t", M["pub_topic"].get(M["pubs"][i][0])) for k, i in steps)


def implicit_pairs(db, mode: str) -> list[tuple[int, int]]:
    """Implicit (intra-node) dependency edges (from callback, to callback), read with SQL:

    - 'all': every ordered pair of distinct callbacks of a node;
    - 'annotations': only what causal-link annotations declare (periodic
      asynchronous: each input's subscription callback -> the timer callback that
      publishes; partial synchronous: between the group's subscription callbacks);
    - 'auto': annotations where a node has them, every pair of timer and
      subscription callbacks elsewhere;
    - 'none': no implicit edges.
    """
    con = db.con
    if mode == "none":
        return []
    if mode == "all":
        return [tuple(r) for r in con.execute(
            "SELECT a.callback_id, b.callback_id FROM callbacks a JOIN callbacks b ON a.node_id = b.node_id "
            "WHERE a.callback_id <> b.callback_id").fetchall()]
    ann = [tuple(r) for r in con.execute("""
        WITH subs AS (SELECT m.annotation_id, c.callback_id, c.node_id FROM annotation_members m
                      JOIN callbacks c ON c.kind = 'subscription' AND c.owner_id = m.subscription_id
                      WHERE m.role = 'subscription'),
        timer_cbs AS (SELECT DISTINCT m.annotation_id, r.callback_id FROM annotation_members m
                      JOIN publications pb ON pb.publisher_id = m.publisher_id
                      JOIN callback_runs r ON r.run_id = pb.run_id JOIN callbacks c ON c.callback_id = r.callback_id
                      WHERE m.role = 'publisher' AND c.kind = 'timer')
        SELECT s.callback_id, t.callback_id FROM subs s JOIN annotations a USING (annotation_id)
        JOIN timer_cbs t USING (annotation_id) WHERE a.kind = 'periodic_async'
        UNION
        SELECT s1.callback_id, s2.callback_id FROM subs s1 JOIN subs s2 USING (annotation_id)
        JOIN annotations a USING (annotation_id) WHERE a.kind = 'partial_sync' AND s1.callback_id <> s2.callback_id
        """).fetchall()]
    if mode == "annotations":
        return ann
    others = [tuple(r) for r in con.execute("""
        WITH annotated AS (
            SELECT DISTINCT c.node_id FROM annotation_members m JOIN callbacks c
            ON c.kind = 'subscription' AND c.owner_id = m.subscription_id WHERE c.node_id IS NOT NULL)
        SELECT a.callback_id, b.callback_id FROM callbacks a JOIN callbacks b ON a.node_id = b.node_id
        WHERE a.callback_id <> b.callback_id AND a.node_id IS NOT NULL
          AND a.kind IN ('timer', 'subscription') AND b.kind IN ('timer', 'subscription')
          AND a.node_id NOT IN (SELECT node_id FROM annotated)""").fetchall()]
    return ann + others


def run(db, from_re, to_re, implicit_pairs, max_outputs=None, model=None):
    """(output publications, flows) where each flow is a list of ('p'|'r', id),
    forward in time. `model`: what `load(db)` returned, to read it once."""
    M = model or load(db)
    rin, rout = re.compile(from_re), re.compile(to_re)
    is_input = lambda t: t is not None and bool(rin.search(t))  # noqa: E731
    outputs = sorted((p for p in M["pubs"] if (lambda t: t is not None and rout.search(t))(
        M["pub_topic"].get(M["pubs"][p][0]))), key=lambda p: (M["pubs"][p][2], p))
    if max_outputs is not None:
        outputs = outputs[:max_outputs]
    implicit_in = defaultdict(list)
    for a, b in implicit_pairs:
        implicit_in[b].append(a)
    for v in implicit_in.values():
        v.sort()
    sys.setrecursionlimit(10000)
    return outputs, list(flows_for_outputs(M, implicit_in, is_input, outputs))
