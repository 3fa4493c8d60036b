/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fd_pass.h: file descriptors handed from one process to another of this host, for GPU memory that
 * CUDA IPC handles cannot share (cuMemCreate allocations export a POSIX file descriptor instead,
 * cuMemExportToShareableHandle, and a descriptor only crosses processes over a Unix-domain socket).
 *
 * The process that owns the memory runs a server: a Unix-domain stream socket in the abstract
 * namespace (no file to clean up), named by the caller, and a thread that answers each connection
 * with the descriptor offered under the 64-bit key it asks for (SCM_RIGHTS), or a refusal. It
 * answers only processes it was told to trust (chrFdServerAllow: the communicator's peers), checked
 * by the kernel's credentials of the connection (SO_PEERCRED), so another process of the host, even
 * of the same user, cannot take a descriptor of someone's GPU memory by guessing a key.
 *
 * Plain POSIX C, no CUDA: the CPU tests run it (tests/unit/test_fd_pass.c).
 */
#ifndef CHORUS_DEVICE_FD_PASS_H_
#define CHORUS_DEVICE_FD_PASS_H_

#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct chrFdServer;

/* Longest name (the abstract socket's, without its leading NUL). */
#define CHR_FD_NAME_MAX 96

/* Starts the server named `name`; 0, or an errno value (EADDRINUSE: the name is taken). */
int chrFdServerStart(const char* name, struct chrFdServer** out);

/* Lets process `pid` fetch descriptors; 0 or ENOMEM. */
int chrFdServerAllow(struct chrFdServer* s, pid_t pid);

/* Offers a duplicate of fd under key (the caller keeps its own), with 8 bytes of the caller's (info:
 * what the fetcher needs to know of the descriptor, e.g. its memory's size); an earlier offer under
 * the same key is replaced. 0, or an errno value. */
int chrFdServerOffer(struct chrFdServer* s, uint64_t key, int fd, uint64_t info);

/* Withdraws the offer under key (its duplicate is closed); nothing when there is none. */
void chrFdServerWithdraw(struct chrFdServer* s, uint64_t key);

/* Stops the thread, closes the socket and every offered duplicate, frees s. NULL is fine. */
void chrFdServerStop(struct chrFdServer* s);

/* Fetches the descriptor that server `name` offers under key, waiting at most timeoutMs for each
 * step: 0, *fd (the caller's to close) and *info (the offer's; info may be NULL), or an errno
 * value: ECONNREFUSED (no such server), ENOENT (nothing offered under key), EPERM (this process is
 * not allowed), ETIMEDOUT, EPROTO (a reply that is not one). */
int chrFdFetch(const char* name, uint64_t key, int timeoutMs, int* fd, uint64_t* info);

/* 0 when process pid (the number it sees for itself) is positively out of this process's reach: no
 * such process here, or one in another network namespace (which holds the abstract sockets: its
 * fetches would find no server) or PID namespace (where the server could not recognise it); 1
 * otherwise, also when /proc cannot tell (a caller then tries, and a fetch fails cleanly). */
int chrFdPeerReachable(pid_t pid);

#ifdef __cplusplus
}
#endif

#endif /* CHORUS_DEVICE_FD_PASS_H_ */
