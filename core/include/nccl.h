/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl.h: Chorus's public API. Same names, types, values and layouts as NVIDIA NCCL 2.30
 * (see docs/api-level.md for which functions are implemented and the version we report).
 * Written from the documented facts of NCCL 2.30.7's API; no NVIDIA text is reproduced.
 */
#ifndef NCCL_H_
#define NCCL_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* CUDA types: use the real ones when the CUDA runtime header is present, otherwise
 * opaque stand-ins with the same size, so host-only programs build without CUDA. */
#if defined(__CUDACC__) || defined(CHORUS_HAVE_CUDA_RUNTIME_H)
#include <cuda_runtime.h>
#elif !defined(CUDART_VERSION)
typedef struct CUstream_st* cudaStream_t;
#endif

#define NCCL_MAJOR 2
#define NCCL_MINOR 30
#define NCCL_PATCH 7
#define NCCL_SUFFIX ""
#define NCCL_VERSION_CODE 23007
#define NCCL_VERSION(X, Y, Z) \
  (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))

#define CHORUS_NCCL_H 1 /* lets programs tell Chorus's header from NVIDIA's */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ncclComm* ncclComm_t;
typedef struct ncclWindow_vidmem* ncclWindow_t;
typedef struct ncclParamHandle* ncclParamHandle_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclTimeout = 8,
  ncclNumResults = 9
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f
#define NCCL_API_MAGIC 0xcafebeef

#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_STRICT_ORDERING 0x02
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01
#define NCCL_REVOKE_DEFAULT 0x00
#define NCCL_SUSPEND_MEM 0x01

/* Communicator configuration. Layout is ABI: 96 bytes, fields at fixed offsets.
 * A caller built with an older header passes a smaller `size`; the library reads only that much. */
typedef struct ncclConfig_v23000 {
  size_t size;               /* @0  sizeof(ncclConfig_t) of the caller's header */
  unsigned int magic;        /* @8  NCCL_API_MAGIC */
  unsigned int version;      /* @12 NCCL_VERSION_CODE of the caller's header */
  int blocking;              /* @16 0: init and calls may return ncclInProgress */
  int cgaClusterSize;        /* @20 */
  int minCTAs;               /* @24 */
  int maxCTAs;               /* @28 */
  const char* netName;       /* @32 net plugin name to use */
  int splitShare;            /* @40 */
  int trafficClass;          /* @44 */
  const char* commName;      /* @48 */
  int collnetEnable;         /* @56 */
  int CTAPolicy;             /* @60 */
  int shrinkShare;           /* @64 */
  int nvlsCTAs;              /* @68 */
  int nChannelsPerNetPeer;   /* @72 */
  int nvlinkCentricSched;    /* @76 */
  int graphUsageMode;        /* @80 */
  int numRmaCtx;             /* @84 */
  int maxP2pPeers;           /* @88 */
  int graphStreamOrdering;   /* @92 */
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER {                                               \
  sizeof(ncclConfig_t), NCCL_API_MAGIC, NCCL_VERSION_CODE,                      \
  NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,          \
  NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,          \
  NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,          \
  NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,          \
  NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,          \
  NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT }

/* Filled by ncclGroupSimulateEnd. 24 bytes. */
typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime; /* microseconds */
} ncclSimInfo_t;

#define NCCL_SIM_INFO_INITIALIZER { sizeof(ncclSimInfo_t), 0x74685283, NCCL_VERSION_CODE, NCCL_UNDEF_FLOAT }

typedef enum {
  ncclInt8 = 0, ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2, ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6, ncclHalf = 6,
  ncclFloat32 = 7, ncclFloat = 7,
  ncclFloat64 = 8, ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

/* The helper enum only pins the width of ncclRedOp_t to that of an int. */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

typedef enum {
  ncclStatGpuMemSuspend = 0,
  ncclStatGpuMemSuspended = 1,
  ncclStatGpuMemPersist = 2,
  ncclStatGpuMemTotal = 3
} ncclCommMemStat_t;

typedef struct {
  int opCnt;
  int peer;
  int sigIdx;
  int ctx;
} ncclWaitSignalDesc_t;

/* Every function is declared twice: ncclX (weak in the library, so an interposer may replace it)
 * and pncclX (the implementation). */
#define CHORUS_DECLARE(ret, name, args) ret name args; ret p##name args;

CHORUS_DECLARE(ncclResult_t, ncclMemAlloc, (void** ptr, size_t size))
CHORUS_DECLARE(ncclResult_t, ncclMemFree, (void* ptr))
CHORUS_DECLARE(ncclResult_t, ncclGetVersion, (int* version))
CHORUS_DECLARE(ncclResult_t, ncclGetUniqueId, (ncclUniqueId* uniqueId))
CHORUS_DECLARE(ncclResult_t, ncclCommInitRankConfig,
               (ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config))
CHORUS_DECLARE(ncclResult_t, ncclCommInitRank, (ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank))
CHORUS_DECLARE(ncclResult_t, ncclCommInitAll, (ncclComm_t* comm, int ndev, const int* devlist))
CHORUS_DECLARE(ncclResult_t, ncclCommInitRankScalable,
               (ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config))
CHORUS_DECLARE(ncclResult_t, ncclCommFinalize, (ncclComm_t comm))
CHORUS_DECLARE(ncclResult_t, ncclCommDestroy, (ncclComm_t comm))
CHORUS_DECLARE(ncclResult_t, ncclCommAbort, (ncclComm_t comm))
CHORUS_DECLARE(ncclResult_t, ncclCommRevoke, (ncclComm_t comm, int revokeFlags))
CHORUS_DECLARE(ncclResult_t, ncclCommSplit,
               (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config))
CHORUS_DECLARE(ncclResult_t, ncclCommShrink,
               (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                ncclConfig_t* config, int shrinkFlags))
CHORUS_DECLARE(ncclResult_t, ncclCommGetUniqueId, (ncclComm_t comm, ncclUniqueId* uniqueId))
CHORUS_DECLARE(ncclResult_t, ncclCommGrow,
               (ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm,
                ncclConfig_t* config))
CHORUS_DECLARE(ncclResult_t, ncclCommSuspend, (ncclComm_t comm, int flags))
CHORUS_DECLARE(ncclResult_t, ncclCommResume, (ncclComm_t comm))
CHORUS_DECLARE(ncclResult_t, ncclCommMemStats, (ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value))

CHORUS_DECLARE(const char*, ncclGetErrorString, (ncclResult_t result))
CHORUS_DECLARE(const char*, ncclGetLastError, (ncclComm_t comm))
#if defined(__GNUC__)
void ncclResetDebugInit(void) __attribute__((deprecated));
void pncclResetDebugInit(void) __attribute__((deprecated));
#else
CHORUS_DECLARE(void, ncclResetDebugInit, (void))
#endif
CHORUS_DECLARE(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError))
CHORUS_DECLARE(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int* count))
CHORUS_DECLARE(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int* device))
CHORUS_DECLARE(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int* rank))

CHORUS_DECLARE(ncclResult_t, ncclCommRegister, (const ncclComm_t comm, void* buff, size_t size, void** handle))
CHORUS_DECLARE(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void* handle))
CHORUS_DECLARE(ncclResult_t, ncclCommWindowRegister,
               (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags))
CHORUS_DECLARE(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win))
CHORUS_DECLARE(ncclResult_t, ncclWinGetUserPtr, (ncclComm_t comm, ncclWindow_t win, void** outUserPtr))

CHORUS_DECLARE(ncclResult_t, ncclRedOpCreatePreMulSum,
               (ncclRedOp_t* op, void* scalar, ncclDataType_t datatype, ncclScalarResidence_t residence,
                ncclComm_t comm))
CHORUS_DECLARE(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm))

CHORUS_DECLARE(ncclResult_t, ncclReduce,
               (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                int root, ncclComm_t comm, cudaStream_t stream))
CHORUS_DECLARE(ncclResult_t, ncclBcast,
               (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream))
CHORUS_DECLARE(ncclResult_t, ncclBroadcast,
               (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                ncclComm_t comm, cudaStream_t stream))
CHORUS_DECLARE(ncclResult_t, ncclAllReduce,
               (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                ncclComm_t comm, cudaStream_t stream))
CHORUS_DECLARE(ncclResult_t, ncclReduceScatter,
               (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,
                ncclComm_t comm, cudaStream_t stream))
CHORUS_DECLARE(ncclResult_t, ncclAllGather,
               (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,
                cudaStream_t stream))
CHORUS_DECLARE(ncclResult_t, ncclAlltoAll,
               (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                cudaStream_t stream))
CHORUS_DECLARE(ncclResult_t, ncclGather,
               (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                ncclComm_t comm, cudaStream_t stream))
CHORUS_DECLARE(ncclResult_t, ncclScatter,
               (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                ncclComm_t comm, cudaStream_t stream))
CHORUS_DECLARE(ncclResult_t, ncclSend,
               (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                cudaStream_t stream))
CHORUS_DECLARE(ncclResult_t, ncclRecv,
               (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                cudaStream_t stream))
CHORUS_DECLARE(ncclResult_t, ncclPutSignal,
               (const void* localbuff, size_t count, ncclDataType_t datatype, int peer, ncclWindow_t peerWin,
                size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream))
CHORUS_DECLARE(ncclResult_t, ncclSignal,
               (int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream))
CHORUS_DECLARE(ncclResult_t, ncclWaitSignal,
               (int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm, cudaStream_t stream))

CHORUS_DECLARE(ncclResult_t, ncclGroupStart, (void))
CHORUS_DECLARE(ncclResult_t, ncclGroupEnd, (void))
CHORUS_DECLARE(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t* simInfo))

/* Runtime access to configuration parameters. */
CHORUS_DECLARE(ncclResult_t, ncclParamBind, (ncclParamHandle_t* out, const char* key))
CHORUS_DECLARE(ncclResult_t, ncclParamGetI8, (ncclParamHandle_t h, int8_t* out))
CHORUS_DECLARE(ncclResult_t, ncclParamGetI16, (ncclParamHandle_t h, int16_t* out))
CHORUS_DECLARE(ncclResult_t, ncclParamGetI32, (ncclParamHandle_t h, int32_t* out))
CHORUS_DECLARE(ncclResult_t, ncclParamGetI64, (ncclParamHandle_t h, int64_t* out))
CHORUS_DECLARE(ncclResult_t, ncclParamGetU8, (ncclParamHandle_t h, uint8_t* out))
CHORUS_DECLARE(ncclResult_t, ncclParamGetU16, (ncclParamHandle_t h, uint16_t* out))
CHORUS_DECLARE(ncclResult_t, ncclParamGetU32, (ncclParamHandle_t h, uint32_t* out))
CHORUS_DECLARE(ncclResult_t, ncclParamGetU64, (ncclParamHandle_t h, uint64_t* out))
CHORUS_DECLARE(ncclResult_t, ncclParamGetStr, (ncclParamHandle_t h, const char** out))
CHORUS_DECLARE(ncclResult_t, ncclParamGet, (ncclParamHandle_t h, void* out, int maxLen, int* len))
CHORUS_DECLARE(ncclResult_t, ncclParamGetParameter, (const char* key, const char** value, int* valueLen))
CHORUS_DECLARE(ncclResult_t, ncclParamGetAllParameterKeys, (const char*** table, int* tableLen))
CHORUS_DECLARE(void, ncclParamDumpAll, (void))

#undef CHORUS_DECLARE

#ifdef __cplusplus
}
#endif

#endif /* NCCL_H_ */
