"""Slurm's hostlist syntax ("gpu-node-[001-004,009]"), expanded as Slurm 22.05 expands it
(src/common/hostlist.c; what `scontrol show hostnames` prints), the same rules as the daemon's
text/hostlist.cc:

- hosts are separated by commas or whitespace, except for commas inside brackets;
- a bracket holds numbers and ranges "lo-hi"; a range keeps the width of its first number
  when that number is zero-padded ("08-11": 08, 09, 10, 11), else none ("9-11");
- several brackets in one host multiply ("a[1-2]b[3-4]": a1b3 a1b4 a2b3 a2b4);
- nothing may follow the last bracket; order and repeats are kept.

A Slurm job's SLURM_JOB_NODELIST in this order is its nodes in rank order.
"""

import os
import re
import socket

MAX_HOSTS = 1 << 20  # a typo such as "n[1-100000000]" is an error, not a gigabyte of names

_RANGE = re.compile(r"^(\d{1,18})(?:-(\d{1,18}))?$")


def _bracket(expression, body):
    if not body:
        raise ValueError(f"hostlist '{expression}': an empty bracket")
    out = []
    for part in body.split(","):
        m = _RANGE.match(part)
        if not m:
            raise ValueError(f"hostlist '{expression}': '{part}' in a bracket is not a number or a range lo-hi")
        lo, hi = int(m.group(1)), int(m.group(2) if m.group(2) is not None else m.group(1))
        if hi < lo:
            raise ValueError(f"hostlist '{expression}': the range {part} runs backwards")
        if hi - lo >= MAX_HOSTS:
            raise ValueError(f"hostlist '{expression}': the range {part} names more than {MAX_HOSTS} hosts")
        first = m.group(1)
        width = len(first) if len(first) > 1 and first[0] == "0" else 0
        out.extend(str(v).zfill(width) for v in range(lo, hi + 1))
    return out


def _one(expression, host):
    names = [""]
    at = 0
    while at < len(host):
        opening = host.find("[", at)
        if opening < 0:
            rest = host[at:]
            if "]" in rest:
                raise ValueError(f"hostlist '{expression}': a ']' without its '[' in '{host}'")
            if at > 0:
                raise ValueError(f"hostlist '{expression}': '{rest}' after the last bracket of '{host}' "
                                 "(Slurm allows nothing there)")
            return [host]
        prefix = host[at:opening]
        if "]" in prefix:
            raise ValueError(f"hostlist '{expression}': a ']' without its '[' in '{host}'")
        closing = host.find("]", opening)
        if closing < 0:
            raise ValueError(f"hostlist '{expression}': an unclosed '[' in '{host}'")
        values = _bracket(expression, host[opening + 1:closing])
        if len(names) * len(values) > MAX_HOSTS:
            raise ValueError(f"hostlist '{expression}': it names more than {MAX_HOSTS} hosts")
        names = [n + prefix + v for n in names for v in values]
        at = closing + 1
    return names


def expand_hostlist(expression):
    """The hosts `expression` names, in order; ValueError naming it when it is malformed."""
    out = []
    i, n = 0, len(expression or "")
    while i < n:
        while i < n and (expression[i] == "," or expression[i].isspace()):
            i += 1
        if i == n:
            break
        end, depth = i, 0
        while end < n:
            c = expression[end]
            if c == "[":
                depth += 1
                if depth > 1:
                    raise ValueError(f"hostlist '{expression}': a '[' inside a bracket")
            elif c == "]":
                depth -= 1
            elif depth == 0 and (c == "," or c.isspace()):
                break
            end += 1
        if depth > 0:
            raise ValueError(f"hostlist '{expression}': an unclosed '['")
        out.extend(_one(expression, expression[i:end]))
        if len(out) > MAX_HOSTS:
            raise ValueError(f"hostlist '{expression}': it names more than {MAX_HOSTS} hosts")
        i = end
    return out


def slurm_nodes(environ=None):
    """The job's nodes in rank order from SLURM_JOB_NODELIST (SLURM_NODELIST on older Slurm);
    [] outside a Slurm job or when the list cannot be read."""
    environ = os.environ if environ is None else environ
    expression = environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST") or ""
    try:
        return expand_hostlist(expression)
    except ValueError:
        return []


def torch_nodes():
    """The process group's hosts in rank order, one per run of ranks on a host (rank r on
    nodes[r // ranks_per_node]); [] without an initialized torch.distributed. A collective:
    call it on every rank, as torch.distributed.all_gather_object requires."""
    try:
        import torch.distributed as dist
    except ImportError:
        return []
    if not (dist.is_available() and dist.is_initialized()):
        return []
    names = [None] * dist.get_world_size()
    dist.all_gather_object(names, socket.gethostname())
    out = []
    for name in names:
        if not out or out[-1] != name:
            out.append(name)
    return out
