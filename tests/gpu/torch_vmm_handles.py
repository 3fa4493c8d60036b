#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""torch_vmm_handles.py: what PyTorch's expandable segments look like to the driver, for the
copy-engine receives that share such buffers by file descriptor (device/copy_engine/ce_vmm.cu).

Allocates a large tensor with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True and prints, for
points in it: the range cuMemGetAddressRange gives (the chunk, or the whole reserved range?), the
buffer id, the allocation handle cuMemRetainAllocationHandle gives and its requested handle types
(1: POSIX file descriptor, 8: fabric), whether cuIpcGetMemHandle refuses it, and whether the chunk
exports to a descriptor. Prints facts, checks nothing; exit 0 unless CUDA or PyTorch is missing (77).
"""
import ctypes
import os
import sys

os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
try:
    import torch
except ImportError:
    print("no torch")
    sys.exit(77)
if not torch.cuda.is_available():
    print("no GPU")
    sys.exit(77)

cu = ctypes.CDLL("libcuda.so.1")
u64 = ctypes.c_uint64


def call(name, *args):
    fn = getattr(cu, name)
    return fn(*args)


def describe(ptr):
    base, size = u64(), ctypes.c_size_t()
    r_range = call("cuMemGetAddressRange_v2", ctypes.byref(base), ctypes.byref(size), u64(ptr))
    buf_id = u64()
    r_id = call("cuPointerGetAttribute", ctypes.byref(buf_id), ctypes.c_int(7), u64(ptr))  # BUFFER_ID
    handle = u64()
    r_retain = call("cuMemRetainAllocationHandle", ctypes.byref(handle), ctypes.c_void_p(ptr))
    htypes = None
    r_export = None
    if r_retain == 0:
        prop = (ctypes.c_uint32 * 16)()
        if call("cuMemGetAllocationPropertiesFromHandle", prop, handle) == 0:
            htypes = prop[1]  # requestedHandleTypes follows the allocation type
        fd = ctypes.c_int(-1)
        r_export = call("cuMemExportToShareableHandle", ctypes.byref(fd), handle, ctypes.c_int(1), u64(0))
        if fd.value >= 0:
            os.close(fd.value)
        call("cuMemRelease", handle)
    ipc = (ctypes.c_char * 64)()
    r_ipc = call("cuIpcGetMemHandle", ipc, u64(ptr))
    return (f"ptr+{ptr - t0:#x}: range rc={r_range} base+{base.value - t0:#x} size={size.value:#x}; "
            f"buffer id rc={r_id} {buf_id.value}; retain rc={r_retain} handle={handle.value:#x} "
            f"handleTypes={htypes}; export fd rc={r_export}; cuIpcGetMemHandle rc={r_ipc}")


torch.cuda.set_device(0)
x = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
t0 = x.data_ptr()
print("torch", torch.__version__, "PYTORCH_CUDA_ALLOC_CONF", os.environ["PYTORCH_CUDA_ALLOC_CONF"])
for off in (0, 1 << 20, 20 << 20, (20 << 20) + 4096, 100 << 20, (256 << 20) - 1):
    print(describe(t0 + off))
y = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")
t1 = y.data_ptr()
print(f"a second 1 MiB tensor at t0{t1 - t0:+#x}:", describe(t1))
del x
torch.cuda.empty_cache()
z = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
print(f"after empty_cache, a new 256 MiB tensor at t0{z.data_ptr() - t0:+#x}:", describe(z.data_ptr()))
