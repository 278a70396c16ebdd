/* _roscope_rclpy_fast: the rclpy hook's per-run calls (callback start/end, callback input,
 * executor events) as a CPython extension, so that a traced callback costs a C call instead of
 * a ctypes call (~1 us each on a slow core). It calls the ros_trace_* / roscope_ros2_*
 * functions of roscope's preloaded ROS 2 tracer library, found when it is imported (an
 * ImportError without it). Built per environment by instrument/ros2/Makefile. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

static void (*cb_start)(const void *, bool);
static void (*cb_end)(const void *);
static void (*cb_end_now)(const void *); /* callback_end with nothing before its tracepoint */
static void (*check_dump)(void);
static void (*cb_frame)(const void *, uint64_t, uint64_t);
static void (*cb_input)(const void *, const void *, int64_t);
static void (*exec_execute)(const void *);
static void (*exec_wait)(int64_t);
static void (*exec_next)(void);

static int ptr_arg(PyObject *o, void **out) {
  *out = PyLong_AsVoidPtr(o);
  return !(*out == NULL && PyErr_Occurred());
}

static PyObject *callback_start(PyObject *self, PyObject *arg) {
  void *p;
  if (!ptr_arg(arg, &p)) return NULL;
  cb_start(p, false);
  Py_RETURN_NONE;
}

static PyObject *callback_end(PyObject *self, PyObject *arg) {
  void *p;
  if (!ptr_arg(arg, &p)) return NULL;
  cb_end(p);
  Py_RETURN_NONE;
}

static PyObject *executor_execute(PyObject *self, PyObject *arg) {
  void *p;
  if (!ptr_arg(arg, &p)) return NULL;
  exec_execute(p);
  Py_RETURN_NONE;
}

static PyObject *executor_wait_for_work(PyObject *self, PyObject *arg) {
  long long t = PyLong_AsLongLong(arg);
  if (t == -1 && PyErr_Occurred()) return NULL;
  exec_wait((int64_t)t);
  Py_RETURN_NONE;
}

static PyObject *executor_get_next_ready(PyObject *self, PyObject *unused) {
  exec_next();
  Py_RETURN_NONE;
}

static PyObject *callback_input(PyObject *self, PyObject *const *args, Py_ssize_t n) {
  void *cb, *rmw;
  if (n != 3) {
    PyErr_SetString(PyExc_TypeError, "callback_input(callback, rmw_handle, sequence_number)");
    return NULL;
  }
  if (!ptr_arg(args[0], &cb) || !ptr_arg(args[1], &rmw)) return NULL;
  long long seq = PyLong_AsLongLong(args[2]);
  if (seq == -1 && PyErr_Occurred()) return NULL;
  cb_input(cb, rmw, (int64_t)seq);
  Py_RETURN_NONE;
}

/* Traced(fn, handle[, rmw_handle, sequence_number]): calls fn between callback_start and
 * callback_end of `handle` (after callback_input when a rmw handle is given): the thinnest
 * wrapper around a callback, so that the run the trace shows is the callback's. Has
 * __wrapped__ (inspect.signature follows it: rclpy looks at a callback's parameters). */
typedef struct {
  PyObject_HEAD
  PyObject *fn;
  void *handle;
  void *rmw;
  int64_t seq;
  PyObject *dict;
  PyObject *func; /* the Python function whose frame is the run (borrowed from fn), or NULL */
} Traced;

/* Inside the frame: callback_start as the callback's frame begins, callback_end as it returns,
 * and roscope_ros2:callback_frame after them with the clock read right before the frame's
 * first instruction and right after its return (the run's times for roscope, without the
 * tracepoints' own time); not around CPython's call into it (docs/ros2-pypi.md, "Overhead and
 * accuracy"). For the one
 * call, CPython's frame evaluation function (PEP 523) is set to `in_frame`, which puts itself
 * back at the first frame, the callback's, so that nothing else runs through it: Python-to-Python
 * calls inside the callback stay inlined. Only with CPython 3.11's frame layout (the wheels'
 * Python; its first field is the function) and when no other evaluation function is set (a
 * debugger's or a JIT's): otherwise around the call, as before. */
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#define IN_FRAME 1
struct frame_head { /* the first fields of CPython 3.11's struct _PyInterpreterFrame */
  PyObject *f_func;
  PyObject *f_globals;
  PyObject *f_builtins;
  PyObject *f_locals;
  PyCodeObject *f_code;
};

/* CLOCK_MONOTONIC in ns: LTTng-UST's trace clock (without a clock plug-in). */
static inline uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

#ifdef ROSCOPE_RCLPY_TIMING
/* bench/ros2_overhead/excess.py's build only: the hook's clock reads around each tracepoint,
 * written to $ROSCOPE_RCLPY_TIMING_DIR/<pid>.bin at exit (5 x u64 per run: handle, before
 * callback_start, the frame's start and end (callback_frame's), after callback_end). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#define TIMING_MAX 100000
static uint64_t timing[TIMING_MAX][5];
static size_t timing_n;
static void timing_write(void) {
  const char *d = getenv("ROSCOPE_RCLPY_TIMING_DIR");
  char path[4096];
  if (d == NULL || snprintf(path, sizeof path, "%s/%d.bin", d, (int)getpid()) >= (int)sizeof path) return;
  FILE *f = fopen(path, "wbx");
  if (f == NULL) return;
  fwrite(timing, sizeof timing[0], timing_n, f);
  fclose(f);
}
#define TIMING(i) uint64_t timing_##i = now_ns()
#define TIMING_ROW(h, b, c)                                                               \
  if (timing_n < TIMING_MAX) {                                                           \
    uint64_t *row = timing[timing_n++];                                                  \
    row[0] = (uint64_t)(uintptr_t)(h), row[1] = timing_a, row[2] = (b), row[3] = (c), row[4] = timing_d; \
  }
#else
#define TIMING(i)
#define TIMING_ROW(h, b, c)
#endif

static PyObject *armed_func; /* the function whose frame is the next run (borrowed), or NULL */
static void *armed_handle;

static PyObject *in_frame(PyThreadState *ts, struct _PyInterpreterFrame *f, int exc) {
  if (exc || ((struct frame_head *)f)->f_func != armed_func) /* another frame first (a finalizer run by a collection) */
    return _PyEval_EvalFrameDefault(ts, f, exc);
  void *h = armed_handle;
  armed_func = NULL;
  _PyInterpreterState_SetEvalFrameFunc(PyThreadState_GetInterpreter(ts), NULL);
  /* What the frame's first instructions read, fetched while callback_start is written (its
   * clock is read first): the code object, its bytecode, the module's globals. */
  struct frame_head *fh = (struct frame_head *)f;
  __builtin_prefetch(fh->f_code);
  __builtin_prefetch(fh->f_code->co_code_adaptive);
  __builtin_prefetch(fh->f_globals);
  __builtin_prefetch(((PyDictObject *)fh->f_globals)->ma_keys);
  TIMING(a);
  cb_start(h, false);
  uint64_t start = now_ns();
  PyObject *r = _PyEval_EvalFrameDefault(ts, f, exc);
  uint64_t end = now_ns();
  /* callback_end's clock first; callback_frame and the attach check (roscope_ros2_check_dump)
   * after it */
  cb_end_now(h);
  cb_frame(h, start, end);
  check_dump();
  TIMING(d);
  TIMING_ROW(h, start, end);
  return r;
}
#else
#define IN_FRAME 0
#endif

static int traced_init(Traced *self, PyObject *args, PyObject *kw) {
  PyObject *fn, *h, *rmw = NULL;
  long long seq = -1;
  if (!PyArg_ParseTuple(args, "OO|OL", &fn, &h, &rmw, &seq)) return -1;
  if (!ptr_arg(h, &self->handle)) return -1;
  self->rmw = NULL;
  if (rmw != NULL && rmw != Py_None && !ptr_arg(rmw, &self->rmw)) return -1;
  self->seq = (int64_t)seq;
  Py_XSETREF(self->fn, Py_NewRef(fn));
  /* a function, or a method of one: the frame its call evaluates first is the run's */
  PyObject *func = PyMethod_Check(fn) ? PyMethod_GET_FUNCTION(fn) : fn;
  self->func = PyFunction_Check(func) ? func : NULL;
  return 0;
}

static PyObject *traced_call(Traced *self, PyObject *args, PyObject *kw) {
  if (self->rmw != NULL) cb_input(self->handle, self->rmw, self->seq);
#if IN_FRAME
  PyInterpreterState *interp = PyThreadState_GetInterpreter(PyThreadState_Get());
  if (self->func != NULL && _PyInterpreterState_GetEvalFrameFunc(interp) == _PyEval_EvalFrameDefault) {
    PyObject *outer_func = armed_func; /* a run armed further out (a finalizer calling a callback) */
    void *outer_handle = armed_handle;
    armed_func = self->func;
    armed_handle = self->handle;
    _PyInterpreterState_SetEvalFrameFunc(interp, in_frame);
    PyObject *r = PyObject_Call(self->fn, args, kw);
    if (armed_func != NULL) { /* no frame evaluated: the call failed before (its arguments) */
      cb_start(self->handle, false);
      cb_end(self->handle);
    }
    armed_func = outer_func;
    armed_handle = outer_handle;
    _PyInterpreterState_SetEvalFrameFunc(interp, outer_func != NULL ? in_frame : NULL);
    return r;
  }
#endif
  cb_start(self->handle, false);
  PyObject *r = PyObject_Call(self->fn, args, kw);
  cb_end(self->handle);
  return r;
}

static int traced_traverse(Traced *self, visitproc visit, void *arg) {
  Py_VISIT(self->fn);
  Py_VISIT(self->dict);
  return 0;
}

static int traced_clear(Traced *self) {
  Py_CLEAR(self->fn);
  Py_CLEAR(self->dict);
  return 0;
}

static void traced_dealloc(Traced *self) {
  PyObject_GC_UnTrack(self);
  traced_clear(self);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *traced_wrapped(Traced *self, void *closure) { return Py_NewRef(self->fn ? self->fn : Py_None); }

static PyGetSetDef traced_getset[] = {
  {"__wrapped__", (getter)traced_wrapped, NULL, "the callback", NULL},
  {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
  {NULL},
};

static PyTypeObject TracedType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "_roscope_rclpy_fast.Traced",
  .tp_basicsize = sizeof(Traced),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
  .tp_new = PyType_GenericNew,
  .tp_init = (initproc)traced_init,
  .tp_call = (ternaryfunc)traced_call,
  .tp_traverse = (traverseproc)traced_traverse,
  .tp_clear = (inquiry)traced_clear,
  .tp_dealloc = (destructor)traced_dealloc,
  .tp_getset = traced_getset,
  .tp_dictoffset = offsetof(Traced, dict),
};

static PyMethodDef methods[] = {
  {"callback_start", callback_start, METH_O, "ros2:callback_start(callback, 0)"},
  {"callback_end", callback_end, METH_O, "ros2:callback_end(callback)"},
  {"callback_input", (PyCFunction)(void (*)(void))callback_input, METH_FASTCALL,
   "roscope_ros2:callback_input(callback, rmw_handle, sequence_number)"},
  {"executor_execute", executor_execute, METH_O, "ros2:rclcpp_executor_execute(handle)"},
  {"executor_wait_for_work", executor_wait_for_work, METH_O, "ros2:rclcpp_executor_wait_for_work(timeout)"},
  {"executor_get_next_ready", executor_get_next_ready, METH_NOARGS, "ros2:rclcpp_executor_get_next_ready()"},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_roscope_rclpy_fast", NULL, -1, methods};

#define FIND(var, name)                                                                  \
  do {                                                                                   \
    *(void **)(&var) = dlsym(RTLD_DEFAULT, name);                                        \
    if (var == NULL) {                                                                   \
      PyErr_SetString(PyExc_ImportError, name " not found: roscope's ROS 2 tracer library is not loaded"); \
      return NULL;                                                                       \
    }                                                                                    \
  } while (0)

PyMODINIT_FUNC PyInit__roscope_rclpy_fast(void) {
  FIND(cb_start, "ros_trace_callback_start");
  FIND(cb_end, "ros_trace_callback_end");
  FIND(cb_end_now, "ros_trace_do_callback_end");
  FIND(check_dump, "roscope_ros2_check_dump");
  FIND(cb_frame, "roscope_ros2_callback_frame");
#ifdef ROSCOPE_RCLPY_TIMING
  atexit(timing_write);
#endif
  FIND(cb_input, "roscope_ros2_callback_input");
  FIND(exec_execute, "ros_trace_rclcpp_executor_execute");
  FIND(exec_wait, "ros_trace_rclcpp_executor_wait_for_work");
  FIND(exec_next, "ros_trace_rclcpp_executor_get_next_ready");
  if (PyType_Ready(&TracedType) < 0) return NULL;
  PyObject *m = PyModule_Create(&module);
  if (m == NULL) return NULL;
  if (PyModule_AddObjectRef(m, "Traced", (PyObject *)&TracedType) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
