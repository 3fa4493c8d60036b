/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_devlib.c (gpu.devlib, runs anywhere the device library is built): the core opens
 * libchorus-device.so at run time and binds its functions by name; a missing export or a version
 * mismatch would only show on a GPU machine, as a silently disabled GPU path. This checks the built
 * file the way the core does (chrDevLibCheckFile), without a GPU or driver.
 */
#include <stdio.h>
#include "cuda/device_lib.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <path of libchorus-device.so>\n", argv[0]);
    return 2;
  }
  char why[256] = "";
  if (!chrDevLibCheckFile(argv[1], why, sizeof(why))) {
    fprintf(stderr, "FAIL: %s: %s\n", argv[1], why);
    return 1;
  }
  printf("gpu.devlib: %s: API version %d, every function the core binds is exported\n", argv[1], CHR_DEV_API_VERSION);
  return 0;
}
