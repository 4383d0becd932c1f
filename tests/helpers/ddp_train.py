#!/usr/bin/python3
"""ddp_train.py - a small, deterministic PyTorch DDP training job (CPU, gloo).

Runs unchanged under lockstep (or torchrun): it reads RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT. Fixed seeds and data that depend only on
(seed, step, rank) make the final parameters bitwise reproducible, also
across a restart from a checkpoint.

Checkpoints follow lockstep's directory convention: every --ckpt-every
steps each rank writes <ckpt>/step-<N>/rank-<r>.pt; after a barrier rank 0
writes <ckpt>/step-<N>/COMPLETE last. A directory without COMPLETE is a
checkpoint that was interrupted and must not be resumed from. On start, the
script resumes from LOCKSTEP_RESUME_FROM (a step-<N> directory) when set.

At the end rank 0 writes <out>/final.pt and prints the SHA-256 of the
parameters' bytes: `final sha256 <hex>`.

Options:
  --steps N        total optimizer steps (default 40)
  --ckpt-every K   checkpoint period in steps (default 10; 0 disables)
  --step-time S    seconds to sleep per step (makes runs long enough to
                   inject failures into)
  --crash-at N     every rank exits 1 at step N on attempt 1 only
                   (LOCKSTEP_ATTEMPT=1), to test restart from a checkpoint
  --always-crash-at N   exit 1 at step N on every attempt
  --crash-in-checkpoint N  on attempt 1, every rank exits 1 after writing
                   its part of checkpoint N but before COMPLETE (a crash
                   mid-write: that checkpoint must never be resumed from)
  --sdk            report each step through the `lockstep` SDK module (the
                   hang watchdog then measures steps, not output) and
                   commit checkpoints through it as well
  --hold-at N --hold-file F
                   before step N every rank waits until the file F exists
                   (a test keeps the job from ending before it is done
                   with it; the result is the same)
"""
import argparse
import hashlib
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def log(msg):
    print("[rank %s] %s" % (os.environ.get("RANK", "?"), msg), flush=True)


def make_model():
    torch.manual_seed(1234)
    return torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))


def batch(step, rank):
    g = torch.Generator().manual_seed(100003 * step + 7919 * rank)
    x = torch.randn(32, 16, generator=g)
    y = x[:, :1] * 0.5 - x[:, 1:2] * 0.25 + 0.1
    return x, y


def param_digest(model):
    h = hashlib.sha256()
    for p in model.state_dict().values():
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def save_checkpoint(root, step, rank, model, opt, crash=False, sdk=None):
    d = os.path.join(root, "step-%d" % step)
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, "rank-%d.pt.tmp" % rank)
    torch.save({"step": step, "model": model.state_dict(),
                "opt": opt.state_dict()}, tmp)
    os.replace(tmp, os.path.join(d, "rank-%d.pt" % rank))
    dist.barrier()
    if crash:
        log("crashing inside checkpoint %d, before COMPLETE" % step)
        sys.stdout.flush()
        os._exit(1)
    if sdk is not None:
        sdk.checkpoint_committed(step)
    if rank == 0:
        with open(os.path.join(d, "COMPLETE"), "w") as f:
            f.write("%d\n" % step)
            f.flush()
            os.fsync(f.fileno())
    dist.barrier()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--ckpt-every", type=int, default=10)
    ap.add_argument("--step-time", type=float, default=0.0)
    ap.add_argument("--crash-at", type=int, default=-1)
    ap.add_argument("--always-crash-at", type=int, default=-1)
    ap.add_argument("--crash-in-checkpoint", type=int, default=-1)
    ap.add_argument("--sdk", action="store_true")
    ap.add_argument("--hold-at", type=int, default=-1)
    ap.add_argument("--hold-file", default="")
    ap.add_argument("--out", default=os.environ.get("LOCKSTEP_CHECKPOINT_DIR")
                    or ".")
    a = ap.parse_args()

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    attempt = int(os.environ.get("LOCKSTEP_ATTEMPT", "1"))
    ckpt = os.environ.get("LOCKSTEP_CHECKPOINT_DIR") or a.out
    sdk = None
    if a.sdk:
        import lockstep as sdk
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)

    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    start = 0
    resume = os.environ.get("LOCKSTEP_RESUME_FROM", "")
    if resume:
        state = torch.load(os.path.join(resume, "rank-%d.pt" % rank))
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
        log("resumed from %s at step %d" % (resume, start))
    # find_unused_parameters=True keeps DDP from rebuilding its gradient
    # buckets after the first iteration. A rebuild changes where each
    # gradient sits in the flattened bucket, hence which chunk of gloo's
    # ring all-reduce sums it and in what order: a run resumed from a
    # checkpoint would then add floats in a different order on its first
    # step than the uninterrupted run did, and the final parameters would
    # differ in the last bits.
    ddp = DDP(model, find_unused_parameters=True)
    loss_fn = torch.nn.MSELoss()

    for step in range(start + 1, a.steps + 1):
        if step == a.hold_at and a.hold_file:
            log("holding before step %d until %s exists" % (step, a.hold_file))
            while not os.path.exists(a.hold_file):
                time.sleep(0.1)
        if step == a.always_crash_at or (step == a.crash_at and attempt == 1):
            log("crashing at step %d on purpose" % step)
            sys.stdout.flush()
            os._exit(1)
        x, y = batch(step, rank)
        opt.zero_grad()
        loss = loss_fn(ddp(x), y)
        loss.backward()
        opt.step()
        if sdk is not None:
            sdk.step(step)
        if rank == 0 and (step % 10 == 0 or step == a.steps):
            log("step %d loss %.6f" % (step, loss.item()))
        if a.step_time > 0:
            time.sleep(a.step_time)
        if a.ckpt_every > 0 and step % a.ckpt_every == 0 and step < a.steps:
            save_checkpoint(ckpt, step, rank, model, opt,
                            crash=(step == a.crash_in_checkpoint
                                   and attempt == 1), sdk=sdk)

    digest = param_digest(model)
    if rank == 0:
        os.makedirs(a.out, exist_ok=True)
        torch.save(model.state_dict(), os.path.join(a.out, "final.pt"))
        log("final sha256 %s" % digest)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
