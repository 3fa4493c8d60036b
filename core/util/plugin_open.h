/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin_open.h: finding and opening a plugin library the NCCL way (NCCL's plugin naming rules), shared by the
 * net, tuner, profiler and env loaders. It needs libc alone, so it sits in util/, under the env
 * plugin's loader (config/env_plugin.c) as well as the others (plugin/).
 *
 * For a kind prefix P ("libnccl-net", "libnccl-tuner", "libnccl-profiler") and the user's value V:
 *   V unset or ""            -> P.so
 *   V == "STATIC_PLUGIN"     -> the main program itself (dlopen(NULL)), any case
 *   otherwise                -> V as given; then P-V.so when V has no '/' and is not lib*.so
 * Every bare file name (no '/') is tried first through the normal loader search path, then in the
 * directory that holds libchorus, so our own plugins installed next to the library are found
 * without LD_LIBRARY_PATH (and, when the core is linked statically into a program in <p>/bin, in
 * <p>/lib). Flags: RTLD_NOW | RTLD_LOCAL.
 */
#ifndef CHORUS_UTIL_PLUGIN_OPEN_H_
#define CHORUS_UTIL_PLUGIN_OPEN_H_

#include <stddef.h>

#define CHR_PLUGIN_PATH_MAX 4096
#define CHR_PLUGIN_REASON_MAX 2048

typedef struct {
  void* handle;                         /* dlopen handle, NULL when nothing could be opened */
  char path[CHR_PLUGIN_PATH_MAX];       /* what was opened: the resolved file when known, else the name */
  char tried[CHR_PLUGIN_REASON_MAX];    /* every name tried, comma separated (also on success) */
  char reason[CHR_PLUGIN_REASON_MAX];   /* on failure: the dlerror text of each try (each names its file),
                                           separated by "; " */
} chrPluginLib;

/* Open the library for (prefix, value). Returns 0 with lib->handle set, or -1 with lib->reason and
 * lib->tried filled. Logs nothing: the caller decides between INFO and WARN. Thread-safe (dlerror is
 * per thread), but callers serialise loads anyway. */
int chrPluginOpen(const char* prefix, const char* value, chrPluginLib* lib);

/* dlclose the handle (not for the main program) and clear it. */
void chrPluginClose(chrPluginLib* lib);

/* Look up a symbol; NULL when absent. */
void* chrPluginSymbol(chrPluginLib* lib, const char* symbol);

/* [begin, end) without surrounding white space, copied into dst (cut to cap - 1 bytes). */
void chrPluginTrimCopy(char* dst, size_t cap, const char* begin, const char* end);

/* " (<file>: <name>, ABI vN)" with what is known of a loaded plugin, for its messages; "" when
 * nothing adds to `label`. name/version count only when usable. */
void chrPluginDescribe(const chrPluginLib* lib, const char* label, int usable, const char* name, int version,
                       char* out, size_t cap);

/* Directory holding libchorus (or the program it is linked into), without trailing '/'; "" if unknown. */
const char* chrPluginLibraryDir(void);

#endif /* CHORUS_UTIL_PLUGIN_OPEN_H_ */
