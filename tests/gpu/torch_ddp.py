# SPDX-License-Identifier: BSD-3-Clause
"""torch_ddp.py: a short DistributedDataParallel training run, 2 processes sharing GPU 0, on the
"nccl" backend (Chorus, preloaded) in PyTorch's blocking and non-blocking communicator modes, and on
"gloo" with the same seed; prints the loss trajectories side by side and fails if they differ by more
than float rounding.

  LD_PRELOAD=<build>/lib/libnccl.so.2 python3 tests/gpu/torch_ddp.py

CHORUS_TEST_GPUS=2: rank r on GPU r % 2 (the 2-GPU machine). CHORUS_TEST_HOSTS=2: rank r acts out host
r % 2 (NCCL_HOSTID), so the ranks' GPU traffic crosses the net plugin. CHORUS_TEST_TORCH_LABEL names the "nccl"
library in the table (default "chorus"; "nvidia" when run without the preload), and
CHORUS_TEST_TORCH_JSON=<file> also writes the trajectories as JSON, so runs on Chorus and on NVIDIA's
library can be put side by side.
"""
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

STEPS = 20


def train(rank, world, backend, nonblocking, port, out):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    os.environ["TORCH_NCCL_USE_COMM_NONBLOCKING"] = "1" if nonblocking else "0"
    gpu = rank % int(os.environ.get("CHORUS_TEST_GPUS", "1"))
    hosts = int(os.environ.get("CHORUS_TEST_HOSTS", "1"))  # act out hosts: the GPU path's net proxy
    if hosts > 1:
        os.environ["NCCL_HOSTID"] = "host%d" % (rank % hosts)
    torch.cuda.set_device(gpu)
    dev = torch.device("cuda", gpu)
    if backend == "nccl":
        dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    else:
        dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(1234)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(dev)
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=[gpu])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 + rank)  # each rank its own data, as DDP is used
    losses = []
    for _ in range(STEPS):
        x = torch.randn(32, 64, generator=g).to(dev)
        y = torch.randint(0, 10, (32,), generator=g).to(dev)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        t = loss.detach().clone()
        dist.all_reduce(t)
        losses.append(t.item() / world)
    out[(backend, nonblocking, rank)] = losses
    dist.destroy_process_group()


def run(backend, nonblocking, port, out):
    procs = [mp.Process(target=train, args=(r, 2, backend, nonblocking, port, out)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)


if __name__ == "__main__":
    mp.set_start_method("spawn")
    out = mp.Manager().dict()
    configs = [("gloo", False), ("nccl", False), ("nccl", True)]
    for i, (backend, nb) in enumerate(configs):
        run(backend, nb, 29600 + i, out)
    label = os.environ.get("CHORUS_TEST_TORCH_LABEL", "chorus")
    names = ["gloo", f"{label} blocking", f"{label} non-blocking"]
    series = [out.get((b, nb, 0)) for b, nb in configs]
    print("step " + " ".join(f"{n:>22}" for n in names))
    for s in range(STEPS):
        print(f"{s:4d} " + " ".join(f"{(v[s] if v else float('nan')):22.6f}" for v in series))
    ok = all(v is not None for v in series)
    if ok:
        ref = series[0]
        worst = max(abs(a - b) for v in series[1:] for a, b in zip(ref, v))
        ok = worst < 1e-4
        print(f"largest difference from gloo: {worst:.2e}")
    if os.environ.get("CHORUS_TEST_TORCH_JSON"):
        with open(os.environ["CHORUS_TEST_TORCH_JSON"], "w") as f:
            json.dump({n: v for n, v in zip(names, series)}, f, indent=1)
    print("torch_ddp:", "PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)
