/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_mem_api.c: ncclMemAlloc / ncclMemFree. Arguments are checked before anything else; a pointer
 * ncclMemAlloc did not return (or returned and was freed) is refused; without a GPU path (no CUDA
 * driver, as on the CPU machines) an allocation fails with ncclInvalidUsage and says why. Where a GPU
 * is present the allocation succeeds and is freed once.
 */
#include <stdio.h>
#include <string.h>
#include "nccl.h"

static int failures;

#define EXPECT(cond)                                                                                \
  do {                                                                                              \
    if (!(cond)) {                                                                                  \
      fprintf(stderr, "%s:%d: FAILED: %s (last error: %s)\n", __FILE__, __LINE__, #cond,            \
              ncclGetLastError(NULL));                                                              \
      failures++;                                                                                   \
    }                                                                                               \
  } while (0)

int main(void) {
  void* p = (void*)0x1;
  EXPECT(ncclMemAlloc(NULL, 64) == ncclInvalidArgument);
  EXPECT(strstr(ncclGetLastError(NULL), "ptr is NULL") != NULL);
  EXPECT(ncclMemAlloc(&p, 0) == ncclInvalidArgument && p == NULL);
  EXPECT(strstr(ncclGetLastError(NULL), "size is 0") != NULL);
  EXPECT(ncclMemFree(NULL) == ncclSuccess);
  int local = 0;
  EXPECT(ncclMemFree(&local) == ncclInvalidArgument);
  EXPECT(strstr(ncclGetLastError(NULL), "not returned by ncclMemAlloc") != NULL);

  p = (void*)0x1;
  ncclResult_t r = ncclMemAlloc(&p, 1 << 20);
  if (r == ncclSuccess) { /* a GPU machine */
    EXPECT(p != NULL);
    EXPECT(ncclMemFree(p) == ncclSuccess);
    EXPECT(ncclMemFree(p) == ncclInvalidArgument); /* freed already */
    printf("test_mem_api: a GPU is present: 1 MiB allocated and freed\n");
  } else {
    EXPECT(r == ncclInvalidUsage && p == NULL);
    EXPECT(strstr(ncclGetLastError(NULL), "no GPU path") != NULL);
    printf("test_mem_api: no GPU path here: %s\n", ncclGetLastError(NULL));
  }
  if (failures) fprintf(stderr, "test_mem_api: %d failure(s)\n", failures);
  return failures ? 1 : 0;
}
