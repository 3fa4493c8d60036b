/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * own_dir.h: the folder of the file that holds a piece of our code, where the loaders look for
 * Chorus's own plugins and device library.
 *
 * That file is libchorus (libnccl.so.2) when the core is a shared library, and the program itself
 * when the core is linked in statically (chorus-info, chorus-netcheck, the tests). dladdr names a
 * shared object by the path it was loaded from, but the main program by argv[0], which has no folder
 * when the program was started through PATH ("chorus-info"); so the program's folder comes from
 * /proc/self/exe instead, whatever argv[0] says.
 */
#ifndef CHORUS_UTIL_OWN_DIR_H_
#define CHORUS_UTIL_OWN_DIR_H_

#include <stddef.h>

/* Writes the folder of the object holding addr (no trailing '/') into out and sets *isProgram to 1
 * when that object is the main program, 0 when it is a shared object. Returns 0, or -1 with out ""
 * when it cannot be told (or does not fit in cap). */
int chrOwnDir(const void* addr, char* out, size_t cap, int* isProgram);

#endif /* CHORUS_UTIL_OWN_DIR_H_ */
