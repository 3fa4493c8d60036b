/* SPDX-License-Identifier: BSD-3-Clause */
/* random.c: random bytes for nonces and ids (plugin_support.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "plugin_support.h"

void chrPluginRandom(void* buf, size_t len) {
  unsigned char* p = buf;
  size_t got = 0;
  while (got < len) {
    ssize_t n = getrandom(p + got, len - got, 0);
    if (n > 0) {
      got += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  if (got < len) { /* no getrandom (an old kernel, a seccomp filter): the device */
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      while (got < len) {
        ssize_t r = read(fd, p + got, len - got);
        if (r > 0) got += (size_t)r;
        else if (!(r < 0 && errno == EINTR)) break;
      }
      close(fd);
    }
  }
  /* Neither: time, address and pid bits; a nonce here only tells connections apart. */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t x = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)buf;
  x ^= (uint64_t)getpid() << 40;
  for (; got < len; got++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    p[got] = (unsigned char)x;
  }
}
