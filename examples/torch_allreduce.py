# SPDX-License-Identifier: BSD-3-Clause
# torch_allreduce.py: PyTorch's "nccl" backend on Chorus, started by torchrun (the README's PyTorch
# recipe; tests/gpu/run_on_device.sh runs it). Each rank all-reduces a tensor of its rank + 1.
import os

import torch
import torch.distributed as dist

local = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local % torch.cuda.device_count())
dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
x = torch.full((1 << 20,), float(rank + 1), device="cuda")
dist.all_reduce(x)
expect = world * (world + 1) / 2
if not bool(torch.all(x == expect)):
    raise SystemExit(f"rank {rank}: all_reduce gave {x[0].item()}, expected {expect}")
if rank == 0:
    print(f"all_reduce over {world} ranks: ok")
dist.destroy_process_group()
