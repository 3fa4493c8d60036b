/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check.h: the one check macro and the one check-and-goto macro.
 * They pass an error on without logging again: the code that detected it already logged (chrFail).
 * ncclInProgress is not an error here: non-blocking calls return it on success.
 */
#ifndef CHORUS_CHECK_H_
#define CHORUS_CHECK_H_

#include "nccl.h"

#define CHR_IS_ERROR(r) ((r) != ncclSuccess && (r) != ncclInProgress)

#define CHECK(call)                         \
  do {                                      \
    ncclResult_t chr_res_ = (call);         \
    if (CHR_IS_ERROR(chr_res_)) return chr_res_; \
  } while (0)

#define CHECK_GOTO(call, res, label)        \
  do {                                      \
    (res) = (call);                         \
    if (CHR_IS_ERROR(res)) goto label;      \
  } while (0)

#endif /* CHORUS_CHECK_H_ */
