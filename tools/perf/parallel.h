/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * parallel.h: chorus-perf's host loops over large buffers (writing the check inputs, checking the
 * outputs) cut into ranges run by threads at once, so that a check of several GiB per rank finishes
 * in seconds instead of minutes. Below CHR_PERF_PARALLEL_MIN elements one thread does it all, as
 * before.
 */
#ifndef CHORUS_TOOLS_PERF_PARALLEL_H_
#define CHORUS_TOOLS_PERF_PARALLEL_H_

#include <stddef.h>
#include <stdint.h>

#define CHR_PERF_PARALLEL_MIN ((size_t)1 << 22)

/* Elements [from, to) of a loop; returns what the range adds to the loop's total (e.g. wrong
 * elements). */
typedef int64_t (*chrPerfRangeFn)(void* arg, size_t from, size_t to);

/* The threads a loop may use (at least 1; default 1). chorus-perf sets it from the CPUs and the ranks
 * that share them. */
void chrPerfSetWorkers(int n);
int chrPerfWorkers(void);

/* Runs fn over [0, n) in up to chrPerfWorkers() ranges at once (one when n < CHR_PERF_PARALLEL_MIN);
 * the sum of what the ranges return. A range whose thread cannot start runs on the caller's. */
int64_t chrPerfForRange(size_t n, chrPerfRangeFn fn, void* arg);

#endif /* CHORUS_TOOLS_PERF_PARALLEL_H_ */
