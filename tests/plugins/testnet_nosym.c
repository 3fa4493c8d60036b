/* SPDX-License-Identifier: BSD-3-Clause */
/* testnet_nosym.c: a library that loads fine but exports no ncclNetPlugin_vN object. */
__attribute__((visibility("default"))) int testNetNotAPlugin = 1;
