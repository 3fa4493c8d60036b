/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mock_verbs.c: a stand-in for libibverbs, so the IB plugin's verbs code runs on machines with no RDMA
 * hardware. Linked into a test copy of the plugin (libnccl-net-ibmock.so, tests only) in place of
 * libibverbs. It models one device "mock_0" with one ACTIVE port (RoCE by default; InfiniBand with a
 * LID when MOCK_VERBS_LINK=ib) and carries out, synchronously and within one process, what an RC
 * queue pair does:
 *   - RDMA write (with immediate): the remote key must name a registration with remote-write access
 *     that covers the target range, the local key one that covers the source; the bytes are copied;
 *     with immediate, the peer QP's oldest posted receive completes (none posted: an RNR error);
 *   - RDMA read: the remote key must name a registration with remote-read access that covers the
 *     source range, the local key one with local-write access that covers the destination; the
 *     bytes are copied (counted, and the last read remembered, for the tests: mock_verbs.h);
 *   - QPs must be in RTS to send and at least RTR to take writes and reads, with the remote-write or
 *     remote-read access flag set at INIT; the peer is found by QP number, and a QP may be connected
 *     to itself (loopback); a QP number that is not in this process (its owner died, or forked away)
 *     gives a retry-exceeded completion, as a real peer that stopped answering does;
 *   - completions go to the QPs' CQs in order; a full CQ is an error; a QP whose work request failed
 *     goes to the error state.
 * Memory: ibv_reg_mr takes any host address; "GPU memory" is host memory here, and the kind of each
 * registration (ibv_reg_mr or ibv_reg_dmabuf_mr) and its access flags are kept for the tests. dma-bufs
 * are taken with MOCK_VERBS_DMABUF=1 only (any open fd; the range is iova .. iova+length of this
 * process); otherwise ibv_reg_dmabuf_mr is unsupported (EOPNOTSUPP), as on a kernel without it.
 * Faults for tests: MOCK_VERBS_FAULT=flipbyte corrupts large data writes, =noremoteread drops remote
 * read from every registration; MOCK_VERBS_FAIL_QP=N / MOCK_VERBS_FAIL_MR=N fail the N-th
 * ibv_create_qp / ibv_reg_mr of the process (ENOMEM).
 * It checks the plugin's use of verbs as hardware would, not more: it does not model timing, packet
 * loss, PCIe ordering or memory outside this process.
 */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mock_verbs.h"

#define MOCK_EXPORT __attribute__((visibility("default")))
#define MAX_OBJS 4096
#define RQ_DEPTH 1024

typedef struct {
  struct ibv_cq cq;
  struct ibv_wc* ring;
  int cap, head, count;
} mockCq;

typedef struct {
  struct ibv_qp qp;
  int access;          /* qp_access_flags given at INIT: what a peer may do to this QP's memory */
  uint32_t remoteQpn;
  uint64_t rq[RQ_DEPTH];
  int rqHead, rqCount;
} mockQp;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static mockQp* qps[MAX_OBJS];
static struct ibv_mr* mrs[MAX_OBJS];
static int mrKinds[MAX_OBJS]; /* MOCK_MR_* of mrs[i] */
static mockVerbsStats stats;  /* reads, last read; live counts are computed when asked */
static int qpsCreated, mrsRegistered; /* for MOCK_VERBS_FAIL_QP / MOCK_VERBS_FAIL_MR */
static uint32_t nextKey = 0x100;
static uint32_t nextQp = 1;
static struct ibv_device mockDevice;
static struct ibv_device* deviceList[2];

static int linkIsIb(void) {
  const char* v = getenv("MOCK_VERBS_LINK");
  return v != NULL && strcmp(v, "ib") == 0;
}

static int envIs(const char* name, const char* value) {
  const char* v = getenv(name);
  return v != NULL && strcmp(v, value) == 0;
}

/* 1 when this is the n-th call (count is the caller's counter) that MOCK_VERBS_FAIL_<what>=n names. */
static int failNth(const char* var, int* count) {
  const char* v = getenv(var);
  return ++*count == (v ? atoi(v) : 0);
}

/* ---------------------------------------------------------------- devices */

struct ibv_device** ibv_get_device_list(int* num) {
  strcpy(mockDevice.name, "mock_0");
  deviceList[0] = &mockDevice;
  deviceList[1] = NULL;
  if (num) *num = 1;
  return deviceList;
}
void ibv_free_device_list(struct ibv_device** list) { (void)list; }
const char* ibv_get_device_name(struct ibv_device* device) { return device->name; }

static int mockPollCq(struct ibv_cq* cq, int n, struct ibv_wc* wc);
static int mockPostSend(struct ibv_qp* qp, struct ibv_send_wr* wr, struct ibv_send_wr** bad);
static int mockPostRecv(struct ibv_qp* qp, struct ibv_recv_wr* wr, struct ibv_recv_wr** bad);

struct ibv_context* ibv_open_device(struct ibv_device* device) {
  struct ibv_context* ctx = calloc(1, sizeof(*ctx));
  if (ctx == NULL) return NULL;
  ctx->device = device;
  ctx->ops.poll_cq = mockPollCq;
  ctx->ops.post_send = mockPostSend;
  ctx->ops.post_recv = mockPostRecv;
  return ctx;
}
int ibv_close_device(struct ibv_context* ctx) {
  free(ctx);
  return 0;
}

int ibv_query_device(struct ibv_context* ctx, struct ibv_device_attr* attr) {
  (void)ctx;
  memset(attr, 0, sizeof(*attr));
  attr->phys_port_cnt = 1;
  attr->node_guid = htobe64(0x0002c90300001234ULL);
  attr->max_qp_wr = 16384;
  return 0;
}

/* the header makes these names macros (inline wrappers); the parentheses define the real symbols */
int(ibv_query_port)(struct ibv_context* ctx, uint8_t port, struct _compat_ibv_port_attr* compat) {
  (void)ctx;
  struct ibv_port_attr* pa = (struct ibv_port_attr*)compat;
  if (port != 1) return EINVAL;
  pa->state = IBV_PORT_ACTIVE;
  pa->link_layer = linkIsIb() ? IBV_LINK_LAYER_INFINIBAND : IBV_LINK_LAYER_ETHERNET;
  pa->lid = linkIsIb() ? 7 : 0;
  pa->active_mtu = IBV_MTU_4096;
  pa->active_width = 2; /* 4x */
  pa->active_speed = 32; /* EDR */
  pa->gid_tbl_len = 4;
  return 0;
}

/* GIDs: [0] RoCE v1 link-local, [1] RoCE v2 link-local, [2] empty, [3] RoCE v2 ::ffff:127.0.0.1 */
int _ibv_query_gid_ex(struct ibv_context* ctx, uint32_t port, uint32_t index, struct ibv_gid_entry* e, uint32_t flags,
                      size_t size) {
  (void)ctx;
  (void)flags;
  (void)size;
  if (port != 1 || index >= 4 || index == 2) return ENODATA;
  memset(e, 0, sizeof(*e));
  e->gid_index = index;
  e->port_num = port;
  if (index == 3) {
    e->gid.raw[10] = 0xff;
    e->gid.raw[11] = 0xff;
    e->gid.raw[12] = 127;
    e->gid.raw[15] = 1;
    e->gid_type = IBV_GID_TYPE_ROCE_V2;
  } else {
    e->gid.raw[0] = 0xfe;
    e->gid.raw[1] = 0x80;
    e->gid.raw[15] = 1;
    e->gid_type = index == 0 ? IBV_GID_TYPE_ROCE_V1 : IBV_GID_TYPE_ROCE_V2;
  }
  return 0;
}

struct ibv_pd* ibv_alloc_pd(struct ibv_context* ctx) {
  struct ibv_pd* pd = calloc(1, sizeof(*pd));
  if (pd) pd->context = ctx;
  return pd;
}
int ibv_dealloc_pd(struct ibv_pd* pd) {
  free(pd);
  return 0;
}

const char* ibv_wc_status_str(enum ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS: return "success";
    case IBV_WC_LOC_PROT_ERR: return "local protection error";
    case IBV_WC_REM_ACCESS_ERR: return "remote access error";
    case IBV_WC_RETRY_EXC_ERR: return "transport retry counter exceeded";
    case IBV_WC_RNR_RETRY_EXC_ERR: return "RNR retry counter exceeded";
    case IBV_WC_REM_INV_REQ_ERR: return "remote invalid request error";
    case IBV_WC_REM_OP_ERR: return "remote operation error";
    default: return "other error";
  }
}

/* ---------------------------------------------------------------- memory */

static struct ibv_mr* addMr(struct ibv_pd* pd, void* addr, size_t len, int access, int kind) {
  struct ibv_mr* mr = calloc(1, sizeof(*mr));
  if (mr == NULL) return NULL;
  if (envIs("MOCK_VERBS_FAULT", "noremoteread")) access &= ~IBV_ACCESS_REMOTE_READ;
  pthread_mutex_lock(&lock);
  int slot = -1;
  for (int i = 0; i < MAX_OBJS && slot < 0; i++)
    if (mrs[i] == NULL) slot = i;
  if (slot < 0) {
    pthread_mutex_unlock(&lock);
    free(mr);
    errno = ENOMEM;
    return NULL;
  }
  mr->context = pd->context;
  mr->pd = pd;
  mr->addr = addr;
  mr->length = len;
  mr->lkey = mr->rkey = nextKey++;
  mr->handle = (uint32_t)access;
  mrs[slot] = mr;
  mrKinds[slot] = kind;
  pthread_mutex_unlock(&lock);
  return mr;
}

struct ibv_mr*(ibv_reg_mr)(struct ibv_pd* pd, void* addr, size_t length, int access) {
  if (pd == NULL || addr == NULL || length == 0) {
    errno = EINVAL;
    return NULL;
  }
  pthread_mutex_lock(&lock);
  int fail = failNth("MOCK_VERBS_FAIL_MR", &mrsRegistered);
  pthread_mutex_unlock(&lock);
  if (fail) {
    errno = ENOMEM;
    return NULL;
  }
  return addMr(pd, addr, length, access, MOCK_MR_PLAIN);
}

/* verbs.h makes ibv_reg_mr an inline that calls ibv_reg_mr_iova2 unless the compiler can prove the
 * access flags constant and free of optional bits, which it cannot at -O0: a Debug build of the mock
 * needs this one too. The mock maps no I/O virtual addresses: iova must be the address itself. */
struct ibv_mr* ibv_reg_mr_iova2(struct ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  if (iova != (uint64_t)(uintptr_t)addr) {
    errno = EOPNOTSUPP;
    return NULL;
  }
  return (ibv_reg_mr)(pd, addr, length, (int)(access & ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE));
}

/* With MOCK_VERBS_DMABUF=1 a dma-buf is taken as the host range iova .. iova+length (the mock has no
 * GPU memory and does not map the fd); fd must be open, as the kernel needs it to be. The plugin's
 * probe (fd -1) then sees EBADF, i.e. "supported". */
struct ibv_mr* ibv_reg_dmabuf_mr(struct ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access) {
  (void)offset;
  if (!envIs("MOCK_VERBS_DMABUF", "1")) {
    errno = EOPNOTSUPP;
    return NULL;
  }
  if (fd < 0 || fcntl(fd, F_GETFD) < 0) {
    errno = EBADF;
    return NULL;
  }
  if (pd == NULL || iova == 0 || length == 0) {
    errno = EINVAL;
    return NULL;
  }
  return addMr(pd, (void*)(uintptr_t)iova, length, access, MOCK_MR_DMABUF);
}

int ibv_dereg_mr(struct ibv_mr* mr) {
  pthread_mutex_lock(&lock);
  int found = 0;
  for (int i = 0; i < MAX_OBJS; i++)
    if (mrs[i] == mr) {
      mrs[i] = NULL;
      mrKinds[i] = MOCK_MR_NONE;
      found = 1;
    }
  pthread_mutex_unlock(&lock);
  if (!found) return EINVAL;
  free(mr);
  return 0;
}

/* A registration with `key` covering [addr, addr+len) that allows `access` (0: local use). */
static struct ibv_mr* findMr(uint32_t key, uint64_t addr, size_t len, int access) {
  for (int i = 0; i < MAX_OBJS; i++) {
    struct ibv_mr* mr = mrs[i];
    if (mr == NULL || mr->rkey != key) continue;
    uint64_t lo = (uint64_t)(uintptr_t)mr->addr;
    if (addr < lo || len > mr->length || addr - lo > mr->length - len) return NULL;
    if (access && !((int)mr->handle & access)) return NULL;
    return mr;
  }
  return NULL;
}

/* ---------------------------------------------------------------- CQs */

struct ibv_cq* ibv_create_cq(struct ibv_context* ctx, int cqe, void* cqContext, struct ibv_comp_channel* ch, int vec) {
  (void)cqContext;
  (void)ch;
  (void)vec;
  mockCq* c = calloc(1, sizeof(*c));
  if (c == NULL) return NULL;
  c->cq.context = ctx;
  c->cq.cqe = cqe;
  c->cap = cqe;
  c->ring = calloc((size_t)cqe, sizeof(struct ibv_wc));
  if (c->ring == NULL) {
    free(c);
    return NULL;
  }
  return &c->cq;
}

int ibv_destroy_cq(struct ibv_cq* cq) {
  mockCq* c = (mockCq*)cq;
  free(c->ring);
  free(c);
  return 0;
}

static int pushWc(struct ibv_cq* cq, const struct ibv_wc* wc) {
  mockCq* c = (mockCq*)cq;
  if (c->count == c->cap) return -1; /* CQ overrun: the plugin sized its CQ too small */
  c->ring[(c->head + c->count) % c->cap] = *wc;
  c->count++;
  return 0;
}

static int mockPollCq(struct ibv_cq* cq, int n, struct ibv_wc* wc) {
  mockCq* c = (mockCq*)cq;
  pthread_mutex_lock(&lock);
  int got = 0;
  while (got < n && c->count > 0) {
    wc[got++] = c->ring[c->head];
    c->head = (c->head + 1) % c->cap;
    c->count--;
  }
  pthread_mutex_unlock(&lock);
  return got;
}

/* ---------------------------------------------------------------- QPs */

struct ibv_qp* ibv_create_qp(struct ibv_pd* pd, struct ibv_qp_init_attr* ia) {
  if (ia->qp_type != IBV_QPT_RC || ia->send_cq == NULL || ia->recv_cq == NULL || ia->cap.max_recv_wr > RQ_DEPTH) {
    errno = EINVAL;
    return NULL;
  }
  mockQp* q = calloc(1, sizeof(*q));
  if (q == NULL) return NULL;
  pthread_mutex_lock(&lock);
  if (failNth("MOCK_VERBS_FAIL_QP", &qpsCreated)) {
    pthread_mutex_unlock(&lock);
    free(q);
    errno = ENOMEM;
    return NULL;
  }
  int slot = -1;
  for (int i = 0; i < MAX_OBJS && slot < 0; i++)
    if (qps[i] == NULL) slot = i;
  if (slot < 0) {
    pthread_mutex_unlock(&lock);
    free(q);
    errno = ENOMEM;
    return NULL;
  }
  q->qp.context = pd->context;
  q->qp.pd = pd;
  q->qp.send_cq = ia->send_cq;
  q->qp.recv_cq = ia->recv_cq;
  q->qp.qp_type = IBV_QPT_RC;
  q->qp.state = IBV_QPS_RESET;
  /* the pid in the high bits: a forked child's QPs never share numbers with its parent's */
  q->qp.qp_num = (((uint32_t)getpid() & 0xfff) << 12) | (nextQp++ & 0xfff);
  qps[slot] = q;
  pthread_mutex_unlock(&lock);
  return &q->qp;
}

int ibv_destroy_qp(struct ibv_qp* qp) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_OBJS; i++)
    if (qps[i] == (mockQp*)qp) qps[i] = NULL;
  pthread_mutex_unlock(&lock);
  free(qp);
  return 0;
}

int ibv_modify_qp(struct ibv_qp* qp, struct ibv_qp_attr* a, int mask) {
  mockQp* q = (mockQp*)qp;
  if (!(mask & IBV_QP_STATE)) return EINVAL;
  pthread_mutex_lock(&lock);
  int ok = 0;
  switch (a->qp_state) {
    case IBV_QPS_INIT:
      ok = q->qp.state == IBV_QPS_RESET && (mask & IBV_QP_PORT) && a->port_num == 1;
      if (ok) q->access = (mask & IBV_QP_ACCESS_FLAGS) ? (int)a->qp_access_flags : 0;
      break;
    case IBV_QPS_RTR:
      ok = q->qp.state == IBV_QPS_INIT && (mask & IBV_QP_DEST_QPN) && (mask & IBV_QP_AV) && a->dest_qp_num != 0;
      /* the address must suit the link: a LID on IB, a GRH with a non-zero GID on RoCE */
      if (ok && linkIsIb()) ok = a->ah_attr.dlid != 0;
      if (ok && !linkIsIb()) ok = a->ah_attr.is_global && a->ah_attr.grh.sgid_index == 3 && a->ah_attr.grh.dgid.raw[10] == 0xff;
      if (ok) q->remoteQpn = a->dest_qp_num;
      break;
    case IBV_QPS_RTS: ok = q->qp.state == IBV_QPS_RTR && (mask & IBV_QP_SQ_PSN); break;
    default: ok = 0;
  }
  if (ok) q->qp.state = a->qp_state;
  pthread_mutex_unlock(&lock);
  return ok ? 0 : EINVAL;
}

static mockQp* findQp(uint32_t qpn) {
  for (int i = 0; i < MAX_OBJS; i++)
    if (qps[i] && qps[i]->qp.qp_num == qpn) return qps[i];
  return NULL;
}

static int mockPostRecv(struct ibv_qp* qp, struct ibv_recv_wr* wr, struct ibv_recv_wr** bad) {
  mockQp* q = (mockQp*)qp;
  pthread_mutex_lock(&lock);
  for (; wr; wr = wr->next) {
    if (q->qp.state < IBV_QPS_INIT || q->rqCount == RQ_DEPTH) {
      *bad = wr;
      pthread_mutex_unlock(&lock);
      return ENOMEM;
    }
    q->rq[(q->rqHead + q->rqCount) % RQ_DEPTH] = wr->wr_id;
    q->rqCount++;
  }
  pthread_mutex_unlock(&lock);
  return 0;
}

/* One RDMA write: returns the completion status the sender sees. */
static enum ibv_wc_status doWrite(mockQp* q, const struct ibv_send_wr* wr) {
  mockQp* peer = findQp(q->remoteQpn);
  if (peer == NULL || peer->qp.state < IBV_QPS_RTR || peer->remoteQpn != q->qp.qp_num) return IBV_WC_RETRY_EXC_ERR;
  if (!(peer->access & IBV_ACCESS_REMOTE_WRITE)) return IBV_WC_REM_ACCESS_ERR;
  size_t len = 0;
  for (int i = 0; i < wr->num_sge; i++) {
    if (findMr(wr->sg_list[i].lkey, wr->sg_list[i].addr, wr->sg_list[i].length, 0) == NULL) return IBV_WC_LOC_PROT_ERR;
    len += wr->sg_list[i].length;
  }
  if (len > 0 && findMr(wr->wr.rdma.rkey, wr->wr.rdma.remote_addr, len, IBV_ACCESS_REMOTE_WRITE) == NULL)
    return IBV_WC_REM_ACCESS_ERR;
  if (wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM && peer->rqCount == 0) return IBV_WC_RNR_RETRY_EXC_ERR;
  uint8_t* dst = (uint8_t*)(uintptr_t)wr->wr.rdma.remote_addr;
  for (int i = 0; i < wr->num_sge; i++) {
    memcpy(dst, (void*)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
    dst += wr->sg_list[i].length;
  }
  /* MOCK_VERBS_FAULT=flipbyte: corrupt the last byte of every large data write, so the tests can show
   * that they notice (plugins.net_ib.mock.fault_*). */
  const char* fault = getenv("MOCK_VERBS_FAULT");
  if (fault && strcmp(fault, "flipbyte") == 0 && wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM && len > 1000) dst[-1] ^= 1;
  if (wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
    struct ibv_wc wc;
    memset(&wc, 0, sizeof(wc));
    wc.wr_id = peer->rq[peer->rqHead];
    peer->rqHead = (peer->rqHead + 1) % RQ_DEPTH;
    peer->rqCount--;
    wc.status = IBV_WC_SUCCESS;
    wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
    wc.wc_flags = IBV_WC_WITH_IMM;
    wc.imm_data = wr->imm_data;
    wc.byte_len = (uint32_t)len;
    wc.qp_num = peer->qp.qp_num;
    if (pushWc(peer->qp.recv_cq, &wc) != 0) return IBV_WC_REM_OP_ERR;
  }
  return IBV_WC_SUCCESS;
}

/* One RDMA read of the peer's memory (the QP itself when it is connected to itself) into the local
 * buffer: returns the completion status the reader sees. */
static enum ibv_wc_status doRead(mockQp* q, const struct ibv_send_wr* wr) {
  mockQp* peer = findQp(q->remoteQpn);
  if (peer == NULL || peer->qp.state < IBV_QPS_RTR || peer->remoteQpn != q->qp.qp_num) return IBV_WC_RETRY_EXC_ERR;
  if (!(peer->access & IBV_ACCESS_REMOTE_READ)) return IBV_WC_REM_ACCESS_ERR;
  const struct ibv_sge* sg = &wr->sg_list[0];
  if (findMr(sg->lkey, sg->addr, sg->length, IBV_ACCESS_LOCAL_WRITE) == NULL) return IBV_WC_LOC_PROT_ERR;
  if (findMr(wr->wr.rdma.rkey, wr->wr.rdma.remote_addr, sg->length, IBV_ACCESS_REMOTE_READ) == NULL)
    return IBV_WC_REM_ACCESS_ERR;
  memmove((void*)(uintptr_t)sg->addr, (const void*)(uintptr_t)wr->wr.rdma.remote_addr, sg->length);
  stats.reads++;
  stats.lastReadAddr = wr->wr.rdma.remote_addr;
  stats.lastReadLen = sg->length;
  memset(stats.lastReadData, 0, sizeof(stats.lastReadData));
  memcpy(stats.lastReadData, (const void*)(uintptr_t)sg->addr,
         sg->length < sizeof(stats.lastReadData) ? sg->length : sizeof(stats.lastReadData));
  return IBV_WC_SUCCESS;
}

static int mockPostSend(struct ibv_qp* qp, struct ibv_send_wr* wr, struct ibv_send_wr** bad) {
  mockQp* q = (mockQp*)qp;
  pthread_mutex_lock(&lock);
  for (; wr; wr = wr->next) {
    int isRead = wr->opcode == IBV_WR_RDMA_READ;
    if (q->qp.state != IBV_QPS_RTS ||
        (wr->opcode != IBV_WR_RDMA_WRITE && wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM && !isRead) || wr->num_sge > 1 ||
        (isRead && (wr->num_sge != 1 || wr->sg_list[0].length == 0))) {
      *bad = wr;
      pthread_mutex_unlock(&lock);
      return EINVAL;
    }
    enum ibv_wc_status st = isRead ? doRead(q, wr) : doWrite(q, wr);
    if (isRead && st != IBV_WC_SUCCESS) stats.readErrors++;
    if (st != IBV_WC_SUCCESS || (wr->send_flags & IBV_SEND_SIGNALED)) {
      struct ibv_wc wc;
      memset(&wc, 0, sizeof(wc));
      wc.wr_id = wr->wr_id;
      wc.status = st;
      wc.opcode = isRead ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE;
      wc.qp_num = q->qp.qp_num;
      if (pushWc(q->qp.send_cq, &wc) != 0) {
        *bad = wr;
        pthread_mutex_unlock(&lock);
        return ENOMEM;
      }
    }
    if (st != IBV_WC_SUCCESS) q->qp.state = IBV_QPS_ERR;
  }
  pthread_mutex_unlock(&lock);
  return 0;
}

/* ---------------------------------------------------------------- what the tests ask (mock_verbs.h) */

MOCK_EXPORT void mockVerbsGetStats(mockVerbsStats* out) {
  pthread_mutex_lock(&lock);
  *out = stats;
  out->liveQps = out->loopbackQps = out->liveMrs = 0;
  for (int i = 0; i < MAX_OBJS; i++) {
    if (qps[i]) {
      out->liveQps++;
      out->loopbackQps += qps[i]->remoteQpn == qps[i]->qp.qp_num;
    }
    out->liveMrs += mrs[i] != NULL;
  }
  pthread_mutex_unlock(&lock);
}

MOCK_EXPORT int mockVerbsMrAt(const void* addr, size_t len, int* access) {
  pthread_mutex_lock(&lock);
  int kind = MOCK_MR_NONE;
  uint32_t newest = 0;
  for (int i = 0; i < MAX_OBJS; i++) {
    struct ibv_mr* mr = mrs[i];
    if (mr == NULL || mr->addr != addr || mr->length < len || mr->lkey < newest) continue;
    newest = mr->lkey;
    kind = mrKinds[i];
    if (access) *access = (int)mr->handle;
  }
  pthread_mutex_unlock(&lock);
  return kind;
}
