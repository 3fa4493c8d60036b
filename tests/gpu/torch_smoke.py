"""torch_smoke.py: a first PyTorch check of Chorus on GPU buffers (not yet the full PyTorch run of the
GPU issue). Two processes share GPU 0 (Chorus allows several ranks per GPU), backend "nccl" with
Chorus's libnccl.so.2 preloaded. Checks all_reduce (sum, avg, max), all_gather_into_tensor,
reduce_scatter_tensor, broadcast and send/recv against values computed locally.

  LD_PRELOAD=<build>/lib/libchorus.so python3 tests/gpu/torch_smoke.py
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, world, port, results):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(0)
    dev = torch.device("cuda", 0)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    ok = []
    try:
        n = 1 << 16
        x = torch.arange(n, dtype=torch.float32, device=dev) + rank
        dist.all_reduce(x)
        ok.append(("all_reduce sum", torch.equal(x.cpu(), (torch.arange(n, dtype=torch.float32) * world
                                                           + sum(range(world))))))
        y = torch.full((1001,), float(rank + 1), device=dev)
        dist.all_reduce(y, op=dist.ReduceOp.AVG)
        ok.append(("all_reduce avg", torch.allclose(y.cpu(), torch.full((1001,), (world + 1) / 2.0))))
        z = torch.tensor([rank * 10.0, -rank], device=dev)
        dist.all_reduce(z, op=dist.ReduceOp.MAX)
        ok.append(("all_reduce max", z.cpu().tolist() == [(world - 1) * 10.0, 0.0]))
        src = torch.full((777,), float(rank), device=dev)
        out = torch.empty(777 * world, device=dev)
        dist.all_gather_into_tensor(out, src)
        ok.append(("all_gather", torch.equal(out.cpu(), torch.arange(world, dtype=torch.float32).repeat_interleave(777))))
        big = torch.arange(world * 513, dtype=torch.float32, device=dev)
        part = torch.empty(513, device=dev)
        dist.reduce_scatter_tensor(part, big)
        ok.append(("reduce_scatter", torch.equal(part.cpu(), torch.arange(rank * 513, (rank + 1) * 513, dtype=torch.float32) * world)))
        b = torch.full((4099,), float(rank + 5), device=dev)
        dist.broadcast(b, src=world - 1)
        ok.append(("broadcast", torch.equal(b.cpu(), torch.full((4099,), float(world + 4)))))
        if world == 2:
            t = torch.full((12345,), float(rank + 1), device=dev)
            r = torch.empty(12345, device=dev)
            ops = [dist.P2POp(dist.isend, t, 1 - rank), dist.P2POp(dist.irecv, r, 1 - rank)]
            for req in dist.batch_isend_irecv(ops):
                req.wait()
            ok.append(("send/recv", torch.equal(r.cpu(), torch.full((12345,), float(2 - rank)))))
        torch.cuda.synchronize()
    except Exception as e:  # report, do not hang the other rank's join forever
        ok.append(("exception " + repr(e), False))
    results[rank] = ok
    dist.destroy_process_group()


if __name__ == "__main__":
    world = 2
    mp.set_start_method("spawn")
    manager = mp.Manager()
    results = manager.dict()
    procs = [mp.Process(target=run, args=(r, world, 29511, results)) for r in range(world)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    bad = 0
    for r in range(world):
        for name, good in results.get(r, [("no result (process died or hung)", False)]):
            print(f"rank {r}: {name}: {'ok' if good else 'WRONG'}")
            bad += 0 if good else 1
    print("torch_smoke:", "PASS" if bad == 0 else f"{bad} FAILED")
    sys.exit(1 if bad else 0)
