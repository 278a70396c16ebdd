"""rospy instrumentation for roscope (loaded by sitecustomize.py in this directory).

When libroscope_ros1.so is preloaded into a Python process and that process
imports rospy, this module patches rospy in-process so that it emits the same
roscope_ros1 LTTng events as the roscpp tracer (through ctypes entry points of
the preloaded library). Handles are Python object ids. See docs/ros1-tracer.md.
Without the preloaded library it does nothing.
"""
from __future__ import annotations

import ctypes
import functools
import threading

_lib = None
_tl = threading.local()

(NODE_INIT, PUBLISHER_INIT, SUBSCRIPTION_INIT, TIMER_INIT, SERVICE_INIT, CALLBACK_REGISTER, LINK_TX_INIT,
 LINK_RX_INIT, PUBLISH_BUFFER, LINK_TX_WRITE, LINK_RX_MESSAGE, MESSAGE_QUEUE, CALLBACK_START,
 CALLBACK_END) = range(14)


def _load():
    global _lib
    try:
        lib = ctypes.CDLL(None)
        ev = lib.roscope_ros1_py_event
        pub = lib.roscope_ros1_py_publish
    except (OSError, AttributeError):
        return None
    # The preloaded library traces a process only once asked (or when it has roscpp):
    # this loads the tracepoint provider with liblttng-ust and emits process_init. (An
    # older library, without it, traced every process from its load.)
    enable = getattr(lib, "roscope_ros1_py_enable", None)
    if enable is not None:
        enable.argtypes, enable.restype = [], None
        enable()
    u64, cp, i64 = ctypes.c_uint64, ctypes.c_char_p, ctypes.c_int64
    ev.argtypes = [ctypes.c_int, u64, u64, u64, u64, cp, cp, cp, cp, i64, i64]
    ev.restype = None
    pub.argtypes = [u64]
    pub.restype = u64
    _lib = lib
    return lib


def _b(s):
    return s.encode("utf-8", "replace") if isinstance(s, str) else s


def _emit(which, a=0, b=0, c=0, d=0, s1=None, s2=None, s3=None, s4=None, i1=0, i2=0):
    _lib.roscope_ros1_py_event(which, a, b, c, d, _b(s1), _b(s2), _b(s3), _b(s4), i1, i2)


def _symbol(fn) -> str:
    target = getattr(fn, "__func__", fn)
    mod = getattr(target, "__module__", None) or "?"
    qual = getattr(target, "__qualname__", None) or type(fn).__qualname__
    return f"{mod}.{qual}"


def _addr(sockaddr) -> str:
    if isinstance(sockaddr, tuple) and len(sockaddr) >= 2:
        host, port = sockaddr[0], sockaddr[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return ""


def _node():
    import rospy
    try:
        return rospy.get_name()
    except Exception:
        return ""


class _TracedCallback:
    """Wraps a subscription/timer/service callable; callback_start/end around each run."""
    __slots__ = ("fn", "kind", "__weakref__")

    def __init__(self, fn, kind):
        self.fn = fn
        self.kind = kind

    def __call__(self, arg, *rest):
        me = id(self)
        if self.kind == "subscription":
            # rospy has no queue of its own: the message is "queued" as the callback is called.
            _emit(MESSAGE_QUEUE, id(arg), me, id(arg), 0)
            _emit(CALLBACK_START, me, id(arg))
        else:
            _emit(CALLBACK_START, me, 0)
        try:
            return self.fn(arg, *rest)
        finally:
            _emit(CALLBACK_END, me)


def _register(fn, kind):
    w = _TracedCallback(fn, kind)
    _emit(CALLBACK_REGISTER, id(w), s1=kind, s2=_symbol(fn))
    return w


def _patch(rospy) -> None:
    import rospy.client
    import rospy.impl.tcpros_base as tb
    import rospy.impl.tcpros_pubsub as tp
    import rospy.impl.tcpros_service as ts
    import rospy.timer as rt
    import rospy.topics as topics

    _patch_objects(rospy, topics, rt, ts)
    _patch_wire(topics, tb, tp)


def _patch_objects(rospy, topics, rt, ts) -> None:
    """Nodes, publishers (and each publish), subscriptions, timers and services."""
    orig_init_node = rospy.client.init_node

    @functools.wraps(orig_init_node)
    def init_node(*a, **kw):
        r = orig_init_node(*a, **kw)
        _emit(NODE_INIT, s1=_node())
        return r
    rospy.client.init_node = init_node
    rospy.init_node = init_node

    orig_pub_init = topics.Publisher.__init__

    def pub_init(self, name, data_class, *a, **kw):
        orig_pub_init(self, name, data_class, *a, **kw)
        latch = kw.get("latch", a[2] if len(a) > 2 else False)
        qs = kw.get("queue_size", a[4] if len(a) > 4 else None)
        _emit(PUBLISHER_INIT, id(self), s1=_node(), s2=_node(), s3=self.resolved_name, s4=self.type,
              i1=int(qs or 0), i2=1 if latch else 0)
    topics.Publisher.__init__ = pub_init

    orig_publish = topics.Publisher.publish

    def publish(self, *a, **kw):
        _tl.msg_id = _lib.roscope_ros1_py_publish(id(self))
        _tl.buf = None
        try:
            return orig_publish(self, *a, **kw)
        finally:
            _tl.msg_id = 0
    topics.Publisher.publish = publish

    orig_sub_init = topics.Subscriber.__init__

    def sub_init(self, name, data_class, callback=None, callback_args=None, *a, **kw):
        w = _register(callback, "subscription") if callback is not None else None
        orig_sub_init(self, name, data_class, w if w is not None else callback, callback_args, *a, **kw)
        if w is not None:
            qs = kw.get("queue_size", a[0] if a else None)
            # The rospy.Subscriber object may be dropped by the user (rospy keeps only the
            # callback), so its id could be reused: the subscription handle is the wrapper's.
            _emit(SUBSCRIPTION_INIT, id(w), id(w), s1=_node(), s2=_node(), s3=self.resolved_name,
                  s4=self.type, i1=int(qs or 0))
    topics.Subscriber.__init__ = sub_init

    orig_timer_init = rt.Timer.__init__

    def timer_init(self, period, callback, *a, **kw):
        w = _register(callback, "timer")
        orig_timer_init(self, period, w, *a, **kw)
        oneshot = kw.get("oneshot", a[0] if a else False)
        _emit(TIMER_INIT, id(self), id(w), s1=_node(), s2=_node(), i1=int(period.to_nsec()), i2=1 if oneshot else 0)
    rt.Timer.__init__ = timer_init

    orig_srv_init = ts.ServiceImpl.__init__

    def srv_init(self, name, service_class, handler, *a, **kw):
        w = _register(handler, "service")
        orig_srv_init(self, name, service_class, w, *a, **kw)
        _emit(SERVICE_INIT, id(self), id(w), s1=_node(), s2=_node(), s3=self.resolved_name,
              s4=getattr(service_class, "_type", "?"))
    ts.ServiceImpl.__init__ = srv_init


def _patch_wire(topics, tb, tp) -> None:
    """Connections and the bytes on the wire: each message's buffer, written and received."""
    orig_add_pub_conn = topics._PublisherImpl.add_connection

    def add_pub_connection(self, c):
        t = getattr(c, "_connection", c)  # QueuedConnection wraps the transport
        try:
            sock = t.socket
            _emit(LINK_TX_INIT, id(t), s1=self.resolved_name, s2=_addr(sock.getsockname()),
                  s3=_addr(sock.getpeername()))
            t._roscope_tx = True
        except Exception:
            pass
        return orig_add_pub_conn(self, c)
    topics._PublisherImpl.add_connection = add_pub_connection

    def _note_buffer(data):
        mid = getattr(_tl, "msg_id", 0)
        if mid and getattr(_tl, "buf", None) is not data:
            _tl.buf = data
            _emit(PUBLISH_BUFFER, mid, id(data), i1=len(data))

    orig_queued_write = tp.QueuedConnection.write_data

    def queued_write(self, data):
        _note_buffer(data)
        return orig_queued_write(self, data)
    tp.QueuedConnection.write_data = queued_write

    orig_write = tb.TCPROSTransport.write_data

    def write_data(self, data):
        if getattr(self, "_roscope_tx", False):
            _note_buffer(data)
            _emit(LINK_TX_WRITE, id(self), id(data), i1=len(data))
        return orig_write(self, data)
    tb.TCPROSTransport.write_data = write_data

    orig_receive_once = tb.TCPROSTransport.receive_once

    def receive_once(self):
        if not hasattr(self, "_roscope_rx"):
            self._roscope_rx = -1
            if isinstance(self.protocol, tp.TCPROSSub) and self.socket is not None:
                try:
                    _emit(LINK_RX_INIT, id(self), s1=self.protocol.resolved_name,
                          s2=_addr(self.socket.getsockname()), s3=_addr(self.socket.getpeername()))
                    self._roscope_rx = 0
                except Exception:
                    pass
        msgs = orig_receive_once(self)
        if self._roscope_rx >= 0:
            for m in msgs:
                _emit(LINK_RX_MESSAGE, id(self), id(m), i1=0, i2=self._roscope_rx)
                self._roscope_rx += 1
        return msgs
    tb.TCPROSTransport.receive_once = receive_once


def install(rospy_module) -> None:
    if _load() is not None:
        _patch(rospy_module)
