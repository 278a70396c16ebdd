// ros2sim: runs one process of a described ROS 2-like system and emits, through
// LTTng-UST, the `ros2:*` events an rclcpp application of the chosen distro emits.
//
// Usage: ros2sim-<distro> PLAN_FILE PROCESS_INDEX GT_DIR
// The plan file is written by ros2sim.py (see docs/ros2sim.md); it lists every
// process, node, topic, publisher, subscription, timer, callback and route of
// the system.  This process instantiates only its own nodes, talks to the other
// processes over UNIX datagram sockets, and writes its ground truth as CSV.

#define LTTNG_UST_TRACEPOINT_DEFINE
#define LTTNG_UST_TRACEPOINT_PROBE_DYNAMIC_LINKAGE
#include "ros2sim_tp.h"
#include "ros2sim_caret_tp.h"
#include "ros2sim_dds_tp.h"
#include "ros2sim_clock.h"

#include <dlfcn.h>

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#define TP(...) lttng_ust_tracepoint(ros2, __VA_ARGS__)
#define TPC(...) lttng_ust_tracepoint(ros2_caret, __VA_ARGS__)
// --dds: the DDS layer's events (provider dds), beside ros2_tracing's
#define TPD(...)                                            \
  do {                                                      \
    if (g_dds) lttng_ust_tracepoint(dds, __VA_ARGS__);      \
  } while (0)
// An init event: ros2_tracing's, or in --caret mode CARET's copy with its
// init_timestamp (CARET's hooks emit it instead of the original).
#define TP_INIT(name, ...)                                  \
  do {                                                      \
    if (g_caret) TPC(name, __VA_ARGS__, init_stamp());      \
    else TP(name, __VA_ARGS__);                             \
  } while (0)
// Events CARET's hooks swallow (executor, rcl/rclcpp take, rmw init): not in --caret mode.
#define TP_NOT_CARET(...)                                   \
  do {                                                      \
    if (!g_caret) TP(__VA_ARGS__);                          \
  } while (0)

namespace {

[[noreturn]] void die(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "ros2sim: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(2);
}

r2s_clock g_clock;
inline uint64_t raw_now() { return r2s_mono_raw(); }
inline uint64_t host_of(uint64_t raw) { return r2s_clock_apply(&g_clock, raw); }
inline uint64_t host_now() { return host_of(raw_now()); }
int64_t g_realtime_minus_mono = 0;  // host "wall clock" for DDS source timestamps
inline int64_t host_realtime(uint64_t raw) { return (int64_t)host_of(raw) + g_realtime_minus_mono; }
inline long gettid_() { return syscall(SYS_gettid); }

// --caret: the process runs "with CARET" (Humble), see docs/ros2sim.md
bool g_caret = false;
// --dds: the DDS layer is instrumented too (dds:create_writer/reader, write, read)
bool g_dds = false;
inline int64_t init_stamp() { return (int64_t)host_now(); }

// Real heap objects stand in for rcl/rmw/rclcpp objects, so handles are real,
// distinct addresses of this process (and may coincide across processes).
void *obj(size_t size)
{
  void *p = calloc(1, size);
  if (!p) die("out of memory");
  return p;
}

enum { W_FIXED, W_UNIFORM, W_NORMAL, W_EXP };
enum { M_SINK, M_DIRECT, M_ASYNC, M_SYNC, M_SOURCE };

struct Work { int kind = W_FIXED; double a = 0, b = 0; bool blocking = false; };

struct MsgId {
  uint32_t pub = 0;
  uint64_t seq = 0;
  int64_t src = 0;       // DDS source timestamp (publisher host wall clock)
  uint64_t arrive = 0;   // raw monotonic time it reached this subscription's queue
};

struct Proc {
  std::string name, host, sock;
  int host_idx = 0, threads = 1, intra = 0;
  bool multi = false;
};
struct Node {
  int proc = 0, reentrant = 0;
  std::string name, ns;
  void *handle = nullptr, *rmw = nullptr;
  int busy = 0;
  std::vector<void *> services;  // the parameter services (rcl handles)
};
struct Pub {
  int node = 0, topic = 0, depth = 0;
  void *rcl = nullptr, *rmw = nullptr, *dds_writer = nullptr;
  uint8_t gid[24] = {0};
  uint64_t seq = 0;
  std::vector<int> intra_subs;   // local subscriptions served intra-process
  std::vector<int> inter_procs;  // processes with inter-process subscriptions
  int n_inter_subs = 0;
};
struct Sub {
  int node = 0, topic = 0, depth = 0, cb = 0, sync = -1;
  bool local = false;
  void *rcl = nullptr, *rmw = nullptr, *obj = nullptr, *cbaddr = nullptr, *dds_reader = nullptr;
  // intra-process side (SubscriptionIntraProcess, its buffer and ring buffer)
  bool has_intra = false;
  void *sip = nullptr, *ipb = nullptr, *ring = nullptr, *intra_cb = nullptr;
  std::vector<MsgId> ring_items;
  uint64_t w_idx = 0, r_idx = 0, r_size = 0;
  std::deque<MsgId> q;   // inter-process (DDS reader) history, KEEP_LAST depth
  bool snap = false, snap_intra = false;
  bool has_cache = false;
  MsgId cache;
};
struct Timer {
  int node = 0, cb = 0;
  int64_t period = 0, offset = 0;
  void *rcl = nullptr, *cbaddr = nullptr;
  uint64_t next = 0;
  bool snap = false;
};
struct Cb {
  int node = 0, kind = 0, mode = M_SINK, sync = -1, entity = 0;
  Work work;
  std::vector<int> outs, ins;
  std::string sym;
};
struct SyncGroup {
  int node = 0;
  std::vector<int> subs, pubs;
  std::vector<bool> filled;
  std::vector<MsgId> vals;
};

struct Wire {
  uint32_t magic;
  uint32_t pub;
  uint64_t seq;
  int64_t src;
};
const uint32_t WIRE_MAGIC = 0x52325331, WIRE_STOP = 0x53544f50;

// ---------------------------------------------------------------- the plan
std::string distro_name = ROS2SIM_DISTRO_NAME;
std::string version_str;
uint64_t t_start = 0, t_end = 0, grace = 200000000ULL;
uint64_t seed = 1;
std::vector<std::string> hosts;
std::vector<Proc> procs;
std::vector<Node> nodes;
std::vector<std::string> topics;
std::vector<Pub> pubs;
std::vector<Sub> subs;
std::vector<Timer> timers;
std::vector<Cb> cbs;
std::vector<SyncGroup> syncs;
std::map<uint32_t, std::vector<int>> inter_routes;  // pub -> local subs fed by the socket
int me = -1;

void load_plan(const char *path)
{
  std::ifstream in(path);
  if (!in) die("cannot open plan file %s", path);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string kw;
    ss >> kw;
    auto bad = [&]() { die("%s:%d: malformed '%s' line", path, lineno, kw.c_str()); };
    if (kw == "version") { ss >> version_str; }
    else if (kw == "caret") { int c = 0; ss >> c; if (!ss) bad(); g_caret = c != 0; }
    else if (kw == "dds") { int c = 0; ss >> c; if (!ss) bad(); g_dds = c != 0; }
    else if (kw == "run") { ss >> t_start >> t_end >> grace >> seed; if (!ss) bad(); }
    else if (kw == "host") { std::string n; ss >> n; hosts.push_back(n); }
    else if (kw == "proc") {
      Proc p; std::string ex;
      ss >> p.name >> p.host_idx >> ex >> p.threads >> p.intra >> p.sock;
      if (!ss) bad();
      p.multi = (ex == "multi");
      procs.push_back(p);
    } else if (kw == "node") {
      Node n; ss >> n.proc >> n.name >> n.ns >> n.reentrant; if (!ss) bad(); nodes.push_back(n);
    } else if (kw == "topic") {
      std::string t; ss >> t; if (!ss) bad(); topics.push_back(t);
    } else if (kw == "pub") {
      Pub p; ss >> p.node >> p.topic >> p.depth; if (!ss) bad(); pubs.push_back(p);
    } else if (kw == "sub") {
      Sub s; ss >> s.node >> s.topic >> s.depth >> s.cb; if (!ss) bad(); subs.push_back(std::move(s));
    } else if (kw == "timer") {
      Timer t; ss >> t.node >> t.period >> t.offset >> t.cb; if (!ss) bad(); timers.push_back(t);
    } else if (kw == "sync") {
      SyncGroup g; int n; ss >> g.node >> n; g.subs.resize(n); for (auto &x : g.subs) ss >> x;
      ss >> n; g.pubs.resize(n); for (auto &x : g.pubs) ss >> x;
      if (!ss) bad();
      g.filled.assign(g.subs.size(), false); g.vals.resize(g.subs.size());
      syncs.push_back(g);
    } else if (kw == "cb") {
      Cb c; std::string kind, wk, how, mode; int n;
      ss >> c.node >> kind >> c.entity >> wk >> c.work.a >> c.work.b >> how >> mode >> c.sync >> n;
      c.outs.resize(n); for (auto &x : c.outs) ss >> x;
      ss >> n; c.ins.resize(n); for (auto &x : c.ins) ss >> x;
      if (!ss) bad();
      c.kind = (kind == "timer") ? 0 : 1;
      c.work.kind = wk == "fixed" ? W_FIXED : wk == "uniform" ? W_UNIFORM : wk == "normal" ? W_NORMAL :
                    wk == "exponential" ? W_EXP : (bad(), 0);
      c.work.blocking = how == "wait" ? true : how == "spin" ? false : (bad(), false);
      c.mode = mode == "sink" ? M_SINK : mode == "direct" ? M_DIRECT : mode == "async" ? M_ASYNC :
               mode == "sync" ? M_SYNC : mode == "source" ? M_SOURCE : (bad(), 0);
      cbs.push_back(c);
    } else if (kw == "sym") {
      int c; ss >> c; std::string rest; std::getline(ss, rest);
      if (c < 0 || c >= (int)cbs.size()) bad();
      cbs[c].sym = rest.substr(rest.find_first_not_of(' '));
    } else if (kw == "route") {
      int p, s, intra; ss >> p >> s >> intra; if (!ss) bad();
      Sub &sb = subs.at(s);
      int sproc = nodes.at(sb.node).proc;
      Pub &pb = pubs.at(p);
      int pproc = nodes.at(pb.node).proc;
      if (intra) {
        if (pproc == me) pb.intra_subs.push_back(s);
        if (sproc == me) sb.has_intra = true;
      } else {
        pb.n_inter_subs++;
        if (pproc == me && std::find(pb.inter_procs.begin(), pb.inter_procs.end(), sproc) == pb.inter_procs.end())
          pb.inter_procs.push_back(sproc);
        if (sproc == me) inter_routes[p].push_back(s);
      }
    } else {
      die("%s:%d: unknown keyword '%s'", path, lineno, kw.c_str());
    }
  }
  if (me < 0 || me >= (int)procs.size()) die("process index %d not in plan %s", me, path);
}

// ---------------------------------------------------------------- ground truth
struct Csv {
  FILE *f = nullptr;
  std::mutex mu;
  void open(const std::string &path)
  {
    f = fopen(path.c_str(), "w");
    if (!f) die("cannot write %s", path.c_str());
    setvbuf(f, nullptr, _IOFBF, 1 << 20);
  }
  void close() { if (f) fclose(f); f = nullptr; }
};
Csv gt_msgs, gt_links, gt_deliv, gt_cbs;
std::atomic<uint64_t> run_counter{0};

std::string msg_id(const MsgId &m)
{
  char b[48];
  snprintf(b, sizeof b, "%u:%" PRIu64, m.pub, m.seq);
  return b;
}

// delivery row; status: taken | dropped | untaken
void gt_delivery(const MsgId &m, int s, bool intra, const char *status, long tid, uint64_t take,
                 uint64_t cbs_, uint64_t cbe, uint64_t run, uint64_t drop, const void *addr)
{
  Sub &sb = subs[s];
  std::lock_guard<std::mutex> l(gt_deliv.mu);
  fprintf(gt_deliv.f, "%u:%" PRIu64 ",%d,%d,%ld,%d,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
          ",%" PRIu64 ",%s%" PRIu64 ",0x%" PRIxPTR "\n",
          m.pub, m.seq, s, intra ? 1 : 0, tid, (int)getpid(), status, host_of(m.arrive),
          take ? host_of(take) : 0, cbs_ ? host_of(cbs_) : 0, cbe ? host_of(cbe) : 0,
          drop ? host_of(drop) : 0, (uint64_t)m.src, run ? "" : "-", run, (uintptr_t)addr);
  (void)sb;
}

// ---------------------------------------------------------------- runtime state
std::mutex mu;                // protects queues, caches, snapshot, busy flags
std::condition_variable cv;
std::mutex wait_mu;           // one executor thread waits/picks at a time (rclcpp wait_mutex_)
bool stopping = false;
int sock_fd = -1;
std::vector<sockaddr_un> peer_addr;
thread_local std::mt19937_64 rng;

uint64_t draw_work(const Work &w)
{
  double ns = 0;
  switch (w.kind) {
    case W_FIXED: ns = w.a; break;
    case W_UNIFORM: ns = std::uniform_real_distribution<double>(w.a, w.b)(rng); break;
    case W_NORMAL: ns = std::normal_distribution<double>(w.a, w.b)(rng); break;
    case W_EXP: ns = w.a > 0 ? std::exponential_distribution<double>(1.0 / w.a)(rng) : 0; break;
  }
  return ns > 0 ? (uint64_t)ns : 0;
}

void busy_until(uint64_t raw_deadline)
{
  volatile uint64_t sink = 0;
  while (raw_now() < raw_deadline) {
    for (int i = 0; i < 64; ++i) sink += i;
  }
}

// A blocking callback (waiting on I/O, a service, a lock) leaves its CPU to others meanwhile.
void wait_until(uint64_t raw_deadline)
{
  for (uint64_t now = raw_now(); now < raw_deadline; now = raw_now()) {
    uint64_t left = raw_deadline - now;
    struct timespec ts = {(time_t)(left / 1000000000ULL), (long)(left % 1000000000ULL)};
    nanosleep(&ts, nullptr);
  }
}

void notify_ready() { cv.notify_all(); }

// Enqueue into a subscription's DDS history (KEEP_LAST depth); caller holds mu.
void enqueue_inter(int s, const MsgId &m)
{
  Sub &sb = subs[s];
  if ((int)sb.q.size() >= sb.depth) {
    MsgId old = sb.q.front();
    sb.q.pop_front();
    gt_delivery(old, s, false, "dropped", 0, 0, 0, 0, 0, m.arrive, nullptr);
  }
  sb.q.push_back(m);
}

// rclcpp RingBufferImplementation::enqueue; caller holds mu.
void enqueue_intra(int s, const MsgId &m)
{
  Sub &sb = subs[s];
  uint64_t cap = sb.ring_items.size();
  sb.w_idx = (sb.w_idx + 1) % cap;
  bool full = sb.r_size == cap;
  if (full) gt_delivery(sb.ring_items[sb.w_idx], s, true, "dropped", 0, 0, 0, 0, 0, m.arrive, nullptr);
  sb.ring_items[sb.w_idx] = m;
#if ROS2SIM_DISTRO >= 2
  TP(rclcpp_ring_buffer_enqueue, sb.ring, sb.w_idx, sb.r_size + 1, full ? 1 : 0);
#endif
  if (full) sb.r_idx = (sb.r_idx + 1) % cap;
  else sb.r_size++;
}

// ---------------------------------------------------------------- publishing
void publish(int p, const std::vector<MsgId> &inputs, const char *link_kind, uint64_t run, long tid)
{
  Pub &pb = pubs[p];
  Proc &pr = procs[me];
  MsgId m;
  m.pub = p;
  m.seq = ++pb.seq;
  void *msg = malloc(64 + 8 * (p % 7));
  uint64_t t_pub = raw_now();
  m.src = host_realtime(t_pub);
  m.arrive = t_pub;
  {
    std::lock_guard<std::mutex> l(gt_msgs.mu);
    fprintf(gt_msgs.f, "%u:%" PRIu64 ",%d,%" PRIu64 ",%ld,%d,0x%" PRIxPTR ",%" PRId64 ",%" PRIu64 ",%" PRIu64 ",%zu,%d\n",
            p, m.seq, p, m.seq, tid, (int)getpid(), (uintptr_t)msg, m.src, host_of(t_pub), run,
            pr.intra ? pb.intra_subs.size() : 0, pb.n_inter_subs + (pr.intra ? 0 : (int)pb.intra_subs.size()));
  }
  if (!inputs.empty()) {
    std::lock_guard<std::mutex> l(gt_links.mu);
    for (auto &in : inputs)
      fprintf(gt_links.f, "%u:%" PRIu64 ",%u:%" PRIu64 ",%s\n", p, m.seq, in.pub, in.seq, link_kind);
  }
  bool do_inter = true;
  if (pr.intra) {
#if ROS2SIM_DISTRO >= 2
    TP(rclcpp_intra_publish, pb.rcl, msg);
#endif
    if (!pb.intra_subs.empty()) {
      std::lock_guard<std::mutex> l(mu);
      m.arrive = raw_now();
      for (int s : pb.intra_subs) enqueue_intra(s, m);
    }
    notify_ready();
    do_inter = pb.n_inter_subs > 0;
  }
  if (do_inter) {
    TP(rclcpp_publish, msg);
    TP(rcl_publish, pb.rcl, msg);
    if (g_caret) {
      // CARET's hook of rmw_publish emits dds_write instead; its hook of the DDS
      // write binds the message address to the DDS source stamp
      TPC(dds_write, msg);
      TPC(dds_bind_addr_to_stamp, msg, (uint64_t)m.src);
    } else {
#if ROS2SIM_DISTRO >= 2
      TP(rmw_publish, pb.rmw, msg, m.src);
#else
      TP(rmw_publish, msg);
#endif
      // the DDS write inside rmw_publish: the source timestamp the readers will see
      TPD(write, pb.dds_writer, msg, m.src);
    }
    Wire w{WIRE_MAGIC, (uint32_t)p, m.seq, m.src};
    for (int dst : pb.inter_procs) {
      // a receiver that already exited refuses the datagram: nothing to deliver to
      sendto(sock_fd, &w, sizeof w, 0, (sockaddr *)&peer_addr[dst], sizeof(sockaddr_un));
    }
  }
  free(msg);
}

// ---------------------------------------------------------------- executor
enum { X_NONE, X_TIMER, X_SUB, X_INTRA };
struct Exec { int kind = X_NONE, idx = -1; };

bool group_free(int node) { return nodes[node].reentrant || !nodes[node].busy; }

// rcl_timer_call: advance next call time, skipping missed periods.
void timer_call(Timer &t, uint64_t now)
{
  int64_t next = (int64_t)t.next + t.period;
  if (next < (int64_t)now) {
    int64_t ahead = (int64_t)now - next;
    next += (1 + (ahead - 1) / t.period) * t.period;
  }
  t.next = next;
}

// get_next_ready_executable: timers, then subscriptions, then waitables.
bool pick(Exec &e)
{
  std::lock_guard<std::mutex> l(mu);
  for (size_t i = 0; i < timers.size(); ++i) {
    Timer &t = timers[i];
    if (!t.snap || !group_free(t.node) || nodes[t.node].proc != me) continue;
    t.snap = false;
    timer_call(t, raw_now());
    nodes[t.node].busy++;
    e = {X_TIMER, (int)i};
    return true;
  }
  for (size_t i = 0; i < subs.size(); ++i) {
    Sub &s = subs[i];
    if (!s.local || !s.snap || !group_free(s.node)) continue;
    s.snap = false;
    nodes[s.node].busy++;
    e = {X_SUB, (int)i};
    return true;
  }
  for (size_t i = 0; i < subs.size(); ++i) {
    Sub &s = subs[i];
    if (!s.local || !s.snap_intra || !group_free(s.node)) continue;
    s.snap_intra = false;
    nodes[s.node].busy++;
    e = {X_INTRA, (int)i};
    return true;
  }
  return false;
}

// wait_for_work: block until some entity of an available callback group is ready,
// then take a snapshot of the ready set (the rcl wait set result).
void wait_for_work()
{
  std::unique_lock<std::mutex> l(mu);
  for (auto &t : timers) t.snap = false;
  for (auto &s : subs) s.snap = s.snap_intra = false;
  for (;;) {
    if (stopping) return;
    uint64_t now = raw_now();
    uint64_t next_deadline = t_end;
    bool any = false;
    for (auto &t : timers) {
      if (nodes[t.node].proc != me || !group_free(t.node)) continue;
      if (now >= t.next) { t.snap = true; any = true; }
      else next_deadline = std::min(next_deadline, t.next);
    }
    for (auto &s : subs) {
      if (!s.local || !group_free(s.node)) continue;
      if (!s.q.empty()) { s.snap = true; any = true; }
      if (s.r_size > 0) { s.snap_intra = true; any = true; }
    }
    if (any) return;
    cv.wait_until(l, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(next_deadline)));
  }
}

void execute(const Exec &e, long tid)
{
  uint64_t run = 0;
  int cbi = -1;
  void *cbaddr = nullptr, *entity = nullptr, *take_buf = nullptr;
  bool intra = false, have_msg = false;
  MsgId in;
  uint64_t t_take = 0;
  int node = -1, s_idx = -1;

  if (e.kind == X_TIMER) {
    Timer &t = timers[e.idx];
    cbi = t.cb; cbaddr = t.cbaddr; entity = t.rcl; node = t.node;
    TP_NOT_CARET(rclcpp_executor_execute, t.rcl);
  } else if (e.kind == X_SUB) {
    Sub &s = subs[e.idx];
    s_idx = e.idx; cbi = s.cb; cbaddr = s.cbaddr; entity = s.rcl; node = s.node;
    TP_NOT_CARET(rclcpp_executor_execute, s.rcl);
    take_buf = malloc(64);
    {
      std::lock_guard<std::mutex> l(mu);
      if (!s.q.empty()) { in = s.q.front(); s.q.pop_front(); have_msg = true; }
    }
    t_take = raw_now();
    if (have_msg) {
      TPD(read, s.dds_reader, take_buf);
      TP(rmw_take, s.rmw, take_buf, in.src, 1);
      TP_NOT_CARET(rcl_take, take_buf);
      TP_NOT_CARET(rclcpp_take, take_buf);
    } else {
      TP(rmw_take, s.rmw, take_buf, (int64_t)0, 0);
    }
  } else {
    Sub &s = subs[e.idx];
    s_idx = e.idx; cbi = s.cb; cbaddr = s.intra_cb; entity = s.rcl; node = s.node; intra = true;
    std::lock_guard<std::mutex> l(mu);
    if (s.r_size > 0) {
      in = s.ring_items[s.r_idx];
      have_msg = true;
      t_take = raw_now();
#if ROS2SIM_DISTRO >= 2
      TP(rclcpp_ring_buffer_dequeue, s.ring, s.r_idx, s.r_size - 1);
#endif
      s.r_idx = (s.r_idx + 1) % s.ring_items.size();
      s.r_size--;
    }
  }

  bool runs = (e.kind == X_TIMER) || have_msg;
  if (runs) {
    Cb &c = cbs[cbi];
    run = ++run_counter;
    uint64_t t0 = raw_now();
    TP(callback_start, cbaddr, intra ? 1 : 0);
    if (c.work.blocking) wait_until(t0 + draw_work(c.work));
    else busy_until(t0 + draw_work(c.work));
    // the callback's outputs, by its input -> output dependency
    std::vector<MsgId> ins;
    const char *kind = "none";
    bool emit = false;
    std::vector<int> outs = c.outs;
    if (e.kind == X_SUB) {
      std::lock_guard<std::mutex> l(mu);
      subs[s_idx].cache = in;
      subs[s_idx].has_cache = true;
    }
    if (e.kind != X_TIMER && c.mode == M_DIRECT) {
      ins.push_back(in); kind = "direct"; emit = true;
    } else if (e.kind != X_TIMER && c.mode == M_SYNC) {
      std::lock_guard<std::mutex> l(mu);
      SyncGroup &g = syncs[c.sync];
      for (size_t k = 0; k < g.subs.size(); ++k)
        if (g.subs[k] == s_idx) { g.filled[k] = true; g.vals[k] = in; }
      if (std::all_of(g.filled.begin(), g.filled.end(), [](bool b) { return b; })) {
        ins = g.vals; kind = "partial_sync"; emit = true; outs = g.pubs;
        std::fill(g.filled.begin(), g.filled.end(), false);
      }
    } else if (e.kind == X_TIMER && c.mode == M_ASYNC) {
      std::lock_guard<std::mutex> l(mu);
      for (int si : c.ins) if (subs[si].has_cache) ins.push_back(subs[si].cache);
      kind = "periodic_async"; emit = true;
    } else if (e.kind == X_TIMER) {
      emit = true;  // a source
    }
    if (emit)
      for (int p : outs) publish(p, ins, kind, run, tid);
    uint64_t t1 = raw_now();
    TP(callback_end, cbaddr);
    {
      std::lock_guard<std::mutex> l(gt_cbs.mu);
      fprintf(gt_cbs.f, "%" PRIu64 ",%ld,%d,%d,%s,0x%" PRIxPTR ",0x%" PRIxPTR ",%d,%" PRIu64 ",%" PRIu64 ",%s\n",
              run, tid, (int)getpid(), node, e.kind == X_TIMER ? "timer" : "subscription",
              (uintptr_t)entity, (uintptr_t)cbaddr, intra ? 1 : 0, host_of(t0), host_of(t1),
              have_msg ? msg_id(in).c_str() : "");
    }
    if (have_msg) gt_delivery(in, s_idx, intra, "taken", tid, t_take, t0, t1, run, 0, take_buf);
  }
  free(take_buf);
  {
    std::lock_guard<std::mutex> l(mu);
    nodes[node].busy--;
  }
  cv.notify_all();  // a callback group became available again
}

void executor_thread(int ti)
{
  long tid = gettid_();
  rng.seed(seed * 1000003ULL + me * 7919ULL + ti);
  for (;;) {
    Exec e;
    {
      std::lock_guard<std::mutex> wl(wait_mu);
      {
        std::lock_guard<std::mutex> l(mu);
        if (stopping) break;
      }
      TP_NOT_CARET(rclcpp_executor_get_next_ready);
      bool ok = pick(e);
      if (!ok) {
        TP_NOT_CARET(rclcpp_executor_wait_for_work, (int64_t)-1);
        wait_for_work();
        {
          std::lock_guard<std::mutex> l(mu);
          if (stopping) break;
        }
        TP_NOT_CARET(rclcpp_executor_get_next_ready);
        ok = pick(e);
      }
      if (!ok) continue;
    }
    execute(e, tid);
  }
}

void receiver_thread()
{
  Wire w;
  for (;;) {
    ssize_t n = recv(sock_fd, &w, sizeof w, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("receive on %s failed: %s", procs[me].sock.c_str(), strerror(errno));
    }
    if (n != sizeof w) continue;
    if (w.magic == WIRE_STOP) break;
    if (w.magic != WIRE_MAGIC) continue;
    auto it = inter_routes.find(w.pub);
    if (it == inter_routes.end()) continue;
    MsgId m;
    m.pub = w.pub; m.seq = w.seq; m.src = w.src; m.arrive = raw_now();
    {
      std::lock_guard<std::mutex> l(mu);
      for (int s : it->second) enqueue_inter(s, m);
    }
    notify_ready();
  }
}

void make_gid(uint8_t *gid, int kind, int counter)
{
  // vendor / host / process / entity, like a DDS GUID (prefix 12 + entity id 4)
  memset(gid, 0, 24);
  gid[0] = 0x01; gid[1] = 0x0f;
  uint32_t h = procs[me].host_idx + 1, pid = getpid();
  memcpy(gid + 2, &h, 2);
  memcpy(gid + 4, &pid, 4);
  gid[8] = (uint8_t)me; gid[9] = 0; gid[10] = 0; gid[11] = 1;
  gid[12] = (uint8_t)(counter >> 16); gid[13] = (uint8_t)(counter >> 8); gid[14] = (uint8_t)counter;
  gid[15] = (uint8_t)kind;
}

// ---------------------------------------------------------------- initialization
const char *param_srv[6][2] = {
  {"get_parameters", "GetParameters"}, {"get_parameter_types", "GetParameterTypes"},
  {"set_parameters", "SetParameters"}, {"set_parameters_atomically", "SetParametersAtomically"},
  {"describe_parameters", "DescribeParameters"}, {"list_parameters", "ListParameters"}};

void init_objects()
{
  void *context = obj(312);
  if (g_caret) {
    TPC(rcl_init, context, init_stamp());
    // CARET's trace node starts with the first init event after rcl_init
    TPC(caret_init, g_realtime_minus_mono, distro_name.c_str());
    TPC(rmw_implementation, "rmw_cyclonedds_cpp", init_stamp());
  } else {
    TP(rcl_init, context, version_str.c_str());
  }
  int gid_counter = 0x100;
  uint8_t gid[24];
  for (size_t ni = 0; ni < nodes.size(); ++ni) {
    Node &n = nodes[ni];
    if (n.proc != me) continue;
    n.handle = obj(16);
    n.rmw = obj(48);
    // rcl_node_init creates the /rosout publisher before its own tracepoint
    void *ro_rmw = obj(48), *ro = obj(8);
    make_gid(gid, 0x03, gid_counter++);
    TP_NOT_CARET(rmw_publisher_init, ro_rmw, gid);
    TP_INIT(rcl_publisher_init, ro, n.handle, ro_rmw, "/rosout", (size_t)1000);
    TP_INIT(rcl_node_init, n.handle, n.rmw, n.name.c_str(), n.ns.c_str());
    std::string fq = (n.ns == "/" ? "" : n.ns) + "/" + n.name;
    for (int k = 0; k < 6; ++k) {
      void *srv = obj(8), *srv_rmw = obj(40), *cb = obj(32);
      std::string sname = fq + "/" + param_srv[k][0];
      n.services.push_back(srv);
      TP_INIT(rcl_service_init, srv, n.handle, srv_rmw, sname.c_str());
      TP_INIT(rclcpp_service_callback_added, srv, cb);
      std::string sym = std::string("rclcpp::ParameterService::ParameterService(std::shared_ptr<rclcpp::node_interfaces::NodeBaseInterface>, "
        "std::shared_ptr<rclcpp::node_interfaces::NodeServicesInterface>, rclcpp::node_interfaces::NodeParametersInterface*, "
        "rmw_qos_profile_s const&)::{lambda(std::shared_ptr<rmw_request_id_s>, std::shared_ptr<rcl_interfaces::srv::") +
        param_srv[k][1] + "_Request_<std::allocator<void> > >, std::shared_ptr<rcl_interfaces::srv::" + param_srv[k][1] +
        "_Response_<std::allocator<void> > >)#" + std::to_string(k + 1) + "}";
      TP_INIT(rclcpp_callback_register, cb, sym.c_str());
    }
    void *pe_rmw = obj(48), *pe = obj(8);
    make_gid(gid, 0x03, gid_counter++);
    TP_NOT_CARET(rmw_publisher_init, pe_rmw, gid);
    TP_INIT(rcl_publisher_init, pe, n.handle, pe_rmw, "/parameter_events", (size_t)1000);

    for (auto &p : pubs) {
      if (&nodes[p.node] != &n) continue;
      p.rmw = obj(48);
      p.rcl = obj(8);
      make_gid(p.gid, 0x03, gid_counter++);
      TP_NOT_CARET(rmw_publisher_init, p.rmw, p.gid);
      p.dds_writer = obj(64);
      TPD(create_writer, p.dds_writer, ("rt" + topics[p.topic]).c_str(), p.gid);
      TP_INIT(rcl_publisher_init, p.rcl, n.handle, p.rmw, topics[p.topic].c_str(), (size_t)p.depth);
    }
    for (size_t si = 0; si < subs.size(); ++si) {
      Sub &s = subs[si];
      if (&nodes[s.node] != &n) continue;
      s.local = true;
      s.rmw = obj(48);
      s.rcl = obj(8);
      make_gid(gid, 0x04, gid_counter++);
      TP_NOT_CARET(rmw_subscription_init, s.rmw, gid);
      s.dds_reader = obj(64);
      TPD(create_reader, s.dds_reader, ("rt" + topics[s.topic]).c_str(), gid);
      TP_INIT(rcl_subscription_init, s.rcl, n.handle, s.rmw, topics[s.topic].c_str(), (size_t)s.depth);
      const std::string &sym = cbs[s.cb].sym;
      if (s.has_intra) {
        s.ring = obj(96); s.ipb = obj(64); s.sip = obj(256); s.intra_cb = obj(160);
        s.ring_items.resize(std::max(1, s.depth));
        s.w_idx = s.ring_items.size() - 1; s.r_idx = 0; s.r_size = 0;
#if ROS2SIM_DISTRO >= 2
        TP(rclcpp_construct_ring_buffer, s.ring, (uint64_t)s.ring_items.size());
        TP(rclcpp_buffer_to_ipb, s.ring, s.ipb);
        TP(rclcpp_ipb_to_subscription, s.ipb, s.sip);
#endif
        TP_INIT(rclcpp_subscription_callback_added, s.sip, s.intra_cb);
        TP_INIT(rclcpp_callback_register, s.intra_cb, sym.c_str());
        TP_INIT(rclcpp_subscription_init, s.rcl, s.sip);
      }
      s.obj = obj(384);
      s.cbaddr = obj(160);
      TP_INIT(rclcpp_subscription_init, s.rcl, s.obj);
      TP_INIT(rclcpp_subscription_callback_added, s.obj, s.cbaddr);
      TP_INIT(rclcpp_callback_register, s.cbaddr, sym.c_str());
    }
    for (auto &t : timers) {
      if (&nodes[t.node] != &n) continue;
      t.rcl = obj(8);
      t.cbaddr = obj(32);
      TP_INIT(rcl_timer_init, t.rcl, t.period);
      TP_INIT(rclcpp_timer_callback_added, t.rcl, t.cbaddr);
      TP_INIT(rclcpp_callback_register, t.cbaddr, cbs[t.cb].sym.c_str());
      TP_INIT(rclcpp_timer_link_node, t.rcl, n.handle);
      t.next = t_start + t.offset + t.period;
    }
#if ROS2SIM_DISTRO >= 3
    // user annotations of indirect causal links (message-flow analysis)
    for (auto &t : timers) {
      if (&nodes[t.node] != &n || cbs[t.cb].mode != M_ASYNC) continue;
      std::vector<const void *> ls, lp;
      for (int si : cbs[t.cb].ins) ls.push_back(subs[si].rcl);
      for (int pi : cbs[t.cb].outs) lp.push_back(pubs[pi].rcl);
      TP(message_link_periodic_async, ls.data(), ls.size(), lp.data(), lp.size());
    }
    for (auto &g : syncs) {
      if (&nodes[g.node] != &n) continue;
      std::vector<const void *> ls, lp;
      for (int si : g.subs) ls.push_back(subs[si].rcl);
      for (int pi : g.pubs) lp.push_back(pubs[pi].rcl);
      TP(message_link_partial_sync, ls.data(), ls.size(), lp.data(), lp.size());
    }
#endif
  }
}

// CARET's executor structure events: the executor, one callback group per node
// (rclcpp's default group of the node) and the entities added to it.
void caret_executor_structure()
{
  void *executor = obj(256);
  TPC(construct_executor, executor, procs[me].multi ? "multi_threaded_executor" : "single_threaded_executor",
      init_stamp());
  for (auto &n : nodes) {
    if (n.proc != me) continue;
    void *group = obj(128);
    TPC(add_callback_group, executor, group, n.reentrant ? "reentrant" : "mutually_exclusive", init_stamp());
    for (auto &t : timers)
      if (&nodes[t.node] == &n) TPC(callback_group_add_timer, group, t.rcl, init_stamp());
    for (auto &s : subs)
      if (s.local && &nodes[s.node] == &n) TPC(callback_group_add_subscription, group, s.rcl, init_stamp());
    for (void *srv : n.services) TPC(callback_group_add_service, group, srv, init_stamp());
  }
}

// A provider that is not ros2_tracing's, loaded before the first event: CARET's is an
// LD_PRELOAD library, the DDS instrumentation is built into the DDS library.
void load_provider(const char *name)
{
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n < 0) die("readlink /proc/self/exe: %s", strerror(errno));
  exe[n] = 0;
  std::string dir(exe);
  dir = dir.substr(0, dir.rfind('/'));
  std::string lib = dir + "/" + name;
  if (!dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL)) die("cannot load %s: %s", lib.c_str(), dlerror());
}

void write_objects(const std::string &path)
{
  // the handles this process used, so the ground truth can name them
  FILE *f = fopen(path.c_str(), "w");
  if (!f) die("cannot write %s", path.c_str());
  for (size_t i = 0; i < pubs.size(); ++i)
    if (nodes[pubs[i].node].proc == me)
      fprintf(f, "pub,%zu,0x%" PRIxPTR ",0x%" PRIxPTR ",\n", i, (uintptr_t)pubs[i].rcl, (uintptr_t)pubs[i].rmw);
  for (size_t i = 0; i < subs.size(); ++i)
    if (subs[i].local)
      fprintf(f, "sub,%zu,0x%" PRIxPTR ",0x%" PRIxPTR ",0x%" PRIxPTR ",0x%" PRIxPTR ",0x%" PRIxPTR "\n", i,
              (uintptr_t)subs[i].rcl, (uintptr_t)subs[i].rmw, (uintptr_t)subs[i].cbaddr,
              (uintptr_t)subs[i].intra_cb, (uintptr_t)subs[i].ring);
  for (size_t i = 0; i < timers.size(); ++i)
    if (nodes[timers[i].node].proc == me)
      fprintf(f, "timer,%zu,0x%" PRIxPTR ",0x%" PRIxPTR ",\n", i, (uintptr_t)timers[i].rcl, (uintptr_t)timers[i].cbaddr);
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].proc == me)
      fprintf(f, "node,%zu,0x%" PRIxPTR ",,\n", i, (uintptr_t)nodes[i].handle);
  fclose(f);
}

void sleep_until_raw(uint64_t t)
{
  timespec ts{(time_t)(t / 1000000000ULL), (long)(t % 1000000000ULL)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {}
}

}  // namespace

int main(int argc, char **argv)
{
  if (argc != 4) {
    fprintf(stderr, "usage: %s PLAN_FILE PROCESS_INDEX GT_DIR\n", argv[0]);
    return 2;
  }
  me = atoi(argv[2]);
  load_plan(argv[1]);
  std::string gt_dir = argv[3];
  Proc &pr = procs[me];
  prctl(PR_SET_NAME, pr.name.substr(0, 15).c_str(), 0, 0, 0);
  r2s_clock_from_env(&g_clock);
  {
    timespec rt, mt;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mt);
    g_realtime_minus_mono = ((int64_t)rt.tv_sec - mt.tv_sec) * 1000000000LL + (rt.tv_nsec - mt.tv_nsec);
  }
  if (version_str.empty()) version_str = "0.0.0";

  sock_fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  if (sock_fd < 0) die("socket: %s", strerror(errno));
  peer_addr.resize(procs.size());
  for (size_t i = 0; i < procs.size(); ++i) {
    if (procs[i].sock.size() >= sizeof(peer_addr[i].sun_path)) die("socket path too long: %s", procs[i].sock.c_str());
    memset(&peer_addr[i], 0, sizeof(sockaddr_un));
    peer_addr[i].sun_family = AF_UNIX;
    strcpy(peer_addr[i].sun_path, procs[i].sock.c_str());
  }
  unlink(pr.sock.c_str());
  if (bind(sock_fd, (sockaddr *)&peer_addr[me], sizeof(sockaddr_un)) < 0)
    die("bind %s: %s", pr.sock.c_str(), strerror(errno));
  int rcvbuf = 8 << 20;
  setsockopt(sock_fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);

  std::string base = gt_dir + "/" + std::to_string(me) + ".";
  gt_msgs.open(base + "messages.part");
  gt_links.open(base + "links.part");
  gt_deliv.open(base + "deliveries.part");
  gt_cbs.open(base + "callbacks.part");

  if (g_caret) load_provider("libros2sim_caret_tp.so");
  if (g_dds) load_provider("libros2sim_dds_tp.so");
  init_objects();
  if (g_caret) caret_executor_structure();
  write_objects(base + "objects.part");

  std::thread rx(receiver_thread);
  sleep_until_raw(t_start);
  std::vector<std::thread> ex;
  int nthreads = pr.multi ? std::max(1, pr.threads) : 1;
  for (int i = 0; i < nthreads; ++i) ex.emplace_back(executor_thread, i);
  sleep_until_raw(t_end);
  {
    std::lock_guard<std::mutex> l(mu);
    stopping = true;
  }
  cv.notify_all();
  for (auto &t : ex) t.join();
  // keep receiving until every process has stopped publishing
  sleep_until_raw(t_end + grace);
  Wire stop{WIRE_STOP, 0, 0, 0};
  sendto(sock_fd, &stop, sizeof stop, 0, (sockaddr *)&peer_addr[me], sizeof(sockaddr_un));
  rx.join();
  for (size_t s = 0; s < subs.size(); ++s) {
    if (!subs[s].local) continue;
    for (auto &m : subs[s].q) gt_delivery(m, s, false, "untaken", 0, 0, 0, 0, 0, 0, nullptr);
    for (uint64_t k = 0; k < subs[s].r_size; ++k)
      gt_delivery(subs[s].ring_items[(subs[s].r_idx + k) % subs[s].ring_items.size()], s, true, "untaken",
                  0, 0, 0, 0, 0, 0, nullptr);
  }
  gt_msgs.close(); gt_links.close(); gt_deliv.close(); gt_cbs.close();
  close(sock_fd);
  unlink(pr.sock.c_str());
  return 0;
}
