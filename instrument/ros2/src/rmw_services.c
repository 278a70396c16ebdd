/* Service requests and responses for a distro whose rmw has no tracepoints for them (Jazzy:
 * ros2_tracing 8.2's rmw emits none), for every client library at once: the preloaded tracer
 * library defines rmw's four service calls, so that rcl's calls into the rmw reach these first
 * (dlsym(RTLD_NEXT) finds the rmw's own), and emits roscope_ros2:rmw_send_request,
 * rmw_take_request, rmw_send_response and rmw_take_response (Kilted's layouts, those the rclpy
 * hook emitted before: crates/model/src/services.rs pairs them by client and sequence number).
 * Built only where the distro's tracetools has no rmw_send_request (instrument/ros2/Makefile).
 *
 * - A request's send event comes before its write (on a busy host the server can take and
 *   answer it, and the client take the answer, before the write returns): the rmw gives the
 *   sequence number in the write, and a client's requests are numbered 1, 2, 3, ... (Fast DDS:
 *   its request writer's sample numbers), so the number is predicted; where the prediction
 *   failed once the client's events come after the write, with the number the rmw gave. One
 *   lock per client, held across the write: the number predicted is the one the write gets.
 * - A response's send event comes before its write, with the request's number.
 * - rclcpp (28, Jazzy) calls a client's response callback without callback_start/end
 *   (Executor::execute_client: the take, then Client::handle_response). Its run is made
 *   visible: execute_client is defined here too (rclcpp calls it through the PLT); a response
 *   taken inside it is followed by roscope_ros2:client_callback_added (once per client: the
 *   rcl client handle, the ClientBase as the callback), callback_input (the response) and
 *   callback_start; callback_end when execute_client returns.
 * - rclcpp_action's callbacks: the same for an action server's and client's execute after the
 *   request or response their take_data took (below). */
#define _GNU_SOURCE
#include "roscope_ros2_tp.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rmw/rmw.h>
#include <rmw/types.h>

#define EXPORT __attribute__((visibility("default")))

/* roscope_ros2.c and the generated tracetools functions of this library */
void roscope_ros2_client_callback_added(const void *client, const void *callback);
void ros_trace_callback_start(const void *callback, const bool is_intra_process);
void ros_trace_callback_end(const void *callback);
void ros_trace_rclcpp_callback_register(const void *callback, const char *function_symbol);
void ros_trace_rclcpp_service_callback_added(const void *service_handle, const void *callback);
void ros_trace_rclcpp_subscription_init(const void *subscription_handle, const void *subscription);
void ros_trace_rclcpp_subscription_callback_added(const void *subscription, const void *callback);
char *__cxa_demangle(const char *mangled, char *out, size_t *length, int *status); /* libstdc++ */

static const uint8_t zero_gid[ROSCOPE_ROS2_GID_SIZE];

/* Tells the rclpy hook that this library emits the service events (it emits none then). */
EXPORT const int roscope_ros2_rmw_services = 1;

/* The definition of `name` that this library's hides: the next one in the global scope
 * (RTLD_NEXT), else, for libraries a process loaded with dlopen(RTLD_LOCAL) (rclpy's extension
 * loads rcl and the rmw so), the first loaded object that defines it itself (dlsym on an
 * object's handle searches its dependencies too, this library among them: dladdr tells). */
struct find { const char *name; void *self_base, *found; };

static int find_in(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct find *f = arg;
  if (info->dlpi_name == NULL || info->dlpi_name[0] == 0) return 0;
  void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
  if (h == NULL) return 0;
  void *p = dlsym(h, f->name);
  Dl_info d;
  if (p != NULL && dladdr(p, &d) && d.dli_fbase != f->self_base && d.dli_fbase == (void *)info->dlpi_addr) f->found = p;
  dlclose(h);
  return f->found != NULL;
}

static void *find_real(const char *name, void *self) {
  void *p = dlsym(RTLD_NEXT, name);
  if (p != NULL) return p;
  Dl_info me;
  if (!dladdr(self, &me)) return NULL;
  struct find f = {name, me.dli_fbase, NULL};
  dl_iterate_phdr(find_in, &f);
  return f.found;
}

/* real_fn: the hidden definition; the function fails with `fail` if there is none. */
#define REAL(name, fail) \
  static __typeof__(name) *real_fn; \
  if (__builtin_expect(real_fn == NULL, 0)) { \
    *(void **)&real_fn = find_real(#name, (void *)name); \
    if (real_fn == NULL) return fail; \
  }

/* ---- per thread ---- */
static __thread const void *exec_client;      /* the ClientBase whose execute_client runs on this thread */
static __thread const void *rcl_client;    /* the client of the rcl_take_response running on it */
static __thread int run_started;
/* The last request / response taken on this thread outside execute_client, not yet handled:
 * rclcpp_action's take_data takes it, its execute (next, on the same thread) handles it. */
static __thread struct { const void *rcl, *rmw; int64_t seq; } taken_request, taken_response;
static __thread const void *rcl_service;  /* the service of the rcl_take_request running on it */
static __thread int in_take_data;          /* inside an action server's or client's take_data */
static __thread const void *taken_message; /* the rcl subscription of the message take_data took */

/* ---- the next sequence number of each client ---- */
struct client_seq {
  const void *handle;  /* set once (under table_mu), read without it */
  pthread_mutex_t mu;
  int64_t next;        /* 0: not known */
  int unpredictable;
};
#define CLIENTS 1024  /* a power of 2; clients beyond: events after the write */
static struct client_seq clients[CLIENTS];
static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t first_number = -1;  /* a new client's first number if known (Fast DDS: 1), else 0 */

static int64_t first_request_number(void) {
  int64_t f = __atomic_load_n(&first_number, __ATOMIC_RELAXED);
  if (f >= 0) return f;
  const char *(*ident)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "rmw_get_implementation_identifier");
  const char *id = ident ? ident() : NULL;
  f = id && strncmp(id, "rmw_fastrtps", 12) == 0 ? 1 : 0;
  __atomic_store_n(&first_number, f, __ATOMIC_RELAXED);
  return f;
}

static struct client_seq *client_of(const void *h, int add) {
  size_t i = ((uintptr_t)h >> 4) * 0x9E3779B97F4A7C15ull >> 54 & (CLIENTS - 1);
  for (size_t n = 0; n < CLIENTS; n++, i = (i + 1) & (CLIENTS - 1)) {
    const void *k = __atomic_load_n(&clients[i].handle, __ATOMIC_ACQUIRE);
    if (k == h) return &clients[i];
    if (k != NULL) continue;
    if (!add) return NULL;
    pthread_mutex_lock(&table_mu);
    k = clients[i].handle;
    if (k == NULL) {
      pthread_mutex_init(&clients[i].mu, NULL);
      clients[i].next = first_request_number();
      clients[i].unpredictable = 0;
      __atomic_store_n(&clients[i].handle, h, __ATOMIC_RELEASE);
      k = h;
    }
    pthread_mutex_unlock(&table_mu);
    if (k == h) return &clients[i];
  }
  return NULL;
}

EXPORT rmw_ret_t rmw_send_request(const rmw_client_t *client, const void *ros_request, int64_t *sequence_id) {
  REAL(rmw_send_request, RMW_RET_ERROR);
  struct client_seq *c = client_of(client, 1);
  if (c == NULL) {
    rmw_ret_t ret = real_fn(client, ros_request, sequence_id);
    if (ret == RMW_RET_OK) tracepoint(roscope_ros2, rmw_send_request, client, ros_request, *sequence_id);
    return ret;
  }
  pthread_mutex_lock(&c->mu);
  int64_t expected = c->next;
  c->next = 0;
  if (expected > 0) tracepoint(roscope_ros2, rmw_send_request, client, ros_request, expected);
  rmw_ret_t ret = real_fn(client, ros_request, sequence_id);
  if (ret == RMW_RET_OK) {  /* else the next number is not known: learned from the next request */
    int64_t seq = *sequence_id;
    if (seq != expected) {
      if (expected > 0) c->unpredictable = 1;
      tracepoint(roscope_ros2, rmw_send_request, client, ros_request, seq);
    }
    if (!c->unpredictable) c->next = seq + 1;
  }
  pthread_mutex_unlock(&c->mu);
  return ret;
}

/* A destroyed client's handle may be reused by a new client: its numbers start again. */
EXPORT rmw_ret_t rmw_destroy_client(rmw_node_t *node, rmw_client_t *client) {
  REAL(rmw_destroy_client, RMW_RET_ERROR);
  struct client_seq *c = client_of(client, 0);
  if (c != NULL) {
    pthread_mutex_lock(&c->mu);
    c->next = first_request_number();
    c->unpredictable = 0;
    pthread_mutex_unlock(&c->mu);
  }
  return real_fn(node, client);
}

EXPORT rmw_ret_t rmw_take_request(const rmw_service_t *service, rmw_service_info_t *request_header, void *ros_request,
                                  bool *taken) {
  REAL(rmw_take_request, RMW_RET_ERROR);
  rmw_ret_t ret = real_fn(service, request_header, ros_request, taken);
  if (ret == RMW_RET_OK && *taken) {
    tracepoint(roscope_ros2, rmw_take_request, service, ros_request, zero_gid, request_header->request_id.sequence_number,
               1, request_header->source_timestamp);
    if (in_take_data) {
      taken_request.rcl = rcl_service;
      taken_request.rmw = service;
      taken_request.seq = request_header->request_id.sequence_number;
    }
  }
  return ret;
}

EXPORT rmw_ret_t rmw_send_response(const rmw_service_t *service, rmw_request_id_t *request_header, void *ros_response) {
  REAL(rmw_send_response, RMW_RET_ERROR);
  tracepoint(roscope_ros2, rmw_send_response, service, ros_response, zero_gid, request_header->sequence_number, 0);
  return real_fn(service, request_header, ros_response);
}

/* ---- a client's response callback in rclcpp ---- */
struct seen { const void *callback, *client; };
#define SEEN 1024
static struct seen seen[SEEN];
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;

/* The callback's symbol: the client object's dynamic type (e.g. rclcpp::Client<pkg::srv::X>),
 * from its vtable's type_info (the Itanium C++ ABI: the vtable's entry -1; the name the
 * type_info's second word). */
static void register_symbol(const void *callback, const void *object, const char *otherwise) {
  const void *const *vtable = *(const void *const *const *)object;
  const char *mangled = ((const char *const *)vtable[-1])[1];
  int status = -1;
  char *name = mangled ? __cxa_demangle(mangled[0] == '*' ? mangled + 1 : mangled, NULL, NULL, &status) : NULL;
  ros_trace_rclcpp_callback_register(callback, status == 0 && name ? name : otherwise);
  free(name);
}

/* client_callback_added, or rclcpp_service_callback_added for a service (`service`), and the
 * callback's symbol (the type of `object`, a polymorphic C++ object), once per (callback, client
 * or service) (kept for the state dump by roscope_ros2.c; a full table: each time). */
/* What a callback that rclcpp gives no tracepoint is the callback of. */
enum callback_of { OF_CLIENT, OF_SERVICE, OF_SUBSCRIPTION };

/* Names `callback` once as the callback of `handle` (an rcl client, service or subscription),
 * with the symbol of `object`'s type. */
static void callback_added(const void *handle, const void *callback, enum callback_of of, const void *object) {
  size_t i = ((uintptr_t)callback >> 4) * 0x9E3779B97F4A7C15ull >> 54 & (SEEN - 1);
  pthread_mutex_lock(&seen_mu);
  for (size_t n = 0; n < SEEN; n++, i = (i + 1) & (SEEN - 1)) {
    if (seen[i].callback == NULL || seen[i].callback == callback) {
      if (seen[i].callback == callback && seen[i].client == handle) {
        pthread_mutex_unlock(&seen_mu);
        return;
      }
      seen[i] = (struct seen){callback, handle};  /* new, or a new one at an old one's address */
      break;
    }
  }
  pthread_mutex_unlock(&seen_mu);
  switch (of) {
    case OF_SERVICE:
      ros_trace_rclcpp_service_callback_added(handle, callback);
      break;
    case OF_CLIENT:
      roscope_ros2_client_callback_added(handle, callback);
      break;
    case OF_SUBSCRIPTION:
      /* the rcl subscription stands for rclcpp's (an action client has none) */
      ros_trace_rclcpp_subscription_init(handle, handle);
      ros_trace_rclcpp_subscription_callback_added(handle, callback);
      break;
  }
  register_symbol(callback, object, of == OF_SERVICE ? "rclcpp_action::ServerBase"
                                    : of == OF_CLIENT ? "rclcpp::ClientBase" : "rclcpp_action::ClientBase");
}

EXPORT rmw_ret_t rmw_take_response(const rmw_client_t *client, rmw_service_info_t *request_header, void *ros_response,
                                   bool *taken) {
  REAL(rmw_take_response, RMW_RET_ERROR);
  rmw_ret_t ret = real_fn(client, request_header, ros_response, taken);
  if (ret != RMW_RET_OK || !*taken) return ret;
  int64_t seq = request_header->request_id.sequence_number;
  tracepoint(roscope_ros2, rmw_take_response, client, ros_response, seq, request_header->source_timestamp, 1);
  if (in_take_data) {
    taken_response.rcl = rcl_client;
    taken_response.rmw = client;
    taken_response.seq = seq;
  } else if (exec_client != NULL && rcl_client != NULL && !run_started) {
    callback_added(rcl_client, exec_client, OF_CLIENT, exec_client);
    tracepoint(roscope_ros2, callback_input, exec_client, client, seq);
    ros_trace_callback_start(exec_client, false);
    run_started = 1;
  }
  return ret;
}

EXPORT rmw_ret_t rcl_take_response(const void *client, rmw_request_id_t *request_header, void *ros_response) {
  REAL(rcl_take_response, RMW_RET_ERROR);
  const void *outer = rcl_client;
  rcl_client = client;
  rmw_ret_t ret = real_fn(client, request_header, ros_response);
  rcl_client = outer;
  return ret;
}

/* The run's end (its callback_end when it started) and the outer state put back, also when
 * an exception leaves execute_client. */
struct outer_client { const void *client; int started; };
static void leave_execute_client(struct outer_client *o) {
  if (run_started) ros_trace_callback_end(exec_client);
  exec_client = o->client;
  run_started = o->started;
}

/* rclcpp::Executor::execute_client(std::shared_ptr<rclcpp::ClientBase>): the shared_ptr is
 * passed by reference to the caller's copy (the Itanium C++ ABI), its first word the object. */
EXPORT void _ZN6rclcpp8Executor14execute_clientESt10shared_ptrINS_10ClientBaseEE(void *client_ptr) {
  REAL(_ZN6rclcpp8Executor14execute_clientESt10shared_ptrINS_10ClientBaseEE, );
  __attribute__((cleanup(leave_execute_client))) struct outer_client outer = {exec_client, run_started};
  exec_client = *(void *const *)client_ptr;
  run_started = 0;
  real_fn(client_ptr);
}

EXPORT rmw_ret_t rcl_take_request(const void *service, rmw_request_id_t *request_header, void *ros_request) {
  REAL(rcl_take_request, RMW_RET_ERROR);
  const void *outer = rcl_service;
  rcl_service = service;
  rmw_ret_t ret = real_fn(service, request_header, ros_request);
  rcl_service = outer;
  return ret;
}

/* ---- rclcpp_action's callbacks ---- */
/* rclcpp_action 28 runs an action server's and client's callbacks in their Waitable::execute,
 * after take_data took a request (server: goal, cancel, result) or a response (client: goal,
 * cancel, result) on the same thread, without a tracepoint. An execute that handles such a take
 * is a run: of a service callback on the server (rclcpp_service_callback_added: the rcl
 * service, itself as the callback), of a client callback on the client (client_callback_added:
 * the rcl client, itself as the callback; callback_input names the response), of a subscription
 * callback on the client for a feedback or status message (rclcpp_subscription_init and
 * callback_added: the rcl subscription as rclcpp's and as the callback; rcl_take's and the rmw's
 * events before it name the message). Expired goals: no run. Both are virtual, reached through the vtables of
 * the program's rclcpp_action::Server<T> / Client<T>, which name these symbols. */
typedef void execute_fn(void *self, const void *data);

/* What a wrapper sets on its thread is put back even when the C++ code it calls throws (this
 * file is built with -fexceptions: the cleanups run as the exception passes). */
static void leave_take_data(int *unused) {
  (void)unused;
  in_take_data--;
}

/* take_data and take_data_by_entity_id (std::shared_ptr<void> returned through the hidden
 * pointer `ret`): the request or response they take is the next execute's. */
#define TAKE_DATA(sym, ...)                                                   \
  {                                                                          \
    REAL(sym, NULL);                                                         \
    if (in_take_data == 0) taken_request.rcl = taken_response.rcl = taken_message = NULL; \
    __attribute__((cleanup(leave_take_data))) int depth = ++in_take_data;    \
    (void)depth;                                                             \
    return real_fn(__VA_ARGS__);                                             \
  }
EXPORT void *_ZN13rclcpp_action10ServerBase9take_dataEv(void *ret, void *self)
  TAKE_DATA(_ZN13rclcpp_action10ServerBase9take_dataEv, ret, self)
EXPORT void *_ZN13rclcpp_action10ClientBase9take_dataEv(void *ret, void *self)
  TAKE_DATA(_ZN13rclcpp_action10ClientBase9take_dataEv, ret, self)
EXPORT void *_ZN13rclcpp_action10ServerBase22take_data_by_entity_idEm(void *ret, void *self, size_t id)
  TAKE_DATA(_ZN13rclcpp_action10ServerBase22take_data_by_entity_idEm, ret, self, id)
EXPORT void *_ZN13rclcpp_action10ClientBase22take_data_by_entity_idEm(void *ret, void *self, size_t id)
  TAKE_DATA(_ZN13rclcpp_action10ClientBase22take_data_by_entity_idEm, ret, self, id)

static void end_run(const void **cb) {
  if (*cb != NULL) ros_trace_callback_end(*cb);
}

static void action_execute(execute_fn *real, void *self, const void *data, int server) {
  const void *cb = NULL;
  if (server && taken_request.rcl != NULL) {
    cb = taken_request.rcl;
    callback_added(cb, cb, OF_SERVICE, self);
  } else if (!server && taken_response.rcl != NULL) {
    cb = taken_response.rcl;
    callback_added(cb, cb, OF_CLIENT, self);
    tracepoint(roscope_ros2, callback_input, cb, taken_response.rmw, taken_response.seq);
  } else if (!server && taken_message != NULL) {
    cb = taken_message;  /* a feedback or status message: rcl_take's events name it */
    callback_added(cb, cb, OF_SUBSCRIPTION, self);
  }
  taken_request.rcl = taken_response.rcl = taken_message = NULL;
  if (cb != NULL) ros_trace_callback_start(cb, false);
  __attribute__((cleanup(end_run))) const void *run = cb;
  real(self, data);
}

/* rcl_take (rcl_ret_t rcl_take(const rcl_subscription_t *, void *, rmw_message_info_t *,
 * rmw_subscription_allocation_t *)): inside an action client's take_data, the feedback or
 * status message it takes (rcl_action_take_feedback / _status) is the next execute's. Elsewhere
 * it only passes the call on. */
EXPORT int rcl_take(const void *subscription, void *ros_message, void *message_info, void *allocation) {
  REAL(rcl_take, 1 /* RCL_RET_ERROR */);
  int ret = real_fn(subscription, ros_message, message_info, allocation);
  if (in_take_data > 0 && ret == 0 /* RCL_RET_OK */) taken_message = subscription;
  return ret;
}

/* rclcpp_action::ServerBase::execute(std::shared_ptr<void> const&) */
EXPORT void _ZN13rclcpp_action10ServerBase7executeERKSt10shared_ptrIvE(void *self, const void *data) {
  REAL(_ZN13rclcpp_action10ServerBase7executeERKSt10shared_ptrIvE, );
  action_execute((execute_fn *)real_fn, self, data, 1);
}

/* rclcpp_action::ClientBase::execute(std::shared_ptr<void> const&) */
EXPORT void _ZN13rclcpp_action10ClientBase7executeERKSt10shared_ptrIvE(void *self, const void *data) {
  REAL(_ZN13rclcpp_action10ClientBase7executeERKSt10shared_ptrIvE, );
  action_execute((execute_fn *)real_fn, self, data, 0);
}
