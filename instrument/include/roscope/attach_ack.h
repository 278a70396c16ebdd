/* How roscope's tracers answer `roscope record --attach` (docs/ros1-tracer.md, "Attaching").
 *
 * Each tracer keeps /dev/shm/roscope-attach-PID: "START_TICKS DUMPS\n", the process's start
 * time (field 22 of /proc/self/stat, which tells this process from an older one with the
 * same PID) and how many state dumps it has made. The file is written when the tracer starts
 * and after each dump. `roscope record --attach` reads it before it turns
 * roscope_attach:request on, and keeps the request on until every tracked process has
 * counted one more dump (or a time limit passed): the session daemon may set a session up
 * in a process seconds after 'lttng start' returned, on a loaded machine. Not on a hot path. */
#ifndef ROSCOPE_ATTACH_ACK_H
#define ROSCOPE_ATTACH_ACK_H

#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static unsigned long long roscope_attach_start_ticks(void) {
  char buf[1024];
  int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  char *p = strrchr(buf, ')');  /* the command name may hold spaces and ')' */
  if (!p) return 0;
  unsigned long long ticks = 0;
  /* After ')': field 3 (state) ... field 22 (starttime), the 20th. */
  for (int field = 3; field <= 22 && p; field++) {
    p = strchr(p + 1, ' ');
    if (p && field == 22) ticks = strtoull(p + 1, NULL, 10);
  }
  return ticks;
}

/* This process's answer file, /dev/shm/roscope-attach-PID (record/lttng.py reads it). */
static void roscope_attach_path(char *path, size_t size) {
  snprintf(path, size, "/dev/shm/roscope-attach-%ld", (long)getpid());
}

static void roscope_attach_ack(unsigned long dumps) {
  static unsigned long long ticks;
  if (!ticks) ticks = roscope_attach_start_ticks();
  char path[64], text[64];
  roscope_attach_path(path, sizeof path);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return;
  int n = snprintf(text, sizeof text, "%llu %lu\n", ticks, dumps);
  if (write(fd, text, (size_t)n) < 0) { /* nothing to do: roscope then waits its time limit */ }
  close(fd);
}

/* At the process's exit (a destructor of each tracer): the file goes with it. A process that
 * is killed leaves it; roscope removes such files when a session ends. */
static void roscope_attach_ack_remove(void) {
  char path[64];
  roscope_attach_path(path, sizeof path);
  unlink(path);
}

#endif
