/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_table.h: the kernels by (type, op). Each data type's kernels are compiled in their own
 * translation unit (kernels_inst.cuh, instantiated per type by device/CMakeLists.txt), which fills
 * its row of the table; the launcher (launch.cu) gathers the rows once.
 */
#ifndef CHORUS_DEVICE_DEV_TABLE_H_
#define CHORUS_DEVICE_DEV_TABLE_H_

#include "device/kernels/dev_work.h"

/* row[op] for op < CHR_DEV_NUM_OPS, and row[CHR_DEV_COPY] in the uint8 row only: the kernel's host
 * entry point, or NULL where that type has no such kernel of its own. */
#define CHR_DEV_HIDDEN __attribute__((visibility("hidden")))
template <int TY> CHR_DEV_HIDDEN void chrDevKernelRow(const void** row);
template <> CHR_DEV_HIDDEN void chrDevKernelRow<0>(const void** row);
template <> CHR_DEV_HIDDEN void chrDevKernelRow<1>(const void** row);
template <> CHR_DEV_HIDDEN void chrDevKernelRow<2>(const void** row);
template <> CHR_DEV_HIDDEN void chrDevKernelRow<3>(const void** row);
template <> CHR_DEV_HIDDEN void chrDevKernelRow<4>(const void** row);
template <> CHR_DEV_HIDDEN void chrDevKernelRow<5>(const void** row);
template <> CHR_DEV_HIDDEN void chrDevKernelRow<6>(const void** row);
template <> CHR_DEV_HIDDEN void chrDevKernelRow<7>(const void** row);
template <> CHR_DEV_HIDDEN void chrDevKernelRow<8>(const void** row);
template <> CHR_DEV_HIDDEN void chrDevKernelRow<9>(const void** row);
template <> CHR_DEV_HIDDEN void chrDevKernelRow<10>(const void** row);
template <> CHR_DEV_HIDDEN void chrDevKernelRow<11>(const void** row);

#endif /* CHORUS_DEVICE_DEV_TABLE_H_ */
