/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testenv_plugin.c: a tiny env plugin for the loader tests, built once per ABI version
 * (TESTENV_VERSION = 1 or 2) and in broken variants (TESTENV_INIT_FAIL, TESTENV_NULL_SLOT: no getEnv).
 * It exports exactly one
 * ncclEnvPlugin_vN object, plus testEnvStats() and testEnvAsked() for the tests (testenv_stats.h).
 *
 * Its answers: NCCL_BUFFSIZE is TESTENV_BUFFSIZE; every other name is getenv's, so the tests still
 * set the rest through the environment. At finalize it writes "finalized <name> v<N> gets=<n>" to the
 * file named by TESTENV_FINALIZE_FILE (read at init), so a test can see it ran at exit. The v2 build
 * logs through the core's logger from init and from getEnv("NCCL_BUFFSIZE"), while the core is
 * loading its configuration: the core must neither lose those lines nor deadlock on them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/env.h"
#include "testenv_stats.h"

#ifndef TESTENV_VERSION
#error "build with -DTESTENV_VERSION=1 or 2"
#endif
#ifndef TESTENV_NAME
#define TESTENV_NAME "testenv"
#endif

#define EXPORT __attribute__((visibility("default")))
#define MAX_NAMES 512

static struct testEnvStats stats = {.version = TESTENV_VERSION};
static struct {
  char name[96];
  int count;
} asked[MAX_NAMES];
static int nAsked;
static char finalizeFile[1024];
static ncclDebugLogger_t logger;

EXPORT struct testEnvStats* testEnvStats(void) { return &stats; }

EXPORT int testEnvAsked(const char* name) {
  for (int i = 0; i < nAsked; i++)
    if (strcmp(asked[i].name, name) == 0) return asked[i].count;
  return 0;
}

static void count(const char* name) {
  for (int i = 0; i < nAsked; i++)
    if (strcmp(asked[i].name, name) == 0) {
      asked[i].count++;
      return;
    }
  if (nAsked == MAX_NAMES) return;
  snprintf(asked[nAsked].name, sizeof(asked[nAsked].name), "%s", name);
  asked[nAsked++].count = 1;
}

static ncclResult_t init(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix, ncclDebugLogger_t log) {
  stats.initCalls++;
  stats.major = major;
  stats.minor = minor;
  stats.patch = patch;
  snprintf(stats.suffix, sizeof(stats.suffix), "%s", suffix ? suffix : "(null)");
  stats.loggerGiven = log != NULL;
  logger = log;
  const char* f = getenv("TESTENV_FINALIZE_FILE");
  snprintf(finalizeFile, sizeof(finalizeFile), "%s", f ? f : "");
  if (logger)
    logger(NCCL_LOG_INFO, NCCL_INIT, __FILE__, __LINE__, "testenv %s: init %d.%d.%d", TESTENV_NAME, major, minor, patch);
#ifdef TESTENV_INIT_FAIL
  return ncclInternalError;
#else
  return ncclSuccess;
#endif
}

static ncclResult_t finalize(void) {
  stats.finalizeCalls++;
  if (finalizeFile[0]) {
    FILE* f = fopen(finalizeFile, "a");
    if (f) {
      fprintf(f, "finalized %s v%d gets=%d inits=%d finalizes=%d\n", TESTENV_NAME, TESTENV_VERSION, stats.getEnvCalls,
              stats.initCalls, stats.finalizeCalls);
      fclose(f);
    }
  }
  return ncclSuccess;
}

__attribute__((unused)) /* the TESTENV_NULL_SLOT build leaves it out */
static const char* getEnv(const char* name) {
  stats.getEnvCalls++;
  if (stats.finalizeCalls > 0) stats.getsAfterFinalize++;
  count(name);
  if (strcmp(name, "NCCL_BUFFSIZE") == 0) {
    if (logger) logger(NCCL_LOG_INFO, NCCL_ENV, __FILE__, __LINE__, "testenv %s: answered NCCL_BUFFSIZE", TESTENV_NAME);
    return TESTENV_BUFFSIZE;
  }
  return getenv(name);
}

#ifdef TESTENV_NULL_SLOT
#define GET_ENV NULL
#else
#define GET_ENV getEnv
#endif

#if TESTENV_VERSION == 2
EXPORT const ncclEnv_v2_t ncclEnvPlugin_v2 = {TESTENV_NAME, init, finalize, GET_ENV};
#else
static ncclResult_t initV1(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix) {
  return init(major, minor, patch, suffix, NULL);
}
EXPORT const ncclEnv_v1_t ncclEnvPlugin_v1 = {TESTENV_NAME, initV1, finalize, GET_ENV};
#endif
