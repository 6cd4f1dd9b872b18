#!/usr/bin/python3
"""Writes the training-log fixtures in tests/logs from the projects' own format strings.

Each print below is the expression from the named file and version, copied verbatim (only
the values are ours), so the fixtures are what those releases print. Run it after changing a
scenario: /usr/bin/python3 tests/logs/make_fixtures.py (from the repository root). The tests
check the events against figures worked out by hand from the scenarios here.
"""
import datetime
import os

HERE = os.path.dirname(os.path.abspath(__file__))
T0 = datetime.datetime(2027, 1, 4, 0, 0, 0)


def at(seconds):
    return T0 + datetime.timedelta(seconds=seconds)


class Log:
    def __init__(self):
        self.lines = []

    def print(self, s):
        self.lines.extend(s.split("\n"))

    def write(self, name):
        with open(os.path.join(HERE, name), "w") as f:
            f.write("\n".join(self.lines) + "\n")


# ---------------------------------------------------------------------------------------
# Megatron-LM. Rank 0 prints with print_rank_0 and the last rank with print_rank_last, both
# a bare print() (megatron/training/utils/common_utils.py); the timers and the microbatch
# calculator log through logging.basicConfig's default "%(levelname)s:%(name)s:%(message)s"
# (megatron/training/training.py, megatron/training/log_handler.py) since core_v0.16.0 and
# with print() before.
# ---------------------------------------------------------------------------------------

def print_args(log, args):
    # megatron/training/arguments.py _print_args (core_v0.5.0 .. core_v0.19.0, identical).
    title = "arguments"
    log.print(f'------------------------ {title} ------------------------')
    str_list = []
    for arg, value in args.items():
        dots = '.' * (48 - len(arg))
        str_list.append('  {} {} {}'.format(arg, dots, value))
    for arg in sorted(str_list, key=lambda x: x.lower()):
        log.print(arg)
    log.print(f'-------------------- end of {title} ---------------------')


def world(log):
    # megatron/training/arguments.py validate_args, core_v0.19.0.
    log.print('using world size: {}, data-parallel size: {}, '
              'context-parallel size: {}, '
              'hierarchical context-parallel sizes: {}, '
              'tensor-model-parallel size: {}, '
              'pipeline-model-parallel size: {}'.format(64, 8, 1, None, 8, 1))


def timer(log, name, min_time, max_time, logger_prefix):
    # megatron/core/timers.py _get_global_min_max_time_string, then Timers.log: logger.info
    # (core_v0.16.0+) or print (earlier).
    output_string = '(min, max) time across ranks (ms):'
    output_string += '\n    {}: ({:.2f}, {:.2f})'.format((name + ' ').ljust(48, '.'), min_time, max_time)
    log.print(("INFO:megatron.core.timers:" if logger_prefix else "") + output_string)


def timers(log, rows, logger_prefix):
    # The same block for several timers at once, as Timers.log prints the names it is given
    # (megatron/training/training.py training_log: timers_to_log, after the iteration line).
    output_string = '(min, max) time across ranks (ms):'
    for name, min_time, max_time in rows:
        output_string += '\n    {}: ({:.2f}, {:.2f})'.format((name + ' ').ljust(48, '.'), min_time, max_time)
    log.print(("INFO:megatron.core.timers:" if logger_prefix else "") + output_string)


class Megatron:
    """One of: core_v0.19.0 (5be96267, 2026-08-19), core_v0.15.0 (0d7e02b, 2025-12-05),
    core_v0.5.0 (0acc240e, 2024-02-26)."""

    def __init__(self, version, train_iters=500):
        self.v = version
        self.log = Log()
        self.train_iters = train_iters

    def stamp(self, t, micros):
        return t.strftime('%Y-%m-%d %H:%M:%S.%f' if micros else '%Y-%m-%d %H:%M:%S')

    def print_datetime(self, string, t):
        # megatron/training/training.py print_datetime ('.%f' since core_v0.16.0).
        time_str = self.stamp(t, self.v >= (0, 16))
        self.log.print(f'[{string}] datetime: {time_str} ')

    def iteration(self, t, iteration, consumed, elapsed_s, batch_size, loss):
        # megatron/training/training.py training_log (core_v0.6.0+ with the timestamp;
        # core_v0.5.0 megatron/training.py without, and learning rate as {:.3E}).
        args_train_iters = self.train_iters
        if self.v >= (0, 6):
            log_string = f" [{self.stamp(t, self.v >= (0, 16))}]"
        else:
            log_string = ''
        log_string += ' iteration {:8d}/{:8d} |'.format(iteration, args_train_iters)
        log_string += ' consumed samples: {:12d} |'.format(consumed)
        log_string += ' elapsed time per iteration (ms): {:.1f} |'.format(elapsed_s * 1000.0)
        learning_rate = 3e-4 * min(1.0, iteration / 100)
        if self.v >= (0, 6):
            log_string += f' learning rate: {learning_rate:.6E} |'
        else:
            log_string += ' learning rate: {:.3E} |'.format(learning_rate)
        log_string += f' global batch size: {batch_size:5d} |'
        log_string += ' {}: {:.6E} |'.format('lm loss', loss)
        log_string += f' loss scale: {1.0:.1f} |'
        log_string += f' grad norm: {0.45678:.3f} |'
        log_string += ' number of skipped iterations: {:3d} |'.format(0)
        log_string += ' number of nan iterations: {:3d} |'.format(0)
        self.log.print(log_string)

    def saving(self, t, iteration, save_dir='/ckpt/gpt', ckpt_format='torch_dist'):
        # megatron/training/checkpointing.py save_checkpoint.
        if self.v >= (0, 16):
            self.log.print(f'[{datetime_str(t)}] saving checkpoint '
                           f'at iteration {iteration:7d} to {save_dir} in {ckpt_format} format')
        elif self.v >= (0, 6):
            self.log.print('saving checkpoint at iteration {:7d} to {} in {} format'.format(
                iteration, save_dir, ckpt_format))
        else:
            self.log.print('saving checkpoint at iteration {:7d} to {}'.format(iteration, save_dir))

    def scheduled(self, t, iteration, save_dir='/ckpt/gpt'):
        # checkpointing.py save_checkpoint, --async-save (core_v0.16.0+ with the timestamp).
        self.log.print(f'  [{datetime_str(t)}] scheduled '
                       f'an async checkpoint save at iteration {iteration:7d} to {save_dir}')

    def saved(self, t, iteration, save='/ckpt/gpt', tp=8, pp=1):
        # checkpointing.py iter_finalize_fn (core_v0.19.0 adds gtp_remat); core_v0.5.0
        # megatron/checkpointing.py save_checkpoint.
        tensor_mp_rank, pipeline_mp_rank, gtp_remat_rank = 1, 1, 1
        if self.v >= (0, 19):
            self.log.print(f'  [{datetime_str(t)}] successfully saved '
                           f'checkpoint from iteration {int(iteration):7d} to {save} '
                           f'[ t {tensor_mp_rank}/{tp}, '
                           f'gtp_remat {gtp_remat_rank}/{1}, '
                           f'p {pipeline_mp_rank}/{pp} ]')
        elif self.v >= (0, 10):
            self.log.print(f'  successfully saved checkpoint from iteration {int(iteration):7d} to {save} '
                           f'[ t {tensor_mp_rank}/{tp}, '
                           f'p {pipeline_mp_rank}/{pp} ]')
        else:
            self.log.print('  successfully saved checkpoint at iteration {:7d} to {}'.format(iteration, save))

    def loading(self, iteration, load_dir='/ckpt/gpt'):
        # checkpointing.py _load_base_checkpoint.
        dist_infix = 'distributed ' if self.v >= (0, 6) else ''
        self.log.print(f' loading {dist_infix}checkpoint from {load_dir} at iteration {iteration}')

    def loaded(self, iteration, load_dir='/ckpt/gpt', tp=8, pp=1):
        # checkpointing.py load_checkpoint.
        if self.v >= (0, 19):
            self.log.print(f'  successfully loaded checkpoint from {load_dir} '
                           f'[ t {0 + 1}/{tp}, '
                           f'gtp_remat {0 + 1}/{1}, '
                           f'p {0 + 1}/{pp} ] '
                           f'at iteration {iteration}')
        elif self.v >= (0, 10):
            self.log.print(f'  successfully loaded checkpoint from {load_dir} '
                           f'[ t {0 + 1}/{tp}, '
                           f'p {0 + 1}/{pp} ] '
                           f'at iteration {iteration}')
        else:
            self.log.print(f'  successfully loaded checkpoint from {load_dir} '
                           f'at iteration {iteration}')


def datetime_str(t):
    return t.strftime("%Y-%m-%d %H:%M:%S.%f")


def megatron_current():
    """core_v0.19.0: two launches in one file, sync and async saves, an orderly exit.

    Launch 1 (00:00:30): iterations every 10 (10 s each, 64 sequences of 4,096 tokens);
    a synchronous save of 30 from 00:07:20.5 to 00:07:40.5 (20 s); an asynchronous save of
    60 scheduled 00:12:41 -> 00:12:43 (2 s blocking), finalized at 00:14:30; iteration 80
    at 00:16:03, then the job dies without a word.
    Launch 2 (00:40:00): loads 60; iterations 70..100; a save of 90 (20 s); at 100 the
    --exit-interval save (20 s) and the exit line at 00:49:02.
    """
    m = Megatron((0, 19))
    args = {'global_batch_size': 64, 'micro_batch_size': 1, 'rampup_batch_size': None, 'seq_length': 4096,
            'train_iters': 500}
    world(m.log)
    print_args(m.log, args)
    def launch(start):
        # print_datetime of pretrain() and train() before the first iteration.
        m.print_datetime('after model, optimizer, and learning rate ' 'scheduler are built', at(start))
        m.print_datetime('after dataloaders are built', at(start + 10))
        m.print_datetime('before the start of training step', at(start + 20))
        return start + 20.0

    def iterations(t, its):
        # 10 iterations of 10 s between lines, 64 sequences each.
        for it in its:
            t += 100
            m.iteration(at(t), it, it * 64, 10.0, 64, 10.0 - it / 100)
        return t

    def sync_save(t, it, min_ms, max_ms):
        m.saving(at(t + 0.5), it)
        m.saved(at(t + 20.5), it)
        timer(m.log, 'save-checkpoint', min_ms, max_ms, logger_prefix=True)
        return t + 20.5

    m.print_datetime('after megatron is initialized', at(30))
    t = iterations(launch(120), (10, 20, 30))
    t = iterations(sync_save(t, 30, 19950.12, 20010.47), (40, 50, 60))
    m.saving(at(t + 0.5), 60)
    m.scheduled(at(t + 2.5), 60)
    timer(m.log, 'save-checkpoint', 1990.00, 2003.18, logger_prefix=True)
    t = iterations(t + 2.5, (70,))
    m.saved(at(t + 7.5), 60)  # finalized at 00:14:30
    m.iteration(at(t + 100), 80, 80 * 64, 10.0, 64, 9.2)  # 00:16:03
    # Launch 2.
    world(m.log)
    print_args(m.log, args)
    m.print_datetime('after megatron is initialized', at(2400))
    m.loading(60)
    m.loaded(60)
    timer(m.log, 'load-checkpoint', 29000.00, 30000.00, logger_prefix=True)
    t = iterations(launch(2480), (70, 80, 90))
    t = iterations(sync_save(t, 90, 19990.00, 20000.00), (100,))  # 100 at 00:48:40.5
    t = sync_save(t, 100, 19990.00, 20000.00) - 20.5
    m.print_datetime(f'exiting program at iteration {100}', at(t + 21.5))
    m.log.write('megatron-core_v0.19.0.log')


def timed_iterations(block):
    """core_v0.19.0: the arguments, then iterations 10..80 every 100 s from 00:02:00 (10 s
    each, 64 sequences of 4,096 tokens), each followed by block(m, iteration): the timers."""
    m = Megatron((0, 19))
    args = {'global_batch_size': 64, 'micro_batch_size': 1, 'rampup_batch_size': None, 'seq_length': 4096,
            'train_iters': 500}
    print_args(m.log, args)
    m.print_datetime('after megatron is initialized', at(0))
    m.print_datetime('before the start of training step', at(20))
    t = 20.0
    for it in range(10, 81, 10):
        t += 100
        m.iteration(at(t), it, it * 64, 10.0, 64, 9.0)
        block(m, it)
    return m


def megatron_straggler():
    """core_v0.19.0 with --timing-log-level 1: after each iteration line (every 10 from 00:02:00,
    100 s apart), the compute timers across ranks. Until iteration 40 the slowest rank is 1%
    behind the fastest (forward-compute 1000.00 vs 1010.00 ms, backward-compute 2000.00 vs
    2020.00); from the block after 40 on, one rank is 6% slower (1060.00, 2120.00).
    forward-backward, which includes the wait for the slowest, spreads less (3050.00 vs
    3060.00; then 3180.00 vs 3185.00).
    """
    def block(m, it):
        slow = it >= 40
        timers(m.log, [('forward-backward', 3180.00 if slow else 3050.00, 3185.00 if slow else 3060.00),
                       ('forward-compute', 1000.00, 1060.00 if slow else 1010.00),
                       ('backward-compute', 2000.00, 2120.00 if slow else 2020.00)], logger_prefix=True)

    timed_iterations(block).log.write('megatron-core_v0.19.0-straggler.log')


def all_ranks_timers(log, rows):
    # megatron/core/timers.py _get_all_ranks_time_string (core_v0.16.0 .. core_v0.19.0), as
    # Timers.log prints it with --timing-log-option all: through logging (the first line
    # carries the logger's prefix, the rest are the message's own lines).
    output_string = 'times across ranks (ms):'
    for name, times in rows:
        output_string += '\n  {}:'.format(name)
        for rank, t in enumerate(times):
            output_string += '\n     rank {:2d}: {:.2f}'.format(rank, t)
    log.print("INFO:megatron.core.timers:" + output_string)


def megatron_slow_rank():
    """core_v0.19.0 with --timing-log-level 1 --timing-log-option all on 16 ranks (2 nodes of 8):
    after each iteration line (every 10 from 00:02:00, 100 s apart) every rank's compute
    timers. Up to the block after iteration 30 the slowest rank moves (1% behind: rank
    it/10 % 16); from the block after 40 on, rank 13 is 6% slower (forward-compute 1060.00 vs
    1000.00, backward-compute 2120.00 vs 2000.00); forward-backward is the same on every rank
    (each waits for the slowest). After iteration 80 the job dies: NCCL on gpu-node-103 loses
    its peer gpu-node-117 (NCCL 2.21.5's src/misc/socket.cc socketProgress through
    src/debug.cc's WARN prefix "%s:%d:%d [%d] %s:%d NCCL WARN "), PyTorch's NCCL error
    (NCCLUtils.hpp), and torchrun's failure summary names rank 13 on gpu-node-117
    (torch/distributed/elastic/multiprocessing/errors/__init__.py _FAILURE_FORMAT_TEMPLATE
    inside ChildFailedError.format_msg, torch 2.5).
    """
    def block(m, it):
        slow_rank, factor = (13, 1.06) if it >= 40 else ((it // 10) % 16, 1.01)
        fwd = [1000.00 * (factor if r == slow_rank else 1) for r in range(16)]
        bwd = [2000.00 * (factor if r == slow_rank else 1) for r in range(16)]
        all_ranks_timers(m.log, [('forward-backward', [3000.00 * factor] * 16), ('forward-compute', fwd),
                                 ('backward-compute', bwd)])

    m = timed_iterations(block)
    m.log.print('gpu-node-103:2200689:2200706 [3] misc/socket.cc:49 NCCL WARN socketProgress: '
                'Connection closed by remote peer gpu-node-117.cluster.local<55693>')
    m.log.print('[rank3]: torch.distributed.DistBackendError: NCCL error in: '
                '/opt/pytorch/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2027, '
                'remote process exited or there was a network error, NCCL version 2.21.5')
    m.log.print('torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ')
    boarder = '=' * 60
    section = '-' * 60
    root = ('[0]:\n  time      : 2027-01-04_00:15:31\n  host      : gpu-node-117.cluster.local\n'
            '  rank      : 13 (local_rank: 5)\n  exitcode  : -6 (pid: 1246013)\n  error_file: <N/A>\n'
            '  traceback : Signal 6 (SIGABRT) received by PID 1246013')
    m.log.print(f'{boarder}\npretrain_gpt.py FAILED\n{section}\nFailures:\n  <NO_OTHER_FAILURES>\n{section}\n'
                f'Root Cause (first observed failure):\n{root}\n{boarder}')
    m.log.write('megatron-core_v0.19.0-slow-rank.log')


def megatron_rampup():
    """core_v0.15.0: the batch ramps up (--rampup-batch-size 16 16 1536), no timestamps on the
    save lines: the save timer gives their length.

    Iterations logged every 10 from 00:02:00, 100 s apart; the batch grows 16 -> 32 -> 48 ->
    64 as consumed samples pass 512, 1024, 1536 (iterations 33, 49, 60). The save at 40
    takes 15 s by its timer (the next line comes 115 s later).
    """
    m = Megatron((0, 15))
    args = {'global_batch_size': 64, 'micro_batch_size': 1,
            'rampup_batch_size': ['16', '16', '1536'], 'seq_length': 2048, 'train_iters': 500}
    world(m.log)
    print_args(m.log, args)
    # megatron/core/num_microbatches_calculator.py (core_v0.9.0 .. core_v0.17.1), logger.info.
    prefix = 'INFO:megatron.core.num_microbatches_calculator:'
    start_global_batch_size, global_batch_size, batch_size_increment, ramup_samples = 16, 64, 16, 1536
    m.log.print(prefix + (f'will use batch size rampup starting from global batch size '
                          f'{start_global_batch_size} to global batch size {global_batch_size} with batch'
                          f'size increments {batch_size_increment} over {ramup_samples} samples.'))
    m.log.print(prefix + f'setting initial batch size to {16}')
    m.print_datetime('after megatron is initialized', at(0))
    m.print_datetime('before the start of training step', at(20))
    # RampupBatchsizeNumMicroBatchesCalculator.update before each iteration: the batch grows
    # by 16 every 1536 / ((64 - 16) / 16) = 512 samples consumed.
    consumed, batch, t = 0, 16, 20.0
    for it in range(1, 61):
        new = min(64, 16 + 16 * (consumed // 512))
        if new != batch:
            m.log.print(prefix + f'ramping up batch size from {batch} to {new}')
            batch = new
        consumed += batch
        if it % 10 == 0:
            t += 100
            m.iteration(at(t), it, consumed, 10.0, batch, 9.0)
        if it == 40:
            m.saving(at(t), 40)
            m.saved(at(t), 40)
            timer(m.log, 'save-checkpoint', 14900.00, 15000.00, logger_prefix=False)
            t += 15
    m.log.write('megatron-core_v0.15.0-rampup.log')


def megatron_old():
    """core_v0.5.0: no timestamps on iterations or saves (dated as a live tail reads them).

    A launch, iterations 10..40, a save at 20 (its timer says 12 s), a crash after 40, a
    second launch loading 20, iterations 30..40.
    """
    m = Megatron((0, 5))
    args = {'global_batch_size': 32, 'micro_batch_size': 1, 'rampup_batch_size': None, 'seq_length': 1024,
            'train_iters': 100}
    m.train_iters = 100
    print_args(m.log, args)
    m.print_datetime('after megatron is initialized', at(0))
    for it in (10, 20):
        m.iteration(None, it, it * 32, 5.0, 32, 9.0)
    m.saving(None, 20, save_dir='/ckpt/old')
    m.saved(None, 20, save='/ckpt/old')
    timer(m.log, 'save-checkpoint', 11900.00, 12000.00, logger_prefix=False)
    for it in (30, 40):
        m.iteration(None, it, it * 32, 5.0, 32, 9.0)
    print_args(m.log, args)
    m.print_datetime('after megatron is initialized', at(1000))
    m.loading(20, load_dir='/ckpt/old')
    m.loaded(20, load_dir='/ckpt/old')
    for it in (30, 40):
        m.iteration(None, it, it * 32, 5.0, 32, 9.0)
    m.log.write('megatron-core_v0.5.0.log')


# ---------------------------------------------------------------------------------------
# torchtitan: torchtitan/tools/logging.py init_logger, Formatter
# "[titan] %(asctime)s - %(name)s - %(levelname)s - %(message)s" on the root logger
# (asctime "2027-01-04 00:00:00,123"); torchrun --tee prefixes "[rank0]:" (run_train.sh
# --local-ranks-filter 0 --role rank --tee 3).
# ---------------------------------------------------------------------------------------

class Color:
    # torchtitan/tools/utils.py Color.
    red = "\033[31m"
    green = "\033[32m"
    yellow = "\033[33m"
    blue = "\033[34m"
    magenta = "\033[35m"
    cyan = "\033[36m"
    reset = "\033[39m"
    orange = "\033[38;2;180;60;0m"
    turquoise = "\033[38;2;54;234;195m"


class Titan:
    def __init__(self, version):
        self.v = version  # "v0.2.2" (73a0e697, 2026-02-20) or "main" (b5bcd76c, 2026-08-21)
        self.log = Log()

    def info(self, t, message):
        asctime = t.strftime('%Y-%m-%d %H:%M:%S') + ',%03d' % (t.microsecond // 1000)
        self.log.print(f"[rank0]:[titan] {asctime} - root - INFO - {message}")

    def step(self, t, step, loss):
        # torchtitan/components/metrics.py MetricsProcessor.log (v0.2.2; main: mfu_str).
        color = Color
        grad_norm, tps, tflops, mfu = 1.25, 6554.2, 379.56, 38.38
        max_reserved_gib, max_reserved_pct = 49.52, 52.13
        mfu_str = f"{mfu:.2f}%"
        self.info(t, f"{color.red}step: {step:2}  "
                     f"{color.green}loss: {loss:8.5f}  "
                     f"{color.orange}grad_norm: {grad_norm:7.4f}  "
                     f"{color.turquoise}memory: {max_reserved_gib:5.2f}GiB"
                     f"({max_reserved_pct:.2f}%)  "
                     f"{color.blue}tps: {round(tps):,}  "
                     f"{color.cyan}tflops: {tflops:,.2f}  "
                     f"{color.magenta}mfu: {mfu_str}{color.reset}")

    def initialized(self, t):
        if self.v == "v0.2.2":
            # torchtitan/train.py Trainer.__init__.
            self.info(t, "Trainer is initialized with "
                         f"local batch size {2}, "
                         f"global batch size {16}, "
                         f"gradient accumulation steps {1}, "
                         f"sequence length {8192}, "
                         f"total steps {1000} "
                         f"(warmup {200})")
        else:
            # torchtitan/trainer.py Trainer.__init__.
            num_tokens_per_dp_rank, num_tokens_per_train_step = 16384, 131072
            self.info(t, "Trainer is initialized with "
                         f"{num_tokens_per_dp_rank} tokens per DP rank, "
                         f"{num_tokens_per_train_step} tokens per train step, "
                         f"gradient accumulation steps {1}, "
                         f"maximum context length {8192}, "
                         f"total steps {1000} "
                         f"(warmup {200})")

    def save(self, t, seconds, last_step=None):
        if self.v == "v0.2.2":
            # torchtitan/components/checkpoint.py CheckpointManager.save / _save_last_step.
            self.info(t, "Saving the checkpoint (or staging if async is enabled).")
            if last_step is not None:
                self.info(t, f"Saving a full checkpoint at last step, step {last_step}.")
                return
            self.info(t + datetime.timedelta(seconds=seconds),
                      "Finished saving the checkpoint (or staging if async is enabled)"
                      f"in {seconds:.2f} seconds.")
        else:
            # torchtitan/components/checkpointer/dcp.py CheckpointManager._save.
            checkpoint_phase = "saving"
            self.info(t, f"{checkpoint_phase.capitalize()} the checkpoint.")
            if last_step is not None:
                self.info(t, f"Saving a full checkpoint at last step, step {last_step}.")
                self.info(t + datetime.timedelta(seconds=seconds),
                          f"Last step checkpoint completed in {seconds:.2f}s")
                return
            self.info(t + datetime.timedelta(seconds=seconds),
                      f"Finished {checkpoint_phase} the checkpoint in "
                      f"{seconds:.2f} seconds.")

    def load(self, t, step, seconds):
        # CheckpointManager.load (v0.2.2) / _load (main): the same text.
        checkpoint_id = f"./outputs/checkpoint/step-{step}"
        self.info(t, f"Loading the checkpoint from {checkpoint_id}.")
        self.info(t + datetime.timedelta(seconds=seconds),
                  f"Finished loading the checkpoint in {seconds:.2f} seconds.")


def titan(version, name):
    """Launch 1 (00:00:05): steps 1, 10, 20 (00:05:00), a save of 20 (8.25 s), steps 30, 40,
    then a crash. Launch 2 (00:30:00): loads step-20 (20 s), starts at step 21, steps 30..50,
    the last-step save of 50 (v0.2.2: no end line, the next line 6 s later ends it; main: 6.5 s
    by its own line), then training completes.
    """
    g = Titan(version)
    if version == "v0.2.2":
        g.info(at(5), f"Starting job: {'Llama 3 8B training'}")
    g.initialized(at(40))
    g.info(at(60), f"Training starts at step {0 + 1}")
    g.step(at(70), 1, 12.243)
    g.step(at(180), 10, 9.8301)
    g.step(at(300), 20, 8.2267)
    g.save(at(300.5), 8.25)
    g.step(at(428.75), 30, 7.5512)
    g.step(at(548.75), 40, 7.1020)
    # Launch 2.
    if version == "v0.2.2":
        g.info(at(1800), f"Starting job: {'Llama 3 8B training'}")
    g.initialized(at(1830))
    g.load(at(1860), 20, 20.0)
    g.info(at(1880), f"Training starts at step {20 + 1}")
    g.step(at(2000), 30, 7.5512)
    g.step(at(2120), 40, 7.1020)
    g.step(at(2240), 50, 6.8871)
    g.save(at(2240.5), 6.5, last_step=50)
    g.info(at(2247), "Sleeping 2 seconds for other ranks to complete")
    g.info(at(2249), "Training completed")
    g.log.write(name)

# ---------------------------------------------------------------------------------------
# DeepSpeed: deepspeed/utils/logging.py LoggerFactory's formatter "[%(asctime)s] [%(levelname)s]
# [%(filename)s:%(lineno)d:%(funcName)s] %(message)s" (asctime "2027-01-04 00:00:00,123") and
# log_dist's "[Rank {}] {}" (the record's place is log_dist's own logger.log call:
# logging.py:128 at v0.16.4 (e2dc3eeb), :96 at v0.14.5 (eb07d41f)).
# ---------------------------------------------------------------------------------------

class DeepSpeed:
    LOG_DIST = {"v0.16.4": 128, "v0.14.5": 96}
    # deepspeed/runtime/config.py DeepSpeedConfig.print: the header, then each argument.
    CONFIG = {"v0.16.4": (1001, 1005), "v0.14.5": (997, 1001)}

    def __init__(self, version):
        self.v = version
        self.log = Log()

    def record(self, t, where, message):
        asctime = t.strftime('%Y-%m-%d %H:%M:%S') + ',%03d' % (t.microsecond // 1000)
        self.log.print(f"[{asctime}] [INFO] [{where}] {message}")

    def log_dist(self, t, message):
        self.record(t, f"logging.py:{self.LOG_DIST[self.v]}:log_dist", "[Rank {}] {}".format(0, message))

    def launch(self, t, train_batch_size):
        # deepspeed/__init__.py initialize.
        self.log_dist(t, "DeepSpeed info: version={}, git-hash={}, git-branch={}".format(self.v[1:], "unknown", "unknown"))
        header, arg_line = self.CONFIG[self.v]
        self.record(t, f"config.py:{header}:print", "{}:".format("DeepSpeedEngine configuration"))
        for arg, value in (("steps_per_print", 10), ("train_batch_size", train_batch_size),
                           ("train_micro_batch_size_per_gpu", 8)):
            dots = "." * (29 - len(arg))
            self.record(t, f"config.py:{arg_line}:print", "  {} {} {}".format(arg, dots, value))

    def progress(self, t, step):
        # deepspeed/runtime/engine.py DeepSpeedEngine._report_progress.
        lr, mom = [0.00029999], [(0.9, 0.95)]
        self.log_dist(t, f"step={step}, skipped={0}, lr={lr}, mom={mom}")

    def load(self, t, tag):
        # runtime/checkpoint_engine/torch_checkpoint_engine.py TorchCheckpointEngine.load.
        path = f"/ckpt/run1/{tag}/mp_rank_00_model_states.pt"
        self.record(t, "torch_checkpoint_engine.py:27:load", f"[Torch] Loading checkpoint from {path}...")
        self.record(t, "torch_checkpoint_engine.py:29:load", f"[Torch] Loaded checkpoint from {path}.")

    def save(self, t, tag, seconds):
        # TorchCheckpointEngine.create (log_dist), then commit, seconds later.
        self.log_dist(t, f"[Torch] Checkpoint {tag} is about to be saved!")
        self.record(t + datetime.timedelta(seconds=seconds), "torch_checkpoint_engine.py:33:commit",
                    f"[Torch] Checkpoint {tag} is ready now!")


def deepspeed(version, name):
    """Launch 1 (00:00:00): the engine's step=0 at 5 s, steps 10 (100 s), 20 (200 s), a save of
    global_step20 from 200.5 s to 208.5 s, steps 30 (300 s), 40 (400 s), then a crash. Launch 2
    (00:30:00): step=0, loads global_step20, steps 30 (1900 s), 40 (2000 s), 50 (2100 s), a save
    of global_step50 in 6 s. train_batch_size 64 (sequences; the length is not in the log).
    """
    g = DeepSpeed(version)
    g.launch(at(0), 64)
    g.progress(at(5), 0)
    g.progress(at(100), 10)
    g.progress(at(200), 20)
    g.save(at(200.5), "global_step20", 8.0)
    g.progress(at(300), 30)
    g.progress(at(400), 40)
    g.launch(at(1800), 64)
    g.progress(at(1805), 0)
    g.load(at(1810), "global_step20")
    g.progress(at(1900), 30)
    g.progress(at(2000), 40)
    g.progress(at(2100), 50)
    g.save(at(2100.5), "global_step50", 6.0)
    g.log.write(name)


# ---------------------------------------------------------------------------------------
# NeMo 2: nemo/lightning/pytorch/callbacks/progress_printer.py ProgressPrinter (a bare print),
# callbacks/model_checkpoint.py through nemo/utils/formatters/base.py BaseNeMoFormatter
# "[NeMo %(levelname)1.1s %(asctime)s %(module)s:%(lineno)d] %(message)s" (date
# "%Y-%m-%d %H:%M:%S"), and Lightning's checkpoint_connector.py rank_zero_info lines; v2.4.0
# (2381f42f): model_checkpoint.py:632 and :657.
# ---------------------------------------------------------------------------------------

class Nemo:
    def __init__(self):
        self.log = Log()

    def info(self, t, module, lineno, message):
        # BaseFormatter.format ends with formatted.replace("\n", "\n    "): a message's later
        # lines are indented four spaces.
        line = f"[NeMo I {t.strftime('%Y-%m-%d %H:%M:%S')} {module}:{lineno}] {message}"
        self.log.print(line.replace("\n", "\n    "))

    def step(self, index, total, batch, first_of_launch):
        # ProgressPrinter.on_train_batch_end / format_string; consumed_samples is logged from
        # the launch's second step on (nemo/lightning/pytorch/plugins/data_sampler.py).
        metrics = {"lr": 1.499e-06, "global_batch_size": float(batch), "global_step": float(index),
                   "reduced_train_loss": 11.03, "train_step_timing in s": 7.572}
        if not first_of_launch:
            metrics["consumed_samples"] = float((index + 1) * batch)
        prefix = "Training" + f" epoch {0}, iteration {index}/{total - 1}"
        log_string = prefix
        for metric, val in metrics.items():
            if isinstance(val, (float)) and val.is_integer():
                val = int(val)
                log_string += f' | {metric}: {val}'
            else:
                log_string += f' | {metric}: {val:.4}'
        self.log.print(log_string)


def nemo(name):
    """Undated print lines, read 10 s apart by a live tail (the test's clock); the NeMo logger's
    lines carry their time. Launch 1: steps 1..15 (global_step 0..14), an async save scheduled
    after step 10 and finalized after step 13, then a crash. Launch 2: restores step=9 (10 steps
    done), steps 11..20. global batch 8 sequences (the length is not in the log).
    """
    g = Nemo()
    ckpt = "/results/checkpoints/model_name=0--val_loss=0.00-step=9-consumed_samples=80.0-last.ckpt"
    for index in range(0, 15):
        g.step(index, 100, 8, index == 0)
        if index == 9:
            g.info(at(105), "model_checkpoint", 632, f"Scheduled async checkpoint save for {ckpt}")
        if index == 12:
            g.info(at(135), "model_checkpoint", 657, f"Async checkpoint save for step {10} ({ckpt}) finalized successfully.")
    g.log.print(f"Restoring states from the checkpoint path at {ckpt[:-5]}/weights")
    g.log.print(f"Restored all states from the checkpoint at {ckpt[:-5]}/weights")
    for index in range(10, 20):
        g.step(index, 100, 8, False)
    g.log.write(name)

def format_gpu_scores(rank_to_score, rank_to_node, num_best, num_worst):
    """nvidia-resiliency-ext v0.4.1 (the same from v0.2.0 to v0.5.0),
    src/nvidia_resiliency_ext/ptl_resiliency/straggler_det_callback.py
    StragglerDetectionCallback._format_gpu_scores."""
    num_ranks = len(rank_to_score)
    scores_and_ranks = [(s, r) for r, s in rank_to_score.items()]
    scores_and_ranks.sort(reverse=True)
    res = ""
    if num_ranks > (num_best + num_worst):
        res += f" Worst performing {num_worst}/{num_ranks} ranks:\n"
        for s, r in reversed(scores_and_ranks[-num_worst:]):
            res += f"  Rank={r} Node={rank_to_node[r]} Score={s:.2f}\n"
        res += f" Best performing {num_best}/{num_ranks} ranks:\n"
        for s, r in scores_and_ranks[:num_best]:
            res += f"  Rank={r} Node={rank_to_node[r]} Score={s:.2f}\n"
    else:
        for s, r in reversed(scores_and_ranks):
            res += f"  Rank={r} Node={rank_to_node[r]} Score={s:.2f}\n"
    return res


def nemo_straggler(name):
    """NeMo 2 with nvidia-resiliency-ext's StragglerDetectionCallback as NeMo's recipe
    (nemo/collections/llm/recipes/callbacks/common.py straggler_det_callback) sets it: relative
    and individual scores, 5 best and 5 worst printed, through the "nemo_logger" child logger
    (straggler_det_callback.py lines 154, 163 and 246 in v0.4.1). 40 steps (global_step 0..39),
    a report after every 8th, 16 ranks on 2 nodes. Until step 24 the relative scores span 0.97
    to 0.99; from the report after step 24 on, rank 13 scores 0.91. The individual scores (each
    rank against its own best) are lower and are not a spread across ranks.
    """
    g = Nemo()
    nodes = {r: f"gpu-node-{r // 8:03d}" for r in range(16)}
    for index in range(0, 40):
        g.step(index, 100, 8, index == 0)
        if (index + 1) % 8 == 0:
            t = at(10 * (index + 1) + 1)
            slow = index + 1 >= 24
            relative = {r: 0.99 - 0.02 * (r % 8) / 7 for r in range(16)}
            if slow:
                relative[13] = 0.91
            individual = {r: 0.85 + 0.01 * (r % 5) for r in range(16)}
            g.info(t, "straggler_det_callback", 154,
                   f"\nGPU relative performance:\n{format_gpu_scores(relative, nodes, 5, 5)}")
            g.info(t, "straggler_det_callback", 163,
                   f"\nGPU individual performance:\n{format_gpu_scores(individual, nodes, 5, 5)}")
            g.info(t, "straggler_det_callback", 246, f"Straggler report processing time: {0.012:.3f} sec.")
    g.log.write(name)

# ---------------------------------------------------------------------------------------
# Megatron-DeepSpeed as BLOOM-176B ran it: bigscience-workshop/Megatron-DeepSpeed (commit
# 8387ae17; the print expressions unchanged since the run began), megatron/training.py
# training_log (lines 787-824: consumed tokens, elapsed time in seconds, samples per second,
# TFLOPs) and print_datetime, megatron/checkpointing.py (save_checkpoint, lines 122-123 and
# 179-180; load_checkpoint, 429-430), under torch.distributed.run --tee 3, which prefixes each
# line with "[default<local rank>]:" (train/tr11-176B-ml/tr11-176B-ml.slurm in
# bigscience-workshop/bigscience). The iteration line comes from the last rank (print_rank_last),
# the rest from rank 0 (print_rank_0). DeepSpeed's own lines (steps_per_print 2000) do not show
# at these steps.
# ---------------------------------------------------------------------------------------

class MegatronDeepSpeed:
    def __init__(self):
        self.log = Log()

    def print_rank_0(self, s):
        self.log.print("[default0]:" + s)

    def print_datetime(self, string, t):
        time_str = t.strftime('%Y-%m-%d %H:%M:%S')
        self.print_rank_0('[' + string + '] datetime: {} '.format(time_str))

    def iteration(self, iteration, consumed_samples, consumed_tokens, elapsed, batch_size, loss):
        train_iters, learning_rate = 115311, 5.969e-05
        log_string = ' iteration {:8d}/{:8d} |'.format(iteration, train_iters)
        log_string += ' consumed samples: {:12d} |'.format(consumed_samples)
        log_string += ' consumed tokens: {:12d} |'.format(consumed_tokens)
        log_string += ' elapsed time per iteration (s): {:.2f} |'.format(elapsed)
        log_string += ' learning rate: {:.3E} |'.format(learning_rate)
        log_string += ' global batch size: {:5d} |'.format(batch_size)
        log_string += ' {}: {:.6E} |'.format('lm loss', loss)
        log_string += ' grad norm: {:.3f} |'.format(0.174)
        log_string += ' num zeros: {:.1f} |'.format(0.0)
        log_string += ' number of skipped iterations: {:3d} |'.format(0)
        log_string += ' number of nan iterations: {:3d} |'.format(0)
        log_string += ' samples per second: {:.3f} |'.format(batch_size / elapsed)
        log_string += ' TFLOPs: {:.2f} |'.format(149.02)
        self.log.print("[default7]:" + log_string)

    def saving(self, iteration, save="/gpfsscratch/rech/six/commun/checkpoints/tr11-176B-ml/checkpoints/main"):
        self.print_rank_0('saving checkpoint at iteration {:7d} to {}'.format(iteration, save))

    def saved(self, iteration, save="/gpfsscratch/rech/six/commun/checkpoints/tr11-176B-ml/checkpoints/main"):
        self.print_rank_0('  successfully saved checkpoint at iteration {:7d} to {}'.format(iteration, save))

    def loaded(self, iteration, load="/gpfsscratch/rech/six/commun/checkpoints/tr11-176B-ml/checkpoints/main"):
        self.print_rank_0(f'  successfully loaded checkpoint from {load} '
                          f'at iteration {iteration}')


def megatron_deepspeed(name):
    """BLOOM's batch (2048 sequences of 2048 tokens), iterations 12695..12701 every 105.22 s from
    00:00 after a relaunch that loaded iteration 12694 (the batch at full size since the ramp-up
    ended: consumed tokens = consumed samples x 2048). A save of 12700: the iteration lines
    carry no time; a live tail dates them as it reads them.
    """
    g = MegatronDeepSpeed()
    g.loaded(12694)
    g.print_datetime('before the start of training step', at(0))
    samples0 = 9841584 - 2048  # at iteration 12694 (the chronicle's line shows 12695)
    for i, it in enumerate(range(12695, 12702)):
        samples = samples0 + (i + 1) * 2048
        g.iteration(it, samples, samples * 2048, 105.22, 2048, 2.463556)
        if it == 12700:
            g.saving(12700)
            g.saved(12700)
    g.log.write(name)

# ---------------------------------------------------------------------------------------
# Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge tag v0.6.0, commit 51885cf1), the training
# loop under NeMo 2's newer recipes: src/megatron/bridge/training/utils/train_utils.py
# training_log (lines 1173-1225, print_rank_last), training/checkpointing.py (save_checkpoint
# line 1150, the finalized save 1480-1483, load 3186-3192; print_rank_0), training/train.py
# line 337. Its lines are Megatron-LM's (read by --format megatron); it dumps no arguments,
# so the sequence length comes from --seq-len or the plan.
# ---------------------------------------------------------------------------------------

class Bridge:
    def __init__(self):
        self.log = Log()

    def iteration(self, t, iteration, consumed, elapsed_s, batch_size):
        train_iters, per_gpu_tf, learning_rate, loss_scale, grad_norm = 1000, 412.3, 2.9999e-04, 1.0, 0.457
        log_string = f" [{t.strftime('%Y-%m-%d %H:%M:%S')}]"
        log_string += " iteration {:8d}/{:8d} |".format(iteration, train_iters)
        log_string += " consumed samples: {:12d} |".format(consumed)
        log_string += " elapsed time per iteration (ms): {:.1f} |".format(elapsed_s * 1000.0)
        log_string += f" throughput per GPU (TFLOP/s/GPU): {per_gpu_tf:.1f} |"
        log_string += f" learning rate: {learning_rate:.6E} |"
        log_string += f" global batch size: {batch_size:5d} |"
        log_string += " {}: {:.6E} |".format("lm loss", 3.123456)
        log_string += f" loss scale: {loss_scale:.1f} |"
        log_string += f" grad norm: {grad_norm:.3f} |"
        log_string += " number of skipped iterations: {:3d} |".format(0)
        log_string += " number of nan iterations: {:3d} |".format(0)
        self.log.print(log_string)

    def saving(self, step, save_dir="/ckpt/bridge", ckpt_format="torch_dist"):
        self.log.print(f"saving checkpoint at iteration {step:7d} to {save_dir} in {ckpt_format} format")

    def saved(self, step, save="/ckpt/bridge"):
        tp_rank, tp_world_size, pp_rank, pp_world_size = 0, 1, 0, 1
        self.log.print(f"  successfully saved checkpoint from iteration {step:7d} "
                       f"to {save} [ t {tp_rank}/{tp_world_size}, p {pp_rank}/{pp_world_size} ]")

    def loaded(self, step, load_dir="/ckpt/bridge"):
        self.log.print(f"  successfully loaded checkpoint from {load_dir} "
                       f"[ t {0}/{1}, "
                       f"p {0}/{1} ] "
                       f"at iteration {step}")

    def starting(self, start_iteration):
        self.log.print(f"Starting training loop at iteration {start_iteration}")


def bridge(name):
    """Launch 1 from 00:00: iterations 10, 20 (a save of 20), 30, then a crash. Launch 2 from
    00:30: loads iteration 20, iterations 30, 40. 512 sequences a step, 10 s an iteration.
    """
    g = Bridge()
    g.starting(0)
    for it in (10, 20, 30):
        g.iteration(at(it * 10), it, it * 512, 10.0, 512)
        if it == 20:
            g.saving(20)
            g.saved(20)
    g.loaded(20)
    g.starting(20)
    for it in (30, 40):
        g.iteration(at(1800 + (it - 20) * 10), it, it * 512, 10.0, 512)
    g.log.write(name)


if __name__ == "__main__":
    megatron_current()
    megatron_straggler()
    megatron_slow_rank()
    megatron_rampup()
    megatron_old()
    titan("v0.2.2", "torchtitan-v0.2.2.log")
    titan("main", "torchtitan-main.log")
    deepspeed("v0.16.4", "deepspeed-v0.16.4.log")
    deepspeed("v0.14.5", "deepspeed-v0.14.5.log")
    nemo("nemo-v2.4.0.log")
    nemo_straggler("nemo-v2.4.0-straggler.log")
    megatron_deepspeed("megatron-deepspeed-bloom.log")
    bridge("megatron-bridge-v0.6.0.log")
