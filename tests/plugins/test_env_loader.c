/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_env_loader.c: conformance tests of the env plugin loader (core/config/env_plugin.c) and of the
 * configuration read through it (core/config/config_load.c), driven by the test env plugins
 * (testenv_plugin.c). One scenario per process; the ctest entry (tests/plugins/env.cmake) sets
 * NCCL_ENV_PLUGIN and the rest of the environment.
 *
 *   test_env_loader load [checks]   chrConfigValidate (which builds the configuration), then:
 *        logfirst=1      log a line first, so the logger's own init builds the configuration (and
 *                        the plugin's init, which logs, runs inside it)
 *        rc=<int>        chrConfigValidate's result (default 0)
 *        buffsize=<N>    chrParamInt(NCCL_BUFFSIZE)     source=<s>  chrParamSource(NCCL_BUFFSIZE)
 *        lib=<path>      the test plugin's file, for what follows:
 *          inits=<N>     init calls                     initargs=1  init got NCCL's version and suffix
 *          logger=<0|1>  init got a logger
 *          askedall=1    getEnv was asked for every parameter, CHORUS_CONF and NCCL_CONF_FILE, never
 *                        for HOME or NCCL_ENV_PLUGIN
 *          reload=1      chrConfigReload asks every parameter again, and does not init again
 *        out=<s>         chrEnvPluginDescribe's text contains s
 *        err=<s> log=<s> nolog=<s> warns=<N>   as in test_net_loader (loader_check.h)
 *   test_env_loader describe out=<s> ...   chrEnvPluginDescribe's text contains each s
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/param.h"
#include "log/log.h"
#include "config/env_plugin.h"
#include "loader_check.h"
#include "testenv_stats.h"

static void* pluginSymbol(const char* path, const char* symbol) {
  void* h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  EXPECT(h != NULL, "plugin %s is not loaded: %s", path, dlerror());
  void* s = dlsym(h, symbol);
  EXPECT(s != NULL, "no %s in %s", symbol, path);
  dlclose(h); /* drops only the reference taken here */
  return s;
}

static void checkDescribe(int argc, char** argv) {
  char* text = NULL;
  size_t len = 0;
  FILE* mem = open_memstream(&text, &len);
  chrEnvPluginDescribe(mem);
  fclose(mem);
  const char* v;
  for (int i = 2; i < argc; i++)
    if ((v = argValue(argv[i], "out"))) EXPECT(strstr(text, v), "describe lacks '%s':\n%s", v, text);
  free(text);
}

/* Every parameter, and the two names that locate the config file, were asked `times` times or more. */
static void checkAsked(testEnvAskedFn asked, int times) {
  for (int i = 0; i < CHR_P_COUNT; i++) {
    const char* name = chrParamName((chrParamId)i);
    EXPECT(asked(name) >= times, "getEnv was asked for %s %d times, expected %d", name, asked(name), times);
  }
  EXPECT(asked("CHORUS_CONF") >= times, "CHORUS_CONF not asked of the plugin");
  EXPECT(asked("NCCL_CONF_FILE") >= times, "NCCL_CONF_FILE not asked of the plugin");
  EXPECT(asked("HOME") == 0, "HOME was asked of the plugin");
  EXPECT(asked("NCCL_ENV_PLUGIN") == 0, "NCCL_ENV_PLUGIN was asked of the plugin");
}

static int runLoad(int argc, char** argv) {
  int wantRc = 0, inits = -1, initArgs = 0, logger = -1, askedAll = 0, reload = 0;
  long long buffsize = -1;
  const char *source = NULL, *lib = NULL, *v;
  for (int i = 2; i < argc; i++) {
    if ((v = argValue(argv[i], "logfirst")) && atoi(v)) INFO(NCCL_INIT, "test_env_loader: the first line");
    if ((v = argValue(argv[i], "rc"))) wantRc = atoi(v);
    else if ((v = argValue(argv[i], "buffsize"))) buffsize = atoll(v);
    else if ((v = argValue(argv[i], "source"))) source = v;
    else if ((v = argValue(argv[i], "lib"))) lib = v;
    else if ((v = argValue(argv[i], "inits"))) inits = atoi(v);
    else if ((v = argValue(argv[i], "initargs"))) initArgs = atoi(v);
    else if ((v = argValue(argv[i], "logger"))) logger = atoi(v);
    else if ((v = argValue(argv[i], "askedall"))) askedAll = atoi(v);
    else if ((v = argValue(argv[i], "reload"))) reload = atoi(v);
  }
  ncclResult_t rc = chrConfigValidate();
  EXPECT((int)rc == wantRc, "chrConfigValidate returned %d, expected %d (last error: %s)", (int)rc, wantRc,
         chrThreadLastError());
  if (buffsize >= 0)
    EXPECT(chrParamInt(CHR_P_BUFFSIZE) == buffsize, "NCCL_BUFFSIZE is %lld, expected %lld",
           (long long)chrParamInt(CHR_P_BUFFSIZE), buffsize);
  if (source != NULL)
    EXPECT(strcmp(chrParamSource(CHR_P_BUFFSIZE), source) == 0, "NCCL_BUFFSIZE's source is '%s', expected '%s'",
           chrParamSource(CHR_P_BUFFSIZE), source);
  if (lib != NULL) {
    struct testEnvStats* stats = ((testEnvStatsFn)pluginSymbol(lib, "testEnvStats"))();
    testEnvAskedFn asked = (testEnvAskedFn)pluginSymbol(lib, "testEnvAsked");
    if (inits >= 0) EXPECT(stats->initCalls == inits, "%d init calls, expected %d", stats->initCalls, inits);
    if (initArgs)
      EXPECT(stats->major == NCCL_MAJOR && stats->minor == NCCL_MINOR && stats->patch == NCCL_PATCH &&
                 strcmp(stats->suffix, NCCL_SUFFIX) == 0,
             "init got %d.%d.%d suffix '%s'", stats->major, stats->minor, stats->patch, stats->suffix);
    if (logger >= 0) EXPECT(stats->loggerGiven == logger, "init's logger given: %d", stats->loggerGiven);
    if (askedAll) checkAsked(asked, 1);
    if (reload) {
      chrConfigReload();
      EXPECT(chrConfigValidate() == ncclSuccess, "the reload is not valid: %s", chrThreadLastError());
      checkAsked(asked, 2);
      EXPECT(stats->initCalls == 1, "a reload called init again (%d calls)", stats->initCalls);
      EXPECT(chrParamInt(CHR_P_BUFFSIZE) == atoll(TESTENV_BUFFSIZE), "the reload lost the plugin's NCCL_BUFFSIZE");
    }
    EXPECT(stats->finalizeCalls == 0 && stats->getsAfterFinalize == 0, "finalize before exit");
  }
  checkDescribe(argc, argv);
  checkLog(argc, argv);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "load") == 0) return runLoad(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "describe") == 0) {
    checkDescribe(argc, argv);
    return 0;
  }
  fprintf(stderr, "usage: %s load [checks] | describe [out=...]\n", argv[0]);
  return 2;
}
