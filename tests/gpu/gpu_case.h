/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_case.h: one test case = one or more calls (gpu_plan.h) run by N ranks. Holds each rank's
 * initial buffer contents (random input, random poison where outputs go), its plan, and the
 * simulation's copies, which chrTestCaseSimulate turns into the expected final contents.
 *
 * Each rank has two regions: A (the send buffer, out of place) and B (the receive buffer; in place
 * the only one, holding the input where NCCL puts it). A whole region is compared after a run, so
 * a write outside the output shows as well as a wrong value.
 */
#ifndef CHORUS_TESTS_GPU_CASE_H_
#define CHORUS_TESTS_GPU_CASE_H_

#include <stddef.h>
#include <stdint.h>
#include "gpu_plan.h"

#define CT_MAX_RANKS 8
#define CT_MAX_CALLS 8

struct chrTestCase {
  int nRanks;
  int ringOrder[CT_MAX_RANKS];
  int nCalls;
  struct chrTestCall calls[CT_MAX_CALLS];
  int misalign;                           /* bytes added to every call's buffer offsets */
  /* Call k uses bytes [offA[k], offA[k] + sizeA[k]) of region A and likewise of B (set by Init). */
  size_t offA[CT_MAX_CALLS], sizeA[CT_MAX_CALLS], offB[CT_MAX_CALLS], sizeB[CT_MAX_CALLS];
  size_t bytesA, bytesB;                  /* region sizes */
  uint64_t devA[CT_MAX_RANKS], devB[CT_MAX_RANKS], devScalar; /* addresses the works use */
  char* initA[CT_MAX_RANKS];
  char* initB[CT_MAX_RANKS];
  char* simA[CT_MAX_RANKS];
  char* simB[CT_MAX_RANKS];
  uint64_t scalarBits;                    /* the PreMulSum scalar a scalarPtr call reads at devScalar */
  struct chrTestPlan plans[CT_MAX_RANKS];
  struct chrWork flat[CT_MAX_RANKS][CT_MAX_CHANNELS * CT_MAX_WORKS];
  int nWorks[CT_MAX_RANKS][CT_MAX_CHANNELS];
};

/* Sizes the regions for the calls and fills the initial contents (and the simulation's copies) from
 * the seed. Returns 0 or -1 (out of memory). */
int chrTestCaseInit(struct chrTestCase* tc, uint64_t seed);

/* Builds every rank's plan for the addresses in devA/devB/devScalar. Returns 0 or -1. */
int chrTestCaseBuild(struct chrTestCase* tc);

/* Runs the plans through the reference simulation on simA/simB. Returns 0 or -1 (message in err). */
int chrTestCaseSimulate(struct chrTestCase* tc, char* err, size_t errLen);

/* Compares a region's contents with the simulation's; -1 if equal, else the first differing element
 * (message in err). */
int64_t chrTestCaseCheck(const struct chrTestCase* tc, int rank, int regionB, const char* got, char* err, size_t errLen);

void chrTestCaseFree(struct chrTestCase* tc);

/* "allreduce-ring float sum n=4 count=1001 in-place SIMPLE ..." */
void chrTestCaseName(const struct chrTestCase* tc, char* buf, size_t len);

#endif /* CHORUS_TESTS_GPU_CASE_H_ */
