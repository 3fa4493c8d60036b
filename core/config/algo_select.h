/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * algo_select.h: the NCCL_ALGO / NCCL_PROTO settings parsed: which algorithms and protocols a collective may use.
 *
 * The ids and masks are hostdev/algo_ids.h (NCCL's numbering).
 *
 * Setting syntax (NCCL's, case-insensitive, whitespace around tokens ignored):
 *   ""                              everything allowed
 *   "ring,tree"                     exactly these
 *   "^tree"                         everything but these
 *   "allreduce:tree;allgather:ring" per operation (broadcast, reduce, allgather, reducescatter,
 *                                   allreduce); operations not named get everything
 *   "allreduce:^ring;ring"          a section without "func:" applies to every operation that no other
 *                                   section names (in any position)
 * Algorithm names: tree, ring, collnet_direct (collnetdirect), collnet_chain (collnetchain),
 * collnet (both collnet ones), nvls, nvls_tree (nvlstree), pat. Protocols: ll, ll128, simple.
 * Empty sections (e.g. a trailing ';') are skipped, as NCCL does.
 * Errors (ncclInvalidArgument, last error quotes the setting and the token): unknown name, unknown
 * function, empty name in a list (",ring"), empty list ("allreduce:", "^"), the same function in two
 * sections, two sections without a function. A valid setting that allows nothing for some operation
 * is not an error: the mask is 0 and the planner reports it with its context.
 */
#ifndef CHORUS_ALGO_SELECT_H_
#define CHORUS_ALGO_SELECT_H_

#include "hostdev/algo_ids.h" /* CHR_ALGO_*, CHR_PROTO_* */
#include "nccl.h"
#include "plugin/common.h"

/* "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"; "UNDEF" otherwise. */
const char* chrAlgoName(int algo);
/* "LL", "LL128", "SIMPLE"; "UNDEF" otherwise. */
const char* chrProtoName(int proto);

/* Allowed set for one collective from a setting in the syntax above (NULL = ""). func is
 * ncclFuncBroadcast..ncclFuncAllReduce; any other func gets every bit (the setting is still checked).
 * On error *mask is left untouched. */
ncclResult_t chrAlgoMask(const char* setting, ncclFunc_t func, unsigned* mask);
ncclResult_t chrProtoMask(const char* setting, ncclFunc_t func, unsigned* mask);

/* Checks a setting without logging and without touching the last error (the config loader runs it
 * before the logger is up). ncclSuccess, or ncclInvalidArgument with what is wrong, ending with the
 * names the setting may use, in `why` (e.g. 'unknown algorithm "foo"; known: tree, ring, ...'). */
ncclResult_t chrAlgoSettingCheck(const char* setting, char* why, size_t cap);
ncclResult_t chrProtoSettingCheck(const char* setting, char* why, size_t cap);

/* The same from the parameters NCCL_ALGO / NCCL_PROTO. A valid setting is parsed once and cached
 * (keyed by its text, so chrConfigReload is seen); the hit path takes no lock. Thread-safe. */
ncclResult_t chrAllowedAlgos(ncclFunc_t func, unsigned* mask);
ncclResult_t chrAllowedProtos(ncclFunc_t func, unsigned* mask);

#endif /* CHORUS_ALGO_SELECT_H_ */
