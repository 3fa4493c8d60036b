/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testenv_stats.h: what the test env plugin (testenv_plugin.c) records, read by test_env_loader
 * through the plugin's exported testEnvStats() and testEnvAsked().
 */
#ifndef CHORUS_TESTS_TESTENV_STATS_H_
#define CHORUS_TESTS_TESTENV_STATS_H_

#define TESTENV_BUFFSIZE "262144" /* the plugin's answer for NCCL_BUFFSIZE */

struct testEnvStats {
  int version;                 /* ABI version this build exports */
  int initCalls, finalizeCalls;
  int getEnvCalls;             /* all names */
  int getsAfterFinalize;       /* getEnv calls that came after finalize (must stay 0) */
  int major, minor, patch;     /* init's version arguments */
  char suffix[32];             /* init's suffix argument */
  int loggerGiven;             /* v2: init got a non-NULL logger */
};

typedef struct testEnvStats* (*testEnvStatsFn)(void);
/* How many times getEnv was asked for `name`. */
typedef int (*testEnvAskedFn)(const char* name);

#endif /* CHORUS_TESTS_TESTENV_STATS_H_ */
