# SPDX-License-Identifier: BSD-3-Clause
"""torch_ops.py: the torch.distributed operations PyTorch programs use, on the "nccl" backend with
Chorus's library preloaded, 2 processes sharing GPU 0 (Chorus allows several ranks per GPU), once in
PyTorch's blocking communicator mode and once in its non-blocking one
(TORCH_NCCL_USE_COMM_NONBLOCKING). Every result is compared with values computed locally:
all_reduce (sum, avg, premul_sum, max), all_gather_into_tensor, reduce_scatter_tensor (sum and
premul_sum), broadcast, reduce, send/recv, batch_isend_irecv (also of 80 MiB, and an 80 MiB broadcast:
Chorus's copy engine), all_to_all_single (equal and uneven
splits), new_group (a reordered group of both ranks, and one group per rank), barrier, async
ops (several in flight, polled with is_completed, then waited), and an all_reduce in a memory pool
registered as windows (ncclCommWindowRegister).

  LD_PRELOAD=<build>/lib/libnccl.so.2 python3 tests/gpu/torch_ops.py

Each operation's result is printed to stderr as it completes (a hang shows where);
CHORUS_TEST_TORCH_TIMEOUT (seconds, default 300): how long each rank's process may take before it is killed.
CHORUS_TEST_EXPECT_FD=1 (0): after the 80 MiB operations each process must (must not) serve
descriptors of its GPU memory (Chorus's copy-engine receives into expandable segments shared by file
descriptor: an abstract Unix socket named chorus-fd-*). CHORUS_TEST_HOSTS=2: rank r acts out host r % 2
(NCCL_HOSTID), so the GPU traffic crosses the net plugin through Chorus's proxy (no copy engine then).
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def serves_descriptors():
    """True when this process listens on an abstract Unix socket named chorus-fd-* (Chorus's
    descriptor server): the inodes /proc/net/unix lists under that name against this process's."""
    with open("/proc/net/unix") as f:
        inodes = {line.split()[6] for line in f if len(line.split()) > 7 and line.split()[7].startswith("@chorus-fd-")}
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:[") and target[8:-1] in inodes:
            return True
    return False


def f32(*a, **k):
    return torch.tensor(*a, dtype=torch.float32, **k)


def checks(rank, world, dev):
    """Yields (name, ok) per operation."""
    n = 1 << 16
    x = torch.arange(n, dtype=torch.float32, device=dev) + rank
    dist.all_reduce(x)
    yield "all_reduce sum", torch.equal(x.cpu(), torch.arange(n, dtype=torch.float32) * world + sum(range(world)))

    y = torch.full((1001,), float(rank + 1), device=dev)
    dist.all_reduce(y, op=dist.ReduceOp.AVG)
    yield "all_reduce avg", torch.allclose(y.cpu(), torch.full((1001,), (world + 1) / 2.0))

    p = torch.full((3003,), float(rank + 1), device=dev)
    dist.all_reduce(p, op=dist._make_nccl_premul_sum(0.5))
    yield "all_reduce premul_sum", torch.equal(p.cpu(), torch.full((3003,), 0.5 * sum(r + 1 for r in range(world))))

    z = torch.tensor([rank * 10.0, -rank], device=dev)
    dist.all_reduce(z, op=dist.ReduceOp.MAX)
    yield "all_reduce max", z.cpu().tolist() == [(world - 1) * 10.0, 0.0]

    src = torch.full((777,), float(rank), device=dev)
    out = torch.empty(777 * world, device=dev)
    dist.all_gather_into_tensor(out, src)
    yield "all_gather_into_tensor", torch.equal(out.cpu(), torch.arange(world, dtype=torch.float32).repeat_interleave(777))

    big = torch.arange(world * 513, dtype=torch.float32, device=dev)
    part = torch.empty(513, device=dev)
    dist.reduce_scatter_tensor(part, big)
    want = torch.arange(rank * 513, (rank + 1) * 513, dtype=torch.float32) * world
    yield "reduce_scatter_tensor sum", torch.equal(part.cpu(), want)
    dist.reduce_scatter_tensor(part, big, op=dist._make_nccl_premul_sum(2.0))
    yield "reduce_scatter_tensor premul_sum", torch.equal(part.cpu(), want * 2.0)

    b = torch.full((4099,), float(rank + 5), device=dev)
    dist.broadcast(b, src=world - 1)
    yield "broadcast", torch.equal(b.cpu(), torch.full((4099,), float(world + 4)))

    r = torch.full((2049,), float(rank + 1), device=dev)
    dist.reduce(r, dst=0)
    yield "reduce (dst 0)", rank != 0 or torch.equal(r.cpu(), torch.full((2049,), float(sum(q + 1 for q in range(world)))))

    peer = (rank + 1) % world
    t = torch.full((12345,), float(rank + 1), device=dev)
    got = torch.empty(12345, device=dev)
    if rank % 2 == 0:
        dist.send(t, dst=peer)
        dist.recv(got, src=(rank - 1) % world)
    else:
        dist.recv(got, src=(rank - 1) % world)
        dist.send(t, dst=peer)
    yield "send/recv", torch.equal(got.cpu(), torch.full((12345,), float((rank - 1) % world + 1)))

    ops = [dist.P2POp(dist.isend, t, peer), dist.P2POp(dist.irecv, got, (rank - 1) % world)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    yield "batch_isend_irecv", torch.equal(got.cpu(), torch.full((12345,), float((rank - 1) % world + 1)))

    # Large enough for Chorus's copy engine (CHORUS_GPU_CE_MIN_BYTES, 64 MiB): tensors inside PyTorch's
    # cached segments (an offset into a cudaMalloc block, or expandable segments' cuMemCreate memory,
    # which CUDA IPC cannot share and Chorus stages), a send/recv pair each way and a broadcast.
    big = 20 << 20  # int32 elements: 80 MiB
    bt = torch.arange(big, dtype=torch.int32, device=dev) * 3 + rank
    bgot = torch.empty(big, dtype=torch.int32, device=dev)
    ops = [dist.P2POp(dist.isend, bt, peer), dist.P2POp(dist.irecv, bgot, (rank - 1) % world)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    yield "batch_isend_irecv 80 MiB", torch.equal(bgot.cpu(), torch.arange(big, dtype=torch.int32) * 3 + (rank - 1) % world)
    bb = torch.arange(big, dtype=torch.int32, device=dev) * 5 + rank
    dist.broadcast(bb, src=0)
    yield "broadcast 80 MiB", torch.equal(bb.cpu(), torch.arange(big, dtype=torch.int32) * 5)
    expect_fd = os.environ.get("CHORUS_TEST_EXPECT_FD")
    if expect_fd:
        yield f"serves descriptors: {expect_fd}", serves_descriptors() == (expect_fd == "1")

    # all_to_all_single, equal splits: block j of rank i's input goes to rank j.
    k = 1000
    a_in = torch.arange(world * k, dtype=torch.float32, device=dev) + 100000 * rank
    a_out = torch.empty(world * k, device=dev)
    dist.all_to_all_single(a_out, a_in)
    want = torch.cat([torch.arange(rank * k, (rank + 1) * k, dtype=torch.float32) + 100000 * j for j in range(world)])
    yield "all_to_all_single equal", torch.equal(a_out.cpu(), want)

    # Uneven: rank i sends (i + 1) * (j + 2) elements to rank j.
    send_splits = [(rank + 1) * (j + 2) for j in range(world)]
    recv_splits = [(j + 1) * (rank + 2) for j in range(world)]
    u_in = torch.arange(sum(send_splits), dtype=torch.float32, device=dev) + 100000 * rank
    u_out = torch.empty(sum(recv_splits), device=dev)
    dist.all_to_all_single(u_out, u_in, output_split_sizes=recv_splits, input_split_sizes=send_splits)
    parts = []
    for j in range(world):
        offset = sum((j + 1) * (q + 2) for q in range(rank))
        parts.append(torch.arange(offset, offset + recv_splits[j], dtype=torch.float32) + 100000 * j)
    yield "all_to_all_single uneven", torch.equal(u_out.cpu(), torch.cat(parts))

    # new_group: both ranks in another order, then one group per rank (every rank calls every new_group).
    g_all = dist.new_group(ranks=list(reversed(range(world))))
    s = torch.full((555,), float(rank + 1), device=dev)
    dist.all_reduce(s, group=g_all)
    yield "new_group (all ranks) all_reduce", torch.equal(s.cpu(), torch.full((555,), float(sum(q + 1 for q in range(world)))))
    singles = [dist.new_group(ranks=[q]) for q in range(world)]
    s1 = torch.full((77,), float(rank + 3), device=dev)
    dist.all_reduce(s1, group=singles[rank])
    yield "new_group (one rank) all_reduce", torch.equal(s1.cpu(), torch.full((77,), float(rank + 3)))
    g_b = torch.full((99,), float(rank), device=dev)
    dist.broadcast(g_b, src=0, group=g_all)
    yield "new_group broadcast", torch.equal(g_b.cpu(), torch.zeros(99))

    dist.barrier()
    yield "barrier", True

    # Async: several operations in flight, polled, then waited; results checked after wait.
    bufs = [torch.full((4096 * (i + 1),), float(rank + i), device=dev) for i in range(4)]
    works = [dist.all_reduce(bufs[i], async_op=True) for i in range(4)]
    gout = torch.empty(777 * world, device=dev)
    works.append(dist.all_gather_into_tensor(gout, torch.full((777,), float(rank), device=dev), async_op=True))
    deadline = time.time() + 60
    while not all(w.is_completed() for w in works) and time.time() < deadline:
        time.sleep(0.001)
    for w in works:
        w.wait()
    torch.cuda.synchronize()
    good = all(torch.equal(bufs[i].cpu(), torch.full((4096 * (i + 1),), float(sum(q + i for q in range(world)))))
               for i in range(4))
    good = good and torch.equal(gout.cpu(), torch.arange(world, dtype=torch.float32).repeat_interleave(777))
    yield "async ops (5 in flight, is_completed, wait)", good

    # Windows: a memory pool (of the library's allocator, ncclMemAlloc, where PyTorch offers it)
    # registered with symm=True, which makes PyTorch call ncclCommWindowRegister on each of its
    # segments, then an all-reduce in it. PyTorch builds without register_mem_pool say so instead.
    backend = dist.distributed_c10d._get_default_group()._get_backend(dev)
    register = getattr(backend, "register_mem_pool", None)
    if register is None or not hasattr(torch.cuda, "MemPool"):
        yield "windows: this PyTorch has no register_mem_pool (not run)", True
        return
    try:
        pool = torch.cuda.MemPool(backend.mem_allocator)
        alloc = "ncclMemAlloc"
    except RuntimeError:  # "NCCL mem allocator is not supported" (PyTorch 2.11 on one H200: its own check)
        pool = torch.cuda.MemPool()
        alloc = "PyTorch's allocator"
    with torch.cuda.use_mem_pool(pool):
        win = torch.full((3 << 18,), float(rank + 1), device=dev)
    try:
        register(pool, symm=True)
        how = "symm=True"
    except TypeError:  # a build whose register_mem_pool has no symm argument: ncclCommRegister instead
        register(pool)
        how = "no symm argument: local registration"
    dist.all_reduce(win)
    good = torch.equal(win.cpu(), torch.full((3 << 18,), float(sum(q + 1 for q in range(world)))))
    torch.cuda.synchronize()
    backend.deregister_mem_pool(pool)
    del win
    yield f"windows: mem pool ({alloc}) registered ({how}), all_reduce in it", good


def run(rank, world, port, nonblocking, results):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    os.environ["TORCH_NCCL_USE_COMM_NONBLOCKING"] = "1" if nonblocking else "0"
    gpu = rank % int(os.environ.get("CHORUS_TEST_GPUS", "1"))  # 2 on the 2-GPU machine
    hosts = int(os.environ.get("CHORUS_TEST_HOSTS", "1"))  # act out hosts: the GPU path's net proxy
    if hosts > 1:
        os.environ["NCCL_HOSTID"] = "host%d" % (rank % hosts)
    torch.cuda.set_device(gpu)
    dev = torch.device("cuda", gpu)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    ok = []
    try:
        for name, good in checks(rank, world, dev):
            ok.append((name, bool(good)))
            # as it goes, so that a hang shows where
            print(f"rank {rank}: {name}: {'ok' if good else 'WRONG'}", file=sys.stderr, flush=True)
        torch.cuda.synchronize()
    except Exception as e:  # report, do not hang the other rank's join forever
        ok.append(("exception " + repr(e), False))
    results[(nonblocking, rank)] = ok
    dist.destroy_process_group()


if __name__ == "__main__":
    world = 2
    mp.set_start_method("spawn")
    manager = mp.Manager()
    results = manager.dict()
    bad = 0
    for nonblocking, port in ((False, 29511), (True, 29512)):
        procs = [mp.Process(target=run, args=(r, world, port, nonblocking, results)) for r in range(world)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=float(os.environ.get("CHORUS_TEST_TORCH_TIMEOUT", "300")))
            if p.is_alive():
                p.kill()
        mode = "non-blocking" if nonblocking else "blocking"
        for r in range(world):
            for name, good in results.get((nonblocking, r), [("no result (process died or hung)", False)]):
                print(f"{mode} rank {r}: {name}: {'ok' if good else 'WRONG'}")
                bad += 0 if good else 1
    print("torch_ops:", "PASS" if bad == 0 else f"{bad} FAILED")
    sys.exit(1 if bad else 0)
