/* The hand-written part of roscope's ROS 2 tracer library (the generated part is the
 * ros_trace_* functions of the distro's tracetools, see ../gen_tracetools.py):
 * - the roscope_ros2 probes (roscope_ros2_tp.h) and the entry points the rclpy hook calls
 *   through ctypes (roscope_ros2_*);
 * - roscope_ros2:process_init when the process starts, with roscope record's recording id
 *   ($ROSCOPE_RECORD_ID), so that a recording tells its own processes from others;
 * - the state dump (roscope_ros2_dump.h). */
#define TRACEPOINT_CREATE_PROBES
#define TRACEPOINT_DEFINE
#include "roscope_ros2_tp.h"
#include "roscope/roscope_attach_tp.h"
#include "roscope/attach_ack.h"
#include "roscope_ros2_dump.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static const uint8_t no_gid[ROSCOPE_ROS2_GID_SIZE];

static void announce(void) {
  const char *id = getenv("ROSCOPE_RECORD_ID");
  char exe[512] = {0};
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n < 0) exe[0] = 0;
  tracepoint(roscope_ros2, process_init, id ? id : "", exe);
}

/* ---- state dump ---- */
static pthread_mutex_t rec_mu = PTHREAD_MUTEX_INITIALIZER;
static struct roscope_ros2_rec *rec_head, *rec_tail;  /* in the order kept */
static pthread_mutex_t dump_mu = PTHREAD_MUTEX_INITIALIZER;
static int dump_last;           /* the request's state last seen */
static int64_t dump_pending;    /* when its change was first seen (0: none) */
static unsigned long dumps_made; /* under dump_mu, for roscope/attach_ack.h */
/* As in the ROS 1 tracer: LTTng-UST turns a tracepoint on a moment before it starts the
 * session in this process, so the dump comes this long after the change is first seen. */
#define DUMP_DELAY_NS (50 * 1000 * 1000)

void roscope_ros2_remember(struct roscope_ros2_rec *rec, const char *kind, uint64_t key,
                           void (*emit)(const struct roscope_ros2_rec *),
                           void (*release)(struct roscope_ros2_rec *)) {
  rec->kind = kind;
  rec->key = key;
  rec->emit = emit;
  rec->release = release;
  rec->next = NULL;
  pthread_mutex_lock(&rec_mu);
  struct roscope_ros2_rec **pp = &rec_head, *prev = NULL;
  while (*pp) {
    struct roscope_ros2_rec *r = *pp;
    if (r->key == key && strcmp(r->kind, kind) == 0) {  /* a reused handle: the old one is gone */
      *pp = r->next;
      if (rec_tail == r) rec_tail = prev;
      r->release(r);
      break;
    }
    prev = r;
    pp = &r->next;
  }
  if (rec_tail) rec_tail->next = rec; else rec_head = rec;
  rec_tail = rec;
  pthread_mutex_unlock(&rec_mu);
}

static void state_dump(void) {
  pthread_mutex_lock(&rec_mu);
  uint32_t n = 0;
  for (struct roscope_ros2_rec *r = rec_head; r; r = r->next) n++;
  tracepoint(roscope_ros2, state_dump_begin, n);
  announce();
  for (struct roscope_ros2_rec *r = rec_head; r; r = r->next) r->emit(r);
  tracepoint(roscope_ros2, state_dump_end, n);
  pthread_mutex_unlock(&rec_mu);
}

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static __attribute__((noinline)) void dump_state_changed(void) {
  int now = tracepoint_enabled(roscope_attach, request) ? 1 : 0;
  if (!now) {
    __atomic_store_n(&dump_pending, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&dump_last, 0, __ATOMIC_RELAXED);
    return;
  }
  int64_t t = mono_ns(), since = 0;
  if (__atomic_compare_exchange_n(&dump_pending, &since, t, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) ||
      t - since < DUMP_DELAY_NS)
    return;
  pthread_mutex_lock(&dump_mu);
  if (__atomic_load_n(&dump_last, __ATOMIC_RELAXED) == 0) {
    state_dump();
    __atomic_store_n(&dump_pending, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&dump_last, 1, __ATOMIC_RELAXED);
    roscope_attach_ack(++dumps_made);
  }
  pthread_mutex_unlock(&dump_mu);
}

EXPORT void roscope_ros2_check_dump(void) {
  int now = tracepoint_enabled(roscope_attach, request) ? 1 : 0;
  if (__builtin_expect(now != __atomic_load_n(&dump_last, __ATOMIC_RELAXED), 0)) dump_state_changed();
}

static void *dump_watch(void *unused) {
  (void)unused;
  for (;;) {
    usleep(50 * 1000);
    roscope_ros2_check_dump();
  }
  return NULL;
}

__attribute__((destructor)) static void roscope_ros2_remove_answer(void) { roscope_attach_ack_remove(); }

__attribute__((constructor)) static void roscope_ros2_announce(void) {
  announce();
  /* A session asking for a dump now sees this process's own init events. */
  dump_last = tracepoint_enabled(roscope_attach, request) ? 1 : 0;
  roscope_attach_ack(0);
  /* The watch thread takes no signal: the process's own threads must get them (a node
   * may block them everywhere but in one thread of its own, which this one predates). */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pthread_t th;
  if (pthread_create(&th, NULL, dump_watch, NULL) == 0) pthread_detach(th);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void release_client_cb(struct roscope_ros2_rec *r) { free(r); }

struct client_cb_rec {
  struct roscope_ros2_rec h;
  const void *client, *callback;
};

static void emit_client_cb(const struct roscope_ros2_rec *h) {
  const struct client_cb_rec *r = (const struct client_cb_rec *)h;
  tracepoint(roscope_ros2, client_callback_added, r->client, r->callback);
}

/* 1 while roscope_ros2:* events are recorded by some session (for cheap checks). */
EXPORT int roscope_ros2_enabled(void) {
  return tracepoint_enabled(roscope_ros2, callback_input) || tracepoint_enabled(roscope_ros2, client_callback_added);
}

EXPORT void roscope_ros2_client_callback_added(const void *client, const void *callback) {
  tracepoint(roscope_ros2, client_callback_added, client, callback);
  struct client_cb_rec *r = calloc(1, sizeof *r);
  if (!r) return;
  r->client = client;
  r->callback = callback;
  roscope_ros2_remember(&r->h, "client_callback_added", (uint64_t)(uintptr_t)callback, emit_client_cb,
                        release_client_cb);
}

EXPORT void roscope_ros2_callback_input(const void *callback, const void *rmw_handle, int64_t seq) {
  tracepoint(roscope_ros2, callback_input, callback, rmw_handle, seq);
}

EXPORT void roscope_ros2_callback_frame(const void *callback, uint64_t start, uint64_t end) {
  tracepoint(roscope_ros2, callback_frame, callback, start, end);
}

EXPORT void roscope_ros2_rmw_send_request(const void *client, const void *request, int64_t seq) {
  tracepoint(roscope_ros2, rmw_send_request, client, request, seq);
}

EXPORT void roscope_ros2_rmw_take_request(const void *service, const void *request, int64_t seq, int taken,
                                          int64_t source_timestamp) {
  tracepoint(roscope_ros2, rmw_take_request, service, request, no_gid, seq, taken, source_timestamp);
}

EXPORT void roscope_ros2_rmw_send_response(const void *service, const void *response, int64_t seq) {
  tracepoint(roscope_ros2, rmw_send_response, service, response, no_gid, seq, 0);
}

EXPORT void roscope_ros2_rmw_take_response(const void *client, const void *response, int64_t seq,
                                           int64_t source_timestamp, int taken) {
  tracepoint(roscope_ros2, rmw_take_response, client, response, seq, source_timestamp, taken);
}

/* ---- services known by a copy of their rcl_service_t (roscope_ros2:service_copy) ---- */
/* An rcl_service_t is one pointer, its implementation: a copy of it has the same. */
#define SERVICES 1024
static struct { const void *handle, *impl; } services[SERVICES];
static size_t services_n;
static pthread_mutex_t services_mu = PTHREAD_MUTEX_INITIALIZER;

struct copy_rec {
  struct roscope_ros2_rec h;
  const void *copy, *original;
};

static void emit_copy(const struct roscope_ros2_rec *h) {
  const struct copy_rec *r = (const struct copy_rec *)h;
  tracepoint(roscope_ros2, service_copy, r->copy, r->original);
}

EXPORT void roscope_ros2_seen_rcl_service_init(const void *service_handle, const void *node_handle,
                                               const void *rmw_service_handle, const char *service_name) {
  (void)node_handle, (void)rmw_service_handle, (void)service_name;
  if (service_handle == NULL) return;
  const void *impl = *(const void *const *)service_handle;
  pthread_mutex_lock(&services_mu);
  size_t i = 0;
  while (i < services_n && services[i].handle != service_handle) i++;
  if (i < SERVICES) {  /* a reused handle: its new implementation */
    services[i].handle = service_handle;
    services[i].impl = impl;
    if (i == services_n) services_n++;
  }
  pthread_mutex_unlock(&services_mu);
}

EXPORT void roscope_ros2_seen_rclcpp_service_callback_added(const void *service_handle, const void *callback) {
  (void)callback;
  if (service_handle == NULL) return;
  const void *impl = *(const void *const *)service_handle, *original = NULL;
  pthread_mutex_lock(&services_mu);
  for (size_t i = services_n; i-- > 0;) {
    if (services[i].handle == service_handle) break;  /* rcl's own */
    if (services[i].impl == impl && impl != NULL) {
      original = services[i].handle;
      break;
    }
  }
  pthread_mutex_unlock(&services_mu);
  if (original == NULL) return;
  tracepoint(roscope_ros2, service_copy, service_handle, original);
  struct copy_rec *r = calloc(1, sizeof *r);
  if (!r) return;
  r->copy = service_handle;
  r->original = original;
  roscope_ros2_remember(&r->h, "service_copy", (uint64_t)(uintptr_t)service_handle, emit_copy, release_client_cb);
}
