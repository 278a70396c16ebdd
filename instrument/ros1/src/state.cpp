// The ROS 1 tracer's state dump and its links' write positions (docs/ros1-tracer.md,
// "Attaching"); tracer.cpp calls these at init time (remember, tx_link_new), on the hot
// path (tx_next_index, and check_dump's slow path) and when tracing starts.
#include "state.h"

#include <time.h>
#include <unistd.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#define LTTNG_UST_TRACEPOINT_PROBE_DYNAMIC_LINKAGE
#include "roscope_ros1_tp.h"
#include "roscope/roscope_attach_tp.h"
#include "roscope/attach_ack.h"

namespace roscope_state {

std::atomic<int> g_dump_last{0};  // the request's enabled state last seen

// State dump (docs/ros1-tracer.md, "Attaching"). Every init event is also kept
// here, in the rospy entry point's form (one record per live object, keyed by
// kind and handle: a handle reused by a new object replaces the old record).
// When `roscope record --attach` starts a session while the process runs, it
// turns roscope_attach:request on for a moment (roscope/roscope_attach_tp.h);
// the first hook call (callback start, publish, rospy event) or the watch thread
// (every 50 ms) that sees the change has the dump made: the init events are
// re-emitted between state_dump_begin and state_dump_end.


namespace {
struct InitRecord {
  int which;
  uint64_t a, b;
  std::string s1, s2, s3, s4;
  int64_t i1, i2;
  uint64_t seq;
};
std::mutex g_init_mu;
std::map<std::pair<int, uint64_t>, InitRecord> g_init;  // (which, handle) -> record
uint64_t g_init_seq = 0;
std::mutex g_dump_mu;
}  // namespace


// Init-time only (allocates).
void remember(int which, uint64_t a, uint64_t b, const char* s1, const char* s2, const char* s3,
                     const char* s4, int64_t i1, int64_t i2) {
  std::lock_guard<std::mutex> lock(g_init_mu);
  InitRecord& r = g_init[{which, a}];
  r = InitRecord{which, a, b, s1 ? s1 : "", s2 ? s2 : "", s3 ? s3 : "", s4 ? s4 : "", i1, i2, ++g_init_seq};
}

static void emit_init(const InitRecord& r) {
  switch (r.which) {
    case PY_NODE_INIT:
      lttng_ust_tracepoint(roscope_ros1, node_init, r.s1.c_str(), r.s2.c_str());
      break;
    case PY_PUBLISHER_INIT:
      lttng_ust_tracepoint(roscope_ros1, publisher_init, P(r.a), r.s1.c_str(), r.s2.c_str(), r.s3.c_str(),
                           r.s4.c_str(), (uint32_t)r.i1, (int)r.i2);
      break;
    case PY_SUBSCRIPTION_INIT:
      lttng_ust_tracepoint(roscope_ros1, subscription_init, P(r.a), P(r.b), r.s1.c_str(), r.s2.c_str(),
                           r.s3.c_str(), r.s4.c_str(), (uint32_t)r.i1);
      break;
    case PY_TIMER_INIT:
      lttng_ust_tracepoint(roscope_ros1, timer_init, P(r.a), P(r.b), r.s1.c_str(), r.s2.c_str(), r.i1, (int)r.i2);
      break;
    case PY_SERVICE_INIT:
      lttng_ust_tracepoint(roscope_ros1, service_init, P(r.a), P(r.b), r.s1.c_str(), r.s2.c_str(), r.s3.c_str(),
                           r.s4.c_str());
      break;
    case PY_CALLBACK_REGISTER:
      lttng_ust_tracepoint(roscope_ros1, callback_register, P(r.a), r.s1.c_str(), r.s2.c_str());
      break;
    case PY_LINK_TX_INIT:
      lttng_ust_tracepoint(roscope_ros1, link_tx_init, P(r.a), r.s1.c_str(), r.s2.c_str(), r.s3.c_str());
      break;
    case PY_LINK_RX_INIT:
      lttng_ust_tracepoint(roscope_ros1, link_rx_init, P(r.a), r.s1.c_str(), r.s2.c_str(), r.s3.c_str());
      break;
    default:
      break;
  }
}

static void state_dump() {
  std::vector<InitRecord> recs;
  {
    std::lock_guard<std::mutex> lock(g_init_mu);
    for (const auto& kv : g_init) recs.push_back(kv.second);
  }
  std::sort(recs.begin(), recs.end(), [](const InitRecord& x, const InitRecord& y) { return x.seq < y.seq; });
  lttng_ust_tracepoint(roscope_ros1, state_dump_begin, (uint32_t)recs.size());
  const char* id = getenv("ROSCOPE_RECORD_ID");
  char exe[512] = {0};
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n < 0) exe[0] = 0;
  lttng_ust_tracepoint(roscope_ros1, process_init, id ? id : "", exe);
  for (const InitRecord& r : recs) emit_init(r);
  lttng_ust_tracepoint(roscope_ros1, state_dump_end, (uint32_t)recs.size());
}

// LTTng-UST turns a tracepoint on when the session daemon enables its event in
// this process, a moment before it starts the session there: events emitted
// in between are dropped. So the dump comes kDumpDelayNs after the change is
// first seen (by a hook call or the watch thread, whichever comes first).
static constexpr int64_t kDumpDelayNs = 50 * 1000 * 1000;
static std::atomic<int64_t> g_dump_pending{0};  // when the change was first seen (0: none)
static unsigned long g_dumps = 0;  // dumps made (under g_dump_mu), for roscope/attach_ack.h

static int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// The slow path of check_dump: the enabled state changed.
void dump_state_changed() {
  int now = lttng_ust_tracepoint_enabled(roscope_attach, request) ? 1 : 0;
  if (!now) {
    g_dump_pending.store(0);
    g_dump_last.store(0);
    return;
  }
  int64_t t = mono_ns();
  int64_t since = 0;
  if (g_dump_pending.compare_exchange_strong(since, t) || t - since < kDumpDelayNs) return;
  std::lock_guard<std::mutex> lock(g_dump_mu);
  if (g_dump_last.load() == 1) return;
  state_dump();
  g_dump_pending.store(0);
  g_dump_last.store(1);
  roscope_attach_ack(++g_dumps);
}


__attribute__((destructor)) static void remove_dump_answer() { roscope_attach_ack_remove(); }

void start_dump_watch() {
  // The state when tracing starts: a session asking for a dump now sees this
  // process's own init events, so no dump for it.
  g_dump_last.store(lttng_ust_tracepoint_enabled(roscope_attach, request) ? 1 : 0);
  roscope_attach_ack(0);
  // The watch thread takes no signal: the program's own threads must get them.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  std::thread([] {
    for (;;) {
      usleep(50 * 1000);
      int now = lttng_ust_tracepoint_enabled(roscope_attach, request) ? 1 : 0;
      if (now != g_dump_last.load(std::memory_order_relaxed)) dump_state_changed();
    }
  }).detach();
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// Positions of writes per publisher-side link: a lock-free open-addressing table
// (no allocation on the hot path), so that link_tx_write carries its index.
namespace {
constexpr size_t kTxSlots = 1 << 14;
struct TxSlot {
  std::atomic<uintptr_t> link{0};
  std::atomic<uint64_t> writes{0};
};
TxSlot g_tx[kTxSlots];
}  // namespace

static TxSlot* tx_slot(const void* link, bool create) {
  uintptr_t key = reinterpret_cast<uintptr_t>(link);
  if (!key) return nullptr;
  size_t h = (size_t)((key >> 4) * 0x9E3779B97F4A7C15ull >> 50);
  for (size_t i = 0; i < kTxSlots; ++i) {
    TxSlot& s = g_tx[(h + i) & (kTxSlots - 1)];
    uintptr_t k = s.link.load(std::memory_order_acquire);
    if (k == key) return &s;
    if (k == 0) {
      if (!create) return nullptr;
      uintptr_t zero = 0;
      if (s.link.compare_exchange_strong(zero, key) || zero == key) return &s;
    }
  }
  return nullptr;
}

// A new link (or a new object at a reused address): its writes count from 0.
void tx_link_new(const void* link) {
  if (TxSlot* s = tx_slot(link, true)) s->writes.store(0, std::memory_order_relaxed);
}

uint64_t tx_next_index(const void* link) {
  TxSlot* s = tx_slot(link, false);
  return s ? s->writes.fetch_add(1, std::memory_order_relaxed) : UINT64_MAX;
}


}  // namespace roscope_state
