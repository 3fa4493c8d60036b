/* SPDX-License-Identifier: BSD-3-Clause */
/* asym_fence.c: see asym_fence.h. */
#include "util/asym_fence.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

_Atomic int chrFenceRegistered;

static long membarrier(int cmd) { return syscall(__NR_membarrier, cmd, 0, 0); }

static void registerOnce(void) {
  long cmds = membarrier(MEMBARRIER_CMD_QUERY);
  int ok = cmds > 0 && (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
           membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
  atomic_store(&chrFenceRegistered, ok ? 1 : 2);
}

void chrFenceInit(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, registerOnce);
}

int chrFenceHeavy(void) {
  atomic_thread_fence(memory_order_seq_cst);
  /* Unregistered wakers fence fully themselves, but this process cannot tell which peer is which: the
   * command must run whatever this process's own state. */
  if (membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) != 0) return -1;
  atomic_thread_fence(memory_order_seq_cst);
  return 0;
}
