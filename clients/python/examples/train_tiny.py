#!/usr/bin/python3
"""A tiny GPT-style model trained with PyTorch (CPU) on generated data, reporting to
flightpland through flightplan_client: checkpoints every --save-every steps with
torch.save, resumes from the latest one when restarted.

    PYTHONPATH=build/python /usr/bin/python3 clients/python/examples/train_tiny.py \\
        --run tiny --checkpoint-dir /tmp/tiny --steps 200
"""
import argparse
import glob
import os
import re
import sys
import time

import torch
import torch.nn as nn

from flightplan_client import Tracker


class TinyGPT(nn.Module):
    def __init__(self, vocab=256, dim=64, heads=4, layers=2, seq_len=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(seq_len, dim))
        block = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(block, layers)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("mask", torch.triu(torch.full((seq_len, seq_len), float("-inf")), 1))

    def forward(self, ids):
        x = self.embed(ids) + self.pos[: ids.shape[1]]
        return self.head(self.blocks(x, mask=self.mask[: ids.shape[1], : ids.shape[1]]))


def batch_for(step, batch, seq_len, vocab=256):
    # Generated data, the same for a step whatever the attempt: a resumed run sees the
    # batches it would have seen.
    g = torch.Generator().manual_seed(step)
    start = torch.randint(0, vocab, (batch, 1), generator=g)
    stride = torch.randint(1, 7, (batch, 1), generator=g)
    ids = (start + stride * torch.arange(seq_len + 1)) % vocab
    return ids[:, :-1], ids[:, 1:]


def latest_checkpoint(directory):
    found = []
    for path in glob.glob(os.path.join(directory, "ckpt-*.pt")):
        m = re.search(r"ckpt-(\d+)\.pt$", path)
        if m:
            found.append((int(m.group(1)), path))
    return max(found) if found else (0, None)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True)
    p.add_argument("--server", default=os.environ.get("FLIGHTPLAN_SERVER", "127.0.0.1:50051"))
    p.add_argument("--checkpoint-dir", required=True)
    p.add_argument("--spool-dir", default=None, help="default: <checkpoint-dir>/spool")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--save-every", type=int, default=20)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--step-sleep", type=float, default=0.0, help="seconds to pause per step")
    args = p.parse_args()
    os.makedirs(args.checkpoint_dir, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(1)

    model = TinyGPT(seq_len=args.seq_len)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    restored, path = latest_checkpoint(args.checkpoint_dir)
    tokens = 0
    if path:
        state = torch.load(path)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        tokens = state["tokens"]
    # One launch, one attempt: the count survives in the checkpoint directory. Inside a
    # Slurm job the launch has Slurm's name instead (SLURM_JOB_ID, SLURM_RESTART_COUNT), and
    # the daemon numbers it: the same attempt as `flightplan slurm`'s report of it.
    attempt = None
    if not os.environ.get("SLURM_JOB_ID"):
        attempt_file = os.path.join(args.checkpoint_dir, "attempt")
        attempt = int(open(attempt_file).read()) + 1 if os.path.exists(attempt_file) else 1
        with open(attempt_file, "w") as f:
            f.write(str(attempt))

    spool = args.spool_dir or os.path.join(args.checkpoint_dir, "spool")
    with Tracker(args.run, server=args.server, spool_dir=spool, flush_seconds=0.2) as t:
        t.install_hooks(exceptions=True, sigterm=True)
        t.job_started(attempt=attempt, restored_step=restored)
        print(f"attempt {attempt or 'from the daemon'} restored step {restored} tokens {tokens}", flush=True)
        loss_fn = nn.CrossEntropyLoss()
        for step in range(restored + 1, args.steps + 1):
            inputs, targets = batch_for(step, args.batch, args.seq_len)
            logits = model(inputs)
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            tokens += args.batch * args.seq_len
            t.step(step, tokens)
            print(f"step {step} loss {loss.item():.4f} tokens {tokens}", flush=True)
            if step % args.save_every == 0:
                started = time.monotonic()
                tmp = os.path.join(args.checkpoint_dir, f".ckpt-{step}.tmp")
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                            "step": step, "tokens": tokens}, tmp)
                os.replace(tmp, os.path.join(args.checkpoint_dir, f"ckpt-{step}.pt"))
                t.checkpoint_saved(step, blocking_seconds=time.monotonic() - started)
            if args.step_sleep:
                time.sleep(args.step_sleep)
        t.run_finished()
    print(f"done tokens {tokens}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
