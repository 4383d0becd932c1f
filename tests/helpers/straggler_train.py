#!/usr/bin/python3
"""straggler_train.py - a synchronous DDP job (CPU, gloo) with one slow rank.

Every step each rank runs its forward pass and a fixed sleep (its
"compute") inside `lockstep.timed("compute")`, then the backward pass,
whose gradient all-reduce makes every rank wait for the slowest, then
`lockstep.step(step)`. The slow rank sleeps --slow-factor times longer
inside the section: every rank's step time stays the same (they wait for
it in the all-reduce), only the section times tell which rank is slow.

Options:
  --steps N          steps (default 400)
  --compute S        seconds of compute per step (default 0.04)
  --slow-rank R      this rank's compute is --slow-factor times longer
                     (default -1: none)
  --slow-factor F    (default 1.25)
  --report FILE      rank 0 writes {"wall_s": .., "steps": ..} here at
                     the end

Each rank prints "first step at <epoch ms>" when it starts its first step
(bench/straggler.sh measures detection from there).
"""
import argparse
import json
import os
import sys
import time

import lockstep


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--compute", type=float, default=0.04)
    ap.add_argument("--slow-rank", type=int, default=-1)
    ap.add_argument("--slow-factor", type=float, default=1.25)
    ap.add_argument("--report", default=None)
    a = ap.parse_args()
    rank = int(os.environ["RANK"])

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo", rank=rank,
                            world_size=int(os.environ["WORLD_SIZE"]))
    torch.set_num_threads(1)
    torch.manual_seed(1234)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(),
                                torch.nn.Linear(32, 1))
    ddp = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    compute = a.compute * (a.slow_factor if rank == a.slow_rank else 1.0)
    t0 = time.monotonic()
    for step in range(1, a.steps + 1):
        if step == 1:
            print("first step at %d" % int(time.time() * 1000), flush=True)
        g = torch.Generator().manual_seed(100003 * step + 7919 * rank)
        x = torch.randn(32, 16, generator=g)
        opt.zero_grad()
        with lockstep.timed("compute"):
            loss = ddp(x).pow(2).mean()
            time.sleep(compute)
        loss.backward()          # the all-reduce: waits for the slowest
        opt.step()
        lockstep.step(step)
    wall = time.monotonic() - t0
    if rank == 0 and a.report:
        with open(a.report, "w") as f:
            json.dump({"wall_s": wall, "steps": a.steps}, f)
    print("rank %d done: %d steps in %.1f s" % (rank, a.steps, wall),
          flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
