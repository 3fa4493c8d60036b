/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_calls.c: the thin wrappers of net_plugin.h, the only place the core calls into a net plugin
 * after chrNetOpen. Each one checks its arguments, handles an optional slot that is NULL, calls the
 * v12 table (the plugin's own or its adapter), traces the call, and reports a plugin error once.
 */
#include <stdint.h>
#include <string.h>

#include "log/check.h"
#include "log/log.h"
#include "plugin/net_adapter.h"
#include "plugin/net_plugin.h"

/* The plugin (or its adapter) failed. An adapter that refused a call itself already logged why;
 * otherwise this is the first place the core sees the error, so it reports it here. */
static ncclResult_t pluginFailed(const struct chrNet* net, const char* call, ncclResult_t res) {
  if (chrNetAdaptTakeReported()) return res;
  return chrFail(res, "net plugin %s (ABI v%d): %s returned error %d", net->name, net->version, call, (int)res);
}

#define NET_CHECK_OBJ(net, fn)                                                     \
  do {                                                                             \
    if ((net) == NULL) return chrFail(ncclInternalError, "%s: NULL net object", fn); \
  } while (0)

static ncclResult_t checkDev(const struct chrNet* net, const char* fn, int dev) {
  if (dev < 0 || dev >= net->ndev)
    return chrFail(ncclInternalError, "%s: device %d out of range [0, %d) of net plugin %s", fn, dev, net->ndev,
                   net->name);
  return ncclSuccess;
}

static ncclResult_t checkPtr(const void* p, const char* fn, const char* what) {
  if (p == NULL) return chrFail(ncclInternalError, "%s: NULL %s", fn, what);
  return ncclSuccess;
}

/* ---- device level ----------------------------------------------------------------------------- */

ncclResult_t chrNetDevices(struct chrNet* net, int* ndev) {
  NET_CHECK_OBJ(net, "chrNetDevices");
  CHECK(checkPtr(ndev, "chrNetDevices", "ndev"));
  ncclResult_t res = net->ncclNet->devices(ndev);
  if (res != ncclSuccess) return pluginFailed(net, "devices", res);
  if (*ndev > net->ndev) net->ndev = *ndev; /* vNICs made since open */
  TRACE(NCCL_NET, "net %s: devices -> %d", net->name, *ndev);
  return ncclSuccess;
}

ncclResult_t chrNetGetProperties(struct chrNet* net, int dev, ncclNetProperties_v12_t* props) {
  NET_CHECK_OBJ(net, "chrNetGetProperties");
  CHECK(checkPtr(props, "chrNetGetProperties", "props"));
  CHECK(checkDev(net, "chrNetGetProperties", dev));
  memset(props, 0, sizeof(*props));
  ncclResult_t res = net->lib->getProperties(net->lib, dev, props);
  if (res != ncclSuccess) return pluginFailed(net, "getProperties", res);
  /* The core sizes its buffers and splits its transfers from these: refuse values it cannot use. */
  if (props->maxRecvs < 1 || props->maxRecvs > NCCL_NET_MAX_REQUESTS)
    return chrFail(ncclInternalError, "net plugin %s: device %d reports maxRecvs %d (must be 1..%d)", net->name, dev,
                   props->maxRecvs, NCCL_NET_MAX_REQUESTS);
  if (props->maxP2pBytes == 0 || props->maxP2pBytes > NCCL_MAX_NET_SIZE_BYTES)
    return chrFail(ncclInternalError, "net plugin %s: device %d reports maxP2pBytes %zu (must be 1..2^40)", net->name,
                   dev, props->maxP2pBytes);
  if (props->maxCollBytes > NCCL_MAX_NET_SIZE_BYTES)
    return chrFail(ncclInternalError, "net plugin %s: device %d reports maxCollBytes %zu (must be <= 2^40)",
                   net->name, dev, props->maxCollBytes);
  if (props->maxMultiRequestSize < 1) props->maxMultiRequestSize = 1;
  TRACE(NCCL_NET, "net %s: getProperties(%d) -> %s speed %d ptrSupport 0x%x maxRecvs %d", net->name, dev,
        props->name ? props->name : "(null)", props->speed, props->ptrSupport, props->maxRecvs);
  return ncclSuccess;
}

ncclResult_t chrNetMakeVDevice(struct chrNet* net, int* d, ncclNetVDeviceProps_v12_t* props) {
  NET_CHECK_OBJ(net, "chrNetMakeVDevice");
  CHECK(checkPtr(d, "chrNetMakeVDevice", "d"));
  CHECK(checkPtr(props, "chrNetMakeVDevice", "props"));
  if (net->lib->makeVDevice == NULL)
    return chrFail(ncclInvalidUsage, "net plugin %s (ABI v%d) cannot fuse devices into a virtual NIC", net->name,
                   net->version);
  if (props->ndevs < 1 || props->ndevs > NCCL_NET_MAX_DEVS_PER_NIC_V12)
    return chrFail(ncclInvalidArgument, "chrNetMakeVDevice: %d devices to fuse (must be 1..%d)", props->ndevs,
                   NCCL_NET_MAX_DEVS_PER_NIC_V12);
  for (int i = 0; i < props->ndevs; i++) CHECK(checkDev(net, "chrNetMakeVDevice", props->devs[i]));
  ncclResult_t res = net->lib->makeVDevice(net->lib, d, props);
  if (res != ncclSuccess) return pluginFailed(net, "makeVDevice", res);
  if (*d >= net->ndev) net->ndev = *d + 1;
  TRACE(NCCL_NET, "net %s: makeVDevice(%d devices) -> %d", net->name, props->ndevs, *d);
  return ncclSuccess;
}

ncclResult_t chrNetSetNetAttr(struct chrNet* net, ncclNetAttr_v12_t* attr) {
  NET_CHECK_OBJ(net, "chrNetSetNetAttr");
  CHECK(checkPtr(attr, "chrNetSetNetAttr", "attr"));
  if (net->ncclNet->setNetAttr == NULL) return ncclSuccess; /* hints only */
  ncclResult_t res = net->ncclNet->setNetAttr(net->ctx, attr);
  if (res != ncclSuccess) return pluginFailed(net, "setNetAttr", res);
  TRACE(NCCL_NET, "net %s: setNetAttr op 0x%x algo 0x%x proto 0x%x", net->name, attr->op, attr->algo, attr->proto);
  return ncclSuccess;
}

/* ---- connection setup -------------------------------------------------------------------------- */

ncclResult_t chrNetListen(struct chrNet* net, int dev, void* handle, void** listenComm) {
  NET_CHECK_OBJ(net, "chrNetListen");
  CHECK(checkPtr(handle, "chrNetListen", "handle"));
  CHECK(checkPtr(listenComm, "chrNetListen", "listenComm"));
  CHECK(checkDev(net, "chrNetListen", dev));
  *listenComm = NULL;
  ncclResult_t res = net->ncclNet->listen(net->ctx, dev, handle, listenComm);
  if (res != ncclSuccess) return pluginFailed(net, "listen", res);
  if (*listenComm == NULL)
    return chrFail(ncclInternalError, "net plugin %s: listen on device %d succeeded without a listen comm", net->name,
                   dev);
  TRACE(NCCL_NET, "net %s: listen(dev %d) -> %p", net->name, dev, *listenComm);
  return ncclSuccess;
}

ncclResult_t chrNetConnect(struct chrNet* net, int dev, void* handle, void** sendComm,
                           ncclNetDeviceHandle_v12_t** sendDevComm) {
  NET_CHECK_OBJ(net, "chrNetConnect");
  CHECK(checkPtr(handle, "chrNetConnect", "handle"));
  CHECK(checkPtr(sendComm, "chrNetConnect", "sendComm"));
  CHECK(checkDev(net, "chrNetConnect", dev));
  *sendComm = NULL;
  ncclResult_t res = net->ncclNet->connect(net->ctx, dev, handle, sendComm, sendDevComm);
  if (res != ncclSuccess) return pluginFailed(net, "connect", res);
  if (*sendComm != NULL) TRACE(NCCL_NET, "net %s: connect(dev %d) -> %p", net->name, dev, *sendComm);
  return ncclSuccess;
}

ncclResult_t chrNetAccept(struct chrNet* net, void* listenComm, void** recvComm,
                          ncclNetDeviceHandle_v12_t** recvDevComm) {
  NET_CHECK_OBJ(net, "chrNetAccept");
  CHECK(checkPtr(listenComm, "chrNetAccept", "listenComm"));
  CHECK(checkPtr(recvComm, "chrNetAccept", "recvComm"));
  *recvComm = NULL;
  ncclResult_t res = net->ncclNet->accept(listenComm, recvComm, recvDevComm);
  if (res != ncclSuccess) return pluginFailed(net, "accept", res);
  if (*recvComm != NULL) TRACE(NCCL_NET, "net %s: accept(%p) -> %p", net->name, listenComm, *recvComm);
  return ncclSuccess;
}

/* ---- registration ------------------------------------------------------------------------------ */

static ncclResult_t checkRegType(const struct chrNet* net, const char* fn, int type) {
  if (type != NCCL_PTR_HOST && type != NCCL_PTR_CUDA)
    return chrFail(ncclInternalError, "%s: memory type %d is neither NCCL_PTR_HOST nor NCCL_PTR_CUDA (plugin %s)", fn,
                   type, net->name);
  return ncclSuccess;
}

static ncclResult_t regMr(struct chrNet* net, void* comm, void* data, size_t size, int type, void** mhandle,
                          int quiet) {
  NET_CHECK_OBJ(net, "chrNetRegMr");
  CHECK(checkPtr(comm, "chrNetRegMr", "comm"));
  CHECK(checkPtr(mhandle, "chrNetRegMr", "mhandle"));
  CHECK(checkRegType(net, "chrNetRegMr", type));
  *mhandle = NULL;
  ncclResult_t res = net->ncclNet->regMr(comm, data, size, type, mhandle);
  if (res != ncclSuccess && quiet) {
    if (!chrNetAdaptTakeReported())
      chrSetLastError("net plugin %s (ABI v%d): regMr returned error %d", net->name, net->version, (int)res);
    return res;
  }
  if (res != ncclSuccess) return pluginFailed(net, "regMr", res);
  TRACE(NCCL_NET, "net %s: regMr(%p, %p, %zu, %d) -> %p", net->name, comm, data, size, type, *mhandle);
  return ncclSuccess;
}

ncclResult_t chrNetRegMr(struct chrNet* net, void* comm, void* data, size_t size, int type, void** mhandle) {
  return regMr(net, comm, data, size, type, mhandle, 0);
}

ncclResult_t chrNetTryRegMr(struct chrNet* net, void* comm, void* data, size_t size, int type, void** mhandle) {
  return regMr(net, comm, data, size, type, mhandle, 1);
}

ncclResult_t chrNetRegMrDmaBuf(struct chrNet* net, void* comm, void* data, size_t size, int type, uint64_t offset,
                               int fd, void** mhandle) {
  NET_CHECK_OBJ(net, "chrNetRegMrDmaBuf");
  CHECK(checkPtr(comm, "chrNetRegMrDmaBuf", "comm"));
  CHECK(checkPtr(mhandle, "chrNetRegMrDmaBuf", "mhandle"));
  CHECK(checkRegType(net, "chrNetRegMrDmaBuf", type));
  if (net->ncclNet->regMrDmaBuf == NULL)
    return chrFail(ncclInternalError, "net plugin %s has no regMrDmaBuf: register with chrNetRegMr instead", net->name);
  if (fd < 0) return chrFail(ncclInternalError, "chrNetRegMrDmaBuf: invalid dmabuf fd %d", fd);
  *mhandle = NULL;
  ncclResult_t res = net->ncclNet->regMrDmaBuf(comm, data, size, type, offset, fd, mhandle);
  if (res != ncclSuccess) return pluginFailed(net, "regMrDmaBuf", res);
  TRACE(NCCL_NET, "net %s: regMrDmaBuf(%p, %p, %zu, fd %d +%llu) -> %p", net->name, comm, data, size, fd,
        (unsigned long long)offset, *mhandle);
  return ncclSuccess;
}

ncclResult_t chrNetDeregMr(struct chrNet* net, void* comm, void* mhandle) {
  NET_CHECK_OBJ(net, "chrNetDeregMr");
  CHECK(checkPtr(comm, "chrNetDeregMr", "comm"));
  ncclResult_t res = net->ncclNet->deregMr(comm, mhandle);
  if (res != ncclSuccess) return pluginFailed(net, "deregMr", res);
  TRACE(NCCL_NET, "net %s: deregMr(%p, %p)", net->name, comm, mhandle);
  return ncclSuccess;
}

/* ---- data path ---------------------------------------------------------------------------------- */

ncclResult_t chrNetIsend(struct chrNet* net, void* sendComm, void* data, size_t size, int tag, void* mhandle,
                         void* phandle, void** request) {
  NET_CHECK_OBJ(net, "chrNetIsend");
  CHECK(checkPtr(sendComm, "chrNetIsend", "sendComm"));
  CHECK(checkPtr(request, "chrNetIsend", "request"));
  *request = NULL;
  ncclResult_t res = net->ncclNet->isend(sendComm, data, size, tag, mhandle, phandle, request);
  if (res != ncclSuccess) return pluginFailed(net, "isend", res);
  TRACE(NCCL_NET, "net %s: isend(%p, %p, %zu, tag %d) -> req %p", net->name, sendComm, data, size, tag, *request);
  return ncclSuccess;
}

ncclResult_t chrNetIrecv(struct chrNet* net, void* recvComm, int n, void** data, size_t* sizes, int* tags,
                         void** mhandles, void** phandles, void** request) {
  NET_CHECK_OBJ(net, "chrNetIrecv");
  CHECK(checkPtr(recvComm, "chrNetIrecv", "recvComm"));
  CHECK(checkPtr(request, "chrNetIrecv", "request"));
  if (n < 1 || n > NCCL_NET_MAX_REQUESTS)
    return chrFail(ncclInternalError, "chrNetIrecv: %d buffers in one receive (must be 1..%d)", n,
                   NCCL_NET_MAX_REQUESTS);
  if (data == NULL || sizes == NULL || tags == NULL || mhandles == NULL)
    return chrFail(ncclInternalError, "chrNetIrecv: NULL data/sizes/tags/mhandles array");
  /* *request may carry NCCL_NET_OPTIONAL_RECV_COMPLETION in; anything else in it is stale. */
  if (*request != (void*)NCCL_NET_OPTIONAL_RECV_COMPLETION) *request = NULL;
  ncclResult_t res = net->ncclNet->irecv(recvComm, n, data, sizes, tags, mhandles, phandles, request);
  if (res != ncclSuccess) return pluginFailed(net, "irecv", res);
  if (*request == (void*)NCCL_NET_OPTIONAL_RECV_COMPLETION)
    return chrFail(ncclInternalError, "net plugin %s: irecv succeeded but handed back the optional-completion hint "
                   "instead of a request", net->name);
  TRACE(NCCL_NET, "net %s: irecv(%p, n %d, size0 %zu, tag0 %d) -> req %p", net->name, recvComm, n, sizes[0], tags[0],
        *request);
  return ncclSuccess;
}

ncclResult_t chrNetIflush(struct chrNet* net, void* recvComm, int n, void** data, int* sizes, void** mhandles,
                          void** request) {
  NET_CHECK_OBJ(net, "chrNetIflush");
  CHECK(checkPtr(recvComm, "chrNetIflush", "recvComm"));
  CHECK(checkPtr(request, "chrNetIflush", "request"));
  *request = NULL;
  if (net->ncclNet->iflush == NULL) return ncclSuccess; /* nothing to make visible */
  if (n < 1 || n > NCCL_NET_MAX_REQUESTS)
    return chrFail(ncclInternalError, "chrNetIflush: %d buffers (must be 1..%d)", n, NCCL_NET_MAX_REQUESTS);
  ncclResult_t res = net->ncclNet->iflush(recvComm, n, data, sizes, mhandles, request);
  if (res != ncclSuccess) return pluginFailed(net, "iflush", res);
  TRACE(NCCL_NET, "net %s: iflush(%p, n %d) -> req %p", net->name, recvComm, n, *request);
  return ncclSuccess;
}

ncclResult_t chrNetTest(struct chrNet* net, void* request, int* done, int* sizes) {
  NET_CHECK_OBJ(net, "chrNetTest");
  CHECK(checkPtr(request, "chrNetTest", "request"));
  CHECK(checkPtr(done, "chrNetTest", "done"));
  *done = 0;
  ncclResult_t res = net->ncclNet->test(request, done, sizes);
  if (res != ncclSuccess) return pluginFailed(net, "test", res);
  if (*done) TRACE(NCCL_NET, "net %s: test(%p) -> done, size0 %d", net->name, request, sizes ? sizes[0] : -1);
  return ncclSuccess;
}

/* ---- offload helpers ---------------------------------------------------------------------------- */

ncclResult_t chrNetGetDeviceMr(struct chrNet* net, void* comm, void* mhandle, void** dptrMhandle) {
  NET_CHECK_OBJ(net, "chrNetGetDeviceMr");
  CHECK(checkPtr(dptrMhandle, "chrNetGetDeviceMr", "dptrMhandle"));
  *dptrMhandle = NULL;
  if (net->ncclNet->getDeviceMr == NULL) return ncclSuccess;
  ncclResult_t res = net->ncclNet->getDeviceMr(comm, mhandle, dptrMhandle);
  if (res != ncclSuccess) return pluginFailed(net, "getDeviceMr", res);
  TRACE(NCCL_NET, "net %s: getDeviceMr(%p, %p) -> %p", net->name, comm, mhandle, *dptrMhandle);
  return ncclSuccess;
}

ncclResult_t chrNetIrecvConsumed(struct chrNet* net, void* recvComm, int n, void* request) {
  NET_CHECK_OBJ(net, "chrNetIrecvConsumed");
  if (net->ncclNet->irecvConsumed == NULL) return ncclSuccess;
  ncclResult_t res = net->ncclNet->irecvConsumed(recvComm, n, request);
  if (res != ncclSuccess) return pluginFailed(net, "irecvConsumed", res);
  TRACE(NCCL_NET, "net %s: irecvConsumed(%p, n %d, req %p)", net->name, recvComm, n, request);
  return ncclSuccess;
}

/* ---- teardown ----------------------------------------------------------------------------------- */

ncclResult_t chrNetCloseSend(struct chrNet* net, void* sendComm) {
  NET_CHECK_OBJ(net, "chrNetCloseSend");
  if (sendComm == NULL) return ncclSuccess;
  ncclResult_t res = net->ncclNet->closeSend(sendComm);
  if (res != ncclSuccess) return pluginFailed(net, "closeSend", res);
  TRACE(NCCL_NET, "net %s: closeSend(%p)", net->name, sendComm);
  return ncclSuccess;
}

ncclResult_t chrNetCloseRecv(struct chrNet* net, void* recvComm) {
  NET_CHECK_OBJ(net, "chrNetCloseRecv");
  if (recvComm == NULL) return ncclSuccess;
  ncclResult_t res = net->ncclNet->closeRecv(recvComm);
  if (res != ncclSuccess) return pluginFailed(net, "closeRecv", res);
  TRACE(NCCL_NET, "net %s: closeRecv(%p)", net->name, recvComm);
  return ncclSuccess;
}

ncclResult_t chrNetCloseListen(struct chrNet* net, void* listenComm) {
  NET_CHECK_OBJ(net, "chrNetCloseListen");
  if (listenComm == NULL) return ncclSuccess;
  ncclResult_t res = net->ncclNet->closeListen(listenComm);
  if (res != ncclSuccess) return pluginFailed(net, "closeListen", res);
  TRACE(NCCL_NET, "net %s: closeListen(%p)", net->name, listenComm);
  return ncclSuccess;
}
