/*
 * dev_group.h: the host-side state of a group (launch.h), shared by group.cu (create, destroy) and
 * launch.cu (launches).
 */
#ifndef CHORUS_DEVICE_DEV_GROUP_H_
#define CHORUS_DEVICE_DEV_GROUP_H_

#include <cuda_runtime.h>
#include "device/dev_comm.h"
#include "device/launch.h"

/* Plans larger than the kernel arguments go through host-mapped slots, each reused only once the
 * launch that read it has finished (its event). */
#define CHR_DEV_WORK_SLOTS 4
#define CHR_DEV_WORK_SLOT_BYTES (64 << 10)

struct chrDevRank {
  struct chrDevComm* comm;        /* device copy (inside meta) */
  void* meta;                     /* device: comm, channels, p2p ends, ringOrder */
  struct chrWork* workArea;       /* host-mapped, CHR_DEV_WORK_SLOTS slots */
  struct chrWork* workAreaDev;    /* the same, as the device addresses it */
  cudaEvent_t slotDone[CHR_DEV_WORK_SLOTS];
  int slotUsed[CHR_DEV_WORK_SLOTS];
  int nextSlot;
};

struct chrDevGroup {
  struct chrDevGroupConfig cfg;
  int* ringOrder;                 /* host copy */
  int* ringPos;                   /* rank -> ring position */
  char* data;                     /* device: every connection's FIFOs and control words */
  size_t dataBytes;
  volatile uint32_t* flags;       /* host-mapped: per rank, abort at [rank * 16], error at [rank * 16 + 1] */
  uint32_t* flagsDev;
  struct chrDevRank* ranks;
};

#endif /* CHORUS_DEVICE_DEV_GROUP_H_ */
