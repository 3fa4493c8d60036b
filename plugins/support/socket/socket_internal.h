/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * socket_internal.h: helpers shared by the socket .c files only (error text, optional logging).
 */
#ifndef CHORUS_SOCKET_INTERNAL_H_
#define CHORUS_SOCKET_INTERNAL_H_

#include "socket/socket.h"

/* The same, recording the errno `sysErrno` of the OS call that failed. */
ncclResult_t chrSockSetErrno(chrSockErr* err, ncclResult_t res, int sysErrno, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The logger set by chrSockSetLogger, or NULL. */
extern ncclDebugLogger_t chrSockLoggerFn;

#define CHR_SOCK_INFO(...)                                                                       \
  do {                                                                                           \
    ncclDebugLogger_t chr_l_ = chrSockLoggerFn;                                                  \
    if (chr_l_) chr_l_(NCCL_LOG_INFO, NCCL_INIT | NCCL_NET, __FILE__, __LINE__, __VA_ARGS__);   \
  } while (0)
#define CHR_SOCK_TRACE(...)                                                                      \
  do {                                                                                           \
    ncclDebugLogger_t chr_l_ = chrSockLoggerFn;                                                  \
    if (chr_l_) chr_l_(NCCL_LOG_TRACE, NCCL_INIT | NCCL_NET, __FILE__, __LINE__, __VA_ARGS__);  \
  } while (0)

#endif /* CHORUS_SOCKET_INTERNAL_H_ */
