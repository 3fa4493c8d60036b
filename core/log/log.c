/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.c: the NCCL-style logger (NCCL_DEBUG, NCCL_DEBUG_SUBSYS, NCCL_DEBUG_FILE).
 *
 * Settings are read from the configuration (env > files > default) on first use, and again after
 * chrLogReset(), through the calls of log.h that config/log_settings.c answers: the logger sits under
 * config/ and knows no parameter table. Each line goes out in one write(), so lines of concurrent
 * threads never interleave. The config code never logs while it loads (it would recurse into this
 * init); its problems are reported by chrConfigValidate at communicator init.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "log/log.h"

#define CHR_LOG_UNINIT (-1)
#define CHR_LOG_LINE_MAX 8192

static atomic_int logLevel = CHR_LOG_UNINIT; /* ncclDebugLogLevel once set up */
static atomic_ulong logMask;                  /* NCCL_DEBUG_SUBSYS bits, for INFO and TRACE */
static int logFd = STDOUT_FILENO;
static int logFdOwned;                        /* 1 when logFd is our NCCL_DEBUG_FILE */
static char logHost[256];
static struct timespec logStart;
static pthread_mutex_t logInitMutex = PTHREAD_MUTEX_INITIALIZER;
static __thread int logDevice;

void chrLogSetDevice(int dev) { logDevice = dev; }

static int parseLevel(const char* s) {
  static const struct { const char* name; int level; } levels[] = {
      {"VERSION", NCCL_LOG_VERSION}, {"WARN", NCCL_LOG_WARN}, {"INFO", NCCL_LOG_INFO},
      {"ABORT", NCCL_LOG_ABORT},     {"TRACE", NCCL_LOG_TRACE}};
  for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
    if (strcasecmp(s, levels[i].name) == 0) return levels[i].level;
  return NCCL_LOG_NONE;
}

/* Comma list of subsystem names; a leading '^' means "all but these". Unknown names are ignored. */
static unsigned long parseSubsys(const char* s) {
  static const struct { const char* name; unsigned long bit; } names[] = {
      {"INIT", NCCL_INIT},   {"COLL", NCCL_COLL},       {"P2P", NCCL_P2P},     {"SHM", NCCL_SHM},
      {"NET", NCCL_NET},     {"GRAPH", NCCL_GRAPH},     {"TUNING", NCCL_TUNING}, {"ENV", NCCL_ENV},
      {"ALLOC", NCCL_ALLOC}, {"CALL", NCCL_CALL},       {"PROXY", NCCL_PROXY}, {"NVLS", NCCL_NVLS},
      {"BOOTSTRAP", NCCL_BOOTSTRAP}, {"REG", NCCL_REG}, {"PROFILE", NCCL_PROFILE}, {"RAS", NCCL_RAS},
      {"DESTROY", NCCL_DESTROY}, {"ALLOC_HOST", NCCL_ALLOC_HOST}, {"ALL", (unsigned long)NCCL_ALL}};
  int invert = 0;
  while (*s == ' ') s++;
  if (*s == '^') {
    invert = 1;
    s++;
  }
  unsigned long mask = 0;
  while (*s) {
    size_t len = strcspn(s, ",");
    while (len > 0 && *s == ' ') s++, len--;
    size_t n = len;
    while (n > 0 && s[n - 1] == ' ') n--;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
      if (strlen(names[i].name) == n && strncasecmp(s, names[i].name, n) == 0) mask |= names[i].bit;
    s += len;
    if (*s == ',') s++;
  }
  return invert ? ~mask : mask;
}

/* NCCL_DEBUG_FILE with %h (host) and %p (pid) expanded; %% is a '%'. */
static void expandFileName(const char* pattern, char* out, size_t size) {
  size_t o = 0;
  for (const char* p = pattern; *p && o + 1 < size; p++) {
    if (p[0] == '%' && (p[1] == 'h' || p[1] == 'p' || p[1] == '%')) {
      char piece[256];
      if (p[1] == 'h') snprintf(piece, sizeof(piece), "%s", logHost);
      else if (p[1] == 'p') snprintf(piece, sizeof(piece), "%d", (int)getpid());
      else snprintf(piece, sizeof(piece), "%%");
      int n = snprintf(out + o, size - o, "%s", piece);
      o = (n < 0) ? o : (o + (size_t)n < size ? o + (size_t)n : size - 1);
      p++;
    } else {
      out[o++] = *p;
    }
  }
  out[o] = '\0';
}

static void setHostName(void) {
  if (gethostname(logHost, sizeof(logHost)) != 0) snprintf(logHost, sizeof(logHost), "unknown");
  logHost[sizeof(logHost) - 1] = '\0';
  char* dot = strchr(logHost, '.');
  if (dot) *dot = '\0'; /* short host name, as NCCL prints it */
}

static void logInit(void) {
  pthread_mutex_lock(&logInitMutex);
  if (atomic_load_explicit(&logLevel, memory_order_acquire) != CHR_LOG_UNINIT) {
    pthread_mutex_unlock(&logInitMutex);
    return;
  }
  struct chrLogSettings settings;
  chrLogSettingsRead(&settings); /* loads the config; the config never logs */
  int level = parseLevel(settings.level);
  unsigned long mask = parseSubsys(settings.subsys);
  const char* filePattern = settings.file;
  setHostName();
  clock_gettime(CLOCK_MONOTONIC, &logStart);

  char path[4096] = "";
  int openErr = 0;
  logFd = STDOUT_FILENO;
  logFdOwned = 0;
  if (level > NCCL_LOG_NONE && filePattern[0]) {
    expandFileName(filePattern, path, sizeof(path));
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      logFd = fd;
      logFdOwned = 1;
    } else {
      openErr = errno;
    }
  }
  atomic_store_explicit(&logMask, mask, memory_order_relaxed);
  atomic_store_explicit(&logLevel, level, memory_order_release);

  /* From here on chrLog works; what follows logs through it. Still under the mutex, so a second
   * thread arriving now neither re-initializes nor prints these lines twice. */
  if (openErr) WARN("NCCL_DEBUG_FILE: cannot open '%s' (%s); logging to stdout", path, strerror(openErr));
  chrLogSettingsReport();
  pthread_mutex_unlock(&logInitMutex);
}

static inline int currentLevel(void) {
  int level = atomic_load_explicit(&logLevel, memory_order_acquire);
  if (__builtin_expect(level == CHR_LOG_UNINIT, 0)) {
    logInit();
    level = atomic_load_explicit(&logLevel, memory_order_acquire);
  }
  return level;
}

int chrLogEnabled(ncclDebugLogLevel level, unsigned long flags) {
  int current = currentLevel();
  if (level == NCCL_LOG_NONE) return 0;
  if (level == NCCL_LOG_ABORT) level = NCCL_LOG_WARN; /* an abort message is shown like a warning */
  if ((int)level > current) return 0;
  if (level == NCCL_LOG_INFO || level == NCCL_LOG_TRACE)
    return (flags & atomic_load_explicit(&logMask, memory_order_relaxed)) != 0;
  return 1;
}

static const char* baseName(const char* file) {
  const char* slash = file ? strrchr(file, '/') : NULL;
  return slash ? slash + 1 : (file ? file : "?");
}

static void writeAll(int fd, const char* buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return; /* nowhere to report a failing log */
    }
    buf += n;
    len -= (size_t)n;
  }
}

static void logV(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt,
                 va_list ap) {
  if (!chrLogEnabled(level, flags)) return;
  char buf[CHR_LOG_LINE_MAX];
  int pid = (int)getpid();
  int tid = (int)syscall(SYS_gettid);
  int n;
  switch (level) {
    case NCCL_LOG_WARN:
    case NCCL_LOG_ABORT:
      n = snprintf(buf, sizeof(buf), "%s:%d:%d [%d] %s:%d NCCL %s ", logHost, pid, tid, logDevice, baseName(file),
                   line, level == NCCL_LOG_ABORT ? "ABORT" : "WARN");
      break;
    case NCCL_LOG_TRACE: {
      struct timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      double ms = (now.tv_sec - logStart.tv_sec) * 1e3 + (now.tv_nsec - logStart.tv_nsec) / 1e6;
      n = snprintf(buf, sizeof(buf), "%s:%d:%d [%d] %f %s:%d NCCL TRACE ", logHost, pid, tid, logDevice, ms,
                   baseName(file), line);
      break;
    }
    default:
      n = snprintf(buf, sizeof(buf), "%s:%d:%d [%d] NCCL INFO ", logHost, pid, tid, logDevice);
      break;
  }
  size_t len = n < 0 ? 0 : (size_t)n;
  if (len < sizeof(buf) - 1) {
    int m = vsnprintf(buf + len, sizeof(buf) - 1 - len, fmt, ap);
    if (m > 0) len += (size_t)m;
  }
  if (len > sizeof(buf) - 2) len = sizeof(buf) - 2; /* truncated message: keep room for the newline */
  while (len > 0 && buf[len - 1] == '\n') len--;     /* one line per message, whatever fmt ends with */
  buf[len++] = '\n';
  writeAll(logFd, buf, len);
}

void chrLog(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  logV(level, flags, file, line, fmt, ap);
  va_end(ap);
}

void chrLogReset(void) {
  pthread_mutex_lock(&logInitMutex);
  chrLogSettingsReload(); /* NCCL_DEBUG* may have changed in the environment or the files */
  if (logFdOwned) close(logFd);
  logFd = STDOUT_FILENO;
  logFdOwned = 0;
  atomic_store_explicit(&logLevel, CHR_LOG_UNINIT, memory_order_release);
  pthread_mutex_unlock(&logInitMutex);
}

/* ---- last error, per thread -------------------------------------------------------------------- */

#define CHR_LAST_ERROR_MAX 1024
static __thread char lastError[CHR_LAST_ERROR_MAX];
static __thread uint64_t lastErrorSeq;
/* Process-wide order of errors, so a per-comm copy can be compared with the thread's text. */
static _Atomic uint64_t errorSeq;

uint64_t chrThreadLastErrorSeq(void) { return lastErrorSeq; }
uint64_t chrNextErrorSeq(void) { return atomic_fetch_add(&errorSeq, 1) + 1; }

void chrSetLastErrorV(const char* fmt, va_list ap) {
  vsnprintf(lastError, sizeof(lastError), fmt, ap);
  lastErrorSeq = chrNextErrorSeq();
}

void chrSetLastError(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  chrSetLastErrorV(fmt, ap);
  va_end(ap);
}

const char* chrThreadLastError(void) { return lastError; }

void chrClearLastError(void) { lastError[0] = '\0'; }

ncclResult_t chrFailAt(ncclResult_t res, const char* file, int line, const char* fmt, ...) {
  char msg[CHR_LAST_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  snprintf(lastError, sizeof(lastError), "%s", msg);
  lastErrorSeq = chrNextErrorSeq();
  chrLog(NCCL_LOG_WARN, NCCL_ALL, file, line, "%s", msg);
  return res;
}

const char* chrResultName(ncclResult_t res) {
  switch (res) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    case ncclTimeout: return "ncclTimeout";
    default: return "unknown result";
  }
}
