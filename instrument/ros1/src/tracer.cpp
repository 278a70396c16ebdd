// roscope ROS 1 tracer: an LD_PRELOAD library for unmodified roscpp programs.
//
// It interposes a handful of exported libroscpp functions (resolved through the
// PLT or vtable relocations, so the preloaded definitions win), emits LTTng-UST
// events of provider roscope_ros1 and calls the original via dlsym(RTLD_NEXT).
// Design and event reference: docs/ros1-tracer.md.
//
// `roscope record` preloads it into every process of a launch (shells, sleeps,
// ...). It links neither liblttng-ust nor libroscpp: its tracepoints use dynamic
// probe linkage, and only a process that has roscpp loaded (checked at load
// time) or whose rospy hook asks for it (roscope_ros1_py_enable) loads the
// probe provider libroscope_ros1_tp.so beside it, which brings liblttng-ust
// (its registration with the session daemon and its listener threads). In any
// other process it does nothing.
//
// Hot-path rules: no syscalls, no allocation, no locks beyond LTTng's own.
// Hot-path state is one relaxed atomic counter and initial-exec thread-locals.
// Everything that allocates (names, symbols, socket addresses) runs at
// initialization time (advertise/subscribe/createTimer/connection setup).

#include <ros/ros.h>
#include <ros/connection.h>
#include <ros/header.h>
#include <ros/message_deserializer.h>
#include <ros/publication.h>
#include <ros/service_callback_helper.h>
#include <ros/subscription_callback_helper.h>
#include <ros/transport/transport_tcp.h>
#include <ros/transport_publisher_link.h>
#include <ros/transport_subscriber_link.h>

#include <arpa/inet.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define LTTNG_UST_TRACEPOINT_DEFINE
#define LTTNG_UST_TRACEPOINT_PROBE_DYNAMIC_LINKAGE
#include "roscope_ros1_tp.h"
#include "roscope/roscope_attach_tp.h"
#include "state.h"

// The roscpp functions this library calls (not the interposed ones: those it
// resolves with dlsym). They are weak, so that loading it into a process without
// roscpp never fails (even with LD_BIND_NOW); only roscpp's own calls into the
// interposed functions, hence only processes with roscpp, reach them. (An
// assembler directive: `#pragma weak` does not reach C++ mangled names.)
__asm__(
    ".weak _ZN3ros10SubscriberD1Ev\n"
    ".weak _ZN3ros13ServiceServerD1Ev\n"
    ".weak _ZN3ros5TimerD1Ev\n"
    ".weak _ZN3ros9PublisherD1Ev\n"
    ".weak _ZN3ros9this_node7getNameB5cxx11Ev\n"
    ".weak _ZNK3ros10Subscriber8getTopicB5cxx11Ev\n"
    ".weak _ZNK3ros13ServiceServer10getServiceB5cxx11Ev\n"
    ".weak _ZNK3ros6Header8getValueERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEERS6_\n"
    ".weak _ZNK3ros9Publisher8getTopicB5cxx11Ev\n");

#define ROSCOPE_TRACER_VERSION "roscope_ros1 0.1"
#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))

// ---------------------------------------------------------------------------
// Access to the few private members we need (explicit instantiation is exempt
// from access checks; compile-checked against the installed roscpp headers).
template <typename Tag, typename Tag::type M>
struct Rob { friend typename Tag::type get(Tag) { return M; } };

struct TcpSockTag { typedef int ros::TransportTCP::*type; friend type get(TcpSockTag); };
template struct Rob<TcpSockTag, &ros::TransportTCP::sock_>;

static_assert(sizeof(ros::Publisher) == sizeof(boost::shared_ptr<int>), "Publisher layout");
static_assert(sizeof(ros::Subscriber) == sizeof(boost::shared_ptr<int>), "Subscriber layout");
static_assert(sizeof(ros::Timer) == sizeof(boost::shared_ptr<int>), "Timer layout");
static_assert(sizeof(ros::ServiceServer) == sizeof(boost::shared_ptr<int>), "ServiceServer layout");

// The handle of a Publisher/Subscriber/Timer/ServiceServer is its Impl pointer:
// the first word of the object (a boost::shared_ptr<Impl>).
static inline const void* impl_of(const void* obj) { return *reinterpret_cast<const void* const*>(obj); }

// ---------------------------------------------------------------------------
// Originals.
namespace orig {
#define ROSCOPE_ORIGINALS(X) \
  X(init_map, "_ZN3ros4initERKSt3mapINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEES6_St4lessIS6_ESaISt4pairIKS6_S6_EEERSA_j") \
  X(advertise, "_ZN3ros10NodeHandle9advertiseERNS_16AdvertiseOptionsE") \
  X(subscribe, "_ZN3ros10NodeHandle9subscribeERNS_16SubscribeOptionsE") \
  X(create_timer, "_ZNK3ros10NodeHandle11createTimerERNS_12TimerOptionsE") \
  X(advertise_service, "_ZN3ros10NodeHandle16advertiseServiceERNS_23AdvertiseServiceOptionsE") \
  X(publisher_publish, "_ZNK3ros9Publisher7publishERKN5boost8functionIFNS_17SerializedMessageEvEEERS3_") \
  X(publication_publish, "_ZN3ros11Publication7publishERNS_17SerializedMessageE") \
  X(tsl_start_write, "_ZN3ros23TransportSubscriberLink17startMessageWriteEb") \
  X(tsl_handle_header, "_ZN3ros23TransportSubscriberLink12handleHeaderERKNS_6HeaderE") \
  X(connection_write, "_ZN3ros10Connection5writeERKN5boost12shared_arrayIhEEjRKNS1_8functionIFvRKNS1_10shared_ptrIS0_EEEEEb") \
  X(tpl_on_header, "_ZN3ros22TransportPublisherLink16onHeaderReceivedERKN5boost10shared_ptrINS_10ConnectionEEERKNS_6HeaderE") \
  X(tpl_handle_message, "_ZN3ros22TransportPublisherLink13handleMessageERKNS_17SerializedMessageEbb") \
  X(md_ctor, "_ZN3ros19MessageDeserializerC1ERKN5boost10shared_ptrINS_26SubscriptionCallbackHelperEEERKNS_17SerializedMessageERKNS2_ISt3mapINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESG_St4lessISG_ESaISt4pairIKSG_SG_EEEEE") \
  X(md_deserialize, "_ZN3ros19MessageDeserializer11deserializeEv") \
  X(call_one_cb, "_ZN3ros13CallbackQueue9callOneCBEPNS0_3TLSE")

#define DECLARE_PTR(n, s) static void* n;
ROSCOPE_ORIGINALS(DECLARE_PTR)
#undef DECLARE_PTR

static void* resolve(const char* sym) {
  void* p = dlsym(RTLD_NEXT, sym);
  if (!p) {
    fprintf(stderr, "roscope_ros1: fatal: cannot resolve %s in libroscpp (%s); "
                    "this tracer needs roscpp 1.15 (Noetic ABI)\n", sym, dlerror());
    abort();
  }
  return p;
}

static void resolve_all() {
#define RESOLVE(n, s) n = resolve(s);
  ROSCOPE_ORIGINALS(RESOLVE)
#undef RESOLVE
}
}  // namespace orig

// Loads the probe provider (and with it liblttng-ust, whose constructor registers
// with the session daemon before dlopen returns), then says which process this is.
// Once per process.
static std::atomic<int> g_tracing{0};

static void start_tracing() {
  int no = 0;
  if (!g_tracing.compare_exchange_strong(no, 1)) return;
  Dl_info me;
  std::string path = "libroscope_ros1_tp.so";
  if (dladdr(reinterpret_cast<void*>(&start_tracing), &me) && me.dli_fname && strchr(me.dli_fname, '/')) {
    path = me.dli_fname;
    path = path.substr(0, path.rfind('/') + 1) + "libroscope_ros1_tp.so";
  }
  if (!dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
    fprintf(stderr, "roscope_ros1: cannot load the tracepoint provider %s (%s): this process is not traced\n",
            path.c_str(), dlerror());
    return;
  }
  const char* id = getenv("ROSCOPE_RECORD_ID");
  char exe[512] = {0};
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n < 0) exe[0] = 0;
  lttng_ust_tracepoint(roscope_ros1, process_init, id ? id : "", exe);
  roscope_state::start_dump_watch();
}

// At load, after the tracepoint registration constructors above (same
// translation unit, defined earlier): a process with roscpp (the first original
// resolves) is traced; any other process is left alone.
__attribute__((constructor)) static void init_if_roscpp() {
  if (!dlsym(RTLD_NEXT, "_ZN3ros4initERKSt3mapINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEES6_St4lessIS6_ESaISt4pairIKS6_S6_EEERSA_j"))
    return;
  orig::resolve_all();
  start_tracing();
}

template <typename F>
static inline F as(void* p) { return reinterpret_cast<F>(p); }

// ---------------------------------------------------------------------------
// Hot-path state.
static std::atomic<uint64_t> g_message_counter{0};
static TLS uint64_t tl_message_id = 0;            // set while inside Publisher::publish
static TLS const void* tl_tx_link = nullptr;     // set while inside startMessageWrite
static TLS const void* tl_deserializer = nullptr;  // last MessageDeserializer::deserialize on this thread

// ---------------------------------------------------------------------------
// State dump and write positions: state.cpp.
using namespace roscope_state;

// Hot path: one load of the tracepoint's state and one relaxed load.
static inline void check_dump() {
  int now = lttng_ust_tracepoint_enabled(roscope_attach, request) ? 1 : 0;
  if (__builtin_expect(now != g_dump_last.load(std::memory_order_relaxed), 0)) dump_state_changed();
}

// ---------------------------------------------------------------------------
// Init-time helpers (allocate freely).
static std::string demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = (status == 0 && d) ? d : name;
  free(d);
  return out;
}

// Look addr up in the ELF .symtab of the object containing it (for programs not
// linked with -rdynamic, whose functions are absent from .dynsym).
static std::string symtab_lookup(const char* path, uintptr_t base, uintptr_t addr) {
  std::string result;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return result;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) { close(fd); return result; }
  void* map = mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return result;
  const char* img = static_cast<const char*>(map);
  const Elf64_Ehdr* eh = reinterpret_cast<const Elf64_Ehdr*>(img);
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
      eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) <= (uint64_t)st.st_size) {
    uintptr_t rel = eh->e_type == ET_DYN ? addr - base : addr;
    const Elf64_Shdr* sh = reinterpret_cast<const Elf64_Shdr*>(img + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum && result.empty(); ++i) {
      if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum) continue;
      const Elf64_Shdr& strsh = sh[sh[i].sh_link];
      if (sh[i].sh_offset + sh[i].sh_size > (uint64_t)st.st_size ||
          strsh.sh_offset + strsh.sh_size > (uint64_t)st.st_size) continue;
      const Elf64_Sym* syms = reinterpret_cast<const Elf64_Sym*>(img + sh[i].sh_offset);
      size_t n = sh[i].sh_size / sizeof(Elf64_Sym);
      for (size_t k = 0; k < n; ++k) {
        if (ELF64_ST_TYPE(syms[k].st_info) != STT_FUNC || syms[k].st_value == 0) continue;
        if (rel >= syms[k].st_value && rel < syms[k].st_value + (syms[k].st_size ? syms[k].st_size : 1)) {
          if (syms[k].st_name < strsh.sh_size) result = demangle(img + strsh.sh_offset + syms[k].st_name);
          break;
        }
      }
    }
  }
  munmap(map, st.st_size);
  return result;
}

static std::string code_symbol(const void* addr) {
  Dl_info info;
  if (!addr || !dladdr(addr, &info)) return std::string();
  if (info.dli_sname && info.dli_saddr == addr) return demangle(info.dli_sname);
  if (info.dli_fname && info.dli_fname[0]) {
    const char* path = info.dli_fname;
    std::string exe;
    if (info.dli_fbase == dlopen(nullptr, RTLD_NOLOAD) || !strchr(path, '/')) exe = "/proc/self/exe";
    std::string s = symtab_lookup(exe.empty() ? path : exe.c_str(), (uintptr_t)info.dli_fbase, (uintptr_t)addr);
    if (s.empty() && exe.empty()) s = symtab_lookup("/proc/self/exe", (uintptr_t)info.dli_fbase, (uintptr_t)addr);
    if (!s.empty()) return s;
  }
  return std::string();
}

// Symbol of the callable stored in a boost::function: the function for plain
// function pointers and boost::bind of a (member) function, else the demangled
// type of the callable (e.g. a lambda), like ros2_tracing's get_symbol().
static std::string function_symbol(const boost::function_base& f, int depth = 0) {
  if (f.empty()) return "<empty>";
  const boost::typeindex::type_info& ti = f.target_type();
  std::string tname = demangle(ti.name());
  boost::detail::function::function_buffer out;
  out.members.type.type = &ti;
  out.members.type.const_qualified = false;
  out.members.type.volatile_qualified = false;
  f.get_vtable()->manager(f.functor, out, boost::detail::function::check_functor_type_tag);
  const void* obj = out.members.obj_ptr;
  // roscpp often wraps the user's callable in another boost::function.
  if (obj && depth < 4 && tname.compare(0, 16, "boost::function<") == 0)
    return function_symbol(*static_cast<const boost::function_base*>(obj), depth + 1);
  if (obj && (tname.find("(*)(") != std::string::npos || tname.compare(0, 19, "boost::_bi::bind_t<") == 0)) {
    // Function pointer: the stored object is the pointer. bind_t: its first
    // member is the bound function pointer or member-function pointer, whose
    // first word is the code address (odd = virtual, unresolvable).
    uintptr_t p = *static_cast<const uintptr_t*>(obj);
    if (p && !(p & 1)) {
      std::string s = code_symbol(reinterpret_cast<const void*>(p));
      if (!s.empty()) return s;
    }
  }
  return tname;
}

// Helpers generated by roscpp's templates keep the user's boost::function as
// their first data member; anything else is described by its type.
template <typename Helper>
static std::string helper_symbol(const Helper* h, const char* templ_prefix) {
  std::string tname = demangle(typeid(*h).name());
  if (tname.compare(0, strlen(templ_prefix), templ_prefix) == 0) {
    const boost::function_base* f = reinterpret_cast<const boost::function_base*>(
        reinterpret_cast<const char*>(h) + sizeof(void*));
    return function_symbol(*f);
  }
  return tname;
}

static std::string sockaddr_str(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN + 16] = {0};
  char host[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    const sockaddr_in* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    snprintf(buf, sizeof buf, "%s:%u", host, ntohs(a->sin_port));
  } else if (ss.ss_family == AF_INET6) {
    const sockaddr_in6* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    snprintf(buf, sizeof buf, "[%s]:%u", host, ntohs(a->sin6_port));
  }
  return buf;
}

static void connection_addrs(const ros::ConnectionPtr& conn, std::string& local, std::string& remote) {
  if (!conn) return;
  const ros::TransportPtr& t = conn->getTransport();
  if (!t || strcmp(t->getType(), "TCPROS") != 0) return;
  int fd = static_cast<ros::TransportTCP*>(t.get())->*get(TcpSockTag());
  sockaddr_storage ss;
  socklen_t len = sizeof ss;
  memset(&ss, 0, sizeof ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) local = sockaddr_str(ss);
  len = sizeof ss;
  memset(&ss, 0, sizeof ss);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) remote = sockaddr_str(ss);
}

// ---------------------------------------------------------------------------
// Callback wrappers.
namespace {

struct CallbackSpan {
  const void* cb;
  CallbackSpan(const void* c, const void* deser) : cb(c) {
    check_dump();
    lttng_ust_tracepoint(roscope_ros1, callback_start, c, deser);
  }
  ~CallbackSpan() { lttng_ust_tracepoint(roscope_ros1, callback_end, cb); }
};

class TracedSubscriptionHelper : public ros::SubscriptionCallbackHelper {
 public:
  explicit TracedSubscriptionHelper(const ros::SubscriptionCallbackHelperPtr& inner) : inner_(inner) {}
  ros::VoidConstPtr deserialize(const ros::SubscriptionCallbackHelperDeserializeParams& p) override {
    return inner_->deserialize(p);  // outside the callback span, as in roscpp itself
  }
  void call(ros::SubscriptionCallbackHelperCallParams& p) override {
    const void* d = tl_deserializer;
    tl_deserializer = nullptr;
    CallbackSpan span(this, d);
    inner_->call(p);
  }
  const std::type_info& getTypeInfo() override { return inner_->getTypeInfo(); }
  bool isConst() override { return inner_->isConst(); }
  bool hasHeader() override { return inner_->hasHeader(); }
  const ros::SubscriptionCallbackHelperPtr& inner() const { return inner_; }

 private:
  ros::SubscriptionCallbackHelperPtr inner_;
};

class TracedServiceHelper : public ros::ServiceCallbackHelper {
 public:
  explicit TracedServiceHelper(const ros::ServiceCallbackHelperPtr& inner) : inner_(inner) {}
  bool call(ros::ServiceCallbackHelperCallParams& p) override {
    CallbackSpan span(this, nullptr);
    return inner_->call(p);
  }

 private:
  ros::ServiceCallbackHelperPtr inner_;
};

struct TracedTimerCallback {
  ros::TimerCallback inner;
};

struct TimerTrampoline {
  boost::shared_ptr<TracedTimerCallback> cb;
  void operator()(const ros::TimerEvent& e) const {
    CallbackSpan span(cb.get(), nullptr);
    cb->inner(e);
  }
};

}  // namespace

// ---------------------------------------------------------------------------
// Interposed functions. Each is given the exact mangled name of the libroscpp
// function it replaces; member functions take `this` first (Itanium ABI).

#define ROSCOPE_SYMBOL(s) __asm__(s) EXPORT

void wrap_init_map(const ros::M_string& remappings, const std::string& name, uint32_t options)
    ROSCOPE_SYMBOL("_ZN3ros4initERKSt3mapINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEES6_St4lessIS6_ESaISt4pairIKS6_S6_EEERSA_j");
void wrap_init_map(const ros::M_string& remappings, const std::string& name, uint32_t options) {
  as<void (*)(const ros::M_string&, const std::string&, uint32_t)>(orig::init_map)(remappings, name, options);
  lttng_ust_tracepoint(roscope_ros1, node_init, ros::this_node::getName().c_str(), ROSCOPE_TRACER_VERSION);
  remember(PY_NODE_INIT, 0, 0, ros::this_node::getName().c_str(), ROSCOPE_TRACER_VERSION, nullptr, nullptr, 0, 0);
}

ros::Publisher wrap_advertise(ros::NodeHandle* nh, ros::AdvertiseOptions& ops)
    ROSCOPE_SYMBOL("_ZN3ros10NodeHandle9advertiseERNS_16AdvertiseOptionsE");
ros::Publisher wrap_advertise(ros::NodeHandle* nh, ros::AdvertiseOptions& ops) {
  ros::Publisher pub = as<ros::Publisher (*)(ros::NodeHandle*, ros::AdvertiseOptions&)>(orig::advertise)(nh, ops);
  if (impl_of(&pub)) {
    lttng_ust_tracepoint(roscope_ros1, publisher_init, impl_of(&pub), ros::this_node::getName().c_str(),
                         nh->getNamespace().c_str(), pub.getTopic().c_str(), ops.datatype.c_str(),
                         ops.queue_size, ops.latch ? 1 : 0);
    remember(PY_PUBLISHER_INIT, (uint64_t)(uintptr_t)impl_of(&pub), 0, ros::this_node::getName().c_str(),
             nh->getNamespace().c_str(), pub.getTopic().c_str(), ops.datatype.c_str(), ops.queue_size, ops.latch ? 1 : 0);
  }
  return pub;
}

ros::Subscriber wrap_subscribe(ros::NodeHandle* nh, ros::SubscribeOptions& ops)
    ROSCOPE_SYMBOL("_ZN3ros10NodeHandle9subscribeERNS_16SubscribeOptionsE");
ros::Subscriber wrap_subscribe(ros::NodeHandle* nh, ros::SubscribeOptions& ops) {
  boost::shared_ptr<TracedSubscriptionHelper> traced;
  std::string symbol;
  if (ops.helper) {
    symbol = helper_symbol(ops.helper.get(), "ros::SubscriptionCallbackHelperT<");
    traced = boost::make_shared<TracedSubscriptionHelper>(ops.helper);
    ops.helper = traced;
  }
  ros::Subscriber sub = as<ros::Subscriber (*)(ros::NodeHandle*, ros::SubscribeOptions&)>(orig::subscribe)(nh, ops);
  if (traced && impl_of(&sub)) {
    lttng_ust_tracepoint(roscope_ros1, subscription_init, impl_of(&sub), traced.get(),
                         ros::this_node::getName().c_str(), nh->getNamespace().c_str(),
                         sub.getTopic().c_str(), ops.datatype.c_str(), ops.queue_size);
    lttng_ust_tracepoint(roscope_ros1, callback_register, traced.get(), "subscription", symbol.c_str());
    remember(PY_SUBSCRIPTION_INIT, (uint64_t)(uintptr_t)impl_of(&sub), (uint64_t)(uintptr_t)traced.get(),
             ros::this_node::getName().c_str(), nh->getNamespace().c_str(), sub.getTopic().c_str(),
             ops.datatype.c_str(), ops.queue_size, 0);
    remember(PY_CALLBACK_REGISTER, (uint64_t)(uintptr_t)traced.get(), 0, "subscription", symbol.c_str(), nullptr,
             nullptr, 0, 0);
  }
  return sub;
}

ros::Timer wrap_create_timer(const ros::NodeHandle* nh, ros::TimerOptions& ops)
    ROSCOPE_SYMBOL("_ZNK3ros10NodeHandle11createTimerERNS_12TimerOptionsE");
ros::Timer wrap_create_timer(const ros::NodeHandle* nh, ros::TimerOptions& ops) {
  boost::shared_ptr<TracedTimerCallback> cb;
  std::string symbol;
  if (ops.callback) {
    symbol = function_symbol(ops.callback);
    cb = boost::make_shared<TracedTimerCallback>();
    cb->inner = ops.callback;
    ops.callback = TimerTrampoline{cb};
  }
  ros::Timer t = as<ros::Timer (*)(const ros::NodeHandle*, ros::TimerOptions&)>(orig::create_timer)(nh, ops);
  if (cb && impl_of(&t)) {
    lttng_ust_tracepoint(roscope_ros1, timer_init, impl_of(&t), cb.get(), ros::this_node::getName().c_str(),
                         nh->getNamespace().c_str(), (int64_t)ops.period.toNSec(), ops.oneshot ? 1 : 0);
    lttng_ust_tracepoint(roscope_ros1, callback_register, cb.get(), "timer", symbol.c_str());
    remember(PY_TIMER_INIT, (uint64_t)(uintptr_t)impl_of(&t), (uint64_t)(uintptr_t)cb.get(),
             ros::this_node::getName().c_str(), nh->getNamespace().c_str(), nullptr, nullptr,
             (int64_t)ops.period.toNSec(), ops.oneshot ? 1 : 0);
    remember(PY_CALLBACK_REGISTER, (uint64_t)(uintptr_t)cb.get(), 0, "timer", symbol.c_str(), nullptr, nullptr, 0, 0);
  }
  return t;
}

ros::ServiceServer wrap_advertise_service(ros::NodeHandle* nh, ros::AdvertiseServiceOptions& ops)
    ROSCOPE_SYMBOL("_ZN3ros10NodeHandle16advertiseServiceERNS_23AdvertiseServiceOptionsE");
ros::ServiceServer wrap_advertise_service(ros::NodeHandle* nh, ros::AdvertiseServiceOptions& ops) {
  boost::shared_ptr<TracedServiceHelper> traced;
  std::string symbol;
  if (ops.helper) {
    symbol = helper_symbol(ops.helper.get(), "ros::ServiceCallbackHelperT<");
    traced = boost::make_shared<TracedServiceHelper>(ops.helper);
    ops.helper = traced;
  }
  ros::ServiceServer srv =
      as<ros::ServiceServer (*)(ros::NodeHandle*, ros::AdvertiseServiceOptions&)>(orig::advertise_service)(nh, ops);
  if (traced && impl_of(&srv)) {
    lttng_ust_tracepoint(roscope_ros1, service_init, impl_of(&srv), traced.get(),
                         ros::this_node::getName().c_str(), nh->getNamespace().c_str(),
                         srv.getService().c_str(), ops.datatype.c_str());
    lttng_ust_tracepoint(roscope_ros1, callback_register, traced.get(), "service", symbol.c_str());
    remember(PY_SERVICE_INIT, (uint64_t)(uintptr_t)impl_of(&srv), (uint64_t)(uintptr_t)traced.get(),
             ros::this_node::getName().c_str(), nh->getNamespace().c_str(), srv.getService().c_str(),
             ops.datatype.c_str(), 0, 0);
    remember(PY_CALLBACK_REGISTER, (uint64_t)(uintptr_t)traced.get(), 0, "service", symbol.c_str(), nullptr, nullptr,
             0, 0);
  }
  return srv;
}

// --- publication (hot path) ---

void wrap_publisher_publish(const ros::Publisher* self, const boost::function<ros::SerializedMessage()>& serfunc,
                            ros::SerializedMessage& m)
    ROSCOPE_SYMBOL("_ZNK3ros9Publisher7publishERKN5boost8functionIFNS_17SerializedMessageEvEEERS3_");
void wrap_publisher_publish(const ros::Publisher* self, const boost::function<ros::SerializedMessage()>& serfunc,
                            ros::SerializedMessage& m) {
  check_dump();
  uint64_t id = g_message_counter.fetch_add(1, std::memory_order_relaxed) + 1;
  lttng_ust_tracepoint(roscope_ros1, publish, impl_of(self), id, m.message.get());
  uint64_t saved = tl_message_id;
  tl_message_id = id;
  as<void (*)(const ros::Publisher*, const boost::function<ros::SerializedMessage()>&, ros::SerializedMessage&)>(
      orig::publisher_publish)(self, serfunc, m);
  tl_message_id = saved;
}

bool wrap_publication_publish(ros::Publication* self, ros::SerializedMessage& m)
    ROSCOPE_SYMBOL("_ZN3ros11Publication7publishERNS_17SerializedMessageE");
bool wrap_publication_publish(ros::Publication* self, ros::SerializedMessage& m) {
  if (tl_message_id && m.buf) {
    lttng_ust_tracepoint(roscope_ros1, publish_buffer, tl_message_id, m.buf.get(), m.num_bytes);
  }
  return as<bool (*)(ros::Publication*, ros::SerializedMessage&)>(orig::publication_publish)(self, m);
}

void wrap_tsl_start_write(ros::TransportSubscriberLink* self, bool immediate)
    ROSCOPE_SYMBOL("_ZN3ros23TransportSubscriberLink17startMessageWriteEb");
void wrap_tsl_start_write(ros::TransportSubscriberLink* self, bool immediate) {
  const void* saved = tl_tx_link;
  tl_tx_link = self;
  as<void (*)(ros::TransportSubscriberLink*, bool)>(orig::tsl_start_write)(self, immediate);
  tl_tx_link = saved;
}

void wrap_connection_write(ros::Connection* self, const boost::shared_array<uint8_t>& buffer, uint32_t size,
                           const ros::WriteFinishedFunc& cb, bool immediate)
    ROSCOPE_SYMBOL("_ZN3ros10Connection5writeERKN5boost12shared_arrayIhEEjRKNS1_8functionIFvRKNS1_10shared_ptrIS0_EEEEEb");
void wrap_connection_write(ros::Connection* self, const boost::shared_array<uint8_t>& buffer, uint32_t size,
                           const ros::WriteFinishedFunc& cb, bool immediate) {
  if (tl_tx_link) {
    // Counted whether or not a session records it (the tracepoint's arguments are only
    // evaluated when it does): positions are the link's own, as on the receiving side.
    uint64_t index = tx_next_index(tl_tx_link);
    lttng_ust_tracepoint(roscope_ros1, link_tx_write, tl_tx_link, buffer.get(), size, index);
    tl_tx_link = nullptr;  // only the message write issued by startMessageWrite
  }
  as<void (*)(ros::Connection*, const boost::shared_array<uint8_t>&, uint32_t, const ros::WriteFinishedFunc&, bool)>(
      orig::connection_write)(self, buffer, size, cb, immediate);
}

// --- connection setup (init time) ---

bool wrap_tsl_handle_header(ros::TransportSubscriberLink* self, const ros::Header& header)
    ROSCOPE_SYMBOL("_ZN3ros23TransportSubscriberLink12handleHeaderERKNS_6HeaderE");
bool wrap_tsl_handle_header(ros::TransportSubscriberLink* self, const ros::Header& header) {
  std::string topic, local, remote;
  header.getValue("topic", topic);
  connection_addrs(self->getConnection(), local, remote);
  tx_link_new(self);
  lttng_ust_tracepoint(roscope_ros1, link_tx_init, self, topic.c_str(), local.c_str(), remote.c_str());
  remember(PY_LINK_TX_INIT, (uint64_t)(uintptr_t)self, 0, topic.c_str(), local.c_str(), remote.c_str(), nullptr, 0, 0);
  return as<bool (*)(ros::TransportSubscriberLink*, const ros::Header&)>(orig::tsl_handle_header)(self, header);
}

bool wrap_tpl_on_header(ros::TransportPublisherLink* self, const ros::ConnectionPtr& conn, const ros::Header& header)
    ROSCOPE_SYMBOL("_ZN3ros22TransportPublisherLink16onHeaderReceivedERKN5boost10shared_ptrINS_10ConnectionEEERKNS_6HeaderE");
bool wrap_tpl_on_header(ros::TransportPublisherLink* self, const ros::ConnectionPtr& conn, const ros::Header& header) {
  std::string topic, local, remote;
  header.getValue("topic", topic);
  connection_addrs(conn, local, remote);
  lttng_ust_tracepoint(roscope_ros1, link_rx_init, self, topic.c_str(), local.c_str(), remote.c_str());
  remember(PY_LINK_RX_INIT, (uint64_t)(uintptr_t)self, 0, topic.c_str(), local.c_str(), remote.c_str(), nullptr, 0, 0);
  return as<bool (*)(ros::TransportPublisherLink*, const ros::ConnectionPtr&, const ros::Header&)>(orig::tpl_on_header)(
      self, conn, header);
}

// --- reception (hot path) ---

void wrap_tpl_handle_message(ros::TransportPublisherLink* self, const ros::SerializedMessage& m, bool ser, bool nocopy)
    ROSCOPE_SYMBOL("_ZN3ros22TransportPublisherLink13handleMessageERKNS_17SerializedMessageEbb");
void wrap_tpl_handle_message(ros::TransportPublisherLink* self, const ros::SerializedMessage& m, bool ser, bool nocopy) {
  lttng_ust_tracepoint(roscope_ros1, link_rx_message, self, m.buf.get(), m.num_bytes,
                       self->getStats().messages_received_);
  as<void (*)(ros::TransportPublisherLink*, const ros::SerializedMessage&, bool, bool)>(orig::tpl_handle_message)(
      self, m, ser, nocopy);
}

void wrap_md_ctor(ros::MessageDeserializer* self, const ros::SubscriptionCallbackHelperPtr& helper,
                  const ros::SerializedMessage& m, const boost::shared_ptr<ros::M_string>& header)
    ROSCOPE_SYMBOL("_ZN3ros19MessageDeserializerC1ERKN5boost10shared_ptrINS_26SubscriptionCallbackHelperEEERKNS_17SerializedMessageERKNS2_ISt3mapINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESG_St4lessISG_ESaISt4pairIKSG_SG_EEEEE");
void wrap_md_ctor(ros::MessageDeserializer* self, const ros::SubscriptionCallbackHelperPtr& helper,
                  const ros::SerializedMessage& m, const boost::shared_ptr<ros::M_string>& header) {
  as<void (*)(ros::MessageDeserializer*, const ros::SubscriptionCallbackHelperPtr&, const ros::SerializedMessage&,
              const boost::shared_ptr<ros::M_string>&)>(orig::md_ctor)(self, helper, m, header);
  lttng_ust_tracepoint(roscope_ros1, message_queue, self, helper.get(), m.buf.get(), m.message.get());
}

ros::VoidConstPtr wrap_md_deserialize(ros::MessageDeserializer* self)
    ROSCOPE_SYMBOL("_ZN3ros19MessageDeserializer11deserializeEv");
ros::VoidConstPtr wrap_md_deserialize(ros::MessageDeserializer* self) {
  tl_deserializer = self;
  return as<ros::VoidConstPtr (*)(ros::MessageDeserializer*)>(orig::md_deserialize)(self);
}

int wrap_call_one_cb(ros::CallbackQueue* self, void* tls) ROSCOPE_SYMBOL("_ZN3ros13CallbackQueue9callOneCBEPNS0_3TLSE");
int wrap_call_one_cb(ros::CallbackQueue* self, void* tls) {
  lttng_ust_tracepoint(roscope_ros1, queue_call_start, self);
  int r = as<int (*)(ros::CallbackQueue*, void*)>(orig::call_one_cb)(self, tls);
  lttng_ust_tracepoint(roscope_ros1, queue_call_end, self);
  return r;
}

// ---------------------------------------------------------------------------
// Annotation entry point used by instrument/include/roscope/annotate.h.
// kind 0 = periodic asynchronous, 1 = partial synchronous. subs/pubs point to
// ros::Subscriber / ros::Publisher objects; the event carries their handles
// (the same values as subscription_init.subscription / publisher_init.publisher).
extern "C" EXPORT int roscope_ros1_message_link(int kind, const void* const* subs, size_t n_subs,
                                                const void* const* pubs, size_t n_pubs) {
  enum { kMax = 64 };
  if (n_subs > kMax || n_pubs > kMax || kind < 0 || kind > 1) return -1;
  uint64_t s[kMax], p[kMax];
  for (size_t i = 0; i < n_subs; ++i) s[i] = (uint64_t)(uintptr_t)(subs[i] ? impl_of(subs[i]) : nullptr);
  for (size_t i = 0; i < n_pubs; ++i) p[i] = (uint64_t)(uintptr_t)(pubs[i] ? impl_of(pubs[i]) : nullptr);
  if (kind == 0)
    lttng_ust_tracepoint(roscope_ros1, message_link_periodic_async, s, n_subs, p, n_pubs);
  else
    lttng_ust_tracepoint(roscope_ros1, message_link_partial_sync, s, n_subs, p, n_pubs);
  return 0;
}

// ---------------------------------------------------------------------------
// Entry points for the rospy hook (instrument/ros1/rospy/roscope_rospy.py),
// called through ctypes when this library is preloaded into a Python process.
// Same events as for roscpp; handles are Python object ids.
// (RospyEvent: above, with the state dump, which keeps init events in this form.)
static inline const char* S(const char* s) { return s ? s : ""; }

// The rospy hook calls this once rospy is imported: a Python process is traced
// from then on (a Python process that never imports rospy is left alone).
extern "C" EXPORT void roscope_ros1_py_enable() { start_tracing(); }

extern "C" EXPORT uint64_t roscope_ros1_py_publish(uint64_t publisher) {
  check_dump();
  uint64_t id = g_message_counter.fetch_add(1, std::memory_order_relaxed) + 1;
  lttng_ust_tracepoint(roscope_ros1, publish, P(publisher), id, nullptr);
  return id;
}

extern "C" EXPORT void roscope_ros1_py_event(int which, uint64_t a, uint64_t b, uint64_t c, uint64_t d,
                                             const char* s1, const char* s2, const char* s3, const char* s4,
                                             int64_t i1, int64_t i2) {
  check_dump();
  switch (which) {
    case PY_NODE_INIT:
      lttng_ust_tracepoint(roscope_ros1, node_init, S(s1), ROSCOPE_TRACER_VERSION " (rospy)");
      break;
    case PY_PUBLISHER_INIT:
      lttng_ust_tracepoint(roscope_ros1, publisher_init, P(a), S(s1), S(s2), S(s3), S(s4), (uint32_t)i1, (int)i2);
      break;
    case PY_SUBSCRIPTION_INIT:
      lttng_ust_tracepoint(roscope_ros1, subscription_init, P(a), P(b), S(s1), S(s2), S(s3), S(s4), (uint32_t)i1);
      break;
    case PY_TIMER_INIT:
      lttng_ust_tracepoint(roscope_ros1, timer_init, P(a), P(b), S(s1), S(s2), i1, (int)i2);
      break;
    case PY_SERVICE_INIT:
      lttng_ust_tracepoint(roscope_ros1, service_init, P(a), P(b), S(s1), S(s2), S(s3), S(s4));
      break;
    case PY_CALLBACK_REGISTER:
      lttng_ust_tracepoint(roscope_ros1, callback_register, P(a), S(s1), S(s2));
      break;
    case PY_LINK_TX_INIT:
      tx_link_new(P(a));
      lttng_ust_tracepoint(roscope_ros1, link_tx_init, P(a), S(s1), S(s2), S(s3));
      break;
    case PY_LINK_RX_INIT:
      lttng_ust_tracepoint(roscope_ros1, link_rx_init, P(a), S(s1), S(s2), S(s3));
      break;
    case PY_PUBLISH_BUFFER:
      lttng_ust_tracepoint(roscope_ros1, publish_buffer, a, P(b), (uint32_t)i1);
      break;
    case PY_LINK_TX_WRITE: {
      uint64_t index = tx_next_index(P(a));  // counted with or without a session (see above)
      lttng_ust_tracepoint(roscope_ros1, link_tx_write, P(a), P(b), (uint32_t)i1, index);
      break;
    }
    case PY_LINK_RX_MESSAGE:
      lttng_ust_tracepoint(roscope_ros1, link_rx_message, P(a), P(b), (uint32_t)i1, (uint64_t)i2);
      break;
    case PY_MESSAGE_QUEUE:
      lttng_ust_tracepoint(roscope_ros1, message_queue, P(a), P(b), P(c), P(d));
      break;
    case PY_CALLBACK_START:
      lttng_ust_tracepoint(roscope_ros1, callback_start, P(a), P(b));
      break;
    case PY_CALLBACK_END:
      lttng_ust_tracepoint(roscope_ros1, callback_end, P(a));
      break;
    default:
      break;
  }
  switch (which) {
    case PY_NODE_INIT:
      remember(which, 0, 0, s1, ROSCOPE_TRACER_VERSION " (rospy)", nullptr, nullptr, 0, 0);
      break;
    case PY_PUBLISHER_INIT: case PY_SUBSCRIPTION_INIT: case PY_TIMER_INIT: case PY_SERVICE_INIT:
    case PY_CALLBACK_REGISTER: case PY_LINK_TX_INIT: case PY_LINK_RX_INIT:
      remember(which, a, b, s1, s2, s3, s4, i1, i2);
      break;
    default:
      break;
  }
}
