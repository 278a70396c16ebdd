"""A plain-Python reference implementation of the data-flow paper's Algorithm 1.

It is what a Python tool does (dicts and lists, recursion with a visited set,
no subtree cache), on the same database and with the same dependency rules as
roscope's Rust implementation (`crates/flow`), so that `bench/flow.py` can time
both on the same input in the same run and check that they find the same flows.
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


def run(db, from_re, to_re, implicit_pairs, max_outputs=None):
    M = load(db)
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
