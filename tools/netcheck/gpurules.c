/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpurules.c: the GPU-memory rules of chorus-netcheck (--mem cuda, --mem cuda-host): the GPUDirect
 * side of a plugin, driven as NCCL's proxy drives it when GPUDirect RDMA is on.
 *
 * - Which rules apply comes from the device's ptrSupport: NCCL_PTR_CUDA means regMr takes device
 *   memory; NCCL_PTR_DMABUF means regMrDmaBuf takes a dma-buf fd of it (NCCL uses either for
 *   GPUDirect). A device with neither has its GPU rules skipped, not failed: its traffic stays in host
 *   memory. A claim whose slot is NULL (regMrDmaBuf, or the iflush NCCL calls after GPU receives)
 *   fails at once; a claim the plugin then refuses fails at the registration.
 * - Registration: regMr(NCCL_PTR_CUDA), or regMrDmaBuf(type NCCL_PTR_CUDA) with an fd over the pages
 *   around the buffer and the buffer's offset in them; the fd is closed as soon as the call returns,
 *   as NCCL does, so a plugin must keep its own reference. With both ways claimed they alternate. A
 *   refused registration is one failure; the connection then goes on in host memory, as NCCL would
 *   with NCCL_NET_GDR_LEVEL=LOC, so every other rule is still checked.
 * - Flush: after every receive into GPU memory that carried bytes, iflush over its buffers with the
 *   sizes test() reported, and its request (NULL: nothing to flush) tested until done, before the
 *   bytes are read back. NCCL flushes only where it must (GPUs before sm_90, forceFlush), so this is
 *   the strictest caller it can be. Receives of 0 bytes are not flushed, as in NCCL.
 */
#include <string.h>
#include <unistd.h>

#include "netcheck.h"

static const ncRule gpuRules[] = {NC_R_GPU_REG, NC_R_GPU_DMABUF, NC_R_GPU_FLUSH, NC_R_GPU_DATA, NC_R_GPU_DEREG};
#define NC_GPU_RULES (sizeof(gpuRules) / sizeof(gpuRules[0]))

static void skipAll(const char* why) {
  for (size_t i = 0; i < NC_GPU_RULES; i++) ncSkip(gpuRules[i], why);
}

static const char* memWords(void) {
  return ncOpt.mem == NC_MEM_CUDA ? "GPU" : "host-as-GPU (--mem cuda-host)";
}

void ncGpuPlan(ncRank* r, FILE* out) {
  ncGpuState* g = &r->gpu;
  memset(g, 0, sizeof(*g));
  if (ncOpt.mem == NC_MEM_HOST) {
    skipAll("not asked (--mem host, the default; --mem cuda or cuda-host checks it)");
    return;
  }
  int dev = ncOpt.dev, claimsCuda = (r->props.ptrSupport & NCCL_PTR_CUDA) != 0;
  int claimsDmaBuf = (r->props.ptrSupport & NCCL_PTR_DMABUF) != 0;
  const ncclNet_v12_t* t = r->net->ncclNet;
  if (!claimsCuda && !claimsDmaBuf) {
    skipAll("plugin does not advertise NCCL_PTR_CUDA");
    if (out) fprintf(out, "GPU memory: device %d advertises neither NCCL_PTR_CUDA nor NCCL_PTR_DMABUF; the traffic stays in host memory\n", dev);
    return;
  }
  const char* claim = claimsCuda ? "NCCL_PTR_CUDA" : "NCCL_PTR_DMABUF";
  if (claimsDmaBuf && t->regMrDmaBuf == NULL)
    ncFail(NC_R_GPU_DMABUF, "rank %d: device %d advertises NCCL_PTR_DMABUF, but the plugin's regMrDmaBuf is NULL", r->rank, dev);
  g->hasFlush = t->iflush != NULL;
  if (!g->hasFlush)
    ncFail(NC_R_GPU_FLUSH, "rank %d: device %d advertises %s, but the plugin's iflush is NULL (NCCL calls it after receives into GPU memory)",
           r->rank, dev, claim);
  char why[320] = "";
  if (ncGpuOpen(why, sizeof(why)) != 0) {
    ncFail(NC_R_GPU_REG, "rank %d: cannot use GPU %d: %s", r->rank, ncOpt.gpu, why);
    return;
  }
  int dmabuf = claimsDmaBuf && t->regMrDmaBuf != NULL && ncGpuDmaBufUsable(why, sizeof(why));
  if (!claimsDmaBuf) ncSkip(NC_R_GPU_DMABUF, "plugin does not advertise NCCL_PTR_DMABUF");
  else if (!dmabuf && t->regMrDmaBuf != NULL) ncSkip(NC_R_GPU_DMABUF, why);
  if (!claimsCuda) ncSkip(NC_R_GPU_REG, "plugin does not advertise NCCL_PTR_CUDA (GPU memory goes through regMrDmaBuf)");
  if (!claimsCuda && !dmabuf) {
    char all[400];
    snprintf(all, sizeof(all), "plugin advertises NCCL_PTR_DMABUF only, and %s", why);
    skipAll(all);
    if (out) fprintf(out, "GPU memory: device %d: %s; the traffic stays in host memory\n", dev, all);
    return;
  }
  g->on = 1;
  ncSkip(NC_R_MR, "the checked traffic's buffers are GPU memory (gpu.reg, gpu.dereg)");
  g->viaCuda = claimsCuda;
  g->viaDmaBuf = dmabuf;
  if (out) {
    int v = ncGpuDriverVersion();
    char gpu[96];
    if (ncOpt.mem == NC_MEM_CUDA) snprintf(gpu, sizeof(gpu), "GPU %d, CUDA driver %d.%d", ncOpt.gpu, v / 1000, v % 1000 / 10);
    else snprintf(gpu, sizeof(gpu), "host memory handed over as NCCL_PTR_CUDA");
    fprintf(out, "GPU memory (--mem %s, %s): buffers registered with %s; iflush after every receive with bytes\n",
            ncMemName(ncOpt.mem), gpu,
            claimsCuda && dmabuf ? "regMr(NCCL_PTR_CUDA) and regMrDmaBuf in turn"
            : claimsCuda         ? "regMr(NCCL_PTR_CUDA)"
                                 : "regMrDmaBuf");
  }
}

static int regDmaBuf(ncRank* r, void* comm, const char* who, void* data, size_t size, void** mh) {
  int fd = -1;
  uint64_t offset = 0;
  if (ncGpuDmaBuf(data, size, &fd, &offset) != 0) {
    ncFail(NC_R_GPU_DMABUF, "%s: no dma-buf fd for a %zu-byte GPU buffer (the CUDA driver, not the plugin): %s", who,
           size, ncGpuError());
    return -1;
  }
  ncCallClock clk;
  ncCallClockStart(&clk);
  ncclResult_t res = chrNetRegMrDmaBuf(r->net, comm, data, size, NCCL_PTR_CUDA, offset, fd, mh);
  ncCallClockStop(&clk);
  close(fd); /* as NCCL does: from here the registration holds its own reference, or none */
  ncCheckCall(who, "regMrDmaBuf", &clk);
  if (res == ncclSuccess) {
    ncPass(NC_R_GPU_DMABUF);
    r->gpu.dmabufRegs++;
    return 0;
  }
  ncFail(NC_R_GPU_DMABUF, "%s: regMrDmaBuf of a %zu-byte GPU buffer (offset %llu in its fd) failed, although ptrSupport has NCCL_PTR_DMABUF: %s",
         who, size, (unsigned long long)offset, ncLastError());
  return -1;
}

int ncGpuReg(ncRank* r, void* comm, const char* who, void* data, size_t size, void** mh) {
  ncGpuState* g = &r->gpu;
  *mh = NULL;
  int viaDmaBuf = g->viaDmaBuf && (!g->viaCuda || (g->nth++ & 1) == 1);
  if (viaDmaBuf) return regDmaBuf(r, comm, who, data, size, mh);
  ncCallClock clk;
  ncCallClockStart(&clk);
  ncclResult_t res = chrNetRegMr(r->net, comm, data, size, NCCL_PTR_CUDA, mh);
  ncCallClockStop(&clk);
  ncCheckCall(who, "regMr(NCCL_PTR_CUDA)", &clk);
  if (res == ncclSuccess) {
    ncPass(NC_R_GPU_REG);
    g->cudaRegs++;
    return 0;
  }
  ncFail(NC_R_GPU_REG, "%s: regMr(NCCL_PTR_CUDA) of a %zu-byte %s buffer failed, although ptrSupport has NCCL_PTR_CUDA: %s",
         who, size, memWords(), ncLastError());
  return -1;
}

void ncGpuDereg(ncRank* r, void* comm, const char* who, void* mh) {
  ncclResult_t res = chrNetDeregMr(r->net, comm, mh);
  ncCheck(NC_R_GPU_DEREG, res == ncclSuccess, "%s: deregMr of a GPU registration returned %d: %s", who, (int)res,
          ncLastError());
}

int ncGpuFlushStart(ncRank* r, void* comm, const char* who, int n, void** data, int* sizes, void** mh, void** req) {
  ncGpuState* g = &r->gpu;
  *req = NULL;
  int bytes = 0;
  for (int i = 0; i < n; i++) bytes |= sizes[i] > 0;
  if (!bytes) {
    g->zeroRecvs++;
    return 0;
  }
  if (!g->hasFlush) return 0; /* failed once, at the plan */
  ncCallClock clk;
  ncCallClockStart(&clk);
  ncclResult_t res = chrNetIflush(r->net, comm, n, data, sizes, mh, req);
  ncCallClockStop(&clk);
  ncCheckCall(who, "iflush", &clk);
  g->flushes++;
  if (res != ncclSuccess) {
    ncFail(NC_R_GPU_FLUSH, "%s: iflush of %d buffer%s failed: %s", who, n, n == 1 ? "" : "s", ncLastError());
    *req = NULL;
    return -1;
  }
  if (*req != NULL) return 1;
  g->flushNull++; /* nothing to flush: the bytes are in GPU memory already */
  ncPass(NC_R_GPU_FLUSH);
  return 0;
}

int ncGpuFlushTest(ncRank* r, const char* who, void* req) {
  int done = 0;
  ncCallClock clk;
  ncCallClockStart(&clk);
  ncclResult_t res = chrNetTest(r->net, req, &done, NULL);
  ncCallClockStop(&clk);
  ncCheckCall(who, "test of an iflush request", &clk);
  if (res != ncclSuccess) {
    ncFail(NC_R_GPU_FLUSH, "%s: test() of its iflush request failed: %s", who, ncLastError());
    return -1;
  }
  if (done != 0 && done != 1) {
    ncFail(NC_R_GPU_FLUSH, "%s: test() of its iflush request set done to %d", who, done);
    return -1;
  }
  if (done) ncPass(NC_R_GPU_FLUSH);
  return done;
}

void ncGpuReport(const ncRank* r, FILE* out) {
  const ncGpuState* g = &r->gpu;
  if (out == NULL || !g->on) return;
  fprintf(out, "GPU memory, rank %d: %llu regMr(NCCL_PTR_CUDA) and %llu regMrDmaBuf registrations; %llu receives flushed "
               "(%llu iflush calls with no request), %llu of 0 bytes not flushed\n",
          r->rank, (unsigned long long)g->cudaRegs, (unsigned long long)g->dmabufRegs, (unsigned long long)g->flushes,
          (unsigned long long)g->flushNull, (unsigned long long)g->zeroRecvs);
}
