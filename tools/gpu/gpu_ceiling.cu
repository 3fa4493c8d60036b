/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_ceiling.cu (chorus-gpu-ceiling): what this GPU can do at best, measured in the same run as the
 * collectives it is compared with (docs/perf/gpu.md):
 *   - device-to-device copy rate: cudaMemcpyAsync (copy engines or the driver's kernel) and an SM
 *     copy kernel with 16-byte loads and stores over every SM, bytes copied per second (the memory
 *     moves twice that: each byte is read and written);
 *   - the launch floor: an empty kernel launched back to back on one stream (time per launch), and
 *     one launch followed by cudaStreamSynchronize (the round trip a blocking caller sees);
 *   - what a launch's shape costs: the empty kernel on 64 CTAs of 512 threads (a 64-channel
 *     collective's grid), and kernels with 4 KiB, 16 KiB and 32760-byte parameter blocks (the
 *     device library's argument block holds up to 32760): host time per launch call, and time
 *     per launch back to back;
 *   - what the calls around a launch cost the host (a collective's launch path makes some of them
 *     every time): cudaEventRecord, cudaEventQuery, cudaStreamIsCapturing, cudaGetDevice with two
 *     cudaSetDevice, each per call, and an empty launch followed by an event record, back to back;
 *     the driver's pointer queries the core makes for every buffer (cuPointerGetAttribute, one
 *     attribute; cuPointerGetAttributes, two), on a device pointer and on a malloc'ed one.
 * Prints one "key value unit" line per figure, so scripts can read them.
 *
 *   chorus-gpu-ceiling [--bytes 1G] [--reps 20] [--device 0]
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CEIL_CHECK(call)                                                                      \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) {                                                                  \
      fprintf(stderr, "chorus-gpu-ceiling: %s: %s\n", #call, cudaGetErrorString(e_));          \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

__global__ void emptyKernel(void) {}

/* Kernels whose parameter block is N bytes (CUDA 12.1+ takes up to 32764): what a launch's
 * argument size costs the host and the GPU (the block is part of the signature, so every launch
 * carries it whatever the body reads). */
template <int N>
struct ParamBlock {
  unsigned char b[N];
};
template <int N>
__global__ void paramKernel(const __grid_constant__ ParamBlock<N> p) {}

/* Grid-stride copy of n16 16-byte packs, four in flight per thread. */
__global__ void copyKernel(uint4* __restrict__ dst, const uint4* __restrict__ src, size_t n16) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n16; i += stride) dst[i] = src[i];
}

static double nowSec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t parseBytes(const char* s) {
  char* end;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k') v *= 1024.0;
  else if (*end == 'M' || *end == 'm') v *= 1024.0 * 1024.0;
  else if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024.0 * 1024.0;
  return v > 0 ? (size_t)v : 0;
}

/* Best of `reps` timed copies (events), bytes copied per second in GB/s. */
static double bestCopy(cudaStream_t st, void* dst, const void* src, size_t bytes, int reps, int useKernel, int sms) {
  cudaEvent_t a, b;
  CEIL_CHECK(cudaEventCreate(&a));
  CEIL_CHECK(cudaEventCreate(&b));
  float best = 1e30f;
  for (int r = 0; r <= reps; r++) { /* r == 0 warms up */
    CEIL_CHECK(cudaEventRecord(a, st));
    if (useKernel) copyKernel<<<sms * 4, 512, 0, st>>>((uint4*)dst, (const uint4*)src, bytes / 16);
    else CEIL_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, st));
    CEIL_CHECK(cudaEventRecord(b, st));
    CEIL_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CEIL_CHECK(cudaEventElapsedTime(&ms, a, b));
    if (r > 0 && ms < best) best = ms;
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return (double)bytes / (best * 1e-3) / 1e9;
}

/* N-byte parameter blocks, `launches` back to back on 64 CTAs: host time per call, time per launch. */
template <int N>
static void launchParams(cudaStream_t st, int launches) {
  static ParamBlock<N> block; /* static: 32 KiB is too much for some callers' stacks */
  memset(&block, 0, sizeof(block));
  paramKernel<N><<<64, 512, 0, st>>>(block);
  CEIL_CHECK(cudaStreamSynchronize(st));
  const double t0 = nowSec();
  for (int i = 0; i < launches; i++) paramKernel<N><<<64, 512, 0, st>>>(block);
  const double t1 = nowSec();
  CEIL_CHECK(cudaStreamSynchronize(st));
  const double t2 = nowSec();
  printf("launch_params_%d_host %.2f us\n", N, (t1 - t0) / launches * 1e6);
  printf("launch_params_%d_back_to_back %.2f us\n", N, (t2 - t0) / launches * 1e6);
}

/* Host time per call of `call`, `n` calls in a row. */
#define CEIL_HOST_US(n, call)                                   \
  ([&]() {                                                      \
    const double a_ = nowSec();                                 \
    for (int i_ = 0; i_ < (n); i_++) CEIL_CHECK(call);          \
    return (nowSec() - a_) / (n) * 1e6;                         \
  }())

/* The runtime calls around a launch, per call on the host. */
static void launchPathCalls(cudaStream_t st, int dev, int launches) {
  cudaEvent_t ev;
  CEIL_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  printf("event_record_host %.2f us\n", CEIL_HOST_US(launches, cudaEventRecord(ev, st)));
  CEIL_CHECK(cudaStreamSynchronize(st));
  printf("event_query_host %.2f us\n", CEIL_HOST_US(launches, cudaEventQuery(ev)));
  cudaStreamCaptureStatus cap;
  printf("stream_is_capturing_host %.2f us\n", CEIL_HOST_US(launches, cudaStreamIsCapturing(st, &cap)));
  int cur = 0;
  const double a = nowSec();
  for (int i = 0; i < launches; i++) {
    CEIL_CHECK(cudaGetDevice(&cur));
    CEIL_CHECK(cudaSetDevice(dev));
    CEIL_CHECK(cudaSetDevice(cur));
  }
  printf("get_set_set_device_host %.2f us\n", (nowSec() - a) / launches * 1e6);
  const double t0 = nowSec();
  for (int i = 0; i < launches; i++) {
    emptyKernel<<<64, 512, 0, st>>>();
    CEIL_CHECK(cudaEventRecord(ev, st));
  }
  const double t1 = nowSec();
  CEIL_CHECK(cudaStreamSynchronize(st));
  printf("launch_and_event_host %.2f us\n", (t1 - t0) / launches * 1e6);
  printf("launch_and_event_back_to_back %.2f us\n", (nowSec() - t0) / launches * 1e6);
  CEIL_CHECK(cudaEventDestroy(ev));
}

/* The driver's pointer queries, through dlopen as the core reaches them (cuda/cuda_driver.c). */
static void pointerQueries(const void* devPtr, int launches) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) return;
  typedef int (*One)(void*, int, unsigned long long);
  typedef int (*Many)(unsigned int, int*, void**, unsigned long long);
  One one = (One)dlsym(lib, "cuPointerGetAttribute");
  Many many = (Many)dlsym(lib, "cuPointerGetAttributes");
  void* hostPtr = malloc(64);
  const void* ptrs[2] = {devPtr, hostPtr};
  const char* names[2] = {"device", "malloc"};
  for (int k = 0; k < 2 && one && many; k++) {
    const unsigned long long p = (unsigned long long)(uintptr_t)ptrs[k];
    unsigned int type = 0, managed = 0;
    double a = nowSec();
    for (int i = 0; i < launches; i++) one(&type, 2 /* MEMORY_TYPE */, p);
    printf("pointer_attribute_%s_host %.3f us\n", names[k], (nowSec() - a) / launches * 1e6);
    int attrs[2] = {2, 8 /* IS_MANAGED */};
    void* data[2] = {&type, &managed};
    a = nowSec();
    for (int i = 0; i < launches; i++) many(2, attrs, data, p);
    printf("pointer_attributes2_%s_host %.3f us\n", names[k], (nowSec() - a) / launches * 1e6);
  }
  free(hostPtr);
}

int main(int argc, char** argv) {
  size_t bytes = 1ull << 30;
  int reps = 20, dev = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--bytes") && i + 1 < argc) bytes = parseBytes(argv[++i]) & ~(size_t)15;
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--device") && i + 1 < argc) dev = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--bytes 1G] [--reps 20] [--device 0]\n", argv[0]);
      return 2;
    }
  }
  if (bytes < 16 || reps < 1) {
    fprintf(stderr, "chorus-gpu-ceiling: --bytes must be at least 16 and --reps at least 1\n");
    return 2;
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev <= dev) {
    fprintf(stderr, "chorus-gpu-ceiling: no CUDA device %d\n", dev);
    return 77;
  }
  CEIL_CHECK(cudaSetDevice(dev));
  cudaDeviceProp prop;
  CEIL_CHECK(cudaGetDeviceProperties(&prop, dev));
  printf("device %s sms %d\n", prop.name, prop.multiProcessorCount);
  cudaStream_t st;
  CEIL_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  void *src, *dst;
  CEIL_CHECK(cudaMalloc(&src, bytes));
  CEIL_CHECK(cudaMalloc(&dst, bytes));
  CEIL_CHECK(cudaMemset(src, 1, bytes));
  CEIL_CHECK(cudaMemset(dst, 0, bytes));
  printf("copy_bytes %zu B\n", bytes);
  printf("d2d_memcpy %.1f GB/s\n", bestCopy(st, dst, src, bytes, reps, 0, prop.multiProcessorCount));
  printf("d2d_sm_copy %.1f GB/s\n", bestCopy(st, dst, src, bytes, reps, 1, prop.multiProcessorCount));

  const int launches = 2000;
  emptyKernel<<<1, 32, 0, st>>>();
  CEIL_CHECK(cudaStreamSynchronize(st));
  double t0 = nowSec();
  for (int i = 0; i < launches; i++) emptyKernel<<<1, 32, 0, st>>>();
  CEIL_CHECK(cudaStreamSynchronize(st));
  printf("launch_back_to_back %.2f us\n", (nowSec() - t0) / launches * 1e6);
  double best = 1e30;
  for (int i = 0; i < 200; i++) {
    t0 = nowSec();
    emptyKernel<<<1, 32, 0, st>>>();
    CEIL_CHECK(cudaStreamSynchronize(st));
    double dt = nowSec() - t0;
    if (dt < best) best = dt;
  }
  printf("launch_sync_round_trip %.2f us\n", best * 1e6);

  t0 = nowSec();
  for (int i = 0; i < launches; i++) emptyKernel<<<64, 512, 0, st>>>();
  CEIL_CHECK(cudaStreamSynchronize(st));
  printf("launch_back_to_back_64x512 %.2f us\n", (nowSec() - t0) / launches * 1e6);
  launchParams<4096>(st, launches);
  launchParams<16384>(st, launches);
  launchParams<32760>(st, launches);
  launchPathCalls(st, dev, launches);
  pointerQueries(src, launches);
  cudaFree(src);
  cudaFree(dst);
  cudaStreamDestroy(st);
  return 0;
}
