/* roscope/annotate.h - declare indirect causal message links (header-only).
 *
 * Like ROS 2 Rolling's message_link_periodic_async(subs, pubs) and
 * message_link_partial_sync(subs, pubs) (see the message-flow-analysis paper,
 * section IV-B): a node states, once at initialization, that messages received
 * by the given subscriptions cause messages published by the given publishers
 *   - periodic asynchronous: inputs are cached; a timer publishes from the cache;
 *   - partial synchronous:   an output is published when all inputs have arrived.
 *
 * When the roscope ROS 1 tracer (libroscope_ros1.so) is preloaded, the calls
 * emit roscope_ros1:message_link_periodic_async / _partial_sync LTTng events
 * carrying the subscription and publisher handles (the same values as
 * subscription_init.subscription and publisher_init.publisher). Otherwise they
 * do nothing. No link-time dependency: the entry point is found with dlsym.
 *
 * C API: pass arrays of pointers to ros::Subscriber / ros::Publisher objects.
 * C++ API (roscpp): roscope::message_link_partial_sync({&sub_a, &sub_b}, {&pub});
 * Link with -ldl on glibc < 2.34. Returns 0 when emitted, 1 when no tracer is
 * loaded, -1 on bad arguments (more than 64 handles per side).
 */
#ifndef ROSCOPE_ANNOTATE_H
#define ROSCOPE_ANNOTATE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <dlfcn.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int (*roscope_message_link_fn)(int kind, const void *const *subs, size_t n_subs,
                                       const void *const *pubs, size_t n_pubs);

static inline roscope_message_link_fn roscope_annotate_lookup_(void)
{
  /* Resolved once per translation unit; a benign race at worst repeats dlsym. */
  static roscope_message_link_fn fn;
  static int looked_up;
  if (!looked_up) {
    fn = (roscope_message_link_fn)dlsym(RTLD_DEFAULT, "roscope_ros1_message_link");
    looked_up = 1;
  }
  return fn;
}

static inline int roscope_message_link_periodic_async(const void *const *subs, size_t n_subs,
                                                      const void *const *pubs, size_t n_pubs)
{
  roscope_message_link_fn fn = roscope_annotate_lookup_();
  return fn ? fn(0, subs, n_subs, pubs, n_pubs) : 1;
}

static inline int roscope_message_link_partial_sync(const void *const *subs, size_t n_subs,
                                                    const void *const *pubs, size_t n_pubs)
{
  roscope_message_link_fn fn = roscope_annotate_lookup_();
  return fn ? fn(1, subs, n_subs, pubs, n_pubs) : 1;
}

/* Non-zero when the tracer library is loaded in this process. */
static inline int roscope_tracer_loaded(void) { return roscope_annotate_lookup_() != NULL; }

#ifdef __cplusplus
} /* extern "C" */

#include <initializer_list>
#include <vector>

namespace ros { class Subscriber; class Publisher; }

namespace roscope {

inline int message_link_periodic_async(std::initializer_list<const ros::Subscriber *> subs,
                                       std::initializer_list<const ros::Publisher *> pubs)
{
  std::vector<const void *> s(subs.begin(), subs.end()), p(pubs.begin(), pubs.end());
  return roscope_message_link_periodic_async(s.data(), s.size(), p.data(), p.size());
}

inline int message_link_partial_sync(std::initializer_list<const ros::Subscriber *> subs,
                                     std::initializer_list<const ros::Publisher *> pubs)
{
  std::vector<const void *> s(subs.begin(), subs.end()), p(pubs.begin(), pubs.end());
  return roscope_message_link_partial_sync(s.data(), s.size(), p.data(), p.size());
}

}  // namespace roscope
#endif /* __cplusplus */

#endif /* ROSCOPE_ANNOTATE_H */
