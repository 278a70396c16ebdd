"""rclpy instrumentation for roscope (loaded by sitecustomize.py in this directory).

rclpy itself calls no tracepoint: its executors run Python callbacks that ros2_tracing never
sees. When roscope's ROS 2 tracer library (instrument/ros2) is preloaded, this module patches
rclpy as its modules are imported, so that rclpy processes emit ros2_tracing's events, with
ros2_tracing's layouts, through the library's ``ros_trace_*`` functions (ctypes):

* per callback: ``rclcpp_callback_register`` (its Python symbol, ``module.qualname``) and the
  event that ties it to the rcl handle of what it serves (``rclcpp_subscription_init`` +
  ``rclcpp_subscription_callback_added``, ``rclcpp_timer_callback_added`` +
  ``rclcpp_timer_link_node``, ``rclcpp_service_callback_added``; clients, which ros2_tracing
  does not cover: ``roscope_ros2:client_callback_added``);
* per run: ``callback_start`` / ``callback_end`` around the user's function; runs that handle
  a request or response in another task than its take (done callbacks of a client's futures,
  an action's execute callback) are preceded by ``roscope_ros2:callback_input``;
* executors: ``rclcpp_executor_wait_for_work`` before a wait, ``rclcpp_executor_get_next_ready``
  after it, ``rclcpp_executor_execute`` (the entity's rcl handle) before a ready entity's take;
* services and actions, where the distro's rmw has no request/response tracepoints (Jazzy):
  the tracer library emits ``roscope_ros2:rmw_send_request``, ``rmw_take_request``,
  ``rmw_send_response`` and ``rmw_take_response`` from rmw's own calls (src/rmw_services.c),
  for every client library; this module emits them (``_Requests``) only with a tracer library
  that does not (one without ``roscope_ros2_rmw_services``).

An action is its services and topics: the goal, cancel and result services and the feedback
subscription of an action server or client are found through the rcl_action handle (its
implementation's first members), each checked by name with rcl's getters before use.

Handles of Python objects (callbacks, the rclpy subscription) are their ``id()``: unique while
they live, and kept alive here. The tracer library keeps every init event it is given (these
and rcl's) and re-emits them when `roscope record --attach` asks (its state dump,
docs/ros1-tracer.md "Attaching"), so this module keeps none.
The per-run calls (callback start/end and input, executor events) go through the tracer's C
extension (`_roscope_rclpy_fast`, its `Traced` wrapper around each callback) when it is built,
else through ctypes. Without the preloaded library this module does nothing. See
docs/ros2-pypi.md.
"""
from __future__ import annotations

import ctypes
import functools
import glob
import importlib.machinery
import importlib.util
import inspect
import os
import threading

_lib = None
_rcl = None
#: Whether this module emits the service events itself (the rmw has none: Jazzy).
_own_service_events = False
#: Objects whose id() is a handle in the trace: kept alive so that the id is not reused.
_keep: list = []

P, I64, CP, B = ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p, ctypes.c_bool
_SIGS = {
    "ros_trace_callback_start": [P, B], "ros_trace_callback_end": [P],
    "ros_trace_rclcpp_callback_register": [P, CP],
    "ros_trace_rclcpp_subscription_init": [P, P], "ros_trace_rclcpp_subscription_callback_added": [P, P],
    "ros_trace_rclcpp_timer_callback_added": [P, P], "ros_trace_rclcpp_timer_link_node": [P, P],
    "ros_trace_rclcpp_service_callback_added": [P, P],
    "ros_trace_rclcpp_executor_wait_for_work": [I64], "ros_trace_rclcpp_executor_get_next_ready": [],
    "ros_trace_rclcpp_executor_execute": [P],
    "roscope_ros2_client_callback_added": [P, P], "roscope_ros2_callback_input": [P, P, I64],
    "roscope_ros2_rmw_send_request": [P, P, I64], "roscope_ros2_rmw_take_request": [P, P, I64, ctypes.c_int, I64],
    "roscope_ros2_rmw_send_response": [P, P, I64], "roscope_ros2_rmw_take_response": [P, P, I64, I64, ctypes.c_int],
}
_RCL_GETTERS = {"rcl_service_get_service_name": CP, "rcl_client_get_service_name": CP,
                "rcl_subscription_get_topic_name": CP, "rcl_service_get_rmw_handle": P,
                "rcl_client_get_rmw_handle": P}


class _Fns:
    """The library's entry points, bound once (attribute lookups off the hot path)."""


F = _Fns()


def _fast_module():
    """The hook's C extension (instrument/ros2/src/rclpy_fast.c) from the tracer's directory
    ($ROSCOPE_RCLPY_HOOK), or None (the ctypes functions serve then)."""
    d = os.environ.get("ROSCOPE_RCLPY_HOOK", "")
    for path in sorted(glob.glob(os.path.join(d, "_roscope_rclpy_fast*.so"))) if os.path.isdir(d) else []:
        try:
            loader = importlib.machinery.ExtensionFileLoader("_roscope_rclpy_fast", path)
            spec = importlib.util.spec_from_file_location("_roscope_rclpy_fast", path, loader=loader)
            mod = importlib.util.module_from_spec(spec)
            loader.exec_module(mod)
            return mod
        except ImportError:
            return None
    return None


def _load() -> bool:
    global _lib, _own_service_events
    try:
        # PyDLL: the calls keep the GIL (a tracepoint never blocks), so that a callback's
        # start and end events are not delayed by another thread taking the GIL.
        lib = ctypes.PyDLL(None)
        lib.roscope_ros2_enabled  # noqa: B018 - only roscope's tracer library has it
    except (OSError, AttributeError):
        return False
    for name, args in _SIGS.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, None
        setattr(F, name.replace("ros_trace_", "").replace("roscope_ros2_", "r2_"), fn)
    fast = _fast_module()
    F.Traced = getattr(fast, "Traced", None)
    if fast is not None:
        F.callback_start = lambda h, _intra, _f=fast.callback_start: _f(h)
        F.callback_start_fast = fast.callback_start
        F.callback_end, F.r2_callback_input = fast.callback_end, fast.callback_input
        F.rclcpp_executor_execute = fast.executor_execute
        F.rclcpp_executor_wait_for_work = fast.executor_wait_for_work
        F.rclcpp_executor_get_next_ready = fast.executor_get_next_ready
    else:
        F.callback_start_fast = lambda h, _f=F.callback_start: _f(h, False)
    # The rmw emits them (Kilted), or the library does, from rmw's calls (src/rmw_services.c).
    _own_service_events = not hasattr(lib, "ros_trace_rmw_send_request") and not hasattr(lib, "roscope_ros2_rmw_services")
    _lib = lib
    return True


def _rcl_lib():
    global _rcl
    if _rcl is None:
        rcl = ctypes.CDLL("librcl.so")
        for name, res in _RCL_GETTERS.items():
            fn = getattr(rcl, name)
            fn.argtypes, fn.restype = [P], res
        _rcl = rcl
    return _rcl


def _init_event(fn, *args) -> None:
    """Emits an init event (the tracer library keeps it for its state dump)."""
    fn(*args)


# --------------------------------------------------------------------------
# callbacks
# --------------------------------------------------------------------------

def symbol(fn) -> str:
    """``module.qualname`` of a callable (bound methods, partials, lambdas, callable objects)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    target = getattr(fn, "__func__", fn)
    qual = getattr(target, "__qualname__", None)
    if qual is None:
        target = type(target)
        qual = target.__qualname__ + ".__call__"
    return f"{getattr(target, '__module__', None) or '?'}.{qual}"


def _code_key(fn):
    """What makes two callables the same callback: the function's code and, for a bound
    method, its object (lambdas made anew for each call are one callback)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    owner = getattr(fn, "__self__", None)
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    return (id(owner) if owner is not None else None, code if code is not None else fn)


class _Callback:
    """One callback's identity in the trace (its id() is the handle)."""
    __slots__ = ("sym", "__weakref__")

    def __init__(self, sym: str):
        self.sym = sym
        _keep.append(self)


def _traced(fn, cb: _Callback):
    """`fn` with callback_start/end of `cb` around each call; keeps its signature
    (rclpy inspects it) and whether it is a coroutine function."""
    me = id(cb)
    start, end = F.callback_start_fast, F.callback_end
    if F.Traced is not None and not inspect.iscoroutinefunction(fn):
        return F.Traced(fn, me)
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def traced_async(*a, **kw):
            start(me)
            try:
                return await fn(*a, **kw)
            finally:
                end(me)
        return traced_async

    @functools.wraps(fn)
    def traced(*a, **kw):
        start(me)
        try:
            return fn(*a, **kw)
        finally:
            end(me)
    return traced


def _register(fn, added) -> _Callback:
    """A new callback for `fn`: its registration event, then `added(cb_id)` (what it serves)."""
    cb = _Callback(symbol(fn))
    _init_event(F.rclcpp_callback_register, id(cb), cb.sym.encode("utf-8", "replace"))
    added(id(cb))
    return cb


def _instrument_subscription(sub, sub_handle: int, fn) -> _Callback:
    token = _Callback("")  # the rclpy-level subscription object
    _init_event(F.rclcpp_subscription_init, sub_handle, id(token))
    return _register(fn, lambda c: _init_event(F.rclcpp_subscription_callback_added, id(token), c))


def _handle_of(entity) -> int:
    """The rcl (or rcl_action) handle of an rclpy entity, 0 if it has none."""
    for attr in ("handle", "_handle", "_client_handle"):
        h = getattr(entity, attr, None)
        if h is not None and hasattr(h, "pointer"):
            return h.pointer
    return 0


# --------------------------------------------------------------------------
# rclpy.node: subscriptions, timers, services
# --------------------------------------------------------------------------

def _patch_node(mod) -> None:
    Node = mod.Node
    orig_sub, orig_timer, orig_srv = Node.create_subscription, Node.create_timer, Node.create_service

    @functools.wraps(orig_sub)
    def create_subscription(self, *a, **kw):
        sub = orig_sub(self, *a, **kw)
        cb = _instrument_subscription(sub, sub.handle.pointer, sub.callback)
        sub.callback = _traced(sub.callback, cb)
        return sub

    @functools.wraps(orig_timer)
    def create_timer(self, *a, **kw):
        tmr = orig_timer(self, *a, **kw)
        if tmr.callback is not None:
            h = tmr.handle.pointer
            cb = _register(tmr.callback, lambda c: _init_event(F.rclcpp_timer_callback_added, h, c))
            _init_event(F.rclcpp_timer_link_node, h, self.handle.pointer)
            tmr.callback = _traced(tmr.callback, cb)
        return tmr

    @functools.wraps(orig_srv)
    def create_service(self, *a, **kw):
        srv = orig_srv(self, *a, **kw)
        h = srv.handle.pointer
        cb = _register(srv.callback, lambda c: _init_event(F.rclcpp_service_callback_added, h, c))
        srv.callback = _traced(srv.callback, cb)
        return srv

    Node.create_subscription, Node.create_timer, Node.create_service = create_subscription, create_timer, create_service


# --------------------------------------------------------------------------
# rclpy.task: done callbacks of request futures are client callbacks
# --------------------------------------------------------------------------

#: (client rcl handle, code key) -> _Callback: one callback per function and client.
_client_cbs: dict = {}
_client_lock = threading.Lock()


def _client_callback(client_handle: int, fn) -> _Callback:
    key = (client_handle, _code_key(fn))
    with _client_lock:
        cb = _client_cbs.get(key)
        if cb is None:
            cb = _register(fn, lambda c: _init_event(F.r2_client_callback_added, client_handle, c))
            _client_cbs[key] = cb
    return cb


def _tag(future, client_handle: int, rmw_handle: int, seq) -> None:
    """Marks a request's future: its done callbacks handle response `seq` of the client."""
    if future is not None and seq is not None:
        future._roscope_input = (client_handle, rmw_handle, int(seq))


def _seq_of(pending: dict, future):
    for seq, f in list(pending.items()):
        if f is future:
            return seq
    return None


def _patch_task(mod) -> None:
    Future = mod.Future
    orig_add = Future.add_done_callback

    @functools.wraps(orig_add)
    def add_done_callback(self, callback):
        tag = getattr(self, "_roscope_input", None)
        if tag is None or (getattr(callback, "__module__", None) or "").startswith("rclpy"):
            return orig_add(self, callback)
        client, rmw, seq = tag
        cb = _client_callback(client, callback)
        me, fn = id(cb), callback
        start, end, inp = F.callback_start_fast, F.callback_end, F.r2_callback_input
        if F.Traced is not None:
            return orig_add(self, F.Traced(fn, me, rmw, seq))

        @functools.wraps(fn)
        def done(future):
            inp(me, rmw, seq)
            start(me)
            try:
                return fn(future)
            finally:
                end(me)
        return orig_add(self, done)

    Future.add_done_callback = add_done_callback


def _patch_client(mod) -> None:
    Client = mod.Client
    orig_call_async = Client.call_async

    @functools.wraps(orig_call_async)
    def call_async(self, request):
        future = orig_call_async(self, request)
        h = self.handle.pointer
        _tag(future, h, _rcl_lib().rcl_client_get_rmw_handle(h) or 0, _seq_of(self._pending_requests, future))
        return future

    Client.call_async = call_async


# --------------------------------------------------------------------------
# actions: their services and topics, through the rcl_action handle
# --------------------------------------------------------------------------

def _members(pointer: int, getters: list[tuple[str, str]]) -> list[int] | None:
    """The rcl handles of the first members of an rcl_action server or client (its
    implementation: goal, cancel, result services or clients, then feedback and status
    publishers or subscriptions), each checked by the name rcl gives it."""
    try:
        impl = ctypes.c_void_p.from_address(pointer).value
        if not impl:
            return None
        rcl = _rcl_lib()
        out = []
        for k, (getter, suffix) in enumerate(getters):
            h = impl + k * ctypes.sizeof(ctypes.c_void_p)
            name = getattr(rcl, getter)(h)
            if not name or not name.decode("utf-8", "replace").endswith(suffix):
                return None
            out.append(h)
        return out
    except (OSError, AttributeError, ValueError):
        return None


_SERVICES = [("rcl_service_get_service_name", "/_action/send_goal"), ("rcl_service_get_service_name", "/_action/cancel_goal"),
             ("rcl_service_get_service_name", "/_action/get_result")]
_CLIENTS = [("rcl_client_get_service_name", "/_action/send_goal"), ("rcl_client_get_service_name", "/_action/cancel_goal"),
            ("rcl_client_get_service_name", "/_action/get_result"),
            ("rcl_subscription_get_topic_name", "/_action/feedback")]


def _rmw(handles: list[int], getter: str) -> list[int]:
    g = getattr(_rcl_lib(), getter)
    return [g(h) or 0 for h in handles]


def _patch_action_server(mod) -> None:
    AS = mod.ActionServer
    orig_init, orig_goal_request = AS.__init__, AS._execute_goal_request

    def wrap_callbacks(self) -> None:
        members = _members(self._handle.pointer, _SERVICES)
        if members is None:
            return
        goal, cancel, _result = members
        self._roscope_rmw = _rmw(members, "rcl_service_get_rmw_handle")
        self._roscope_goal_seq = {}
        for attr, h in (("_goal_callback", goal), ("_cancel_callback", cancel)):
            fn = getattr(self, attr, None)
            if fn is not None:
                cb = _register(fn, lambda c, h=h: _init_event(F.rclcpp_service_callback_added, h, c))
                setattr(self, attr, _traced(fn, cb))
        fn = self._execute_callback
        if fn is not None:
            cb = _register(fn, lambda c: _init_event(F.rclcpp_service_callback_added, goal, c))
            self._execute_callback = _execute_traced(self, fn, cb)

    @functools.wraps(orig_init)
    def __init__(self, *a, **kw):
        orig_init(self, *a, **kw)
        wrap_callbacks(self)

    @functools.wraps(orig_goal_request)
    async def _execute_goal_request(self, request_header_and_message):
        seqs = getattr(self, "_roscope_goal_seq", None)
        if seqs is not None:
            header, request = request_header_and_message
            seqs[bytes(request.goal_id.uuid)] = header.sequence_number
        return await orig_goal_request(self, request_header_and_message)

    AS.__init__, AS._execute_goal_request = __init__, _execute_goal_request


def _execute_traced(server, fn, cb: _Callback):
    """An action server's execute callback: a run fed by its goal request (`callback_input`)."""
    me = id(cb)
    start, end, inp = F.callback_start_fast, F.callback_end, F.r2_callback_input
    goal_rmw = server._roscope_rmw[0]

    def goal_input(goal_handle) -> None:
        """The run's input event: the goal request that fed it."""
        seq = server._roscope_goal_seq.pop(bytes(goal_handle.goal_id.uuid), None)
        if seq is not None:
            inp(me, goal_rmw, seq)

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def execute_async(goal_handle, *a, **kw):
            goal_input(goal_handle)
            start(me)
            try:
                return await fn(goal_handle, *a, **kw)
            finally:
                end(me)
        return execute_async

    if F.Traced is not None:
        # The run's start and end from the C wrapper, inside the callback's frame: this
        # wrapper's own work (the goal's input event) stays outside the run.
        traced = F.Traced(fn, me)

        @functools.wraps(fn)
        def execute(goal_handle, *a, **kw):
            goal_input(goal_handle)
            return traced(goal_handle, *a, **kw)
        return execute

    @functools.wraps(fn)
    def execute(goal_handle, *a, **kw):
        goal_input(goal_handle)
        start(me)
        try:
            return fn(goal_handle, *a, **kw)
        finally:
            end(me)
    return execute


def _patch_action_client(mod) -> None:
    AC = mod.ActionClient
    orig_send_goal, orig_result, orig_cancel = AC.send_goal_async, AC._get_result_async, AC._cancel_goal_async

    def members(self):
        m = getattr(self, "_roscope_members", False)
        if m is False:
            m = _members(self._client_handle.pointer, _CLIENTS)
            if m is not None:
                self._roscope_rmw = _rmw(m[:3], "rcl_client_get_rmw_handle")
                self._roscope_feedback = {}
            self._roscope_members = m
        return m

    def feedback_traced(self, fn):
        key = _code_key(fn)
        traced = self._roscope_feedback.get(key)
        if traced is None:
            cb = _instrument_subscription(self, self._roscope_members[3], fn)
            traced = self._roscope_feedback[key] = cb
        return _traced(fn, traced)

    @functools.wraps(orig_send_goal)
    def send_goal_async(self, goal, feedback_callback=None, goal_uuid=None):
        m = members(self)
        if m is not None and feedback_callback is not None:
            feedback_callback = feedback_traced(self, feedback_callback)
        future = orig_send_goal(self, goal, feedback_callback=feedback_callback, goal_uuid=goal_uuid)
        if m is not None:
            _tag(future, m[0], self._roscope_rmw[0], _seq_of(self._pending_goal_requests, future))
        return future

    @functools.wraps(orig_result)
    def _get_result_async(self, goal_handle):
        future = orig_result(self, goal_handle)
        m = members(self)
        if m is not None:
            _tag(future, m[2], self._roscope_rmw[2], _seq_of(self._pending_result_requests, future))
        return future

    @functools.wraps(orig_cancel)
    def _cancel_goal_async(self, goal_handle):
        future = orig_cancel(self, goal_handle)
        m = members(self)
        if m is not None:
            _tag(future, m[1], self._roscope_rmw[1], _seq_of(self._pending_cancel_requests, future))
        return future

    AC.send_goal_async, AC._get_result_async, AC._cancel_goal_async = send_goal_async, _get_result_async, _cancel_goal_async


# --------------------------------------------------------------------------
# executors
# --------------------------------------------------------------------------

def _patch_executors(mod) -> None:
    Executor = mod.Executor
    orig_make_handler = Executor._make_handler
    execute = F.rclcpp_executor_execute

    @functools.wraps(orig_make_handler)
    def _make_handler(self, entity, node, take_from_wait_list):
        h = getattr(entity, "_roscope_handle", None)
        if h is None:
            h = _handle_of(entity)
            try:
                entity._roscope_handle = h
            except AttributeError:
                pass

        def take(e):
            execute(h)
            return take_from_wait_list(e)
        return orig_make_handler(self, entity, node, take)

    Executor._make_handler = _make_handler


def _patch_wait_set(_rclpy) -> None:
    WaitSet = _rclpy.WaitSet
    orig_wait = WaitSet.wait
    wait_for_work, next_ready = F.rclcpp_executor_wait_for_work, F.rclcpp_executor_get_next_ready

    def wait(self, timeout):
        wait_for_work(timeout)
        try:
            return orig_wait(self, timeout)
        finally:
            next_ready()

    WaitSet.wait = wait


# --------------------------------------------------------------------------
# service requests and responses, where the rmw has no tracepoints for them (Jazzy)
# --------------------------------------------------------------------------

class _Requests:
    """A client's ``rmw_send_request`` event emitted before its DDS write, so that it comes
    before the server's take and answer and the client's take of the response (on a busy host
    all of these can happen before the write returns to the client's thread). The rmw gives
    the sequence number in the write: a client's requests are numbered 1, 2, 3, ... (Fast DDS:
    its request writer's sample numbers; Cyclone DDS and Zenoh: a counter), so once a request
    has shown its client's number the next one is known. A client's first request, one after a
    failed write, and every request of a client whose number was once not the one expected
    (which then is no longer predicted) have their event emitted after the write, with the
    number the rmw gave (the model pairs a call's events in any order). One lock per client:
    the number predicted is the one its write gets."""

    def __init__(self):
        self.next: dict = {}     # rmw client handle -> the number its next request gets (None: unknown)
        self.locks: dict = {}
        self.unpredictable: set = set()

    def send(self, handle: int, request, write, emit):
        lock = self.locks.get(handle) or self.locks.setdefault(handle, threading.Lock())
        with lock:
            expected = self.next.pop(handle, None)
            if expected is not None:
                emit(handle, id(request), expected)
            seq = write()  # raises: the next number is not known (learned again from the next request)
            if seq != expected:
                if expected is not None:
                    self.unpredictable.add(handle)
                emit(handle, id(request), seq)
            if handle not in self.unpredictable and isinstance(seq, int):
                self.next[handle] = seq + 1
            return seq


_requests = _Requests()


def _patch_service_events(_rclpy) -> None:
    rcl = _rcl_lib()
    srv_rmw, cli_rmw = rcl.rcl_service_get_rmw_handle, rcl.rcl_client_get_rmw_handle
    send_req, take_req = F.r2_rmw_send_request, F.r2_rmw_take_request
    send_resp, take_resp = F.r2_rmw_send_response, F.r2_rmw_take_response

    def patch(cls, name, make):
        orig = getattr(cls, name)
        setattr(cls, name, make(orig))

    def client_send(orig):
        def send_request(self, request):
            return _requests.send(cli_rmw(self.pointer), request, lambda: orig(self, request), send_req)
        return send_request

    def client_take(orig):
        def take_response(self, response_type):
            header, response = orig(self, response_type)
            if header is not None:
                take_resp(cli_rmw(self.pointer), id(response), header.request_id.sequence_number, header.source_timestamp, 1)
            return header, response
        return take_response

    def service_take(orig):
        def service_take_request(self, request_type):
            request, header = orig(self, request_type)
            if header is not None:
                take_req(srv_rmw(self.pointer), id(request), header.request_id.sequence_number, 1, header.source_timestamp)
            return request, header
        return service_take_request

    def service_send(orig):
        def service_send_response(self, response, header):
            send_resp(srv_rmw(self.pointer), id(response), header.sequence_number)
            return orig(self, response, header)
        return service_send_response

    patch(_rclpy.Client, "send_request", client_send)
    patch(_rclpy.Client, "take_response", client_take)
    patch(_rclpy.Service, "service_take_request", service_take)
    patch(_rclpy.Service, "service_send_response", service_send)
    _patch_action_service_events(_rclpy)


#: rcl_action server or client pointer -> the rmw handles of its goal, cancel and result members.
_action_members: dict = {}


def _action_rmw(obj, k: int, getters, getter: str) -> int:
    """The rmw handle of member k of an rcl_action server or client."""
    p = obj.pointer
    cache = _action_members.get(p)
    if cache is None:
        m = _members(p, getters)
        cache = _action_members[p] = _rmw(m[:3], getter) if m is not None else [0, 0, 0]
    return cache[k]


def _patch_action_service_events(_rclpy) -> None:
    send_req, take_req = F.r2_rmw_send_request, F.r2_rmw_take_request
    send_resp, take_resp = F.r2_rmw_send_response, F.r2_rmw_take_response
    server_rmw = functools.partial(_action_rmw, getters=_SERVICES, getter="rcl_service_get_rmw_handle")
    client_rmw = functools.partial(_action_rmw, getters=_CLIENTS, getter="rcl_client_get_rmw_handle")
    for k, what in enumerate(("goal", "cancel", "result")):
        def server_take(orig, k=k):
            def take(self, request_type):
                header, request = orig(self, request_type)
                if header is not None:
                    take_req(server_rmw(self, k), id(request), header.sequence_number, 1, 0)
                return header, request
            return take

        def server_send(orig, k=k):
            def send(self, header, response):
                send_resp(server_rmw(self, k), id(response), header.sequence_number)
                return orig(self, header, response)
            return send

        def client_send(orig, k=k):
            def send(self, request):
                return _requests.send(client_rmw(self, k), request, lambda: orig(self, request), send_req)
            return send

        def client_take(orig, k=k):
            def take(self, response_type):
                seq, response = orig(self, response_type)
                if seq is not None:
                    take_resp(client_rmw(self, k), id(response), seq, 0, 1)
                return seq, response
            return take

        for cls, name, make in ((_rclpy.ActionServer, f"take_{what}_request", server_take),
                                (_rclpy.ActionServer, f"send_{what}_response", server_send),
                                (_rclpy.ActionClient, f"send_{what}_request", client_send),
                                (_rclpy.ActionClient, f"take_{what}_response", client_take)):
            setattr(cls, name, make(getattr(cls, name)))


# --------------------------------------------------------------------------
# installation: each rclpy module is patched when it is imported
# --------------------------------------------------------------------------

def _patch_pybind(mod) -> None:
    _patch_wait_set(mod)
    if _own_service_events:
        _patch_service_events(mod)


PATCHES = {
    "rclpy._rclpy_pybind11": _patch_pybind,
    "rclpy.node": _patch_node,
    "rclpy.task": _patch_task,
    "rclpy.client": _patch_client,
    "rclpy.executors": _patch_executors,
    "rclpy.action.server": _patch_action_server,
    "rclpy.action.client": _patch_action_client,
}
_patched: set = set()


def loaded() -> bool:
    """Whether roscope's ROS 2 tracer library is in the process (loaded on first call)."""
    return _lib is not None or _load()


def patch(name: str, module) -> None:
    """Patches one rclpy module (once), if the tracer library is loaded."""
    if name in _patched or name not in PATCHES or not loaded():
        return
    _patched.add(name)
    PATCHES[name](module)
