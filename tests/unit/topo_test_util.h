/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_test_util.h: loading a topology for the topo tests (test_topo.c, test_topo_netdevs.c). A file
 * that does not load ends the test (exit 1) with the reason: every case needs its topology.
 */
#ifndef CHORUS_TESTS_TOPO_TEST_UTIL_H_
#define CHORUS_TESTS_TOPO_TEST_UTIL_H_

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "log/log.h"
#include "topo/topo_model.h"

/* dir/file, completed by fill (NULL: as written), built with settings (NULL: the configuration's). */
static __attribute__((unused)) struct chrTopoSystem* topoTestLoadFile(const char* dir, const char* file,
                                                                      const struct chrTopoFillOptions* fill,
                                                                      const struct chrTopoSettings* settings) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", dir, file);
  struct chrXml* xml = NULL;
  struct chrTopoSystem* sys = NULL;
  if (chrXmlLoad(path, &xml) != ncclSuccess || (fill && chrTopoFill(xml, fill) != ncclSuccess) ||
      chrTopoBuild(xml, settings, &sys) != ncclSuccess) {
    fprintf(stderr, "cannot load %s: %s\n", path, chrThreadLastError());
    exit(1);
  }
  return sys;
}

/* text, named name in messages, built with settings (NULL: the configuration's). */
static __attribute__((unused)) struct chrTopoSystem* topoTestLoadText(const char* name, const char* text,
                                                                      const struct chrTopoSettings* settings) {
  struct chrXml* xml = NULL;
  struct chrTopoSystem* sys = NULL;
  if (chrXmlParse(name, text, strlen(text), &xml) != ncclSuccess || chrTopoBuild(xml, settings, &sys) != ncclSuccess) {
    fprintf(stderr, "cannot load %s: %s\n", name, chrThreadLastError());
    exit(1);
  }
  return sys;
}

#endif /* CHORUS_TESTS_TOPO_TEST_UTIL_H_ */
