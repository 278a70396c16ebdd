// tracetools' C++ helpers (declared in the installed tracetools/utils.hpp), which rclcpp's
// headers call to name callbacks: a C++ node linked against the wheels' rclcpp needs them
// from whatever libtracetools.so is loaded. Written for roscope from their documented
// contract: a demangled name the caller frees, or nullptr.
#include <cxxabi.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "tracetools/utils.hpp"

namespace tracetools {
namespace detail {

char * demangle_symbol(const char * mangled)
{
  if (mangled == nullptr) {
    return nullptr;
  }
  int status = 0;
  char * out = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  return status == 0 ? out : strdup(mangled);
}

char * get_symbol_funcptr(const void * funcptr)
{
  Dl_info info;
  if (funcptr == nullptr || dladdr(const_cast<void *>(funcptr), &info) == 0 || info.dli_sname == nullptr) {
    return nullptr;
  }
  return demangle_symbol(info.dli_sname);
}

}  // namespace detail
}  // namespace tracetools
