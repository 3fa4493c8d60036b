/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * socket_plugin.h: private state of the TCP net plugin (libnccl-net-socket.so).
 *
 * One logical connection (a send comm on one side, a recv comm on the other) is one control socket
 * plus nSocks data sockets. The control socket carries one header per message (and, for small
 * messages, the payload right after it); the data sockets carry the bytes of larger messages, cut
 * into at most one contiguous piece per socket. Each data socket has its own queue of pieces to
 * move, filled by the caller's thread in message order and drained by whoever moves that socket's
 * bytes. README.md describes the wire protocol and the threading model; this header only holds the
 * types and the functions the files share.
 */
#ifndef CHORUS_NET_SOCKET_PLUGIN_H_
#define CHORUS_NET_SOCKET_PLUGIN_H_

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "net_setup.h"
#include "plugin/net_v12.h"
#include "plugin_support.h"
#include "socket/socket.h"

#define NS_API __attribute__((visibility("default")))

#define NS_MAX_DEVS 16
#define NS_MAX_SOCKS 64          /* nThreads * nSocksPerThread, NCCL's limit */
#define NS_MAX_THREADS 16        /* helper threads per comm */
#define NS_MAX_RECVS 8           /* maxRecvs: buffers per grouped irecv */
#define NS_RECV_REQUESTS NCCL_NET_MAX_REQUESTS                 /* receive requests in flight per comm */
#define NS_SEND_REQUESTS (NCCL_NET_MAX_REQUESTS * NS_MAX_RECVS) /* isends in flight per comm (ABI) */
#define NS_QUEUE_LEN NS_SEND_REQUESTS /* pieces per data socket: one per message in flight, at most */
#define NS_MIN_PIECE (64 * 1024) /* a message is cut into pieces of at least this many bytes */

#define NS_HANDLE_MAGIC 0x43484f5255534e31ULL /* "CHORUSN1" */
#define NS_HELLO_MAGIC 0x43484e5348454c4fULL  /* first bytes of every socket of a connection */
#define NS_MSG_MAGIC 0x4d534732u              /* "MSG2": header of each message on the control socket */
#define NS_MR_MAGIC 0x4d52u

/* ---- logging: through the logger given to init (silent before init) ---- */
extern ncclDebugLogger_t nsLogger;
#define NS_WARN(...) \
  do { if (nsLogger) nsLogger(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__, "NET/Socket : " __VA_ARGS__); } while (0)
#define NS_INFO(flags, ...) \
  do { if (nsLogger) nsLogger(NCCL_LOG_INFO, (flags), __FILE__, __LINE__, "NET/Socket : " __VA_ARGS__); } while (0)
#define NS_TRACE(...) \
  do { if (nsLogger) nsLogger(NCCL_LOG_TRACE, NCCL_NET, __FILE__, __LINE__, "NET/Socket : " __VA_ARGS__); } while (0)

/* ---- process-wide state (init.c) ---- */
typedef struct {
  char name[IF_NAMESIZE];
  char* pciPath; /* realpath of /sys/class/net/<if>/device, or NULL */
  chrSockAddr addr;
  int speed;     /* Mbps */
} nsDev;

typedef struct {
  int nThreads;        /* helper threads per comm, 0 = bytes moved inline by test() */
  int nSocksPerThread; /* data sockets per helper thread (per comm, inline mode) */
  size_t eagerBytes;   /* messages up to this size travel on the control socket */
  int64_t connectTimeoutMs;
  int64_t helloTimeoutMs;
  int sockBuf;         /* SO_SNDBUF/SO_RCVBUF, 0 = kernel default */
  int linkTimeoutMs;   /* a link whose peer kernel stays silent this long fails the comm; 0 = kernel's */
} nsSettings;

extern nsDev nsDevs[NS_MAX_DEVS];
extern int nsNDevs;
extern nsSettings nsConf;

/* Per init() context: net_common's (net_setup.h). */
typedef chrNetCtx nsCtx;

/* ---- wire formats ---- */

/* The listen handle (<= NCCL_NET_HANDLE_MAXSIZE bytes): where to connect and what to say. */
typedef struct {
  uint64_t magic;
  uint64_t nonce;     /* random; every socket of the connection proves it knows it */
  chrSockAddr addr;   /* listening address */
  uint32_t nSocks;    /* data sockets, decided by the listener */
  uint32_t nThreads;  /* helper threads, decided by the listener */
} nsHandle;

/* First bytes on every socket of a connection, connector -> listener. */
typedef struct {
  uint64_t magic;
  uint64_t nonce;
  uint32_t index;  /* 0 = control socket, 1..nSocks = data socket index-1 */
  uint32_t nSocks;
} nsHello;

/* One per message on the control socket, sender -> receiver (32 bytes). */
typedef struct {
  uint32_t magic;
  uint32_t eager; /* 1: the payload follows this header on the control socket */
  uint64_t seq;
  uint64_t size;
  int32_t tag;    /* the isend's tag: picks the buffer of a grouped receive */
  uint32_t reserved;
} nsMsgHdr;

/* Profiler event descriptor for socket plugins (version 1, type 1 = socket). */
typedef struct {
  uint8_t type;
  union {
    struct {
      int fd;
      int op;
      size_t length;
    } sock;
  };
} nsProfEvent;
#define NS_PROF_PLUGIN_ID ((int64_t)((2 << 16) | 1))

/* ---- comms ---- */
struct nsComm;

/* One buffer of a request (a send has one, a receive 1..NS_MAX_RECVS). */
typedef struct {
  char* data;
  size_t capacity; /* recv: posted size; send: size */
  size_t size;     /* bytes of the message (recv: known once its header arrived) */
  int tag;
  int eager;
  void* phandle;
  void* eHandle;
  nsProfEvent ev;
} nsBuf;

typedef struct nsRequest {
  struct nsComm* comm;
  int used;            /* slot taken (caller thread only) */
  int n;               /* buffers */
  int nMatched;        /* recv: buffers whose message header arrived */
  unsigned matched;    /* recv: bit i set = buffer i has its message */
  int ctrlDone;        /* every header (and eager payload) moved; caller thread only */
  atomic_int piecesLeft; /* data-socket pieces not yet moved */
  nsBuf* bufs;         /* n entries, in the comm's storage */
} nsRequest;

/* One contiguous piece of one message on one data socket. */
typedef struct {
  char* data;
  size_t len;
  nsRequest* req; /* whose piecesLeft drops when the piece is moved */
} nsPiece;

/* Pieces a data socket must move, in message order: a single-producer (the caller's thread),
 * single-consumer (the socket's mover) ring. An entry stays until its piece is moved, so a request
 * cannot complete (and its slot cannot be reused) while any socket still refers to it. */
typedef struct {
  nsPiece items[NS_QUEUE_LEN];
  atomic_uint_fast64_t tail; /* next entry to fill (producer) */
  atomic_uint_fast64_t head; /* entry being moved (consumer) */
  size_t off;                /* bytes of items[head] moved (consumer only) */
} nsSockQueue;

typedef struct nsThread {
  struct nsComm* comm;
  int index;
  pthread_t tid;
  int started;
  int evfd;           /* wakes the thread when new work is queued or on close */
  atomic_int sleeping;
} nsThread;

typedef struct nsComm {
  int isSend;
  int ctrlFd;
  int nSocks, nThreads;
  int fds[NS_MAX_SOCKS];
  nsSockQueue* queues;   /* nSocks */
  nsRequest* reqs;       /* nReqs, a ring indexed by post order */
  nsBuf* bufStore;       /* nReqs * (isSend ? 1 : NS_MAX_RECVS) */
  int nReqs;
  uint64_t postSeq;      /* next request to post */
  uint64_t ctrlSeq;      /* send: next message whose header goes out; recv: request being matched */
  uint64_t msgSeq;       /* recv: sequence number of the next message header */
  size_t ctrlOff;        /* bytes of the current header (+eager payload) moved */
  nsMsgHdr hdr;          /* send: header being written; recv: header being read */
  int hdrValid;          /* recv: hdr fully read, checked and matched to buffer curBuf */
  int curBuf;
  atomic_int failed;     /* first failure result (0 = healthy) */
  char failMsg[CHR_SOCK_ERR_LEN];
  atomic_int failLogged;
  atomic_int stopping;
  nsThread threads[NS_MAX_THREADS];
  ncclProfilerCallback_t prof;
  int dev;
} nsComm;

/* ---- shared functions ---- */
/* connection.c */
void nsConnectForget(void* ctx); /* drop unfinished connects made through ctx */

/* data.c */
nsComm* nsCommAlloc(int isSend, int nSocks, int nThreads); /* NULL when out of memory; fds are -1 */
ncclResult_t nsCommStart(nsComm* comm); /* start helper threads of a fresh comm */
void nsCommFree(nsComm* comm);          /* stop threads, close sockets, free */
void nsPieceOf(const nsComm* comm, uint64_t seq, size_t size, int eager, int sock, size_t* start, size_t* len);

/* v12 entry points, also the implementation behind every older table */
ncclResult_t nsInit(void** ctx, uint64_t commId, ncclNetCommConfig_v12_t* config, ncclDebugLogger_t logFunction,
                    ncclProfilerCallback_t profFunction);
ncclResult_t nsDevices(int* ndev);
ncclResult_t nsGetProperties(int dev, ncclNetProperties_v12_t* props);
ncclResult_t nsFinalize(void* ctx);
ncclResult_t nsListen(void* ctx, int dev, void* handle, void** listenComm);
ncclResult_t nsConnect(void* ctx, int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v12_t** sendDevComm);
ncclResult_t nsAccept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v12_t** recvDevComm);
ncclResult_t nsCloseSend(void* sendComm);
ncclResult_t nsCloseRecv(void* recvComm);
ncclResult_t nsCloseListen(void* listenComm);
ncclResult_t nsRegMr(void* comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t nsRegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
ncclResult_t nsDeregMr(void* comm, void* mhandle);
ncclResult_t nsGetDeviceMr(void* comm, void* mhandle, void** dptr_mhandle);
ncclResult_t nsIsend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request);
ncclResult_t nsIrecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
                     void** request);
ncclResult_t nsIflush(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
ncclResult_t nsTest(void* request, int* done, int* sizes);

#endif /* CHORUS_NET_SOCKET_PLUGIN_H_ */
