/* SPDX-License-Identifier: BSD-3-Clause */
/* own_dir.c: the folder of the library or program our code is in (own_dir.h). */
#include "util/own_dir.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

/* Copies the folder part of path into out; -1 when path has none or it does not fit. */
static int copyFolder(const char* path, char* out, size_t cap) {
  const char* slash = strrchr(path, '/');
  if (slash == NULL) return -1;
  size_t len = (size_t)(slash - path);
  if (len == 0) len = 1; /* a file in "/" */
  if (len >= cap) return -1;
  memcpy(out, path, len);
  out[len] = '\0';
  return 0;
}

int chrOwnDir(const void* addr, char* out, size_t cap, int* isProgram) {
  Dl_info info;
  struct link_map* map = NULL;
  out[0] = '\0';
  *isProgram = 0;
  if (dladdr1(addr, &info, (void**)&map, RTLD_DL_LINKMAP) == 0) return -1;
  /* The main program's link map has an empty name; a shared object's is its path. */
  if (map != NULL && map->l_name != NULL && map->l_name[0] != '\0') {
    if (copyFolder(map->l_name, out, cap) == 0) return 0;
    out[0] = '\0';
    return -1;
  }
  *isProgram = 1;
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    if (copyFolder(self, out, cap) == 0) return 0;
  }
  /* No /proc: argv[0] as dladdr gives it, which has a folder when the program was started by path. */
  if (info.dli_fname != NULL && copyFolder(info.dli_fname, out, cap) == 0) return 0;
  out[0] = '\0';
  return -1;
}
