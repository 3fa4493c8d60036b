/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kernels_inst.cuh: the kernels of one data type, CHR_DEV_KTYPE (an ncclDataType_t value), which
 * device/CMakeLists.txt defines in a one-line wrapper per type (generated in the build directory),
 * so the types compile in parallel.
 *
 * Which (type, op) pairs get a kernel of their own: signed integers wrap exactly like unsigned ones
 * for sum, product and PreMulSum, so those use the unsigned kernels (the launcher maps them);
 * SumPostDiv exists for integers only (the host builds it for nothing else). The uint8 unit also
 * holds the copy-only kernel for plans that never reduce.
 */
#include "device/kernels/dev_kernel.cuh"
#include "device/kernels/dev_table.h"

#ifndef CHR_DEV_KTYPE
#error "CHR_DEV_KTYPE must name the data type"
#endif

template <int TY, int OP>
static constexpr bool chrDevHasKernel() {
  constexpr int kind = chrDevType<TY>::kind;
  constexpr bool isInt = kind == CHR_DEV_KIND_INT || kind == CHR_DEV_KIND_UINT;
  if (OP == CHR_DEV_SUMPOSTDIV) return isInt;
  if (kind == CHR_DEV_KIND_INT) return OP == CHR_DEV_MAX || OP == CHR_DEV_MIN;
  return OP < CHR_DEV_NUM_OPS;
}

template <int TY, int OP>
static const void* chrDevKernelEntry() {
  if constexpr (chrDevHasKernel<TY, OP>()) return (const void*)chrDevKernel<TY, OP>;
  else return nullptr;
}

template <>
void chrDevKernelRow<CHR_DEV_KTYPE>(const void** row) {
  row[CHR_DEV_SUM] = chrDevKernelEntry<CHR_DEV_KTYPE, CHR_DEV_SUM>();
  row[CHR_DEV_PROD] = chrDevKernelEntry<CHR_DEV_KTYPE, CHR_DEV_PROD>();
  row[CHR_DEV_MAX] = chrDevKernelEntry<CHR_DEV_KTYPE, CHR_DEV_MAX>();
  row[CHR_DEV_MIN] = chrDevKernelEntry<CHR_DEV_KTYPE, CHR_DEV_MIN>();
  row[CHR_DEV_PREMULSUM] = chrDevKernelEntry<CHR_DEV_KTYPE, CHR_DEV_PREMULSUM>();
  row[CHR_DEV_SUMPOSTDIV] = chrDevKernelEntry<CHR_DEV_KTYPE, CHR_DEV_SUMPOSTDIV>();
#if CHR_DEV_KTYPE == 1 /* ncclUint8 */
  row[CHR_DEV_COPY] = (const void*)chrDevKernel<ncclUint8, CHR_DEV_COPY>;
#else
  row[CHR_DEV_COPY] = nullptr;
#endif
}
