/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpumem.c: the memory --mem puts the checked traffic's buffers in, and netcheck's own copies to and
 * from it (the plugin never sees these copies).
 *
 *   cuda       device memory of GPU --gpu, from the CUDA driver (cuda_loader.c), in the GPU's primary
 *              context, which every call in here makes current first; a dma-buf fd per
 *              registration where the driver gives one
 *   cuda-host  host memory and memcpy, no dma-buf: the stand-in for machines without a GPU, which
 *              only a plugin that takes host memory as NCCL_PTR_CUDA accepts (gdrtest with
 *              TESTNET_GDR_HOST_AS_CUDA=1)
 *
 * What holds for both: a buffer starts on a page and has a page to spare after its size rounded up
 * to pages, so the page-aligned range around any part of it (what cuMemGetHandleForAddressRange
 * takes) lies inside one allocation. A write or fill has landed when it returns (cuCtxSynchronize:
 * the NIC may read the memory the moment the plugin is called). The CUDA driver is never initialised
 * in the process that forks the ranks: ncGpuProbe asks in a child of its own.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda_loader.h"
#include "netcheck.h"

static const ncCudaDriver* cu;   /* --mem cuda, after ncGpuOpen */
static ncCuContext primary;      /* GPU --gpu's primary context, retained by ncGpuOpen */
static ncCuDevice device;
static _Thread_local char lastError[320];

const char* ncMemName(ncMemKind k) { return k == NC_MEM_CUDA ? "cuda" : k == NC_MEM_CUDA_HOST ? "cuda-host" : "host"; }

const char* ncGpuError(void) { return lastError[0] ? lastError : "(no error text)"; }

static int fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(lastError, sizeof(lastError), fmt, ap);
  va_end(ap);
  return -1;
}

static int cuFail(const char* what, ncCuResult r) { return fail("%s: %s", what, ncCudaErrorText(cu, r)); }

static size_t pageSize(void) {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (size_t)p : 4096;
}

static size_t roundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* This thread's next CUDA calls go to GPU --gpu's primary context. Set before every use, not
 * remembered: the plugin runs on the same threads and may leave another context current. */
static int bind(void) {
  ncCuResult r = cu->cuCtxSetCurrent(primary);
  return r == NC_CUDA_SUCCESS ? 0 : cuFail("cuCtxSetCurrent", r);
}

int ncGpuOpen(char* why, size_t len) {
  if (ncOpt.mem != NC_MEM_CUDA || cu != NULL) return 0;
  const char* missing = NULL;
  const ncCudaDriver* d = ncCudaLoad(&missing);
  if (d == NULL) {
    snprintf(why, len, "%s", missing);
    return -1;
  }
  int count = 0;
  ncCuResult r = d->cuDeviceGetCount(&count);
  if (r != NC_CUDA_SUCCESS || ncOpt.gpu >= count) {
    if (r != NC_CUDA_SUCCESS) snprintf(why, len, "cuDeviceGetCount: %s", ncCudaErrorText(d, r));
    else snprintf(why, len, "no GPU %d: the CUDA driver %d.%d sees %d", ncOpt.gpu, d->version / 1000,
                  d->version % 1000 / 10, count);
    return -1;
  }
  if ((r = d->cuDeviceGet(&device, ncOpt.gpu)) != NC_CUDA_SUCCESS ||
      (r = d->cuDevicePrimaryCtxRetain(&primary, device)) != NC_CUDA_SUCCESS) {
    snprintf(why, len, "GPU %d: %s", ncOpt.gpu, ncCudaErrorText(d, r));
    return -1;
  }
  cu = d;
  return 0;
}

void ncGpuClose(void) {
  if (cu == NULL) return;
  cu->cuDevicePrimaryCtxRelease(device);
  cu = NULL;
  primary = NULL;
}

int ncGpuDriverVersion(void) { return cu != NULL ? cu->version : 0; }

int ncGpuProbe(char* why, size_t len) {
  int fds[2];
  if (pipe(fds) != 0) {
    snprintf(why, len, "pipe: %s", strerror(errno));
    return -1;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(why, len, "fork: %s", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) { /* the child opens the GPU, says how it went, and exits */
    char msg[320] = "";
    close(fds[0]);
    int ok = ncGpuOpen(msg, sizeof(msg)) == 0;
    if (ok) snprintf(msg, sizeof(msg), "ok");
    ssize_t w = write(fds[1], msg, strlen(msg));
    _exit(ok && w > 0 ? 0 : 1);
  }
  close(fds[1]);
  char msg[320];
  size_t got = 0;
  for (;;) {
    ssize_t n = read(fds[0], msg + got, sizeof(msg) - 1 - got);
    if (n > 0 && (got += (size_t)n) < sizeof(msg) - 1) continue;
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  msg[got] = '\0';
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  if (got > 0) snprintf(why, len, "%s", msg);
  else snprintf(why, len, "the probe process %s", WIFSIGNALED(status) ? "crashed in the CUDA driver" : "failed");
  return -1;
}

char* ncGpuAlloc(size_t bytes, uintptr_t* raw) {
  size_t page = pageSize(), total = roundUp(bytes > 0 ? bytes : 1, page) + page;
  if (ncOpt.mem != NC_MEM_CUDA) {
    void* p = NULL;
    if (posix_memalign(&p, page, total) != 0) {
      fail("out of host memory for a %zu-byte buffer", bytes);
      return NULL;
    }
    *raw = (uintptr_t)p;
    return p;
  }
  if (bind() != 0) return NULL;
  ncCuDevicePtr d = 0;
  ncCuResult r = cu->cuMemAlloc(&d, total);
  if (r != NC_CUDA_SUCCESS) {
    fail("cuMemAlloc of %zu bytes: %s", total, ncCudaErrorText(cu, r));
    return NULL;
  }
  *raw = (uintptr_t)d;
  return (char*)(uintptr_t)roundUp((size_t)d, page);
}

void ncGpuFree(uintptr_t raw) {
  if (raw == 0) return;
  if (ncOpt.mem != NC_MEM_CUDA) {
    free((void*)raw);
    return;
  }
  if (bind() == 0) cu->cuMemFree((ncCuDevicePtr)raw);
}

int ncGpuWrite(void* gpu, const void* host, size_t n) {
  if (n == 0) return 0;
  if (ncOpt.mem != NC_MEM_CUDA) {
    memcpy(gpu, host, n);
    return 0;
  }
  if (bind() != 0) return -1;
  ncCuResult r = cu->cuMemcpyHtoD((ncCuDevicePtr)(uintptr_t)gpu, host, n);
  if (r == NC_CUDA_SUCCESS) r = cu->cuCtxSynchronize();
  return r == NC_CUDA_SUCCESS ? 0 : cuFail("copy to the GPU", r);
}

int ncGpuSet(void* gpu, int byte, size_t n) {
  if (n == 0) return 0;
  if (ncOpt.mem != NC_MEM_CUDA) {
    memset(gpu, byte, n);
    return 0;
  }
  if (bind() != 0) return -1;
  ncCuResult r = cu->cuMemsetD8((ncCuDevicePtr)(uintptr_t)gpu, (unsigned char)byte, n);
  if (r == NC_CUDA_SUCCESS) r = cu->cuCtxSynchronize();
  return r == NC_CUDA_SUCCESS ? 0 : cuFail("cuMemsetD8", r);
}

int ncGpuRead(void* host, const void* gpu, size_t n) {
  if (n == 0) return 0;
  if (ncOpt.mem != NC_MEM_CUDA) {
    memcpy(host, gpu, n);
    return 0;
  }
  if (bind() != 0) return -1;
  ncCuResult r = cu->cuMemcpyDtoH(host, (ncCuDevicePtr)(uintptr_t)gpu, n);
  return r == NC_CUDA_SUCCESS ? 0 : cuFail("copy from the GPU", r);
}

int ncGpuDmaBuf(const void* gpu, size_t n, int* fd, uint64_t* offset) {
  if (ncOpt.mem != NC_MEM_CUDA) return fail("host memory (--mem cuda-host) has no dma-buf fd");
  if (cu->cuMemGetHandleForAddressRange == NULL)
    return fail("the CUDA driver %d.%d has no cuMemGetHandleForAddressRange (CUDA 11.7 and later)", cu->version / 1000,
                cu->version % 1000 / 10);
  if (bind() != 0) return -1;
  size_t page = pageSize();
  uintptr_t start = (uintptr_t)gpu / page * page;
  uintptr_t end = roundUp((uintptr_t)gpu + (n > 0 ? n : 1), page);
  int handle = -1;
  ncCuResult r = cu->cuMemGetHandleForAddressRange(&handle, (ncCuDevicePtr)start, end - start,
                                                   NC_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
  if (r != NC_CUDA_SUCCESS) return cuFail("cuMemGetHandleForAddressRange(DMA_BUF_FD)", r);
  *fd = handle;
  *offset = (uint64_t)((uintptr_t)gpu - start);
  return 0;
}

int ncGpuDmaBufUsable(char* why, size_t len) {
  if (ncOpt.mem != NC_MEM_CUDA) {
    snprintf(why, len, "--mem cuda-host: host memory has no dma-buf fd");
    return 0;
  }
  int attr = 0;
  ncCuResult r = cu->cuDeviceGetAttribute(&attr, NC_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, device);
  if (r != NC_CUDA_SUCCESS || attr == 0) {
    snprintf(why, len, "GPU %d does not support dma-buf (%s)", ncOpt.gpu,
             r != NC_CUDA_SUCCESS ? ncCudaErrorText(cu, r) : "CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0");
    return 0;
  }
  /* One page, exported and dropped: the attribute alone does not prove the kernel side works. */
  uintptr_t raw = 0;
  char* p = ncGpuAlloc(1, &raw);
  int fd = -1;
  uint64_t offset = 0;
  int ok = p != NULL && ncGpuDmaBuf(p, 1, &fd, &offset) == 0;
  if (!ok) snprintf(why, len, "the CUDA driver gives no dma-buf fd: %s", ncGpuError());
  if (fd >= 0) close(fd);
  ncGpuFree(raw);
  return ok;
}
