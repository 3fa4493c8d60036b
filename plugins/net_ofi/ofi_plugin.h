/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ofi_plugin.h: private state of the libfabric net plugin (libnccl-net-chorus-ofi.so).
 *
 * Every device is one libfabric domain of a provider with reliable datagram endpoints (FI_EP_RDM) and
 * tagged messages (FI_TAGGED). Each device gets CHORUS_OFI_ENDPOINTS endpoints per process (default:
 * 4 with progress threads, else 1; init.c pickThreading), opened at its first listen or connect, each with its own completion queue, sharing the address
 * vector; a connection uses one of them at each end (taken in turn), and the 64-bit tag tells
 * connections and messages apart (README.md gives the layout). Over connection-oriented providers
 * (tcp;ofi_rxm) the connections of two endpoints share one transport connection, so more endpoints
 * mean more of them.
 *
 * Locks. An endpoint's lock guards it, its completion queue and the state of every comm and request
 * on it, so any thread may call any entry point. Without progress threads every endpoint of a device
 * uses the device's lock (the provider is asked for FI_THREAD_DOMAIN: one call at a time per domain)
 * and a progress call drives them all. With progress threads (CHORUS_OFI_PROGRESS_THREADS; by
 * default over tcp, sockets and udp where the process has 8 CPUs or more) each endpoint has a lock and
 * a thread of its own that reads its completion queue, which is where providers with manual progress
 * (tcp) move the bytes, so endpoints move data in parallel (the provider is then asked for
 * FI_THREAD_SAFE). The registration cache has a lock of its own, taken inside ofiMrGet/ofiMrPut.
 */
#ifndef CHORUS_NET_OFI_PLUGIN_H_
#define CHORUS_NET_OFI_PLUGIN_H_

#include <pthread.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "net_setup.h"
#include "plugin/net_v12.h"
#include "plugin_support.h"

#define OFI_LIBFABRIC_VERSION FI_VERSION(1, 17)

#define OFI_MAX_DEVS 16
#define OFI_MAX_EPS 8 /* CHORUS_OFI_ENDPOINTS at most */
#define OFI_MAX_RECVS 8                                         /* maxRecvs: buffers per grouped irecv */
#define OFI_RECV_REQUESTS NCCL_NET_MAX_REQUESTS                   /* receive requests in flight per comm */
#define OFI_SEND_REQUESTS (NCCL_NET_MAX_REQUESTS * OFI_MAX_RECVS) /* isends in flight per comm (ABI) */
#define OFI_MAX_ADDR 88     /* endpoint name bytes that fit in a handle (tcp: 16 or 28, efa: 32) */
#define OFI_ERR_LEN 256

#define OFI_HANDLE_MAGIC 0x43484f46494e4554ULL  /* "CHOFINET" */
#define OFI_CONNECT_MAGIC 0x43484f4649434f4eULL /* "CHOFICON" */

/* ---- tags: bit 63 control, then a 23-bit connection id, then the rest ---- */
#define OFI_ID_BITS 23
#define OFI_ID_MAX ((1u << OFI_ID_BITS) - 1)
#define OFI_SEQ_BITS 40
#define OFI_SEQ_MASK ((1ULL << OFI_SEQ_BITS) - 1)
#define OFI_TAG_CTRL (1ULL << 63)
#define OFI_CTRL_CONNECT 1ULL /* sender -> listener: "I connect to your listen id" */
#define OFI_CTRL_PING 2ULL    /* either side -> the other: "are you still there" */
/* data message seq of connection id (the receiver's id) */
static inline uint64_t ofiDataTag(uint32_t id, uint64_t seq) {
  return ((uint64_t)id << OFI_SEQ_BITS) | (seq & OFI_SEQ_MASK);
}
/* control message of a kind for connection (or listen) id */
static inline uint64_t ofiCtrlTag(uint64_t kind, uint32_t id) {
  return OFI_TAG_CTRL | (kind << 56) | ((uint64_t)id << 32);
}

/* ---- logging: through the logger given to init (silent before init) ---- */
extern ncclDebugLogger_t ofiLogger;
#define OFI_WARN(...) \
  do { if (ofiLogger) ofiLogger(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__, "NET/OFI : " __VA_ARGS__); } while (0)
#define OFI_INFO(flags, ...) \
  do { if (ofiLogger) ofiLogger(NCCL_LOG_INFO, (flags), __FILE__, __LINE__, "NET/OFI : " __VA_ARGS__); } while (0)
#define OFI_TRACE(...) \
  do { if (ofiLogger) ofiLogger(NCCL_LOG_TRACE, NCCL_NET, __FILE__, __LINE__, "NET/OFI : " __VA_ARGS__); } while (0)

/* ---- settings (environment, read at the first init) ---- */
typedef struct {
  char provider[128];  /* CHORUS_OFI_PROVIDER (FI_PROVIDER is applied by libfabric itself) */
  char domains[256];   /* CHORUS_OFI_DOMAIN: which domains become devices */
  int cuda;            /* CHORUS_OFI_CUDA: offer NCCL_PTR_CUDA where the provider has FI_HMEM */
  int forceFlush;      /* CHORUS_OFI_FORCE_FLUSH: iflush reads back through the NIC for host memory too */
  int64_t pingMs;      /* CHORUS_OFI_PING_MS: probe a silent peer after this long (0: never) */
  int64_t peerTimeoutMs; /* CHORUS_OFI_PEER_TIMEOUT_MS: a probe not taken in this long = peer gone */
  int64_t closeWaitMs; /* how long close waits for cancelled operations before leaving them to the CQ */
  int endpoints;       /* CHORUS_OFI_ENDPOINTS: endpoints per device and process (1..OFI_MAX_EPS; 0: by provider) */
  int progressThreads; /* CHORUS_OFI_PROGRESS_THREADS: a thread per endpoint reads its queue (-1: by provider) */
} ofiSettings;
extern ofiSettings ofiConf;

/* ---- operations posted to the provider ---- */
enum { OP_SEND = 1, OP_RECV, OP_CONNECT_SEND, OP_CONNECT_RECV, OP_PING_SEND, OP_PING_RECV, OP_FLUSH };

struct ofiOwner;
struct ofiRequest;

/* One operation handed to libfabric. The fi_context2 comes first: the CQ gives it back as op_context. */
typedef struct ofiOp {
  struct fi_context2 ctx;
  int kind;
  int posted;              /* handed to the provider and not completed yet */
  int done;
  struct ofiOwner* owner;  /* comm or listen comm whose inflight counter this op holds */
  struct ofiRequest* req;  /* data ops: the request; NULL otherwise */
  int index;               /* recv: which op of the request */
  size_t len;              /* bytes received (from the completion) */
  uint64_t data;           /* remote CQ data: the isend's tag */
} ofiOp;

/* What comms, listen comms and connects have in common: ops in flight and a failure. */
typedef struct ofiOwner {
  struct ofiDev* dev;
  struct ofiEp* ep;       /* the endpoint its ops go through (its lock guards the owner) */
  int inflight;           /* ops posted and not yet completed */
  int closing;            /* closed by the core: free once inflight is 0 */
  int failed;             /* first failure (ncclResult_t), 0 = healthy */
  char failMsg[OFI_ERR_LEN];
  struct ofiOwner* nextZombie;
  void (*freeFn)(struct ofiOwner*);
} ofiOwner;

typedef struct {
  uint32_t magic;
  int type;                /* NCCL_PTR_HOST / NCCL_PTR_CUDA */
  struct ofiDev* dev;
  struct ofiMrEntry* entry;/* cached registration, NULL when the provider needs none */
} ofiMrHandle;

/* A cached registration of a domain (regIsGlobal: sub-ranges reuse it). */
typedef struct ofiMrEntry {
  struct ofiMrEntry* next;
  uintptr_t base, end;     /* page-aligned range */
  int type;
  int refs;
  struct fid_mr* mr;
  void* desc;
  uint64_t key;
} ofiMrEntry;

/* One endpoint of a device, with its completion queue. */
typedef struct ofiEp {
  struct ofiDev* dev;
  int index;
  pthread_mutex_t* lock;   /* the device's lock, or ownLock with progress threads */
  pthread_mutex_t ownLock;
  struct fid_ep* ep;
  struct fid_cq* cq;
  char addr[OFI_MAX_ADDR];
  ofiOwner* zombies;       /* closed owners waiting for their ops to come back */
  struct ofiComm* pendingComms; /* comms with requests the provider has not taken yet */
  int busy;                /* requests of the core issued here and not yet reported done */
  int waiters;             /* entry points waiting for the lock (the progress thread lets them in) */
  int threadOn, stop;      /* progress thread */
  pthread_t thread;
  pthread_cond_t wake;     /* the progress thread sleeps on it while nothing is busy */
} ofiEp;

/* One device: a domain of a provider; its endpoints are opened on first use. */
typedef struct ofiDev {
  int index;
  struct fi_info* info;    /* our copy of the fi_info for this domain */
  char name[64];
  char* pciPath;
  int speedMbps;
  int hmem;                /* FI_HMEM offered: NCCL_PTR_CUDA */
  int rma;                 /* FI_RMA offered: flushes can read back */
  int maxRecvs;            /* OFI_MAX_RECVS, or 1 without remote CQ data */
  uint64_t mrMode;
  int threads;             /* each endpoint has its own lock and progress thread */
  int wantEps;             /* endpoints to open */
  pthread_mutex_t lock;    /* opening; every endpoint's lock without progress threads */
  pthread_mutex_t mrLock;  /* the registration cache (mrs, nextKey) */
  /* set while opening (lock held), read-only after */
  pid_t pid;               /* process that opened it (reopened after fork) */
  int open;
  struct fid_fabric* fabric;
  struct fid_domain* domain;
  struct fid_av* av;
  ofiEp eps[OFI_MAX_EPS];
  size_t addrLen;          /* the same for every endpoint of the provider */
  int nEps;                /* endpoints open */
  fi_addr_t self;          /* endpoint 0's address in the AV (flush reads) */
  char* flushBuf;          /* host bytes flush reads land in */
  ofiMrEntry* flushMr;
  unsigned nextEp;         /* atomic: the endpoint the next listen or connect takes */
  uint32_t nextId;         /* atomic */
  uint64_t nextKey;        /* requested keys when the provider does not pick them (mrLock) */
  ofiMrEntry* mrs;         /* mrLock */
} ofiDev;

extern ofiDev ofiDevs[OFI_MAX_DEVS];
extern int ofiNDevs;

/* Per init() context (v11+: one per communicator). */
typedef chrNetCtx ofiCtx; /* per init() context: net_common's (net_setup.h) */

/* ---- wire formats ---- */

/* The listen handle (<= NCCL_NET_HANDLE_MAXSIZE bytes). */
typedef struct {
  uint64_t magic;
  uint64_t nonce;          /* random; the connect message must repeat it */
  uint32_t listenId;       /* becomes the receiver's connection id */
  uint32_t addrLen;
  char addr[OFI_MAX_ADDR]; /* the listener's endpoint name */
} ofiHandle;

/* Connect message, sender -> listener. */
typedef struct {
  uint64_t magic;
  uint64_t nonce;
  uint32_t senderId;       /* where pings to the sender go */
  uint32_t addrLen;
  char addr[OFI_MAX_ADDR];
} ofiConnectMsg;

/* ---- comms ---- */
/* One buffer of a request (a send or flush has one, a receive 1..OFI_MAX_RECVS). */
typedef struct {
  void* data;
  void* desc;
  size_t capacity;      /* recv: posted size; send: size */
  int tag;
  size_t size;          /* bytes of this buffer's message */
  char* bounce;         /* grouped receives: kept with the slot, grown on demand */
  size_t bounceLen;
  ofiMrEntry* bounceMr;
} ofiBuf;

typedef struct ofiRequest {
  struct ofiComm* comm;
  int used;
  int kind;                    /* OP_SEND, OP_RECV or OP_FLUSH */
  int n;                       /* send, flush: 1; recv: buffers */
  int nPosted;                 /* ops handed to the provider so far (the rest wait in the comm's queue) */
  int nDone;                   /* ops completed */
  int grouped;                 /* recv with n > 1: messages land in bounce buffers, then by tag */
  unsigned filled;             /* grouped: bit i = buffer i has its message */
  uint64_t seq;                /* sequence number of its first message */
  uint64_t raddr, rkey;        /* flush: where the read-back reads */
  size_t flushLen;
  ofiBuf* b;                   /* perReq entries in the comm's storage */
  ofiOp* ops;                  /* perReq entries in the comm's storage */
} ofiRequest;

typedef struct ofiComm {
  ofiOwner own;                /* first member */
  uint32_t magic;
  int isSend;
  uint32_t id;                 /* my id (recv: data tags; both: probes to me) */
  uint32_t peerId;             /* send: the receiver's id (data tags); both: probes to the peer */
  fi_addr_t peer;
  uint64_t seq;                /* next message */
  ofiRequest* reqs;
  int nReqs;
  int perReq;                  /* buffers (and ops) per request: 1 for sends, OFI_MAX_RECVS for receives */
  ofiBuf* bufStore;            /* nReqs * perReq */
  ofiOp* opStore;              /* nReqs * perReq */
  int nextReq;
  int busy;                    /* requests handed out and not yet completed */
  ofiRequest** pending;        /* requests not yet fully posted, in issue order (a ring of nReqs) */
  uint64_t pendHead, pendTail;
  int inPendingList;           /* on its endpoint's pendingComms list */
  struct ofiComm* nextPending;
  int64_t lastProgressNs;      /* a completion of this comm, or a new request */
  int64_t pingSentNs;          /* when the current probe was first tried */
  int64_t checkedNs;           /* the last liveness check (ofiPingCheck); read without the lock by test */
  int probing;                 /* a probe is being sent and has not been taken yet */
  ofiOp pingSend, pingRecv, connectOp;
  uint64_t pingOut, pingIn;
  ofiConnectMsg connectMsg;    /* send comm: the message connect() sends */
  ofiMrEntry* ctrlMr;          /* registration of this struct when the provider needs one */
  ncclProfilerCallback_t prof;
} ofiComm;

/* ---- shared functions ---- */
/* init.c */
int64_t ofiNowNs(void);

/* endpoint.c (every function here but ofiDevOpen and ofiEpLock expects the endpoint's lock held) */
ncclResult_t ofiDevOpen(ofiDev* d);                /* endpoints ready for this process */
uint32_t ofiDevNewId(ofiDev* d);
ofiEp* ofiDevPickEp(ofiDev* d);                    /* the endpoint for a new listen or connect */
void ofiEpLock(ofiEp* e);                          /* take its lock (an entry point) */
void ofiEpUnlock(ofiEp* e);
void ofiProgress(ofiEp* e);                        /* read completions, finish ops, post what waits */
ncclResult_t ofiPost(ofiOwner* o, ofiOp* op, ssize_t rc, const char* what); /* account a post */
ncclResult_t ofiFail(ofiOwner* o, ncclResult_t res, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
void ofiOwnerRelease(ofiOwner* o);                 /* closing: cancel ops; free now or when they complete */
ncclResult_t ofiAvInsert(ofiDev* d, const void* addr, size_t len, fi_addr_t* out, char* err, size_t errLen);
void ofiEpBusy(ofiEp* e, int delta);               /* requests issued (+) or reported done (-) */
void ofiStopThreads(void);                         /* join every progress thread (unload) */

/* connection.c */
void ofiConnectForget(void* ctx);
void ofiCommFree(ofiOwner* o);
uint32_t ofiCommMagic(void);
ncclResult_t ofiPingCheck(ofiComm* c);             /* probe a silent peer (lock held) */
void ofiOnPing(ofiOp* op, int ok);                 /* a ping op completed (lock held) */
void ofiOnConnectRecv(ofiOp* op);                  /* a listen comm got a connect message (lock held) */

/* data.c */
void ofiOnData(ofiOp* op);                         /* a send/recv/flush op completed (lock held) */
void ofiPostPendingAll(ofiEp* e);                  /* give the provider what waits, every comm (lock held) */
void ofiForgetPending(ofiComm* c);                 /* off the device's list: the comm closes (lock held) */

/* mr.c (ofiMrGet and ofiMrPut take the registration lock; FI_THREAD_DOMAIN callers hold the device's) */
ncclResult_t ofiMrGet(ofiDev* d, void* data, size_t size, int type, uint64_t access, ofiMrEntry** out);
void ofiMrPut(ofiDev* d, ofiMrEntry* e);
int ofiMrNeeded(const ofiDev* d, int type);
ofiMrHandle* ofiMrCheck(void* mhandle, const char* what);

/* v12 entry points, also the implementation behind every older table */
ncclResult_t ofiInit(void** ctx, uint64_t commId, ncclNetCommConfig_v12_t* config, ncclDebugLogger_t logFunction,
                     ncclProfilerCallback_t profFunction);
ncclResult_t ofiDevices(int* ndev);
ncclResult_t ofiGetProperties(int dev, ncclNetProperties_v12_t* props);
ncclResult_t ofiFinalize(void* ctx);
ncclResult_t ofiListen(void* ctx, int dev, void* handle, void** listenComm);
ncclResult_t ofiConnect(void* ctx, int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v12_t** sendDevComm);
ncclResult_t ofiAccept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v12_t** recvDevComm);
ncclResult_t ofiCloseSend(void* sendComm);
ncclResult_t ofiCloseRecv(void* recvComm);
ncclResult_t ofiCloseListen(void* listenComm);
ncclResult_t ofiRegMr(void* comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t ofiRegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
ncclResult_t ofiDeregMr(void* comm, void* mhandle);
ncclResult_t ofiGetDeviceMr(void* comm, void* mhandle, void** dptr_mhandle);
ncclResult_t ofiIsend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request);
ncclResult_t ofiIrecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
                      void** request);
ncclResult_t ofiIflush(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
ncclResult_t ofiTest(void* request, int* done, int* sizes);

#endif /* CHORUS_NET_OFI_PLUGIN_H_ */
