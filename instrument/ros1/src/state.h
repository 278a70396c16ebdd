// The ROS 1 tracer's state dump and its links' write positions (state.cpp).
#pragma once

#include <atomic>
#include <cstdint>

namespace roscope_state {

// The rospy entry point's events; init events are kept in this form for the dump.
enum RospyEvent {
  PY_NODE_INIT = 0, PY_PUBLISHER_INIT, PY_SUBSCRIPTION_INIT, PY_TIMER_INIT, PY_SERVICE_INIT,
  PY_CALLBACK_REGISTER, PY_LINK_TX_INIT, PY_LINK_RX_INIT, PY_PUBLISH_BUFFER, PY_LINK_TX_WRITE,
  PY_LINK_RX_MESSAGE, PY_MESSAGE_QUEUE, PY_CALLBACK_START, PY_CALLBACK_END
};

inline const void* P(uint64_t v) { return reinterpret_cast<const void*>(static_cast<uintptr_t>(v)); }

// Keeps an init event for the state dump (init time only: allocates).
void remember(int which, uint64_t a, uint64_t b, const char* s1, const char* s2, const char* s3, const char* s4,
              int64_t i1, int64_t i2);
// When tracing starts in the process: the request's state now, and the 50 ms watch thread.
void start_dump_watch();
// check_dump's slow path: the request's enabled state changed.
void dump_state_changed();
extern std::atomic<int> g_dump_last;
// A new publisher-side link (its writes count from 0), and the next write's position.
void tx_link_new(const void* link);
uint64_t tx_next_index(const void* link);

}  // namespace roscope_state
