/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * props_copy.c: property and vNIC layouts of v8..v11 from / to v12 (see props_copy.h).
 * The older vProps arrays hold 4 children, v12's 8: a copy clips, never overruns.
 */
#include "props_copy.h"

#include <string.h>

/* The fields v9, v10 and v11 share with v12, in the same order. A macro because the four structs are
 * distinct types with the same member names. */
#define COPY_V9_FIELDS(dst, src)                                                  \
  do {                                                                            \
    (dst)->name = (src)->name;                                                    \
    (dst)->pciPath = (src)->pciPath;                                              \
    (dst)->guid = (src)->guid;                                                    \
    (dst)->ptrSupport = (src)->ptrSupport;                                        \
    (dst)->regIsGlobal = (src)->regIsGlobal;                                      \
    (dst)->forceFlush = (src)->forceFlush;                                        \
    (dst)->speed = (src)->speed;                                                  \
    (dst)->port = (src)->port;                                                    \
    (dst)->latency = (src)->latency;                                              \
    (dst)->maxComms = (src)->maxComms;                                            \
    (dst)->maxRecvs = (src)->maxRecvs;                                            \
    (dst)->netDeviceType = (src)->netDeviceType;                                  \
    (dst)->netDeviceVersion = (src)->netDeviceVersion;                            \
    copyChildren(&(dst)->vProps.ndevs, (dst)->vProps.devs,                        \
                 (int)(sizeof((dst)->vProps.devs) / sizeof((dst)->vProps.devs[0])), \
                 &(src)->vProps);                                                 \
    (dst)->maxP2pBytes = (src)->maxP2pBytes;                                      \
    (dst)->maxCollBytes = (src)->maxCollBytes;                                    \
  } while (0)

static void copyChildren(int* ndevs, int* devs, int cap, const ncclNetVDeviceProps_v12_t* src) {
  int n = src->ndevs;
  if (n < 0) n = 0;
  if (n > cap) n = cap;
  if (n > NCCL_NET_MAX_DEVS_PER_NIC_V12) n = NCCL_NET_MAX_DEVS_PER_NIC_V12;
  *ndevs = n;
  for (int i = 0; i < cap; i++) devs[i] = i < n ? src->devs[i] : 0;
}

void chrNetPropsToV11(const ncclNetProperties_v12_t* src, ncclNetProperties_v11_t* dst) {
  memset(dst, 0, sizeof(*dst));
  COPY_V9_FIELDS(dst, src);
  dst->maxMultiRequestSize = src->maxMultiRequestSize;
}

void chrNetPropsToV10(const ncclNetProperties_v12_t* src, ncclNetProperties_v10_t* dst) {
  memset(dst, 0, sizeof(*dst));
  COPY_V9_FIELDS(dst, src);
}

void chrNetPropsToV9(const ncclNetProperties_v12_t* src, ncclNetProperties_v9_t* dst) {
  memset(dst, 0, sizeof(*dst));
  COPY_V9_FIELDS(dst, src);
}

void chrNetPropsToV8(const ncclNetProperties_v12_t* src, ncclNetProperties_v8_t* dst) {
  memset(dst, 0, sizeof(*dst));
  dst->name = src->name;
  dst->pciPath = src->pciPath;
  dst->guid = src->guid;
  dst->ptrSupport = src->ptrSupport;
  dst->regIsGlobal = src->regIsGlobal;
  dst->speed = src->speed;
  dst->port = src->port;
  dst->latency = src->latency;
  dst->maxComms = src->maxComms;
  dst->maxRecvs = src->maxRecvs;
  dst->netDeviceType = src->netDeviceType;
  dst->netDeviceVersion = src->netDeviceVersion;
}

static int vpropsFrom4(int ndevs, const int* devs, ncclNetVDeviceProps_v12_t* dst) {
  if (ndevs < 1 || ndevs > 4) return -1;
  memset(dst, 0, sizeof(*dst));
  dst->ndevs = ndevs;
  for (int i = 0; i < ndevs; i++) dst->devs[i] = devs[i];
  return 0;
}

int chrNetVPropsFromV11(const ncclNetVDeviceProps_v11_t* src, ncclNetVDeviceProps_v12_t* dst) {
  return vpropsFrom4(src->ndevs, src->devs, dst);
}
int chrNetVPropsFromV10(const ncclNetVDeviceProps_v10_t* src, ncclNetVDeviceProps_v12_t* dst) {
  return vpropsFrom4(src->ndevs, src->devs, dst);
}
int chrNetVPropsFromV9(const ncclNetVDeviceProps_v9_t* src, ncclNetVDeviceProps_v12_t* dst) {
  return vpropsFrom4(src->ndevs, src->devs, dst);
}
