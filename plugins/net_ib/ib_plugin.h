/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ib_plugin.h: private state of the InfiniBand / RoCE net plugin (libnccl-net-ib.so), the part that
 * talks to libibverbs. The plain-C logic (filters, GIDs, wire formats, FIFO, request pool) is in
 * ib_logic.h; README.md describes the protocol.
 *
 * One connection = one TCP socket (setup, and later a liveness probe) + nQps RC queue pairs between
 * a send comm and a recv comm, one completion queue per comm. The send comm owns the FIFO array the
 * receiver writes its receive descriptions into. A recv comm on a device that takes GPU memory also
 * owns a flush QP connected to itself, whose RDMA reads make received GPU data visible (flush.c).
 */
#ifndef CHORUS_NET_IB_PLUGIN_H_
#define CHORUS_NET_IB_PLUGIN_H_

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdint.h>

#include "net_setup.h"
#include "ib_logic.h"
#include "plugin_support.h"
#include "plugin/net_v12.h"
#include "plugin/profiler_common.h"
#include "plugin/profiler_net_ib.h"

#define IB_MAX_DEVS 32

/* ---- logging: through the logger given to init (silent before init) ---- */
extern ncclDebugLogger_t ibLogger;
#define IB_WARN(...) \
  do { if (ibLogger) ibLogger(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__, "NET/IB : " __VA_ARGS__); } while (0)
#define IB_INFO(flags, ...) \
  do { if (ibLogger) ibLogger(NCCL_LOG_INFO, (flags), __FILE__, __LINE__, "NET/IB : " __VA_ARGS__); } while (0)
#define IB_TRACE(...) \
  do { if (ibLogger) ibLogger(NCCL_LOG_TRACE, NCCL_NET, __FILE__, __LINE__, "NET/IB : " __VA_ARGS__); } while (0)

/* ---- devices (init.c): one per usable (device, port) ---- */
typedef struct {
  char name[64];           /* "mlx5_0" */
  char fullName[80];       /* "mlx5_0:1" for logs */
  char* pciPath;           /* realpath of /sys/class/infiniband/<dev>/device, or NULL */
  struct ibv_context* ctx; /* opened once, for the process */
  struct ibv_pd* pd;       /* one protection domain per device: every comm's MRs live in it */
  int port;
  int linkLayer;           /* IB_LINK_* */
  uint16_t lid;
  int gidIndex;            /* RoCE: the chosen GID index */
  union ibv_gid gid;
  enum ibv_mtu mtu;        /* active MTU */
  int speedMbps;
  uint64_t guid;
  int dmabuf;              /* ibv_reg_dmabuf_mr is worth offering (NCCL_DMABUF_ENABLE != 0) */
  int peerMem;             /* a peer-memory driver is loaded: ibv_reg_mr takes GPU addresses */
  int maxQpWr;             /* device limit on outstanding work requests per QP */
} ibDev;

typedef struct {
  int qpsPerConn;    /* NCCL_IB_QPS_PER_CONNECTION */
  int timeout;       /* NCCL_IB_TIMEOUT: local ACK timeout, 4.096 us * 2^timeout */
  int retryCnt;      /* NCCL_IB_RETRY_CNT */
  int sl;            /* NCCL_IB_SL */
  int tc;            /* NCCL_IB_TC */
  int pkeyIndex;     /* NCCL_IB_PKEY */
  int64_t connectTimeoutMs;
  int gdrFlush;      /* NCCL_GDR_FLUSH_DISABLE is 0: receives into GPU memory are flushed */
  chrSockAddr ifAddr; /* where listen sockets bind (NCCL_SOCKET_IFNAME) */
  char ifName[IF_NAMESIZE];
} ibSettings;

extern ibDev ibDevs[IB_MAX_DEVS];
extern int ibNDevs;
extern ibSettings ibConf;

/* The device takes GPU memory (NCCL_PTR_CUDA): through a peer-memory driver or as dma-bufs. */
static inline int ibDevTakesGpu(const ibDev* d) { return d->peerMem || d->dmabuf; }

/* ---- memory registration (mr.c) ---- */
#define IB_MR_MAGIC 0x49424d52u /* "IBMR" */
typedef struct {
  uint32_t magic;
  int dev;
  int type;          /* NCCL_PTR_HOST or NCCL_PTR_CUDA, as registered: iflush reads back only CUDA */
  struct ibv_mr* mr;
} ibMr;

/* ---- connections (connection.c) ---- */

/* Work request ids: the low byte says what the completion is for, the rest indexes a request. */
enum { IB_WR_SEND = 1, IB_WR_FIFO = 2, IB_WR_RECV = 3, IB_WR_FLUSH = 4 };
#define IB_WRID(kind, idx) (((uint64_t)(idx) << 8) | (uint64_t)(kind))
#define IB_WRID_KIND(id) ((int)((id)&0xff))
#define IB_WRID_IDX(id) ((int)((id) >> 8))

struct ibComm;

typedef struct {
  struct ibComm* comm;
  int isSend;
  int isFlush;     /* a flush read (recv comm): one completion, no sizes */
  int idx;
  int pending;     /* completions still to come: one per QP (data), one (flush) */
  size_t size;     /* send: bytes; receive: bytes received so far (sum of immediates) */
  size_t capacity; /* receive: posted size */
  void* phandle;   /* profiler parent given to isend/irecv (NULL: no event) */
  void* eHandle;   /* the profiler's event for this request */
  ncclProfilerNetIbDescr_v1_t pdescr; /* what the event describes; lives until the stop */
} ibRequest;

typedef struct ibComm {
  int isSend;
  int dev;
  int fd;                       /* the setup socket, kept open as a liveness probe */
  struct ibv_cq* cq;
  int nQps;
  struct ibv_qp* qps[IB_MAX_QPS];
  ibReqPool pool;
  ibRequest reqs[IB_MAX_REQUESTS];
  int64_t lastProbeNs;          /* last liveness check of the peer */
  ncclResult_t broken;          /* the first fatal error (ncclSuccess: none): every later call returns it */
  ncclProfilerCallback_t prof;  /* from the init whose ctx made this comm (NULL: no events) */
  /* send side */
  volatile ibFifoEntry* fifo;   /* IB_FIFO_DEPTH entries written by the receiver */
  struct ibv_mr* fifoMr;
  uint64_t sendSeq;
  /* receive side */
  ibFifoEntry* staging;         /* IB_FIFO_DEPTH local copies the FIFO writes are sent from */
  struct ibv_mr* stagingMr;
  uint64_t remFifoAddr;
  uint32_t remFifoRkey;
  uint64_t recvSeq;
  uint8_t stagingBusy[IB_FIFO_DEPTH]; /* the FIFO write sent from this staging entry is not complete */
  uint64_t recvArrived[IB_MAX_QPS];   /* per QP: data completions seen so far */
  struct ibv_qp* flushQp;       /* connected to itself; NULL: receives are never flushed */
  void* flushBuf;               /* host bytes the flush reads land in (contents unused) */
  struct ibv_mr* flushMr;
} ibComm;

struct ibPending;
typedef struct {
  int dev;
  int fd;                   /* listening socket */
  ibHandle h;
  ncclProfilerCallback_t prof;
  struct ibPending* pending; /* the connection being accepted */
} ibListenComm;

/* ---- shared functions ---- */
/* qp.c: queue pairs and the comm's verbs objects */
ncclResult_t ibCommCreateVerbs(ibComm* c, int nQps, ibConnInfo* local);
ncclResult_t ibCommConnectQps(ibComm* c, const ibConnInfo* local, const ibConnInfo* remote);
void ibCommDestroy(ibComm* c);
ncclResult_t ibCommCreateFlush(ibComm* c); /* recv comm: the flush QP and its landing buffer */
/* connection.c */
void ibConnectForget(void* ctx); /* drop unfinished connects made through ctx */
/* data.c */
ncclResult_t ibCheckPeer(ibComm* c); /* the setup socket says the peer is gone: ncclRemoteError */
ncclResult_t ibCommFail(ibComm* c, ncclResult_t res); /* mark the comm failed; returns res */
/* mhandle m is this plugin's, on c's device, and covers [data, data+size) (size 0: m may be NULL) */
ncclResult_t ibCheckMr(const ibComm* c, const ibMr* m, const void* data, size_t size, const char* who);

/* The v12 entry points (versions.c puts them in the table). */
ncclResult_t ibInit(void** ctx, uint64_t commId, ncclNetCommConfig_v12_t* config, ncclDebugLogger_t logFunction,
                    ncclProfilerCallback_t profFunction);
ncclResult_t ibDevices(int* ndev);
ncclResult_t ibGetProperties(int dev, ncclNetProperties_v12_t* props);
ncclResult_t ibFinalize(void* ctx);
ncclResult_t ibListen(void* ctx, int dev, void* handle, void** listenComm);
ncclResult_t ibConnect(void* ctx, int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v12_t** sendDevComm);
ncclResult_t ibAccept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v12_t** recvDevComm);
ncclResult_t ibCloseSend(void* sendComm);
ncclResult_t ibCloseRecv(void* recvComm);
ncclResult_t ibCloseListen(void* listenComm);
ncclResult_t ibRegMr(void* comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t ibRegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
ncclResult_t ibDeregMr(void* comm, void* mhandle);
ncclResult_t ibIsend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request);
ncclResult_t ibIrecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
                     void** request);
ncclResult_t ibIflush(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
ncclResult_t ibTest(void* request, int* done, int* sizes);

#endif /* CHORUS_NET_IB_PLUGIN_H_ */
