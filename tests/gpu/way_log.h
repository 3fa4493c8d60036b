/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * way_log.h: which way a test's copy-engine receives went. A communicator logs its counts when it
 * ends (NCCL_DEBUG=INFO, subsystem P2P: "rank R: copy-engine transfers: sends ... receives D direct,
 * F by file descriptor, S staged, P pulled; ..."); a test sets CHORUS_TEST_EXPECT_WAY to a letter per
 * rank (the rank's character, else the first) and these check the counts against it:
 *   '-' nothing received on the engine (or no line)   'd' direct, no descriptor or staging
 *   'f' by descriptor, no direct or staging          's' staged, no direct or descriptor
 *   'p' some pulled, no staging                      '*' logged, any counts
 */
#ifndef CHORUS_TESTS_GPU_WAY_LOG_H_
#define CHORUS_TESTS_GPU_WAY_LOG_H_

/* Before the process's first communicator: when CHORUS_TEST_EXPECT_WAY is set, sends the library's
 * log to a file of this process's own (tag names it) at the level the counts need. */
void chrWayLogStart(const char* tag);

/* After the communicators' destroy: ranks first .. first + count - 1 against their letters; prints
 * each rank's counts, deletes the log; returns the failures (0 when CHORUS_TEST_EXPECT_WAY is unset). */
int chrWayLogCheck(int first, int count);

/* One rank's counts line in the log at path against want; 0 when it matches. report: print the
 * counts (matched) or a FAIL line (not); 0 for gpu.waylog's cases that must fail. */
int chrWayLogVerdict(const char* path, int rank, char want, int report);

#endif
