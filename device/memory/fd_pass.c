/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fd_pass.c: file descriptors from one process to another over a Unix-domain socket (fd_pass.h).
 *
 * One request per connection: the client sends the 8-byte key; the server answers with a 16-byte
 * reply (a 4-byte code, fdReply, 4 bytes of padding, the offer's 8-byte info) and, when the code is
 * FD_OK, the descriptor as SCM_RIGHTS ancillary data.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "device/memory/fd_pass.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

enum fdReply { FD_OK = 0, FD_NONE = 1, FD_REFUSED = 2 };

/* How long the server waits for an accepted client's key: one slow client must not hold the
 * others' requests for long. */
#define KEY_WAIT_MS 1000

struct offer {
  uint64_t key, info;
  int fd;
};

struct reply {
  int32_t code;
  uint32_t pad;
  uint64_t info;
};

struct chrFdServer {
  int sock;        /* listening */
  int stopPipe[2]; /* the thread wakes on [0] when Stop writes [1] */
  pthread_t thread;
  pthread_mutex_t lock; /* offers and allowed */
  struct offer* offers;
  int nOffers, capOffers;
  pid_t* allowed;
  int nAllowed, capAllowed;
};

/* The abstract-namespace address of name; 0 when the name does not fit. */
static socklen_t addressOf(const char* name, struct sockaddr_un* a) {
  const size_t n = strlen(name);
  if (n == 0 || n > CHR_FD_NAME_MAX || n + 1 > sizeof a->sun_path) return 0;
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  memcpy(a->sun_path + 1, name, n); /* sun_path[0] = 0: the abstract namespace */
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* Waits up to ms for fd to be readable (events POLLIN) or writable (POLLOUT): 0, or ETIMEDOUT. */
static int waitFor(int fd, short events, int ms) {
  struct pollfd p = {fd, events, 0};
  for (;;) {
    const int r = poll(&p, 1, ms);
    if (r > 0) return 0;
    if (r == 0) return ETIMEDOUT;
    if (errno != EINTR) return errno;
  }
}

/* Reads exactly len bytes within ms per wait: 0, EPROTO (the peer closed early) or an errno value. */
static int readAll(int fd, void* buf, size_t len, int ms) {
  char* p = (char*)buf;
  while (len > 0) {
    const int w = waitFor(fd, POLLIN, ms);
    if (w != 0) return w;
    const ssize_t r = recv(fd, p, len, 0);
    if (r == 0) return EPROTO;
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return errno;
    }
    p += r;
    len -= (size_t)r;
  }
  return 0;
}

static int isAllowed(struct chrFdServer* s, pid_t pid) {
  for (int i = 0; i < s->nAllowed; i++)
    if (s->allowed[i] == pid) return 1;
  return 0;
}

static int findOffer(const struct chrFdServer* s, uint64_t key) {
  for (int i = 0; i < s->nOffers; i++)
    if (s->offers[i].key == key) return i;
  return -1;
}

/* One accepted connection: the client's credentials, its key, the reply. */
static void answer(struct chrFdServer* s, int c) {
  struct ucred cred;
  socklen_t credLen = sizeof cred;
  uint64_t key = 0;
  if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &credLen) != 0 || readAll(c, &key, sizeof key, KEY_WAIT_MS) != 0)
    return;
  struct reply rep = {FD_REFUSED, 0, 0};
  char control[CMSG_SPACE(sizeof(int))];
  memset(control, 0, sizeof control);
  struct iovec iov = {&rep, sizeof rep};
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  pthread_mutex_lock(&s->lock); /* held while sending, so a Withdraw cannot close the descriptor meanwhile */
  if (cred.uid == geteuid() && isAllowed(s, cred.pid)) {
    const int at = findOffer(s, key);
    rep.code = at < 0 ? FD_NONE : FD_OK;
    if (at >= 0) {
      rep.info = s->offers[at].info;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      struct cmsghdr* cm = CMSG_FIRSTHDR(&msg);
      cm->cmsg_level = SOL_SOCKET;
      cm->cmsg_type = SCM_RIGHTS;
      cm->cmsg_len = CMSG_LEN(sizeof(int));
      memcpy(CMSG_DATA(cm), &s->offers[at].fd, sizeof(int));
    }
  }
  /* A small message on a fresh socket: the send never waits for buffer space. */
  (void)sendmsg(c, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  pthread_mutex_unlock(&s->lock);
}

static void* serve(void* arg) {
  struct chrFdServer* s = (struct chrFdServer*)arg;
  for (;;) {
    struct pollfd p[2] = {{s->sock, POLLIN, 0}, {s->stopPipe[0], POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return NULL;
    }
    if (p[1].revents) return NULL;
    if (!(p[0].revents & POLLIN)) continue;
    const int c = accept4(s->sock, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) continue;
    answer(s, c);
    close(c);
  }
}

int chrFdServerStart(const char* name, struct chrFdServer** out) {
  *out = NULL;
  struct sockaddr_un a;
  const socklen_t len = addressOf(name, &a);
  if (len == 0) return ENAMETOOLONG;
  struct chrFdServer* s = (struct chrFdServer*)calloc(1, sizeof *s);
  if (s == NULL) return ENOMEM;
  s->stopPipe[0] = s->stopPipe[1] = -1;
  int err = 0;
  s->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s->sock < 0 || bind(s->sock, (struct sockaddr*)&a, len) != 0 || listen(s->sock, 64) != 0 ||
      pipe2(s->stopPipe, O_CLOEXEC) != 0)
    err = errno;
  if (err == 0) {
    pthread_mutex_init(&s->lock, NULL);
    err = pthread_create(&s->thread, NULL, serve, s);
    if (err != 0) pthread_mutex_destroy(&s->lock);
  }
  if (err != 0) {
    if (s->sock >= 0) close(s->sock);
    if (s->stopPipe[0] >= 0) close(s->stopPipe[0]);
    if (s->stopPipe[1] >= 0) close(s->stopPipe[1]);
    free(s);
    return err;
  }
  *out = s;
  return 0;
}

int chrFdServerAllow(struct chrFdServer* s, pid_t pid) {
  int err = 0;
  pthread_mutex_lock(&s->lock);
  if (!isAllowed(s, pid)) {
    if (s->nAllowed == s->capAllowed) {
      const int cap = s->capAllowed ? s->capAllowed * 2 : 8;
      pid_t* grown = (pid_t*)realloc(s->allowed, sizeof(pid_t) * (size_t)cap);
      if (grown == NULL) err = ENOMEM;
      else {
        s->allowed = grown;
        s->capAllowed = cap;
      }
    }
    if (err == 0) s->allowed[s->nAllowed++] = pid;
  }
  pthread_mutex_unlock(&s->lock);
  return err;
}

int chrFdServerOffer(struct chrFdServer* s, uint64_t key, int fd, uint64_t info) {
  const int mine = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (mine < 0) return errno;
  int err = 0;
  pthread_mutex_lock(&s->lock);
  const int at = findOffer(s, key);
  if (at >= 0) {
    close(s->offers[at].fd);
    s->offers[at].fd = mine;
    s->offers[at].info = info;
  } else {
    if (s->nOffers == s->capOffers) {
      const int cap = s->capOffers ? s->capOffers * 2 : 16;
      struct offer* grown = (struct offer*)realloc(s->offers, sizeof(struct offer) * (size_t)cap);
      if (grown == NULL) err = ENOMEM;
      else {
        s->offers = grown;
        s->capOffers = cap;
      }
    }
    if (err == 0) s->offers[s->nOffers++] = (struct offer){key, info, mine};
  }
  pthread_mutex_unlock(&s->lock);
  if (err != 0) close(mine);
  return err;
}

void chrFdServerWithdraw(struct chrFdServer* s, uint64_t key) {
  pthread_mutex_lock(&s->lock);
  const int at = findOffer(s, key);
  if (at >= 0) {
    close(s->offers[at].fd);
    s->offers[at] = s->offers[--s->nOffers];
  }
  pthread_mutex_unlock(&s->lock);
}

void chrFdServerStop(struct chrFdServer* s) {
  if (s == NULL) return;
  const char one = 1;
  while (write(s->stopPipe[1], &one, 1) < 0 && errno == EINTR) {
  }
  pthread_join(s->thread, NULL);
  close(s->sock);
  close(s->stopPipe[0]);
  close(s->stopPipe[1]);
  for (int i = 0; i < s->nOffers; i++) close(s->offers[i].fd);
  free(s->offers);
  free(s->allowed);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

/* The reply to a request already sent on c: 0, *fd and *info, or an errno value. */
static int receiveReply(int c, int timeoutMs, int* fd, uint64_t* info) {
  struct reply rep = {-1, 0, 0};
  char control[CMSG_SPACE(sizeof(int))];
  struct iovec iov = {&rep, sizeof rep};
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const int w = waitFor(c, POLLIN, timeoutMs);
  if (w != 0) return w;
  ssize_t r;
  while ((r = recvmsg(c, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (r < 0) return errno;
  int got = -1; /* the descriptor that came with the reply, if any: never left open on an error */
  for (struct cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != NULL; cm = CMSG_NXTHDR(&msg, cm))
    if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof(int)))
      memcpy(&got, CMSG_DATA(cm), sizeof(int));
  const int whole = r == (ssize_t)sizeof rep && !(msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC));
  if (whole && rep.code == FD_OK && got >= 0) {
    *fd = got;
    if (info) *info = rep.info;
    return 0;
  }
  if (got >= 0) close(got);
  if (!whole) return EPROTO;
  return rep.code == FD_NONE ? ENOENT : rep.code == FD_REFUSED ? EPERM : EPROTO;
}

int chrFdFetch(const char* name, uint64_t key, int timeoutMs, int* fd, uint64_t* info) {
  *fd = -1;
  struct sockaddr_un a;
  const socklen_t len = addressOf(name, &a);
  if (len == 0) return ENAMETOOLONG;
  const int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c < 0) return errno;
  int err = 0;
  if (connect(c, (struct sockaddr*)&a, len) != 0) err = errno;
  if (err == 0) err = waitFor(c, POLLOUT, timeoutMs);
  if (err == 0) {
    const ssize_t sent = send(c, &key, sizeof key, MSG_NOSIGNAL);
    if (sent < 0) err = errno;
    else if (sent != (ssize_t)sizeof key) err = EPROTO;
  }
  if (err == 0) err = receiveReply(c, timeoutMs, fd, info);
  close(c);
  return err;
}

/* 1 when /proc/<pid>/ns/<ns> is a namespace other than this process's, 0 when the same or unknown. */
static int otherNamespace(pid_t pid, const char* ns) {
  char mine[64], theirs[64];
  snprintf(mine, sizeof mine, "/proc/self/ns/%s", ns);
  snprintf(theirs, sizeof theirs, "/proc/%d/ns/%s", (int)pid, ns);
  struct stat a, b;
  if (stat(mine, &a) != 0 || stat(theirs, &b) != 0) return 0;
  return a.st_dev != b.st_dev || a.st_ino != b.st_ino;
}

int chrFdPeerReachable(pid_t pid) {
  if (pid <= 0) return 0;
  char dir[32];
  snprintf(dir, sizeof dir, "/proc/%d", (int)pid);
  struct stat st;
  if (stat("/proc/self", &st) == 0 && stat(dir, &st) != 0 && errno == ENOENT) return 0;
  return !otherNamespace(pid, "net") && !otherNamespace(pid, "pid");
}
