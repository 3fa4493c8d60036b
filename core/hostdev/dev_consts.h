/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_consts.h: the numbers the core and the device library agree on: a connection's slots, a
 * launch's channels and point-to-point lanes, the errors a kernel reports.
 */
#ifndef CHORUS_HOSTDEV_DEV_CONSTS_H_
#define CHORUS_HOSTDEV_DEV_CONSTS_H_

/* Slots per connection, of a host link (transport/transport.h) and of a device connection alike:
 * the GPU path's net proxy carries one to the other slot for slot. */
#define CHR_STEPS 8
#define CHR_DEV_STEPS CHR_STEPS  /* the device library's name for it */
#define CHR_DEV_MAX_CHANNELS 128 /* CTAs per rank and launch */
#define CHR_DEV_P2P_CONNS 64     /* point-to-point connection indices: lanes a large send splits over */

/* Errors a kernel reports in its rank's error word (first one wins; the kernel then returns), read
 * by chrDevRankKernelError (hostdev/dev_api.h). */
#define CHR_DEV_ERR_NONE 0
#define CHR_DEV_ERR_BAD_LINK 1   /* a work names a link this comm has no connection for */
#define CHR_DEV_ERR_ENGINE 2     /* a copy-engine send could not run (set by the host, device/copy_engine/ce_sends.cu) */
#define CHR_DEV_ERR_NET_SIZE 3   /* a step received through the net proxy has another size than this rank's */

#endif /* CHORUS_HOSTDEV_DEV_CONSTS_H_ */
