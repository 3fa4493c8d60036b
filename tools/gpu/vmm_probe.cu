/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vmm_probe.cu (chorus-vmm-probe): what the driver does with cuMemCreate memory shared between two
 * processes by file descriptor, the path that would let copy-engine receives skip their staging
 * buffer (docs/perf/gpu-2gpu.md, "Next" 00y). Needs nothing of Chorus but device/memory/fd_pass.c.
 *
 * The exporting process lays out memory as PyTorch's expandable segments do: one reserved range,
 * several physical chunks (cuMemCreate, POSIX file descriptor handle type) mapped side by side. It
 * prints what the driver answers for such a buffer (cudaIpcGetMemHandle; cuMemGetAddressRange and
 * cuMemRetainAllocationHandle at points in different chunks: does the range end at the chunk, is
 * each chunk its own handle), exports each chunk's handle, found again from a pointer into it, and
 * serves the descriptors (fd_pass.h) to an importing process (this program again, on GPU
 * --peer-dev). The importer maps the chunks side by side in a range of its own, reads the whole
 * buffer back (every byte checked), writes the second half by a device-to-device copy from its own
 * GPU (as a copy-engine send into the receiver's buffer would), and tries mapping half a chunk. The
 * exporter then checks the importer's bytes (the layout: device/memory/vmm_layout.h). Exit status 0 when
 * every byte is right, 1 otherwise, 77 without the GPUs asked for.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "device/common/driver_entry.h"
#include "device/memory/fd_pass.h"
#include "device/memory/vmm_layout.h"

#define MIB (1024ull * 1024ull)
#define FETCH_MS 5000

static struct chrVmmDriver drv;

/* Every driver function the probe uses, looked up through the runtime: 0 when one is missing. */
static int resolve(void) { return chrVmmDriverResolve(&drv); }

/* The byte at offset i: generation 0 written by the exporter, 1 by the importer. */
static unsigned char byteAt(int gen, size_t i) {
  uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull + (uint64_t)(gen + 1) * 0xD6E8FEB86659FD93ull;
  x ^= x >> 31;
  return (unsigned char)(x * 0x94D049BB133111EBull >> 56);
}

static void fill(unsigned char* h, size_t n, size_t from, int gen) {
  for (size_t i = 0; i < n; i++) h[i] = byteAt(gen, from + i);
}

static size_t countWrong(const unsigned char* h, size_t n, size_t from, int gen) {
  size_t wrong = 0;
  for (size_t i = 0; i < n; i++) wrong += h[i] != byteAt(gen, from + i);
  return wrong;
}

static CUmemAccessDesc accessOn(int dev) {
  CUmemAccessDesc d;
  memset(&d, 0, sizeof d);
  d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  d.location.id = dev;
  d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return d;
}

#define CHECK_CU(call, what)                                   \
  do {                                                         \
    const CUresult r_ = (call);                                \
    if (r_ != CUDA_SUCCESS) {                                  \
      printf("FAILED: %s: CUresult %d\n", what, (int)r_);      \
      return 1;                                                \
    }                                                          \
  } while (0)

/* The importer: fetch, import and map every chunk side by side, read it all, write the second half
 * from a buffer of its own GPU, try half a chunk. */
static int importer(const char* name, int dev, int chunks, size_t chunk) {
  if (cudaSetDevice(dev) != cudaSuccess || cudaFree(0) != cudaSuccess) {
    printf("FAILED: importer: GPU %d\n", dev);
    return 1;
  }
  const size_t total = (size_t)chunks * chunk;
  CUdeviceptr va = 0;
  /* alignment 0: the granularity (an alignment must be a power of two; a 20 MiB chunk is not) */
  CHECK_CU(drv.reserve(&va, total, 0, 0, 0), "importer: cuMemAddressReserve");
  CUmemGenericAllocationHandle first = 0;
  for (int j = 0; j < chunks; j++) {
    int fd = -1, err = 0;
    for (int tries = 0; tries < 50; tries++) { /* the exporter trusts this pid right after the fork */
      err = chrFdFetch(name, (uint64_t)j, FETCH_MS, &fd, NULL);
      if (err != EPERM) break;
      usleep(100000);
    }
    if (err != 0) {
      printf("FAILED: importer: fetching chunk %d's descriptor: %s\n", j, strerror(err));
      return 1;
    }
    CUmemGenericAllocationHandle h;
    const CUresult r = drv.importFd(&h, (void*)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    close(fd);
    CHECK_CU(r, "importer: cuMemImportFromShareableHandle");
    CHECK_CU(drv.map(va + (size_t)j * chunk, chunk, 0, h, 0), "importer: cuMemMap of a chunk at its offset");
    if (j == 0) first = h;
    else CHECK_CU(drv.release(h), "importer: cuMemRelease after the map");
  }
  const CUmemAccessDesc acc = accessOn(dev);
  CHECK_CU(drv.access(va, total, &acc, 1), "importer: cuMemSetAccess for its GPU");
  unsigned char* h = (unsigned char*)malloc(total);
  if (h == NULL || cudaMemcpy(h, (void*)va, total, cudaMemcpyDeviceToHost) != cudaSuccess) {
    printf("FAILED: importer: reading the mapped buffer back\n");
    return 1;
  }
  const size_t wrongRead = countWrong(h, total, 0, 0);
  printf("importer on GPU %d: %d chunks of %zu MiB mapped side by side, read back %zu bytes, %zu wrong\n", dev,
         chunks, (size_t)(chunk / MIB), total, wrongRead);
  const size_t half = total / 2;
  void* local = NULL;
  fill(h, total - half, half, 1);
  const int copied = cudaMalloc(&local, total - half) == cudaSuccess &&
                     cudaMemcpy(local, h, total - half, cudaMemcpyHostToDevice) == cudaSuccess &&
                     cudaMemcpyAsync((void*)(va + half), local, total - half, cudaMemcpyDeviceToDevice, 0) == cudaSuccess &&
                     cudaDeviceSynchronize() == cudaSuccess;
  printf("importer: device-to-device copy of %zu bytes from GPU %d into the mapped second half: %s\n", total - half,
         dev, copied ? "done" : cudaGetErrorString(cudaGetLastError()));
  /* Half a chunk: may a mapping cover part of an imported allocation? */
  CUdeviceptr part = 0;
  if (drv.reserve(&part, chunk / 2, 0, 0, 0) == CUDA_SUCCESS) {
    const CUresult r = drv.map(part, chunk / 2, 0, first, 0);
    printf("importer: mapping half of an imported chunk: CUresult %d%s\n", (int)r, r == CUDA_SUCCESS ? " (allowed)" : "");
    if (r == CUDA_SUCCESS) drv.unmap(part, chunk / 2);
    drv.addrFree(part, chunk / 2);
  }
  drv.release(first);
  cudaFree(local);
  free(h);
  chrVmmUnmapRange(&drv, va, total);
  return wrongRead == 0 && copied ? 0 : 1;
}

/* What the driver answers about a pointer `off` bytes into the buffer at va. */
static void describe(CUdeviceptr va, size_t off, size_t chunk, CUmemGenericAllocationHandle* retained) {
  CUdeviceptr base = 0;
  size_t size = 0;
  const CUresult rr = drv.range(&base, &size, va + off);
  *retained = 0;
  const CUresult rh = drv.retain(retained, (void*)(va + off));
  CUmemAllocationProp p;
  memset(&p, 0, sizeof p);
  const CUresult rp = rh == CUDA_SUCCESS ? drv.props(&p, *retained) : CUDA_ERROR_INVALID_VALUE;
  printf("offset %zu (chunk %zu): cuMemGetAddressRange %d: base at offset %lld, %zu bytes (%s); "
         "cuMemRetainAllocationHandle %d; requestedHandleTypes %d (%d)\n",
         off, off / chunk, (int)rr, (long long)(base - va), size,
         size == chunk ? "one chunk" : "not one chunk", (int)rh, (int)p.requestedHandleTypes, (int)rp);
}

static int exporter(int self, int peer, int chunks, size_t chunkMiB, const char* argv0) {
  if (cudaSetDevice(self) != cudaSuccess || cudaFree(0) != cudaSuccess) {
    printf("FAILED: exporter: GPU %d\n", self);
    return 1;
  }
  CUdeviceptr va = 0;
  size_t total = 0, chunk = 0;
  CHECK_CU(chrVmmLayout(self, (size_t)chunks * chunkMiB * MIB, chunkMiB * MIB, 1, &va, &total, &chunk),
           "exporter: chunks made with the POSIX descriptor handle type, mapped side by side");
  chunks = (int)(total / chunk);
  unsigned char* h = (unsigned char*)malloc(total);
  if (h == NULL) return 1;
  fill(h, total, 0, 0);
  if (cudaMemcpy((void*)va, h, total, cudaMemcpyHostToDevice) != cudaSuccess) {
    printf("FAILED: exporter: filling the buffer\n");
    return 1;
  }
  printf("exporter on GPU %d: %d chunks of %zu bytes in one reserved range\n", self, chunks, chunk);
  cudaIpcMemHandle_t ipc;
  const cudaError_t ie = cudaIpcGetMemHandle(&ipc, (void*)(va + 100));
  cudaGetLastError();
  printf("cudaIpcGetMemHandle on it: %s\n", ie == cudaSuccess ? "success" : cudaGetErrorString(ie));
  CUmemGenericAllocationHandle seen[3];
  const size_t probes[3] = {100, chunk + 100, total - 1};
  for (int i = 0; i < 3; i++) describe(va, probes[i], chunk, &seen[i]);
  printf("retained handles: chunk 0 %s chunk 1\n", seen[0] != seen[1] ? "differs from" : "EQUALS");
  CUmemGenericAllocationHandle again = 0; /* the same chunk retained twice: one value (usable as its identity)? */
  if (drv.retain(&again, (void*)(va + chunk / 2)) == CUDA_SUCCESS) {
    printf("chunk 0 retained again from another pointer into it: %s\n", again == seen[0] ? "the same handle" : "ANOTHER handle");
    drv.release(again);
  }
  for (int i = 0; i < 3; i++)
    if (seen[i]) drv.release(seen[i]);

  char name[CHR_FD_NAME_MAX];
  snprintf(name, sizeof name, "chorus-vmm-probe-%d", (int)getpid());
  struct chrFdServer* server = NULL;
  int err = chrFdServerStart(name, &server);
  if (err != 0) {
    printf("FAILED: fd server: %s\n", strerror(err));
    return 1;
  }
  for (int j = 0; j < chunks; j++) { /* each chunk's handle found again from a pointer into it, as a receiver would */
    CUmemGenericAllocationHandle hj;
    int fd = -1;
    CHECK_CU(drv.retain(&hj, (void*)(va + (size_t)j * chunk + chunk / 2)), "exporter: cuMemRetainAllocationHandle");
    CHECK_CU(drv.exportFd(&fd, hj, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "exporter: cuMemExportToShareableHandle");
    drv.release(hj);
    err = chrFdServerOffer(server, (uint64_t)j, fd, (uint64_t)chunk);
    close(fd);
    if (err != 0) {
      printf("FAILED: offering chunk %d: %s\n", j, strerror(err));
      return 1;
    }
  }
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    char dev[16], n[16], c[32];
    snprintf(dev, sizeof dev, "%d", peer);
    snprintf(n, sizeof n, "%d", chunks);
    snprintf(c, sizeof c, "%zu", chunk);
    execl("/proc/self/exe", argv0, "--import", name, dev, n, c, (char*)NULL);
    _exit(127);
  }
  if (pid < 0 || chrFdServerAllow(server, pid) != 0) return 1;
  int status = 0;
  waitpid(pid, &status, 0);
  chrFdServerStop(server);
  const int importerOk = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  const size_t half = total / 2;
  size_t wrong = (size_t)-1;
  if (cudaMemcpy(h, (void*)va, total, cudaMemcpyDeviceToHost) == cudaSuccess)
    wrong = countWrong(h, half, 0, 0) + countWrong(h + half, total - half, half, 1);
  printf("exporter: after the importer: %zu wrong bytes (first half its own, second half the importer's copy)\n", wrong);
  free(h);
  chrVmmUnmapRange(&drv, va, total);
  const int ok = importerOk && wrong == 0;
  printf("%s\n", ok ? "vmm probe: every byte right" : "vmm probe: FAILED");
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  if (!resolve()) {
    printf("the driver's virtual memory API was not found\n");
    return 77;
  }
  if (argc == 6 && strcmp(argv[1], "--import") == 0)
    return importer(argv[2], atoi(argv[3]), atoi(argv[4]), (size_t)strtoull(argv[5], NULL, 10));
  int chunks = 4, peer = -1;
  size_t chunkMiB = 20; /* PyTorch's expandable segments grow by 20 MiB pages for large blocks */
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--chunks") == 0) chunks = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--chunk-mib") == 0) chunkMiB = (size_t)strtoull(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--peer-dev") == 0) peer = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "usage: %s [--chunks 4] [--chunk-mib 20] [--peer-dev GPU (0; 1 with two GPUs)]\n", argv[0]);
      return 2;
    }
  }
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
    printf("no GPU\n");
    return 77;
  }
  if (peer < 0) peer = n >= 2 ? 1 : 0;
  if (peer >= n) {
    printf("GPU %d asked for, %d present\n", peer, n);
    return 77;
  }
  if (chunks < 1 || chunkMiB < 1) return 2;
  return exporter(0, peer, chunks, chunkMiB, argv[0]);
}
