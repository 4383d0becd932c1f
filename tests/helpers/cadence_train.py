#!/usr/bin/python3
"""cadence_train.py - a DDP job (CPU, gloo) that acts on lockstep's cadence.

Every step: a deterministic forward/backward (DDP all-reduces the
gradients), an optimizer step, then `act = lockstep.step(step)`. When
`act.checkpoint`, every rank saves <ckpt>/step-<N>/rank-<r>.pt and calls
`lockstep.checkpoint_committed(N)`.

Each rank records, from its own point of view, every garbage collection
(Python's gc.callbacks, from the end of the imports: the step it happened
at and whether it ran inside lockstep.step()), every step at which it was told to collect or to
checkpoint, and the steps it ran, in <out>/rank-<r>.attempt-<a>.json when
it ends (also at every checkpoint, so a killed rank leaves a record).

At the end rank 0 prints `final sha256 <hex>` of the parameters' bytes.

Options:
  --steps N          total optimizer steps (default 200)
  --step-time S      seconds to sleep per step (default 0.02)
  --garbage K        make K cyclic garbage objects per step (so a
                     collection has work to do)
  --late-start S     on attempt 1, rank 1 sleeps S seconds before it
                     imports lockstep and takes its first step (a rank
                     that starts late)
  --no-torch         independent ranks: no process group, no model, each
                     steps at its own pace (so one can start late while
                     the others run)
  --die-in-checkpoint K  on attempt 1, rank 1 exits at its K-th checkpoint
                     after writing its part, before committing it
  --seconds T        (with --no-torch) stop after T seconds, or at --steps,
                     whichever comes first (ranks of different speeds end
                     together)
  --slow-rank R      rank R sleeps --slow-step-time instead of --step-time
  --slow-step-time S   per step (a rank persistently slower than the others)
  --out DIR          where the records go (default: the checkpoint dir)
"""
import argparse
import gc
import json
import os
import sys
import time

RANK = int(os.environ["RANK"])
ATTEMPT = int(os.environ.get("LOCKSTEP_ATTEMPT", "1"))
record = {"rank": RANK, "attempt": ATTEMPT, "collections": [],
          "gc_steps": [], "ckpt_steps": [], "first_step": None,
          "last_step": None, "gc_enabled_at_start": None}
state = {"step": None, "in_step": False}


def on_gc(phase, info):
    if phase == "start":
        record["collections"].append(
            [state["step"], state["in_step"], info.get("generation")])


def save_record(out):
    path = os.path.join(out, "rank-%d.attempt-%d.json" % (RANK, ATTEMPT))
    with open(path + ".tmp", "w") as f:
        json.dump(record, f)
    os.replace(path + ".tmp", path)


class Cycle:
    """Cyclic garbage: only a collection frees it."""

    def __init__(self):
        self.me = self


def begin_step(step):
    """The record's side of starting step `step`."""
    state["step"] = step
    if record["first_step"] is None:
        record["first_step"] = step


def lockstep_step(lockstep, step):
    """lockstep.step(step), with the collections it runs recorded as
    inside it; the action."""
    state["in_step"] = True
    act = lockstep.step(step)
    state["in_step"] = False
    record["last_step"] = step
    if act.gc:
        record["gc_steps"].append(step)
    return act


def step_time(a):
    """This rank's sleep per step."""
    return a.slow_step_time if RANK == a.slow_rank else a.step_time


def run_alone(a, lockstep, out):
    """--no-torch: steps, the cadence and the records, nothing else (a
    checkpoint is committed at once, with nothing saved)."""
    end = time.monotonic() + a.seconds if a.seconds > 0 else None
    keep = []
    for step in range(1, a.steps + 1):
        if end is not None and time.monotonic() >= end:
            break
        begin_step(step)
        keep = ([Cycle() for _ in range(a.garbage)] + keep)[:a.garbage]
        if lockstep_step(lockstep, step).checkpoint:
            record["ckpt_steps"].append(step)
            lockstep.checkpoint_committed(step)
        time.sleep(step_time(a))
    save_record(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--step-time", type=float, default=0.02)
    ap.add_argument("--garbage", type=int, default=0)
    ap.add_argument("--late-start", type=float, default=0)
    ap.add_argument("--die-in-checkpoint", type=int, default=0)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--slow-rank", type=int, default=-1)
    ap.add_argument("--slow-step-time", type=float, default=0)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.late_start > 0 and ATTEMPT == 1 and RANK == 1:
        time.sleep(a.late_start)
    import lockstep
    print("started %d" % int(time.time() * 1000), flush=True)
    record["gc_enabled_at_start"] = gc.isenabled()
    ckpt = lockstep.checkpoint_dir() or "."
    out = a.out or ckpt
    os.makedirs(out, exist_ok=True)
    if a.no_torch:
        gc.callbacks.append(on_gc)
        return run_alone(a, lockstep, out)

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    # The model, the data and the digest of the fault tests' job, so both
    # are the same deterministic computation.
    from ddp_train import batch, make_model, param_digest

    # From here on every collection is recorded (lockstep's import has
    # already switched automatic collection off under a GC cadence).
    gc.callbacks.append(on_gc)

    dist.init_process_group("gloo", rank=RANK,
                            world_size=int(os.environ["WORLD_SIZE"]))
    torch.set_num_threads(1)
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    start = 0
    resume = lockstep.resume_from()
    if resume:
        saved = torch.load(os.path.join(resume, "rank-%d.pt" % RANK))
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["opt"])
        start = saved["step"]
        print("[rank %d] resumed at step %d" % (RANK, start), flush=True)
    ddp = DDP(model, find_unused_parameters=True)
    loss_fn = torch.nn.MSELoss()
    checkpoints = 0
    keep = []

    for step in range(start + 1, a.steps + 1):
        begin_step(step)
        x, y = batch(step, RANK)
        opt.zero_grad()
        loss_fn(ddp(x), y).backward()
        opt.step()
        for _ in range(a.garbage):
            keep.append(Cycle())
        keep = keep[-a.garbage:] if a.garbage else keep
        act = lockstep_step(lockstep, step)
        if act.checkpoint:
            checkpoints += 1
            record["ckpt_steps"].append(step)
            d = os.path.join(ckpt, "step-%d" % step)
            os.makedirs(d, exist_ok=True)
            tmp = os.path.join(d, "rank-%d.pt.tmp" % RANK)
            torch.save({"step": step, "model": model.state_dict(),
                        "opt": opt.state_dict()}, tmp)
            os.replace(tmp, os.path.join(d, "rank-%d.pt" % RANK))
            save_record(out)
            if (checkpoints == a.die_in_checkpoint and ATTEMPT == 1
                    and RANK == 1):
                print("[rank 1] dying inside checkpoint %d" % step,
                      flush=True)
                os._exit(1)
            lockstep.checkpoint_committed(step)
        if step_time(a) > 0:
            time.sleep(step_time(a))

    record["final"] = param_digest(model)
    save_record(out)
    if RANK == 0:
        print("final sha256 %s" % record["final"], flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
