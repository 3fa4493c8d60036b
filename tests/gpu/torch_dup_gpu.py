# SPDX-License-Identifier: BSD-3-Clause
"""torch_dup_gpu.py: the mistake PyTorch's own tests check (test_nccl_dist_backend_error): two ranks
that never call torch.cuda.set_device both land on GPU 0. As with NCCL, the first collective must
fail with an error that names the cause, not run time-sliced. Run with Chorus preloaded and
CHORUS_SHARED_GPU unset; prints PASS or FAIL and exits 0 or 1."""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, world, port, results):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    os.environ.pop("CHORUS_SHARED_GPU", None)
    dist.init_process_group("nccl", rank=rank, world_size=world)  # no set_device: both on GPU 0
    try:
        t = torch.ones(16, device="cuda")
        dist.all_reduce(t)
        torch.cuda.synchronize()
        results[rank] = "ran: " + str(t[0].item())
    except Exception as e:  # the expected outcome
        results[rank] = "error: " + str(e)
    try:
        dist.destroy_process_group()
    except Exception:
        pass


if __name__ == "__main__":
    mp.set_start_method("spawn")
    results = mp.Manager().dict()
    procs = [mp.Process(target=run, args=(r, 2, 29531, results)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        if p.is_alive():
            p.kill()
    bad = 0
    for r in range(2):
        text = results.get(r, "no result (hung or crashed)")
        good = text.startswith("error:") and "both on GPU" in text and "CHORUS_SHARED_GPU" in text
        print(f"rank {r}: {'ok' if good else 'WRONG'}: {text[:400]}")
        bad += not good
    print("PASS" if bad == 0 else "FAIL")
    sys.exit(1 if bad else 0)
