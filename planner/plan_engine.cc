#include "planner/plan_engine.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "planner/formulas.h"

namespace flightplan::planner {

bool PlanReport::HasError() const {
  return std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return f.severity == Severity::kError; });
}

const Finding* PlanReport::Find(const std::string& code) const {
  for (const Finding& f : findings) {
    if (f.code == code) return &f;
  }
  return nullptr;
}

namespace {

// Defaults of optional plan fields (documented in plan.proto).
constexpr uint32_t kDefaultGpusPerNode = 8;
constexpr double kDefaultPue = 1.2;  // BLOOM's Jean Zay reported 1.2 (docs/reference-figures.md, power)
constexpr double kDefaultBudgetQuantile = 0.9;
constexpr double kDefaultContingency = 0.05;
// Device-to-host copy per GPU for an async snapshot: PCIe Gen4 x16 carries ~25 GB/s in
// practice (32 GB/s raw per direction, PCI-SIG 4.0 spec); Gen5 doubles it. Conservative.
constexpr double kDefaultSnapshotBytesPerSecond = 25e9;
// Above this MFU a plan is optimistic: the best published large runs reach 46-55%
// (PaLM 46.2%, Chowdhery et al. 2022; MegaScale 55.2%, Jiang et al. 2024).
constexpr double kOptimisticMfu = 0.65;
// Below this share of HBM left for activations a plan is tight.
constexpr double kActivationHeadroom = 0.2;
// A transformer's shape gives its parameters as about 12·L·h² + V·h (attention 4h², an
// MLP of 8h², the embedding; Kaplan et al. 2020, section 2.1, with the embedding added): within
// ~6% for Llama 3 70B and 405B with grouped-query attention and SwiGLU. Off by more than
// this factor, the shape or `params` is a typo (hidden 81,920 for 8,192 on a 70B: 92x).
constexpr double kShapeParamsFactor = 4;
// Below this expected goodput a plan wastes a quarter of its fleet-time: Meta reports
// effective training time above 90% for Llama 3 405B (Dubey et al. 2024); 75% is far
// below what large runs achieve.
constexpr double kLowGoodput = 0.75;
// Checkpoint writes may keep the storage busy at most this share of the run: it also
// serves the data loader, restores and the cluster's other jobs, and a save that is still
// writing when the next one starts queues behind it. A judgment, not a published figure;
// the interval chosen for asynchronous saves respects it.
constexpr double kMaxStorageDutyCycle = 0.25;
// Published fleets' failure rates differ from any assumption by ~3x: OPT-175B cycled over
// 100 hosts in ~2 months on 124 nodes (~13 per 1,000 node-days; Zhang et al. 2022, "OPT",
// sec. 2.5), Llama 3 405B saw 419 unexpected interruptions in 54 days on 2,048 nodes (3.8
// per 1,000 node-days; Dubey et al. 2024, sec. 3.3.4). A Gamma rate with CV 0.5 spans 0.44x
// to 1.67x of its mean from P10 to P90, a ratio of 3.8.
constexpr double kDefaultRateSpread = 0.5;
// A failed node out for triage, a part swap and burn-in: days, not hours. A judgment, not
// a published figure; give failures.spare_repair_hours for the fleet's own.
constexpr double kDefaultRepairHours = 48;
// Spares cover the nodes in repair at once with this probability.
constexpr double kSpareQuantile = 0.99;
// An 8x H100 node training at full load draws 76% of its 10.2 kW rating on average
// (Newkirk et al. 2025, "Empirically-Calibrated H100 Node Power Models for Reducing
// Uncertainty in AI Training Energy Estimation", arXiv 2506.14551); the same share
// applies to the GPU boards and the node's other parts here.
constexpr double kDefaultAveragePowerFraction = 0.76;
// Share of the IT rating drawn while the job is down (restarts, repairs, maintenance):
// idle GPUs draw 10-15% of their rating, the nodes' CPUs, fans and network much of
// theirs. A judgment, not a published figure; give cost.idle_power_fraction.
constexpr double kDefaultIdlePowerFraction = 0.35;
// HBM the framework holds beyond tensors: the CUDA context (~0.5 GB), NCCL's buffers and
// the caching allocator's fragmentation. A judgment; give hardware.reserved_bytes.
constexpr double kDefaultReservedFraction = 0.10;
// Context parallelism below this many tokens per rank is mostly communication: Llama 3's
// long-context stage ran cp 16 on 131,072-token sequences, 8,192 per rank (Dubey et al.
// 2024, "The Llama 3 Herd of Models"). The bound itself is a judgment, 8x below that.
constexpr double kMinCpChunkTokens = 1024;

// Dense BF16 peaks (docs/reference-figures.md, "Hardware"; NVIDIA H100/A100/B200 and AMD MI300X
// datasheets). A plan quoting twice these used the sparse figure.
// Dense FP8 is twice dense BF16 on Hopper and Blackwell (NVIDIA, "NVIDIA H100 Tensor Core
// GPU Architecture", 2022: H100 SXM5 BF16 989.4, FP8 1,978.9 TFLOP/s dense); A100 has no FP8.
bool HasFp8(const std::string& gpu) { return !absl::StartsWith(gpu, "A100"); }

const std::map<std::string, double>& KnownDensePeaks() {
  static const auto* peaks = new std::map<std::string, double>{
      {"A100", 312e12}, {"A100-SXM", 312e12}, {"A100-80GB", 312e12}, {"H100", 989e12},    {"H100-SXM", 989e12},
      {"H200", 989e12}, {"H200-SXM", 989e12}, {"B200", 2250e12},     {"MI300X", 1307e12},
  };
  return *peaks;
}

// What a phase's efficiency gives replaces the plan's: a figure (any of mfu, hfu, busy_mfu,
// busy_hfu) replaces the plan's figure whole, each convention it sets its own. True when it
// gave a figure.
bool OverlayEfficiency(PlanSpec::Efficiency& into, const PlanSpec::Efficiency& from) {
  const bool figure = from.mfu > 0 || from.hfu || from.busy_mfu || from.busy_hfu;
  if (figure) {
    into.mfu = from.mfu;
    into.hfu = from.hfu;
    into.busy_mfu = from.busy_mfu;
    into.busy_hfu = from.busy_hfu;
  }
  if (!from.recompute.empty()) into.recompute = from.recompute;
  if (!from.matmul_precision.empty()) into.matmul_precision = from.matmul_precision;
  if (from.causal_attention) into.causal_attention = from.causal_attention;
  if (from.count_attention) into.count_attention = from.count_attention;
  return figure;
}

// Numbers in messages: integers as integers below 1e7, the rest in e-notation without '+'.
std::string Num(double v) {
  if (std::fabs(v) < 1e7 && v == std::floor(v)) return absl::StrFormat("%.0f", v);
  std::string s = absl::StrFormat("%.4g", v);
  if (auto p = s.find("e+"); p != std::string::npos) s.erase(p + 1, 1);
  return s;
}

double Div(double a, double b) { return b == 0 ? 0 : a / b; }

int DomainRank(const std::string& d) {
  if (d == "gpu") return 0;
  if (d == "node") return 1;
  if (d == "rack") return 2;
  if (d == "cluster") return 3;
  if (d == "remote") return 4;
  return -1;
}

class Engine {
 public:
  // `figure_bubble`: the bubble of the layout an end-to-end figure was measured in, when
  // that is not this plan's own (a phase that changes the layout and keeps the plan's).
  explicit Engine(const PlanSpec& p, const PlanSpec::Phase::Ramp* ramp = nullptr,
                  std::optional<double> figure_bubble = std::nullopt)
      : p_(p), ramp_(ramp), figure_bubble_(figure_bubble) {
    r_.name = p.name;
  }

  // A plan in phases: each phase is a plan of its own (the parent's fields with the phase's
  // replacing them, its tokens, no deadline, maintenance or contingency), and this report
  // sums them; the schedule's maintenance, contingency, failure budget and deadline are
  // the whole run's.
  PlanReport RunPhased() {
    Resolve();
    uint64_t sum = 0;
    for (size_t i = 0; i < p_.phases.size(); ++i) {
      const PlanSpec::Phase& ph = p_.phases[i];
      if (ph.tokens == 0) {
        Error("INVALID_VALUE", absl::StrCat("phases[", i, "].tokens 0 is invalid: each phase trains > 0 tokens."));
      }
      for (const std::string& field : ph.unchangeable) {
        Error("INVALID_VALUE", absl::StrCat("phases[", i, "].", field,
                                            " cannot change between phases: a phase may "
                                            "set model.seq_len, fleet.gpus, layout, efficiency and ramp."));
      }
      sum += ph.tokens;
    }
    if (p_.data.tokens > 0 && sum != p_.data.tokens) {
      Error("PHASE_TOKENS_MISMATCH",
            absl::StrCat("the phases train ", Num(static_cast<double>(sum)), " tokens, but data.tokens is ",
                         Num(static_cast<double>(p_.data.tokens)), "."));
    }
    // An end-to-end figure belongs to the layout it was measured in, the plan's own: a phase
    // that keeps the figure but changes the layout keeps the efficiency while busy and pays
    // its own bubble.
    std::optional<double> plan_bubble;
    const auto& pe = p_.efficiency;
    if (!pe.busy_mfu && !pe.busy_hfu && (pe.mfu > 0 || pe.hfu)) {
      PlanSpec top = p_;
      top.phases.clear();
      plan_bubble = Engine(top).Run().compute.bubble_fraction;
    }
    std::vector<PlanReport> parts;
    for (const PlanSpec::Phase& ph : p_.phases) {
      PlanSpec sub = p_;
      bool own_figure = false;
      sub.phases.clear();
      sub.data.tokens = ph.tokens;
      sub.data.dataset_tokens.reset();
      sub.deadline.reset();
      sub.availability = {};
      sub.contingency_fraction = 0;
      const bool batch_changed = ph.seq_len || ph.gpus || ph.layout.dp || ph.layout.micro_batch ||
                                 ph.layout.grad_accum || ph.layout.tp || ph.layout.pp || ph.layout.cp;
      if (ph.seq_len) sub.model.seq_len = *ph.seq_len;
      if (ph.gpus) sub.fleet.gpus = *ph.gpus;
      // A new fleet or model-parallel layout: dp follows from them, unless the phase gives it.
      if (ph.gpus || ph.layout.tp || ph.layout.pp || ph.layout.cp) sub.layout.dp.reset();
      if (batch_changed) sub.layout.global_batch_tokens.reset();
      const auto& l = ph.layout;
      for (auto [from, to] : {std::pair{&l.tp, &sub.layout.tp},
                              {&l.pp, &sub.layout.pp},
                              {&l.dp, &sub.layout.dp},
                              {&l.cp, &sub.layout.cp},
                              {&l.ep, &sub.layout.ep},
                              {&l.micro_batch, &sub.layout.micro_batch},
                              {&l.grad_accum, &sub.layout.grad_accum},
                              {&l.virtual_stages, &sub.layout.virtual_stages},
                              {&l.expert_tp, &sub.layout.expert_tp}}) {
        if (*from) *to = *from;
      }
      if (l.zero_stage != 0) sub.layout.zero_stage = l.zero_stage;
      if (!l.pipeline_schedule.empty()) sub.layout.pipeline_schedule = l.pipeline_schedule;
      if (l.global_batch_tokens) sub.layout.global_batch_tokens = l.global_batch_tokens;
      if (ph.efficiency) {
        own_figure = OverlayEfficiency(sub.efficiency, *ph.efficiency);
      }
      parts.push_back(Engine(sub, ph.ramp ? &*ph.ramp : nullptr, own_figure ? std::nullopt : plan_bubble).Run());
    }
    Combine(parts);
    Schedule();
    // The schedule's seconds fall to each phase in proportion to its busy time.
    double busy_all = 0;
    std::vector<double> busy(parts.size());
    for (size_t i = 0; i < parts.size(); ++i) {
      const double mu = r_.failures.expected_interruptions;
      busy[i] = parts[i].schedule.active_compute_seconds + parts[i].schedule.checkpoint_seconds +
                (mu > 0 ? r_.failures.budget_seconds * parts[i].failures.expected_interruptions / mu : 0);
      busy_all += busy[i];
    }
    double at = 0, reserved_gpu_seconds = 0;
    uint64_t tokens_before = 0;
    auto& w = r_.power;
    for (size_t i = 0; i < parts.size(); ++i) {
      const PlanReport& q = parts[i];
      const double span = Div(busy[i], busy_all) * r_.schedule.total_seconds;
      PlanReport::Phase ph;
      ph.name = p_.phases[i].name;
      ph.tokens = p_.phases[i].tokens;
      ph.tokens_before = tokens_before;
      ph.seq_len = p_.phases[i].seq_len.value_or(p_.model.seq_len);
      ph.gpus = q.fleet.gpus;
      ph.steps = q.batch.steps;
      ph.tokens_per_step = q.batch.tokens_per_step;
      ph.tokens_per_second = q.compute.tokens_per_second;
      ph.mfu = q.compute.mfu;
      ph.bubble_fraction = q.compute.bubble_fraction;
      ph.active_compute_seconds = q.schedule.active_compute_seconds;
      ph.memory_bytes = q.memory.total_bytes;
      ph.fits = q.memory.fits;
      ph.expected_interruptions = q.failures.expected_interruptions;
      ph.schedule_start_seconds = at;
      at += span;
      ph.schedule_end_seconds = at;
      tokens_before += ph.tokens;
      r_.phases.push_back(std::move(ph));
      // Power: the largest phase's peak; energy at each phase's average draw for its span.
      w.gpu_watts = std::max(w.gpu_watts, q.power.gpu_watts);
      w.node_other_watts = std::max(w.node_other_watts, q.power.node_other_watts);
      w.cluster_other_watts = std::max(w.cluster_other_watts, q.power.cluster_other_watts);
      w.other_it_watts = std::max(w.other_it_watts, q.power.other_it_watts);
      w.it_watts = std::max(w.it_watts, q.power.it_watts);
      w.facility_watts = std::max(w.facility_watts, q.power.facility_watts);
      w.energy_mwh += q.power.average_facility_watts * span / 3.6e9;
      reserved_gpu_seconds += q.cost.reserved_gpus * span;
    }
    w.average_power_fraction = average_power_fraction_;
    CostAndEnergy(Div(reserved_gpu_seconds, r_.schedule.total_seconds),
                  Div(w.energy_mwh * 3.6e9, r_.schedule.total_seconds), idle_power_fraction_ * w.it_watts * pue_);
    Data();
    Finish();
    return std::move(r_);
  }

  PlanReport Run() {
    Resolve();
    Fleet();
    Batch();
    Shape();
    Compute();
    Ramp();
    Memory();
    CheckpointAndFailures();
    Schedule();
    Power();
    Data();
    Finish();
    return std::move(r_);
  }

 private:
  // Checks on the finished figures, then the findings in order: errors first.
  void Finish() {
    for (PlanReport::Phase& ph : r_.phases) {
      for (double* v :
           {&ph.tokens_per_second, &ph.mfu, &ph.bubble_fraction, &ph.active_compute_seconds, &ph.memory_bytes,
            &ph.schedule_start_seconds, &ph.schedule_end_seconds, &ph.expected_interruptions}) {
        if (!std::isfinite(*v)) *v = 0;
      }
    }
    if (!std::isfinite(r_.schedule.total_seconds) || !std::isfinite(r_.compute.total_flops) ||
        !std::isfinite(r_.failures.budget_seconds) || r_.schedule.finish_time == absl::InfiniteFuture()) {
      Error("NON_FINITE_RESULT",
            "the inputs drive the schedule to infinity or NaN; check efficiency.mfu, "
            "hardware.peak_flops, model.params and the checkpoint bandwidths.");
    }
    Sanitize();
    // Errors first, then warnings; stable within each.
    std::stable_sort(r_.findings.begin(), r_.findings.end(), [](const Finding& a, const Finding& b) {
      return a.severity == Severity::kError && b.severity != Severity::kError;
    });
  }

  // The phases' reports summed into this one (all but the schedule, power and data).
  void Combine(const std::vector<PlanReport>& parts) {
    // Findings: each distinct one once, naming the phases that raise it (none named when
    // every phase does, or when the whole plan already said it).
    std::vector<std::pair<Finding, std::vector<size_t>>> distinct;
    for (size_t i = 0; i < parts.size(); ++i) {
      for (const Finding& f : parts[i].findings) {
        if (f.code == "LOW_GOODPUT" || f.code == "NON_FINITE_RESULT") continue;  // judged on the whole run
        auto same = std::find_if(distinct.begin(), distinct.end(),
                                 [&](const auto& d) { return d.first.code == f.code && d.first.message == f.message; });
        if (same == distinct.end()) {
          distinct.push_back({f, {i}});
        } else if (same->second.back() != i) {
          same->second.push_back(i);
        }
      }
    }
    for (auto& entry : distinct) {
      Finding& f = entry.first;
      const std::vector<size_t>& phases = entry.second;
      const bool said = std::any_of(r_.findings.begin(), r_.findings.end(),
                                    [&](const Finding& g) { return g.code == f.code && g.message == f.message; });
      if (said) continue;
      if (phases.size() < parts.size()) {
        std::vector<std::string> numbers, names;
        for (size_t i : phases) {
          numbers.push_back(absl::StrCat(i + 1));
          names.push_back(p_.phases[i].name);
        }
        f.message = absl::StrCat(phases.size() == 1 ? "phase " : "phases ", absl::StrJoin(numbers, ", "), " (",
                                 absl::StrJoin(names, ", "), "): ", f.message);
      }
      r_.findings.push_back(std::move(f));
    }
    double tokens = 0, flops = 0, dense_flops = 0, hardware = 0, gpu_seconds = 0, bubble_seconds = 0;
    double checkpoint = 0, written = 0, writing = 0, running = 0, mu = 0, loss = 0;
    const PlanReport* heaviest = &parts.front();
    const PlanReport* largest = &parts.front();
    const PlanReport* longest = &parts.front();
    for (const PlanReport& q : parts) {
      const double t = q.schedule.active_compute_seconds;
      const double phase_tokens = q.compute.tokens_per_second * t;
      tokens += phase_tokens;
      flops += q.compute.total_flops;
      dense_flops += q.compute.dense_total_flops;
      hardware += q.compute.hardware_flops_per_token * phase_tokens;
      gpu_seconds += q.fleet.gpus * t;
      bubble_seconds += q.compute.bubble_fraction * t;
      active_seconds_ += t;
      checkpoint += q.checkpoint.overhead_seconds;
      written += q.checkpoint.total_written_bytes;
      writing += static_cast<double>(q.checkpoint.count) * q.checkpoint.write_seconds;
      running += t + q.checkpoint.overhead_seconds;
      mu += q.failures.expected_interruptions;
      loss += q.failures.expected_interruptions * q.failures.loss_per_interruption_seconds;
      r_.batch.steps += q.batch.steps;
      r_.checkpoint.count += q.checkpoint.count;
      if (q.memory.total_bytes > heaviest->memory.total_bytes) heaviest = &q;
      if (q.fleet.gpus > largest->fleet.gpus) largest = &q;
      if (t > longest->schedule.active_compute_seconds) longest = &q;
    }
    const PlanReport& last = parts.back();
    r_.batch.sequences_per_step = last.batch.sequences_per_step;
    r_.batch.tokens_per_step = last.batch.tokens_per_step;
    r_.batch.last_step_tokens = last.batch.last_step_tokens;

    auto& c = r_.compute;
    c = longest->compute;  // the conventions; the figures below are the whole run's
    c.total_flops = flops;
    c.dense_total_flops = dense_flops;
    c.flops_per_token = Div(flops, tokens);
    c.attention_flops_per_token = Div(flops - dense_flops, tokens);
    c.hardware_flops_per_token = Div(hardware, tokens);
    c.tokens_per_second = Div(tokens, active_seconds_);
    c.cluster_flops_per_second = Div(flops, active_seconds_);
    c.active_gpu_hours = gpu_seconds / 3600.0;
    c.mfu = Div(flops, gpu_seconds * p_.hardware.peak_flops);
    c.hfu = Div(hardware, gpu_seconds * p_.hardware.peak_flops);
    c.bubble_fraction = Div(bubble_seconds, active_seconds_);
    c.busy_mfu = Div(c.mfu, 1 - c.bubble_fraction);
    c.busy_hfu = Div(c.hfu, 1 - c.bubble_fraction);

    r_.memory = heaviest->memory;
    r_.memory.fits = std::all_of(parts.begin(), parts.end(), [](const PlanReport& q) { return q.memory.fits; });
    r_.fleet = largest->fleet;
    r_.fleet.spare_nodes = p_.fleet.spare_nodes;
    snapshot_bytes_per_gpu_ = 0;

    auto& k = r_.checkpoint;
    const uint64_t count = k.count;
    k = longest->checkpoint;
    k.count = count;
    k.overhead_seconds = checkpoint;
    k.total_written_bytes = written;
    k.storage_duty_cycle = Div(writing, running);
    for (const PlanReport& q : parts)
      k.restore_read_bytes = std::max(k.restore_read_bytes, q.checkpoint.restore_read_bytes);

    auto& f = r_.failures;
    f = largest->failures;
    f.expected_interruptions = mu;
    f.loss_per_interruption_seconds = Div(loss, mu);
    f.expected_loss_seconds = loss;
    f.budget_interruptions = quantile_ > 0 && quantile_ < 1 ? NegativeBinomialQuantile(mu, rate_spread_, quantile_) : 0;
    f.budget_seconds = static_cast<double>(f.budget_interruptions) * f.loss_per_interruption_seconds;
  }

 private:
  void Error(std::string code, std::string message) {
    r_.findings.push_back({Severity::kError, std::move(code), std::move(message)});
  }
  void Warn(std::string code, std::string message) {
    r_.findings.push_back({Severity::kWarning, std::move(code), std::move(message)});
  }
  void Invalid(const std::string& field, double value, const std::string& rule) {
    Error("INVALID_VALUE", absl::StrCat(field, " ", Num(value), " is invalid: ", rule, "."));
  }
  void Missing(const std::string& field, const std::string& why) {
    Error("MISSING_FIELD", absl::StrCat(field, " is required: ", why, "."));
  }

  // Never a negative size or a NaN in a report: a figure that broken inputs make so is 0,
  // and an error finding (raised where the input was checked) says why.
  void Sanitize() {
    const bool broken = r_.HasError();
    auto fix = [&](double& v) {
      if (!std::isfinite(v) || (broken && v < 0)) v = 0;
    };
    for (double* v : {&r_.compute.flops_per_token,
                      &r_.compute.attention_flops_per_token,
                      &r_.compute.total_flops,
                      &r_.compute.dense_total_flops,
                      &r_.compute.cluster_flops_per_second,
                      &r_.compute.tokens_per_second,
                      &r_.compute.active_gpu_hours,
                      &r_.memory.state_bytes_per_gpu,
                      &r_.checkpoint.size_bytes,
                      &r_.checkpoint.write_seconds,
                      &r_.checkpoint.read_seconds,
                      &r_.checkpoint.blocking_seconds,
                      &r_.checkpoint.young_interval_seconds,
                      &r_.checkpoint.daly_interval_seconds,
                      &r_.checkpoint.interval_seconds,
                      &r_.checkpoint.overhead_seconds,
                      &r_.failures.expected_interruptions,
                      &r_.failures.loss_per_interruption_seconds,
                      &r_.failures.expected_loss_seconds,
                      &r_.failures.budget_seconds,
                      &r_.schedule.active_compute_seconds,
                      &r_.schedule.checkpoint_seconds,
                      &r_.schedule.failure_budget_seconds,
                      &r_.schedule.availability_seconds,
                      &r_.schedule.contingency_seconds,
                      &r_.schedule.total_seconds,
                      &r_.schedule.expected_goodput,
                      &r_.power.energy_mwh,
                      &r_.data.epochs,
                      &r_.data.storage_bytes,
                      &r_.compute.hardware_flops_per_token,
                      &r_.compute.mfu,
                      &r_.compute.hfu,
                      &r_.compute.bubble_fraction,
                      &r_.memory.weights,
                      &r_.memory.grads,
                      &r_.memory.optimizer,
                      &r_.memory.activation_bytes_per_layer,
                      &r_.memory.activations,
                      &r_.memory.recompute_working_bytes,
                      &r_.memory.logits,
                      &r_.memory.buffers,
                      &r_.memory.reserve,
                      &r_.memory.total_bytes,
                      &r_.checkpoint.restore_read_bytes,
                      &r_.failures.nodes_in_repair,
                      &r_.power.average_facility_watts,
                      &r_.cost.reserved_gpus,
                      &r_.cost.training_facility_watts,
                      &r_.cost.idle_facility_watts}) {
      fix(*v);
    }
    for (PlanReport::CostLine* l : {&r_.cost.active_compute, &r_.cost.checkpoint, &r_.cost.failure_budget,
                                    &r_.cost.availability, &r_.cost.contingency, &r_.cost.total}) {
      for (double* v : {&l->seconds, &l->gpu_hours, &l->energy_mwh, &l->dollars}) fix(*v);
    }
    if (broken && r_.memory.state_bytes_per_gpu == 0) r_.memory.fits = false;
    if (!std::isfinite(absl::ToDoubleSeconds(r_.schedule.finish_time - r_.schedule.start_time))) {
      r_.schedule.finish_time = r_.schedule.start_time;
    }
  }

  // Applies defaults and checks each input on its own.
  void Resolve() {
    const auto& m = p_.model;
    if (m.params <= 0) Invalid("model.params", m.params, "must be > 0");
    active_ = m.active_params.value_or(m.params);
    if (active_ <= 0 || active_ > m.params)
      Invalid("model.active_params", active_, "must be > 0 and at most model.params");
    if (m.expert_params) {
      if (*m.expert_params < 0 || *m.expert_params >= m.params) {
        Invalid("model.expert_params", *m.expert_params,
                absl::StrCat("must be >= 0 and below model.params ", Num(m.params),
                             " (the experts are part of the parameters)"));
      } else if (active_ < m.params - *m.expert_params) {
        // The parameters outside the experts (attention, embeddings, shared layers) are
        // used by every token.
        Error("ACTIVE_BELOW_SHARED",
              absl::StrCat("model.active_params ", Num(active_), " is below the ", Num(m.params - *m.expert_params),
                           " parameters outside the experts (model.params - model.expert_params), "
                           "which every token uses."));
      }
    }
    if (p_.data.tokens == 0) Missing("data.tokens", "the training target in tokens");
    if (p_.hardware.peak_flops <= 0)
      Invalid("hardware.peak_flops", p_.hardware.peak_flops, "must be > 0 (dense BF16 FLOP/s)");
    const auto& e = p_.efficiency;
    std::vector<std::pair<std::string, double>> figures;
    if (e.mfu != 0) figures.emplace_back("efficiency.mfu", e.mfu);
    for (auto [name, v] : {std::pair{"efficiency.hfu", &e.hfu},
                           {"efficiency.busy_mfu", &e.busy_mfu},
                           {"efficiency.busy_hfu", &e.busy_hfu}}) {
      if (*v) figures.emplace_back(name, **v);
    }
    if (figures.size() > 1) {
      std::vector<std::string> names;
      for (const auto& f : figures) names.push_back(f.first);
      Error("CONFLICTING_FIELDS",
            absl::StrCat(absl::StrJoin(names, " and "),
                         " are all set; give one: mfu or hfu end to end, or busy_mfu or busy_hfu while the "
                         "pipeline is busy (the recompute mode converts between model and hardware FLOPs)."));
    } else if (figures.empty()) {
      Invalid("efficiency.mfu", e.mfu,
              "must be in (0, 1] (or give efficiency.hfu, or busy_mfu or busy_hfu for the efficiency while the "
              "pipeline is busy)");
    } else if (!(figures[0].second > 0 && figures[0].second <= 1)) {
      Invalid(figures[0].first, figures[0].second, "must be in (0, 1]");
    }
    if (p_.hardware.peak_precision.empty() || p_.hardware.peak_precision == "bf16") {
      precision_ = "bf16";
    } else if (p_.hardware.peak_precision == "fp8") {
      precision_ = "fp8";
    } else {
      Error("INVALID_VALUE",
            absl::StrCat("hardware.peak_precision '", p_.hardware.peak_precision, "' is invalid: bf16 or fp8."));
    }
    if (e.matmul_precision.empty()) {
      matmul_fp8_ = precision_ == "fp8";
    } else if (e.matmul_precision == "fp8" || e.matmul_precision == "bf16") {
      matmul_fp8_ = e.matmul_precision == "fp8";
    } else {
      Error("INVALID_VALUE",
            absl::StrCat("efficiency.matmul_precision '", e.matmul_precision, "' is invalid: bf16 or fp8."));
    }
    if (e.recompute.empty() || e.recompute == "selective") {
      recompute_ = Recompute::kSelective;
      recompute_name_ = "selective";
    } else if (e.recompute == "full") {
      recompute_ = Recompute::kFull;
      recompute_name_ = "full";
    } else if (e.recompute == "none") {
      recompute_ = Recompute::kNone;
      recompute_name_ = "none";
    } else {
      Error("INVALID_VALUE",
            absl::StrCat("efficiency.recompute '", e.recompute, "' is invalid: must be none, selective or full."));
    }
    if (!e.count_attention.value_or(true)) {
      attention_ = AttentionConvention::kNone;
      attention_name_ = "none";
    } else if (!e.causal_attention.value_or(true)) {
      attention_ = AttentionConvention::kFull;
      attention_name_ = "full";
    } else {
      attention_ = AttentionConvention::kCausal;
      attention_name_ = "causal";
    }
    const auto& cost = p_.cost;
    if (!(cost.gpu_hour_dollars >= 0) || !std::isfinite(cost.gpu_hour_dollars))
      Invalid("cost.gpu_hour_dollars", cost.gpu_hour_dollars, "must be >= 0");
    if (!(cost.energy_dollars_per_mwh >= 0) || !std::isfinite(cost.energy_dollars_per_mwh))
      Invalid("cost.energy_dollars_per_mwh", cost.energy_dollars_per_mwh, "must be >= 0");
    idle_power_fraction_ = cost.idle_power_fraction.value_or(kDefaultIdlePowerFraction);
    if (!(idle_power_fraction_ >= 0 && idle_power_fraction_ <= 1))
      Invalid("cost.idle_power_fraction", idle_power_fraction_, "must be in [0, 1]");
    average_power_fraction_ = p_.hardware.average_power_fraction.value_or(kDefaultAveragePowerFraction);
    if (!(average_power_fraction_ > 0 && average_power_fraction_ <= 1))
      Invalid("hardware.average_power_fraction", average_power_fraction_, "must be in (0, 1]");
    reserved_bytes_ =
        p_.hardware.reserved_bytes.value_or(kDefaultReservedFraction * std::max(0.0, p_.hardware.hbm_bytes));
    if (!(reserved_bytes_ >= 0)) Invalid("hardware.reserved_bytes", reserved_bytes_, "must be >= 0");
    if (p_.fleet.gpus == 0) Missing("fleet.gpus", "the GPUs the job runs on");
    gpus_per_node_ = p_.hardware.gpus_per_node.value_or(kDefaultGpusPerNode);
    if (gpus_per_node_ == 0) Invalid("hardware.gpus_per_node", 0, "must be > 0");
    pue_ = p_.fleet.pue.value_or(kDefaultPue);
    if (pue_ < 1) Invalid("fleet.pue", pue_, "must be >= 1");
    if (!p_.start_time) Missing("start_time", "the schedule's finish counts from it");

    const auto& l = p_.layout;
    tp_ = l.tp.value_or(1);
    pp_ = l.pp.value_or(1);
    cp_ = l.cp.value_or(1);
    ep_ = l.ep.value_or(1);
    mb_ = l.micro_batch.value_or(1);
    ga_ = l.grad_accum.value_or(1);
    vstages_ = l.virtual_stages.value_or(1);
    if (l.pipeline_schedule == "1f1b" && vstages_ > 1) {
      Error("CONFLICTING_FIELDS", absl::StrCat("layout.pipeline_schedule 1f1b with layout.virtual_stages ", vstages_,
                                               ": model chunks per stage are the interleaved schedule."));
    } else if (l.pipeline_schedule == "interleaved" && vstages_ < 2) {
      Error("MISSING_FIELD",
            "layout.virtual_stages is required: layout.pipeline_schedule interleaved needs 2 or "
            "more model chunks per stage.");
    } else if (!l.pipeline_schedule.empty() && l.pipeline_schedule != "1f1b" && l.pipeline_schedule != "interleaved") {
      Error("INVALID_VALUE", absl::StrCat("layout.pipeline_schedule '", l.pipeline_schedule,
                                          "' is invalid: must be 1f1b or interleaved."));
    }
    etp_ = l.expert_tp.value_or(tp_);
    for (auto [name, v] : {std::pair{"layout.tp", tp_},
                           {"layout.pp", pp_},
                           {"layout.cp", cp_},
                           {"layout.ep", ep_},
                           {"layout.micro_batch", mb_},
                           {"layout.grad_accum", ga_},
                           {"layout.virtual_stages", vstages_},
                           {"layout.expert_tp", etp_}}) {
      if (v == 0) Invalid(name, 0, "must be >= 1");
    }
    const uint64_t model_parallel = uint64_t{tp_} * pp_ * cp_;
    if (l.dp) {
      dp_ = *l.dp;
      if (dp_ == 0) Invalid("layout.dp", 0, "must be >= 1");
    } else if (model_parallel > 0 && p_.fleet.gpus % model_parallel == 0) {
      dp_ = static_cast<uint32_t>(p_.fleet.gpus / model_parallel);
    }
    if (l.zero_stage > 3) Invalid("layout.zero_stage", l.zero_stage, "must be 0, 1, 2 or 3");

    bytes_.weight = p_.state.weight_bytes.value_or(2);
    bytes_.grad = p_.state.grad_bytes.value_or(4);
    bytes_.optimizer = p_.state.optimizer_bytes.value_or(12);

    dtype_ = p_.data.token_dtype.empty() ? "uint32" : p_.data.token_dtype;
    if (dtype_ == "uint16") {
      dtype_bytes_ = 2;
    } else if (dtype_ == "uint32") {
      dtype_bytes_ = 4;
    } else {
      Error("INVALID_VALUE", absl::StrCat("data.token_dtype '", dtype_, "' is invalid: must be uint16 or uint32."));
      dtype_bytes_ = 4;
    }
    bytes_per_token_ = p_.data.bytes_per_token.value_or(dtype_bytes_);
    dataset_tokens_ = static_cast<double>(p_.data.dataset_tokens.value_or(p_.data.tokens));

    const auto& c = p_.checkpoint;
    if (c.write_bytes_per_second <= 0)
      Invalid("checkpoint.write_bytes_per_second", c.write_bytes_per_second, "must be > 0");
    read_bps_ = c.read_bytes_per_second.value_or(c.write_bytes_per_second);
    if (read_bps_ <= 0) Invalid("checkpoint.read_bytes_per_second", read_bps_, "must be > 0");
    snapshot_bps_ = c.snapshot_bytes_per_second.value_or(kDefaultSnapshotBytesPerSecond);
    if (snapshot_bps_ <= 0) Invalid("checkpoint.snapshot_bytes_per_second", snapshot_bps_, "must be > 0");
    if (c.interval_seconds < 0) Invalid("checkpoint.interval_seconds", c.interval_seconds, "must be >= 0 (0 = choose)");
    storage_domain_ = c.storage_domain.empty() ? "remote" : c.storage_domain;
    if (DomainRank(storage_domain_) < 1) {
      Error("INVALID_VALUE", absl::StrCat("checkpoint.storage_domain '", storage_domain_,
                                          "' is invalid: must be node, rack, cluster or remote."));
    }
    replicas_ = c.replicas.value_or(1);
    if (replicas_ == 0) Invalid("checkpoint.replicas", 0, "must be >= 1");

    const auto& f = p_.failures;
    if (f.node_mtbf_hours && f.failures_per_1000_node_days) {
      Error("CONFLICTING_FIELDS",
            "failures.node_mtbf_hours and failures.failures_per_1000_node_days are both set; "
            "give one.");
    }
    if (f.node_mtbf_hours) {
      if (*f.node_mtbf_hours <= 0) Invalid("failures.node_mtbf_hours", *f.node_mtbf_hours, "must be > 0");
      node_mtbf_ = *f.node_mtbf_hours * 3600.0;
    } else if (f.failures_per_1000_node_days) {
      const double rate = *f.failures_per_1000_node_days;
      if (rate <= 0) Invalid("failures.failures_per_1000_node_days", rate, "must be > 0");
      node_mtbf_ = rate > 0 ? NodeMtbfFromRateSeconds(rate) : 0;
    } else {
      Missing("failures.node_mtbf_hours (or failures.failures_per_1000_node_days)",
              "the failure budget and checkpoint interval follow from it");
    }
    detect_ = f.detect_seconds.value_or(kDefaultDetectSeconds);
    restart_ = f.restart_seconds.value_or(kDefaultRestartSeconds);
    if (detect_ < 0) Invalid("failures.detect_seconds", detect_, "must be >= 0");
    if (restart_ < 0) Invalid("failures.restart_seconds", restart_, "must be >= 0");
    failure_domain_ = f.failure_domain.empty() ? "node" : f.failure_domain;
    if (DomainRank(failure_domain_) < 0 || DomainRank(failure_domain_) > 2) {
      Error("INVALID_VALUE",
            absl::StrCat("failures.failure_domain '", failure_domain_, "' is invalid: must be gpu, node or rack."));
    }
    rate_spread_ = f.rate_spread.value_or(kDefaultRateSpread);
    if (!(rate_spread_ >= 0 && rate_spread_ <= 10)) Invalid("failures.rate_spread", rate_spread_, "must be in [0, 10]");
    job_per_day_ = f.job_interruptions_per_day.value_or(0);
    if (!(job_per_day_ >= 0)) Invalid("failures.job_interruptions_per_day", job_per_day_, "must be >= 0");
    repair_hours_ = f.spare_repair_hours.value_or(kDefaultRepairHours);
    if (!(repair_hours_ >= 0)) Invalid("failures.spare_repair_hours", repair_hours_, "must be >= 0");
    if (f.slowdown_fix_hours && !(*f.slowdown_fix_hours > 0 && std::isfinite(*f.slowdown_fix_hours))) {
      Invalid("failures.slowdown_fix_hours", *f.slowdown_fix_hours, "must be > 0 (or left out)");
    }
    quantile_ = f.budget_quantile.value_or(kDefaultBudgetQuantile);
    if (quantile_ <= 0 || quantile_ >= 1) Invalid("failures.budget_quantile", quantile_, "must be in (0, 1)");

    const auto& a = p_.availability;
    if (a.maintenance_fraction && a.maintenance_hours) {
      Error("CONFLICTING_FIELDS",
            "availability.maintenance_fraction and availability.maintenance_hours are both "
            "set; give one.");
    }
    maintenance_fraction_ = a.maintenance_fraction.value_or(0);
    maintenance_hours_ = a.maintenance_hours.value_or(0);
    if (maintenance_fraction_ < 0 || maintenance_fraction_ >= 1)
      Invalid("availability.maintenance_fraction", maintenance_fraction_, "must be in [0, 1)");
    if (maintenance_hours_ < 0) Invalid("availability.maintenance_hours", maintenance_hours_, "must be >= 0");
    contingency_ = p_.contingency_fraction.value_or(kDefaultContingency);
    if (contingency_ < 0 || contingency_ >= 1) Invalid("contingency_fraction", contingency_, "must be in [0, 1)");
  }

  void Fleet() {
    const uint32_t gpus = p_.fleet.gpus;
    r_.fleet.gpus = gpus;
    r_.fleet.spare_nodes = p_.fleet.spare_nodes;
    if (gpus_per_node_ == 0) return;
    r_.fleet.nodes = static_cast<uint32_t>((uint64_t{gpus} + gpus_per_node_ - 1) / gpus_per_node_);
    r_.fleet.dp = dp_;
    if (gpus % gpus_per_node_ != 0) {
      Error("PARTIAL_NODE", absl::StrCat("fleet.gpus ", gpus, " is not a whole number of ", gpus_per_node_,
                                         "-GPU nodes (", Num(Div(gpus, gpus_per_node_)), " nodes)."));
    }
    const uint64_t product = uint64_t{tp_} * pp_ * dp_ * cp_;
    if (product != gpus) {
      Error("LAYOUT_GPU_MISMATCH", absl::StrCat("layout tp ", tp_, " x pp ", pp_, " x dp ", dp_, " x cp ", cp_, " = ",
                                                product, " GPUs, but fleet.gpus is ", gpus, "."));
    }
  }

  void Batch() {
    auto& b = r_.batch;
    b.sequences_per_step = uint64_t{mb_} * ga_ * dp_;
    const uint32_t seq_len = p_.model.seq_len;
    const auto& stated = p_.layout.global_batch_tokens;
    if (seq_len > 0) {
      b.tokens_per_step = b.sequences_per_step * seq_len;
      if (stated && *stated != b.tokens_per_step) {
        Error("BATCH_MISMATCH",
              absl::StrCat("micro_batch ", mb_, " x grad_accum ", ga_, " x dp ", dp_, " x seq_len ", seq_len, " = ",
                           b.tokens_per_step, " tokens per step, but layout.global_batch_tokens is ", *stated, "."));
      }
    } else if (stated) {
      b.tokens_per_step = *stated;
    } else {
      Missing("model.seq_len (or layout.global_batch_tokens)", "the batch arithmetic needs the tokens per sequence");
    }
    if (cp_ > 1 && seq_len > 0 && seq_len % (2 * cp_) != 0) {
      Error("SEQ_LEN_NOT_DIVISIBLE_BY_CP", absl::StrCat("model.seq_len ", seq_len, " does not split into 2 x cp = ",
                                                        2 * cp_, " equal chunks for context parallelism."));
    }
    const StepCount steps = CountSteps(p_.data.tokens, b.tokens_per_step);
    b.steps = steps.steps;
    b.last_step_tokens = steps.last_step_tokens;
  }

  void Shape() {
    const auto& m = p_.model;
    embedding_params_ = static_cast<double>(m.vocab_size) * m.hidden;
    const uint32_t kv_heads = m.kv_heads ? m.kv_heads : m.heads;
    if (tp_ > 0 && m.heads > 0 && m.heads % tp_ != 0) {
      Error("HEADS_NOT_DIVISIBLE_BY_TP",
            absl::StrCat("model.heads ", m.heads, " is not divisible by layout.tp ", tp_, "."));
    }
    if (tp_ > 0 && kv_heads > 0 && kv_heads % tp_ != 0) {
      if (tp_ % kv_heads == 0) {
        // Fewer KV heads than tp ranks (multi-query attention on tp 4, as StarCoder
        // trained): each KV head is replicated on tp / kv_heads ranks, as Megatron-LM does.
        Warn("KV_HEADS_REPLICATED",
             absl::StrCat("model.kv_heads ", kv_heads, " on layout.tp ", tp_, ": each KV head is replicated on ",
                          tp_ / kv_heads, " tensor-parallel ranks (their weights and KV activations ",
                          "are held that many times)."));
      } else {
        Error("KV_HEADS_NOT_DIVISIBLE_BY_TP",
              absl::StrCat("model.kv_heads ", kv_heads, " is neither divisible by layout.tp ", tp_,
                           " nor a divisor of it: the heads cannot be split or replicated evenly."));
      }
    }
    const uint32_t scaleup = p_.hardware.scaleup_gpus.value_or(gpus_per_node_);
    if (tp_ > scaleup && scaleup > 0) {
      Warn("TP_SPANS_NODES",
           absl::StrCat("layout.tp ", tp_, " spans ", Num(std::ceil(Div(tp_, scaleup))), " scale-up domains of ",
                        scaleup, " GPUs", p_.hardware.scaleup_gpus ? " (hardware.scaleup_gpus)" : " (one node each)",
                        ": tensor parallelism's all-reduces per layer then cross the inter-node network instead of "
                        "NVLink, which efficiency.mfu must allow for."));
    }
    // The interleaved schedule as Megatron-LM enforces it (megatron/training/arguments.py
    // validate_args and megatron/core/pipeline_parallel/schedules.py, d98e8a64, 2026-08).
    if (vstages_ > 1 && pp_ > 0 && m.layers > 0 && (m.layers % pp_ != 0 || (m.layers / pp_) % vstages_ != 0)) {
      Error("INTERLEAVED_LAYERS_UNEVEN",
            absl::StrCat("model.layers ", m.layers, " over layout.pp ", pp_, " and layout.virtual_stages ", vstages_,
                         ": Megatron-LM asserts that the layers divide evenly over the stages and each stage's over "
                         "its virtual stages ('number of layers per pipeline stage must be divisible number of "
                         "layers per virtual pipeline stage')."));
    }
    if (pp_ > 0 && m.layers > 0 && m.layers % pp_ != 0) {
      Warn("LAYERS_NOT_DIVISIBLE_BY_PP",
           absl::StrCat("model.layers ", m.layers, " do not split evenly over layout.pp ", pp_, " stages (",
                        Num(std::ceil(Div(m.layers, pp_))), " on the largest); the slowest stage sets the pace."));
    }
    if (m.hidden > 0 && m.heads > 0 && m.hidden % m.heads != 0) {
      Error("HIDDEN_NOT_DIVISIBLE_BY_HEADS",
            absl::StrCat("model.hidden ", m.hidden, " is not divisible by model.heads ", m.heads, "."));
    }
    if (m.layers > 0 && m.hidden > 0 && p_.model.params > 0) {
      const double h = m.hidden;
      const double implied = 12.0 * m.layers * h * h + static_cast<double>(m.vocab_size) * h;
      // A mixture of experts holds more than its shape's dense layers: compare the shape
      // with the active parameters from below and all of them from above.
      const double low = std::min(active_, p_.model.params) / kShapeParamsFactor;
      const double high = p_.model.params * kShapeParamsFactor;
      if (implied < low || implied > high) {
        Error("SHAPE_PARAMS_MISMATCH",
              absl::StrCat("model.layers ", m.layers, " x hidden ", m.hidden, " (vocab ", m.vocab_size,
                           ") imply about 12·L·h² + V·h = ", Num(implied), " parameters, but model.params is ",
                           Num(p_.model.params), " (", Num(std::round(implied / p_.model.params * 10) / 10),
                           "x): one of them is wrong."));
      }
    }
    if (cp_ > 1 && m.seq_len > 0 && static_cast<double>(m.seq_len) / cp_ < kMinCpChunkTokens) {
      Warn("CP_CHUNK_TOO_SMALL", absl::StrCat("layout.cp ", cp_, " splits model.seq_len ", m.seq_len, " into ",
                                              Num(static_cast<double>(m.seq_len) / cp_), " tokens per rank: below ",
                                              Num(kMinCpChunkTokens), " context parallelism is mostly communication."));
    }
    if (cp_ > 1 && m.seq_len > 0 && cp_ > m.seq_len) {
      Invalid("layout.cp", cp_, absl::StrCat("must not exceed model.seq_len ", m.seq_len));
    }
    const uint64_t ids = uint64_t{1} << (8 * dtype_bytes_);
    if (m.vocab_size > 0 && m.vocab_size > ids) {
      Error("TOKEN_DTYPE_OVERFLOW",
            absl::StrCat("vocab_size ", m.vocab_size, " does not fit token_dtype ", dtype_, " (max ", ids, " ids)."));
    }
    if (bytes_per_token_ < dtype_bytes_) {
      Error("BYTES_PER_TOKEN_TOO_SMALL", absl::StrCat("data.bytes_per_token ", Num(bytes_per_token_),
                                                      " is smaller than ", dtype_, "'s ", dtype_bytes_, " bytes."));
    }
  }

  void Compute() {
    auto& c = r_.compute;
    const auto& m = p_.model;
    // Attention width: heads x head_dim when both are given (PaLM's H x Q), else hidden.
    attention_width_ = (m.heads && m.head_dim) ? uint64_t{m.heads} * m.head_dim : m.hidden;
    const bool shape = m.layers && m.seq_len && attention_width_ > 0;
    c.attention_convention = shape ? attention_name_ : "none (no shape given)";
    c.recompute = recompute_name_;
    c.attention_flops_per_token = shape ? AttentionFlopsPerToken(m.layers, attention_width_, m.seq_len, attention_) : 0;
    // Untied embeddings: the input one is a lookup, which Megatron-LM's count leaves out.
    const bool untied = m.tied_embeddings.has_value() && !*m.tied_embeddings;
    const double dense = DenseFlopsPerToken(active_ - (untied ? embedding_params_ : 0));
    c.flops_per_token = dense + c.attention_flops_per_token;
    // What the GPUs execute besides: the forward pass again where activations were dropped.
    // Full recomputation redoes every layer's forward (2 FLOPs per parameter, all but the
    // output layer, and a third of attention's training FLOPs); selective redoes
    // attention's forward only. Narayanan et al. 2021, appendix: 96·B·s·l·h² with full
    // recomputation against 72 without, the logit layer (V/(16lh)) not recomputed.
    double recomputed = 0;
    if (recompute_ == Recompute::kFull) {
      recomputed = 2 * std::max(0.0, active_ - embedding_params_) + c.attention_flops_per_token / 3;
    } else if (recompute_ == Recompute::kSelective) {
      recomputed = c.attention_flops_per_token / 3;
    }
    c.hardware_flops_per_token = c.flops_per_token + recomputed;
    const double hardware_over_model = Div(c.hardware_flops_per_token, c.flops_per_token);
    // The plan's figure as MFU: end to end (mfu, hfu: the bubble is in it), or while the
    // pipeline is busy (busy_mfu, busy_hfu: the bubble is charged on top).
    const auto& e = p_.efficiency;
    const bool busy = e.busy_mfu || e.busy_hfu;
    const double stated_mfu = e.hfu        ? Div(*e.hfu, hardware_over_model)
                              : e.busy_hfu ? Div(*e.busy_hfu, hardware_over_model)
                              : e.busy_mfu ? *e.busy_mfu
                                           : e.mfu;
    if (vstages_ > 1 && pp_ > 1 && ga_ < pp_) {
      // schedules.py: "The number of contiguous micro-batches in a virtual pipeline stage
      // should range in [PP, M]" (the group is pp micro-batches by default): a ValueError.
      Error("INTERLEAVED_TOO_FEW_MICROBATCHES",
            absl::StrCat(ga_, " micro-batches per step on layout.pp ", pp_,
                         " stages: Megatron-LM's interleaved schedule needs at least as many micro-batches as "
                         "stages, and refuses to run (more grad_accum, or the 1f1b schedule)."));
    }
    c.bubble_fraction = PipelineBubbleFraction(pp_, ga_, vstages_);
    const double figure_bubble = figure_bubble_.value_or(c.bubble_fraction);
    c.bubble_in_efficiency = !busy;
    c.busy_mfu = busy ? stated_mfu : Div(stated_mfu, 1 - figure_bubble);
    c.busy_hfu = c.busy_mfu * hardware_over_model;
    c.mfu = c.busy_mfu * (1 - c.bubble_fraction);
    c.hfu = c.mfu * hardware_over_model;

    c.dense_total_flops = dense * static_cast<double>(p_.data.tokens);
    const double tokens = static_cast<double>(p_.data.tokens);
    c.total_flops = c.flops_per_token * tokens;
    const double gpus = p_.fleet.gpus;
    c.cluster_flops_per_second = gpus * p_.hardware.peak_flops * c.mfu;
    c.tokens_per_second = Div(c.cluster_flops_per_second, c.flops_per_token);
    active_seconds_ = Div(tokens, c.tokens_per_second);
    c.active_gpu_hours = gpus * active_seconds_ / 3600.0;

    const std::string figure = e.hfu        ? absl::StrCat("efficiency.hfu ", Num(*e.hfu))
                               : e.busy_hfu ? absl::StrCat("efficiency.busy_hfu ", Num(*e.busy_hfu))
                               : e.busy_mfu ? absl::StrCat("efficiency.busy_mfu ", Num(*e.busy_mfu))
                                            : absl::StrCat("efficiency.mfu ", Num(e.mfu));
    if (c.mfu > kOptimisticMfu && c.mfu <= 1) {
      Warn("MFU_OPTIMISTIC",
           absl::StrCat(figure, (e.hfu || busy) ? absl::StrCat(" is MFU ", Num(c.mfu), " end to end") : "",
                        ", above what published large runs reach (46-55%)."));
    } else if (!busy && figure_bubble > 0 && stated_mfu > 0 && stated_mfu <= 1) {
      // An end-to-end figure and the bubble imply what the GPUs do between the bubbles:
      // above the peak (counting the recomputed forward) it cannot be; above what
      // published runs reach end to end (kOptimisticMfu) it is unlikely.
      const std::string implied = absl::StrCat(
          figure, " end to end, with the pipeline idle ", Num(std::round(figure_bubble * 1000) / 10),
          figure_bubble_
              ? std::string("% of each step in the plan's layout")
              : absl::StrCat("% of each step (pp ", pp_, ", ", ga_, " micro-batches per step",
                             vstages_ > 1 ? absl::StrCat(", ", vstages_, " virtual stages") : std::string(), ")"),
          ", implies ", Num(std::round(c.busy_mfu * 1000) / 10), "% MFU (", Num(std::round(c.busy_hfu * 1000) / 10),
          "% HFU) while the pipeline is busy");
      if (c.busy_hfu > 1) {
        Error("BUSY_EFFICIENCY_IMPOSSIBLE",
              absl::StrCat(implied,
                           ": more than the GPUs' peak. More micro-batches per step or an interleaved "
                           "schedule shrink the bubble; for a figure measured while busy, give "
                           "efficiency.busy_mfu."));
      } else if (c.busy_mfu > kOptimisticMfu) {
        Warn("BUSY_EFFICIENCY_OPTIMISTIC",
             absl::StrCat(implied,
                          ", above what published large runs reach (46-55%) end to end by more than "
                          "the margin an MFU figure gets (",
                          Num(kOptimisticMfu * 100), "%)."));
      }
    }
    if (shape && m.seq_len > 0 && c.attention_flops_per_token > dense) {
      Warn("ATTENTION_EXCEEDS_6N",
           absl::StrCat("attention counts ", Num(c.attention_flops_per_token), " FLOPs per token (", attention_name_,
                        " convention, seq_len ", m.seq_len, "), more than 6N = ", Num(dense),
                        ": check that efficiency.mfu was measured with the same convention."));
    }
    if (busy && c.bubble_fraction > 0.2) {
      Warn("PIPELINE_BUBBLE_LARGE",
           absl::StrCat("the pipeline stands idle ", Num(std::round(c.bubble_fraction * 1000) / 10),
                        "% of each step (pp ", pp_, ", ", ga_, " micro-batches per step",
                        vstages_ > 1 ? absl::StrCat(", ", vstages_, " virtual stages") : std::string(),
                        "): more micro-batches per step or an interleaved schedule "
                        "(layout.virtual_stages) shrink it."));
    }
    const auto known = KnownDensePeaks().find(p_.hardware.gpu);
    if (known != KnownDensePeaks().end()) {
      const bool fp8 = precision_ == "fp8";
      const double dense = fp8 ? 2 * known->second : known->second;
      if (fp8 && !HasFp8(p_.hardware.gpu)) {
        Error("INVALID_VALUE", absl::StrCat("hardware.peak_precision fp8 is invalid for ", p_.hardware.gpu,
                                            ", which has no FP8 tensor cores."));
      } else if (p_.hardware.peak_flops > 1.5 * dense) {
        Warn("PEAK_FLOPS_SPARSE",
             absl::StrCat("hardware.peak_flops ", Num(p_.hardware.peak_flops), " for ", p_.hardware.gpu,
                          " looks like the sparse figure; dense ", fp8 ? "FP8" : "BF16", " is ", Num(dense),
                          fp8 ? "." : " (for FP8's dense peak, set hardware.peak_precision: fp8)."));
      }
    }
  }

  // Memory per GPU on the heaviest pipeline stage. The state is split by part under the
  // ZeRO stage; activations follow Korthikanti et al. 2022 (ActivationBytesPerLayer) for the
  // micro-batches 1F1B keeps in flight; the first stage also holds the input embedding, the
  // last the output layer and the logits (untied embeddings: each end holds one V x h).
  // A batch ramp-up (Megatron-LM's --rampup-batch-size): the batch grows from `from` to the
  // phase's in steps of `step` sequences, each size training an equal share of the tokens
  // with the grad_accum it needs, so the bubble is larger while the batch is small.
  void Ramp() {
    if (ramp_ == nullptr) return;
    const uint64_t target = r_.batch.sequences_per_step;
    const uint64_t from = ramp_->from_sequences, step = ramp_->step_sequences;
    const uint64_t replica = uint64_t{dp_} * mb_;
    if (from == 0 || step == 0 || from >= target || (target - from) % step != 0 || replica == 0 ||
        from % replica != 0 || step % replica != 0) {
      Error("RAMP_INVALID",
            absl::StrCat("ramp from ", from, " sequences in steps of ", step, " to the batch of ", target,
                         " does not work: from must be above 0 and below the batch, the steps must reach it "
                         "exactly, and each size must split into whole micro-batches of ",
                         mb_, " on ", dp_, " replicas (multiples of ", replica, ")."));
      return;
    }
    const uint64_t sizes = (target - from) / step;
    if (sizes > 100000) {
      Error("RAMP_INVALID", absl::StrCat("ramp from ", from, " sequences in steps of ", step, " to the batch of ",
                                         target, " takes ", sizes, " batch sizes: more than 100,000."));
      return;
    }
    const double seq = p_.model.seq_len > 0
                           ? p_.model.seq_len
                           : Div(static_cast<double>(r_.batch.tokens_per_step), static_cast<double>(target));
    const double tokens = static_cast<double>(p_.data.tokens);
    const double share = tokens / static_cast<double>(sizes);
    const auto& c = r_.compute;
    // The plan's figure, as MFU while the pipeline is busy (an end-to-end figure is the
    // full batch's, so the smaller batches pay their larger bubble either way).
    const double busy_mfu = c.busy_mfu;
    const double peak = static_cast<double>(p_.fleet.gpus) * p_.hardware.peak_flops;
    double seconds = 0, bubble_seconds = 0, steps = 0;
    for (uint64_t k = 0; k < sizes; ++k) {
      const uint64_t batch = from + k * step;
      const double bubble = PipelineBubbleFraction(pp_, batch / replica, vstages_);
      const double mfu = busy_mfu * (1 - bubble);
      const double t = Div(share * c.flops_per_token, peak * mfu);
      seconds += t;
      bubble_seconds += t * bubble;
      steps += share / (static_cast<double>(batch) * seq);  // the batch changes mid-step count
    }
    auto& cw = r_.compute;
    active_seconds_ = seconds;
    cw.tokens_per_second = Div(tokens, seconds);
    cw.cluster_flops_per_second = cw.tokens_per_second * cw.flops_per_token;
    const double ratio = Div(cw.hfu, cw.mfu);
    cw.mfu = Div(cw.cluster_flops_per_second, peak);
    cw.hfu = cw.mfu * ratio;
    cw.bubble_fraction = Div(bubble_seconds, seconds);
    cw.busy_mfu = Div(cw.mfu, 1 - cw.bubble_fraction);
    cw.busy_hfu = cw.busy_mfu * ratio;
    cw.active_gpu_hours = p_.fleet.gpus * seconds / 3600.0;
    r_.batch.steps = SaturatingCount(std::ceil(steps - 1e-9));
  }

  void Memory() {
    auto& mem = r_.memory;
    mem.hbm_bytes = p_.hardware.hbm_bytes;
    if (tp_ == 0 || pp_ == 0 || dp_ == 0 || cp_ == 0 || etp_ == 0 || ep_ == 0) return;
    const auto& m = p_.model;
    const double params = std::max(0.0, p_.model.params);
    double expert = 0;
    if (p_.model.expert_params || ep_ > 1)
      expert = std::clamp(p_.model.expert_params.value_or(params - active_), 0.0, params);
    const double dense = params - expert;
    const double embed = std::min(embedding_params_, dense / 2);
    const double body = dense - 2 * embed;
    // The heaviest stage's share of the layers (the largest when they do not split evenly).
    const double layer_share = m.layers > 0 ? std::ceil(Div(m.layers, pp_)) / m.layers : 1.0 / pp_;
    mem.layers_on_stage = m.layers > 0 ? static_cast<uint32_t>(std::ceil(Div(m.layers, pp_))) : 0;
    const double ends = pp_ == 1 ? 2 * embed : embed;  // one stage holds both ends when pp is 1
    const double dense_per_gpu = (body * layer_share + ends) / tp_;
    const double expert_per_gpu = expert * layer_share / (static_cast<double>(etp_) * ep_);
    // ZeRO shards the dense state over dp x cp (Megatron-LM's distributed optimizer), and
    // an expert's over the ranks of the stage holding the same expert shard:
    // tp·dp·cp / (expert_tp·ep).
    const double shards = static_cast<double>(dp_) * cp_;
    const double expert_shards = Div(static_cast<double>(tp_) * dp_ * cp_, static_cast<double>(etp_) * ep_);
    expert_params_ = expert;
    expert_copies_ = expert_shards;
    if ((expert > 0 || ep_ > 1) &&
        std::fmod(static_cast<double>(tp_) * dp_ * cp_, static_cast<double>(etp_) * ep_) != 0) {
      Error("EP_NOT_DIVIDING_DP", absl::StrCat("layout.ep ", ep_, " x expert_tp ", etp_, " = ", uint64_t{ep_} * etp_,
                                               " does not divide tp x dp x cp = ", uint64_t{tp_} * dp_ * cp_,
                                               ": the experts cannot be spread evenly over a stage's ranks."));
    }
    const int zero = static_cast<int>(p_.layout.zero_stage);
    auto part = [&](StateBytesPerParam bytes) {
      return ZeroStateBytes(dense_per_gpu, shards, zero, bytes) +
             (expert > 0 ? ZeroStateBytes(expert_per_gpu, std::max(1.0, expert_shards), zero, bytes) : 0.0);
    };
    mem.weights = part({bytes_.weight, 0, 0});
    mem.grads = part({0, bytes_.grad, 0});
    mem.optimizer = part({0, 0, bytes_.optimizer});
    mem.state_bytes_per_gpu = mem.weights + mem.grads + mem.optimizer;
    // What one GPU copies to host memory for an async save: its weights and optimizer state.
    snapshot_bytes_per_gpu_ = mem.weights + mem.optimizer;

    // ZeRO-3 gathers each layer's full weights before using it and prefetches the next:
    // two layers unsharded at once (Zhao et al. 2023, "PyTorch FSDP", sec. 3.3.2).
    if (zero == 3 && m.layers > 0) {
      mem.buffers = 2 * bytes_.weight * (body / m.layers / tp_ + expert / m.layers / (static_cast<double>(etp_) * ep_));
    }
    mem.reserve = reserved_bytes_;

    const bool shape = m.layers > 0 && m.hidden > 0 && m.seq_len > 0;
    if (shape) {
      // Without the head count, heads of 128 dims (GPT-3, Llama): only mode none uses it.
      const double heads = m.heads ? m.heads : std::max(1.0, std::round(m.hidden / 128.0));
      const ActivationKinds kinds{m.dropout.value_or(true), matmul_fp8_};
      mem.activation_bytes_per_layer =
          ActivationBytesPerLayer(m.seq_len, mb_, m.hidden, heads, tp_, cp_, recompute_, kinds);
      // The layer being recomputed holds its activations again, as in selective mode.
      if (recompute_ == Recompute::kFull) {
        mem.recompute_working_bytes =
            ActivationBytesPerLayer(m.seq_len, mb_, m.hidden, heads, tp_, cp_, Recompute::kSelective, kinds);
      }
      // FP32 logits of one micro-batch for the loss, the vocabulary split over tp.
      const double logits = 4.0 * mb_ * (static_cast<double>(m.seq_len) / cp_) * m.vocab_size / tp_;
      // 1F1B: the first stage holds min(pp, m) micro-batches in flight, the last one;
      // interleaving multiplies the first stage's by 1 + (pp-1)/(pp·v) (Korthikanti et al.
      // 2022, sec. 4.2.3).
      const double in_flight_first =
          std::min<double>(pp_, ga_) * (vstages_ > 1 ? 1 + (pp_ - 1.0) / (pp_ * static_cast<double>(vstages_)) : 1);
      const double layers = mem.layers_on_stage;
      const double first = mem.activation_bytes_per_layer * layers * in_flight_first;
      const double last = mem.activation_bytes_per_layer * layers + logits;
      if (pp_ == 1) {
        mem.stage = "only";
        mem.microbatches_in_flight = 1;
        mem.activations = mem.activation_bytes_per_layer * layers;
        mem.logits = logits;
      } else if (first >= last) {
        mem.stage = "first";
        mem.microbatches_in_flight = in_flight_first;
        mem.activations = first;
      } else {
        mem.stage = "last";
        mem.microbatches_in_flight = 1;
        mem.activations = mem.activation_bytes_per_layer * layers;
        mem.logits = logits;
      }
    } else {
      mem.stage = pp_ == 1 ? "only" : "first";
    }
    mem.total_bytes = mem.state_bytes_per_gpu + mem.activations + mem.recompute_working_bytes + mem.logits +
                      mem.buffers + mem.reserve;
    mem.fits = mem.hbm_bytes <= 0 || mem.total_bytes <= mem.hbm_bytes;
    auto gb = [](double b) { return Num(std::round(b / 1e8) / 10); };
    if (mem.hbm_bytes > 0 && mem.state_bytes_per_gpu > mem.hbm_bytes) {
      Error("STATE_EXCEEDS_HBM",
            absl::StrCat("training state ", gb(mem.state_bytes_per_gpu), " GB per GPU (ZeRO stage ", zero, ", tp ", tp_,
                         ", pp ", pp_, ", dp ", dp_, ") exceeds hardware.hbm_bytes ", gb(mem.hbm_bytes), " GB."));
    } else if (!mem.fits) {
      Error("MEMORY_EXCEEDS_HBM",
            absl::StrCat("the ", mem.stage, " pipeline stage needs ", gb(mem.total_bytes), " GB per GPU: state ",
                         gb(mem.state_bytes_per_gpu), " + activations ", gb(mem.activations), " (",
                         Num(std::round(mem.microbatches_in_flight * 100) / 100), " micro-batches of ", mb_, " x ",
                         mem.layers_on_stage, " layers x ", gb(mem.activation_bytes_per_layer), " GB, recompute ",
                         recompute_name_, ") + recompute ", gb(mem.recompute_working_bytes), " + logits ",
                         gb(mem.logits), " + ZeRO-3 buffers ", gb(mem.buffers), " + reserve ", gb(mem.reserve),
                         " GB, over hardware.hbm_bytes ", gb(mem.hbm_bytes),
                         " GB. More recomputation, a larger tp, cp or pp, or a smaller micro_batch lowers it."));
    } else if (!shape && mem.hbm_bytes > 0 && mem.state_bytes_per_gpu > (1 - kActivationHeadroom) * mem.hbm_bytes) {
      Warn("STATE_NEAR_HBM",
           absl::StrCat("training state ", gb(mem.state_bytes_per_gpu), " GB per GPU leaves less than ",
                        Num(kActivationHeadroom * 100), "% of ", gb(mem.hbm_bytes),
                        " GB HBM for activations (not counted: the model's shape is not given)."));
    }
  }

  void CheckpointAndFailures() {
    auto& ck = r_.checkpoint;
    auto& fr = r_.failures;
    const auto& c = p_.checkpoint;
    ck.size_bytes = p_.model.params * (bytes_.weight + bytes_.optimizer);
    ck.write_seconds = Div(ck.size_bytes * replicas_, c.write_bytes_per_second);
    // A restore reads what every rank holds: replicated weights once per data-parallel
    // (and context-parallel) copy unless ZeRO-3 shards them, the optimizer state once
    // when ZeRO shards it. Loaders that read once and broadcast do better.
    // An expert's weights have tp·dp·cp / (expert_tp·ep) copies, not dp·cp.
    const double dense_copies = std::max(1.0, static_cast<double>(dp_) * cp_);
    const double dense = std::max(0.0, p_.model.params - expert_params_);
    auto read = [&](double params, double copies) {
      return params * (bytes_.weight * (p_.layout.zero_stage >= 3 ? 1 : copies) +
                       bytes_.optimizer * (p_.layout.zero_stage >= 1 ? 1 : copies));
    };
    ck.restore_read_bytes = read(dense, dense_copies) + read(expert_params_, std::max(1.0, expert_copies_));
    ck.read_seconds = Div(ck.restore_read_bytes, read_bps_);
    ck.blocking_seconds = c.async ? Div(snapshot_bytes_per_gpu_, snapshot_bps_) : ck.write_seconds;

    fr.node_mtbf_seconds = node_mtbf_;
    fr.job_mtbf_seconds = JobMtbfSeconds(node_mtbf_, r_.fleet.nodes);
    // Interruptions that do not scale with nodes (software, storage, the fabric) add
    // their rate.
    fr.job_interruptions_per_day = job_per_day_;
    if (job_per_day_ > 0 && fr.job_mtbf_seconds > 0) {
      fr.job_mtbf_seconds = 1.0 / (1.0 / fr.job_mtbf_seconds + job_per_day_ / 86400.0);
    }
    const double mtbf = fr.job_mtbf_seconds;
    if (mtbf > 0) {
      ck.young_interval_seconds = YoungIntervalSeconds(ck.blocking_seconds, mtbf);
      ck.daly_interval_seconds = DalyIntervalSeconds(ck.blocking_seconds, mtbf);
    }
    if (c.interval_seconds > 0) {
      ck.interval_seconds = c.interval_seconds;
      if (ck.interval_seconds < ck.write_seconds) {
        Error("CHECKPOINT_INTERVAL_TOO_SHORT",
              absl::StrCat("checkpoint.interval_seconds ", Num(ck.interval_seconds), " is shorter than the ",
                           Num(std::round(ck.write_seconds)), " s a checkpoint takes to write."));
      } else if (ck.daly_interval_seconds > 0 && (ck.interval_seconds > 2 * ck.daly_interval_seconds ||
                                                  ck.interval_seconds < 0.5 * ck.daly_interval_seconds)) {
        Warn("CHECKPOINT_INTERVAL_FAR_FROM_OPTIMAL",
             absl::StrCat("checkpoint.interval_seconds ", Num(ck.interval_seconds), " is far from Daly's optimum of ",
                          Num(std::round(ck.daly_interval_seconds)), " s for a job MTBF of ", Num(std::round(mtbf)),
                          " s."));
      }
    } else {
      // An async save blocks little, so Daly's interval can be shorter than the write: keep
      // the storage's duty cycle under its bound (a synchronous save blocks for the whole
      // write, so Daly's interval already exceeds it by far).
      ck.interval_seconds = std::max(ck.daly_interval_seconds, c.async ? ck.write_seconds / kMaxStorageDutyCycle : 0.0);
      if (ck.interval_seconds > 0 && ck.interval_seconds < ck.write_seconds) {
        Error("CHECKPOINT_INTERVAL_TOO_SHORT",
              absl::StrCat("the chosen checkpoint interval of ", Num(std::round(ck.interval_seconds)),
                           " s is shorter than the ", Num(std::round(ck.write_seconds)),
                           " s a checkpoint takes to write."));
      }
    }
    if (mtbf > 0 && ck.blocking_seconds >= mtbf) {
      Error("CHECKPOINT_COST_EXCEEDS_MTBF",
            absl::StrCat("a checkpoint blocks training for ", Num(std::round(ck.blocking_seconds)),
                         " s, at least the job MTBF of ", Num(std::round(mtbf)),
                         " s: the job fails more often than it can save."));
    }
    ck.count = ck.interval_seconds > 0 ? SaturatingCount(std::ceil(active_seconds_ / ck.interval_seconds)) : 0;
    ck.overhead_seconds = static_cast<double>(ck.count) * ck.blocking_seconds;
    ck.storage_duty_cycle = Div(ck.write_seconds, ck.interval_seconds);
    ck.total_written_bytes = static_cast<double>(ck.count) * ck.size_bytes * replicas_;
    if (ck.interval_seconds >= ck.write_seconds && ck.storage_duty_cycle > kMaxStorageDutyCycle) {
      Warn("CHECKPOINT_STORAGE_BUSY",
           absl::StrCat("checkpoint writes keep the storage busy ", Num(std::round(ck.storage_duty_cycle * 100)),
                        "% of the run (", Num(std::round(ck.write_seconds)), " s of writing every ",
                        Num(std::round(ck.interval_seconds)), " s, ", Num(ck.total_written_bytes / 1e15),
                        " PB in all): above ", Num(kMaxStorageDutyCycle * 100),
                        "%, saves queue behind each other and starve the data loader."));
    }

    const int storage = DomainRank(storage_domain_);
    const int failure = DomainRank(failure_domain_);
    if (storage >= 1 && failure >= 0 && storage <= failure && replicas_ < 2) {
      Error("CHECKPOINT_IN_FAILURE_DOMAIN",
            absl::StrCat("checkpoint.storage_domain ", storage_domain_, " is inside failures.failure_domain ",
                         failure_domain_, " with ", replicas_, " replica: one ", failure_domain_,
                         " failure takes the checkpoint with it (use 2+ replicas or remote storage)."));
    }

    // Failures strike while the job runs: compute, saves, and the work redone after each
    // interruption (half an interval on average, and an async save's write, whose state is
    // not durable until written: the same redone work the loss per interruption counts).
    // With n = running / M and running = A + C + n x redo, n = (A + C) / (M - redo).
    const double half = ck.interval_seconds / 2;
    const double redo = half + (c.async ? ck.write_seconds : 0.0);
    const double running = active_seconds_ + ck.overhead_seconds;
    if (mtbf > 0) {
      if (mtbf > redo) {
        fr.expected_interruptions = running / (mtbf - redo);
      } else {
        fr.expected_interruptions = running / mtbf;
        Error("JOB_MTBF_TOO_SHORT", absl::StrCat("job MTBF ", Num(std::round(mtbf)), " s (", r_.fleet.nodes,
                                                 " nodes) is under half the checkpoint interval of ",
                                                 Num(std::round(ck.interval_seconds)), " s: the run cannot progress."));
      }
    }
    // An async save is durable only once written: on average the newest durable state is
    // half an interval plus a write old.
    fr.loss_per_interruption_seconds = detect_ + restart_ + ck.read_seconds + redo;
    fr.expected_loss_seconds = fr.expected_interruptions * fr.loss_per_interruption_seconds;
    if (quantile_ > 0 && quantile_ < 1) {
      fr.budget_interruptions = NegativeBinomialQuantile(fr.expected_interruptions, rate_spread_, quantile_);
    }
    fr.rate_spread = rate_spread_;
    // Spares: failed nodes are out for repair_hours; by Little's law nodes / MTBF x repair
    // are out at once on average, and the job restarts at full size only while the spares
    // cover them.
    if (node_mtbf_ > 0) {
      fr.nodes_in_repair = r_.fleet.nodes * repair_hours_ * 3600.0 / node_mtbf_;
      fr.nodes_in_repair_p99 = PoissonQuantile(fr.nodes_in_repair, kSpareQuantile);
      if (fr.nodes_in_repair_p99 > p_.fleet.spare_nodes) {
        Warn("SPARES_SHORT",
             absl::StrCat("fleet.spare_nodes ", p_.fleet.spare_nodes,
                          " do not cover the nodes out for repair: ", Num(std::round(fr.nodes_in_repair * 10) / 10),
                          " on average, up to ", fr.nodes_in_repair_p99, " (P99) at a node MTBF of ",
                          Num(std::round(node_mtbf_ / 3600)), " h and ", Num(repair_hours_),
                          " h of repair (failures.spare_repair_hours); short of spares, a restart waits for a repair "
                          "or the job shrinks."));
      }
    }
    fr.budget_seconds = static_cast<double>(fr.budget_interruptions) * fr.loss_per_interruption_seconds;
  }

  // Calendar share lost to maintenance on top of `busy` seconds of everything else.
  double Maintenance(double busy) const {
    if (maintenance_hours_ > 0) return maintenance_hours_ * 3600.0;
    if (maintenance_fraction_ <= 0 || maintenance_fraction_ >= 1) return 0;
    return busy * maintenance_fraction_ / (1 - maintenance_fraction_);
  }

  void Schedule() {
    auto& s = r_.schedule;
    s.active_compute_seconds = active_seconds_;
    s.checkpoint_seconds = r_.checkpoint.overhead_seconds;
    s.failure_budget_seconds = r_.failures.budget_seconds;
    const double busy = s.active_compute_seconds + s.checkpoint_seconds + s.failure_budget_seconds;
    s.availability_seconds = Maintenance(busy);
    if (contingency_ >= 0 && contingency_ < 1) s.contingency_seconds = contingency_ * (busy + s.availability_seconds);
    s.total_seconds = busy + s.availability_seconds + s.contingency_seconds;
    s.start_time = p_.start_time.value_or(absl::UnixEpoch());
    s.finish_time = s.start_time + absl::Seconds(s.total_seconds);
    s.deadline = p_.deadline;
    if (p_.deadline) {
      s.deadline_slack_seconds = absl::ToDoubleSeconds(*p_.deadline - s.finish_time);
      if (s.deadline_slack_seconds < 0) {
        Error("DEADLINE_MISSED",
              absl::StrCat("the schedule finishes ",
                           absl::FormatTime("%Y-%m-%d %H:%M UTC", s.finish_time, absl::UTCTimeZone()), ", ",
                           Num(std::round(-s.deadline_slack_seconds / 86400 * 10) / 10), " days after the deadline ",
                           absl::FormatTime("%Y-%m-%d %H:%M UTC", *p_.deadline, absl::UTCTimeZone()),
                           " (flightplan plan --deadline finds the fleet that meets it)."));
      }
    }
    const double expected_busy = s.active_compute_seconds + s.checkpoint_seconds + r_.failures.expected_loss_seconds;
    s.expected_goodput = Div(s.active_compute_seconds, expected_busy + Maintenance(expected_busy));
    if (s.expected_goodput > 0 && s.expected_goodput < kLowGoodput) {
      Warn("LOW_GOODPUT",
           absl::StrCat("expected goodput ", Num(std::round(s.expected_goodput * 1000) / 10),
                        "%: of the time the fleet is held, only that share trains (",
                        Num(std::round(r_.failures.expected_interruptions)),
                        " interruptions expected at a job MTBF of ", Num(std::round(r_.failures.job_mtbf_seconds)),
                        " s); more reliable nodes, spares that replace failed ones, or cheaper restarts pay here."));
    }
  }

  void Power() {
    auto& w = r_.power;
    const double nodes = r_.fleet.nodes;
    w.gpu_watts = static_cast<double>(p_.fleet.gpus) * p_.hardware.gpu_watts;
    w.node_other_watts = nodes * p_.hardware.node_other_watts;
    w.cluster_other_watts = nodes * p_.hardware.cluster_other_watts_per_node;
    w.other_it_watts = w.node_other_watts + w.cluster_other_watts;
    w.it_watts = w.gpu_watts + w.other_it_watts;
    w.facility_watts = w.it_watts * pue_;
    // Energy at the average draw while training, not the rating (see
    // kDefaultAveragePowerFraction); the cluster's share runs at its rating throughout.
    w.average_power_fraction = average_power_fraction_;
    w.average_facility_watts =
        (average_power_fraction_ * (w.gpu_watts + w.node_other_watts) + w.cluster_other_watts) * pue_;
    CostAndEnergy(p_.fleet.gpus + static_cast<double>(p_.fleet.spare_nodes) * gpus_per_node_, w.average_facility_watts,
                  idle_power_fraction_ * w.it_watts * pue_);
    if (p_.hardware.gpu_watts <= 0) {
      Warn("POWER_UNKNOWN", "hardware.gpu_watts is 0: no power or energy estimate.");
    } else if (w.other_it_watts <= 0) {
      Warn("POWER_GPU_ONLY", absl::StrCat("power counts only the GPUs (", Num(w.gpu_watts / 1e6),
                                          " MW): hardware.node_other_watts and cluster_other_watts_per_node are 0, "
                                          "but CPUs, NICs, fans and switches draw ~45% of a DGX H100's 10.2 kW."));
    }
  }

  // The schedule's lines in GPU-hours, energy and dollars. The fleet is paid for throughout;
  // it draws `training` watts while the job runs (compute, saves, redone work, and the
  // contingency, which is held for running) and `idle` watts while it is down (maintenance,
  // and the failure budget's detect, restart and restore).
  void CostAndEnergy(double reserved_gpus, double training, double idle) {
    auto& c = r_.cost;
    const auto& s = r_.schedule;
    const double loss = r_.failures.loss_per_interruption_seconds;
    const double down_share =
        loss > 0 ? std::clamp((detect_ + restart_ + r_.checkpoint.read_seconds) / loss, 0.0, 1.0) : 0.0;
    c.reserved_gpus = reserved_gpus;
    c.training_facility_watts = training;
    c.idle_facility_watts = idle;
    auto line = [&](PlanReport::CostLine& out, double seconds, double joules) {
      out.seconds = seconds;
      out.gpu_hours = reserved_gpus * seconds / 3600.0;
      out.energy_mwh = joules / 3.6e9;
      out.dollars = out.gpu_hours * p_.cost.gpu_hour_dollars + out.energy_mwh * p_.cost.energy_dollars_per_mwh;
    };
    line(c.active_compute, s.active_compute_seconds, training * s.active_compute_seconds);
    line(c.checkpoint, s.checkpoint_seconds, training * s.checkpoint_seconds);
    line(c.failure_budget, s.failure_budget_seconds,
         s.failure_budget_seconds * (down_share * idle + (1 - down_share) * training));
    line(c.availability, s.availability_seconds, idle * s.availability_seconds);
    line(c.contingency, s.contingency_seconds, training * s.contingency_seconds);
    PlanReport::CostLine& t = c.total;
    t = {};
    for (const PlanReport::CostLine* l :
         {&c.active_compute, &c.checkpoint, &c.failure_budget, &c.availability, &c.contingency}) {
      t.seconds += l->seconds;
      t.gpu_hours += l->gpu_hours;
      t.energy_mwh += l->energy_mwh;
      t.dollars += l->dollars;
    }
    r_.power.energy_mwh = t.energy_mwh;
  }

  void Data() {
    auto& d = r_.data;
    const double tokens = static_cast<double>(p_.data.tokens);
    d.epochs = Div(tokens, dataset_tokens_);
    d.storage_bytes = dataset_tokens_ * bytes_per_token_;
    if (p_.data.dataset_tokens && *p_.data.dataset_tokens == 0) {
      Invalid("data.dataset_tokens", 0, "must be > 0");
    } else if (d.epochs > 1) {
      Warn("DATASET_TOO_SMALL",
           absl::StrCat("data.tokens ", Num(tokens), " need ", Num(std::round(d.epochs * 100) / 100),
                        " epochs over data.dataset_tokens ", Num(dataset_tokens_), "."));
    }
  }

  const PlanSpec& p_;
  const PlanSpec::Phase::Ramp* ramp_;
  std::optional<double> figure_bubble_;
  PlanReport r_;

  double active_ = 0;
  uint32_t gpus_per_node_ = kDefaultGpusPerNode;
  double pue_ = kDefaultPue;
  uint32_t tp_ = 1, pp_ = 1, dp_ = 0, cp_ = 1, ep_ = 1, mb_ = 1, ga_ = 1;
  StateBytesPerParam bytes_;
  std::string dtype_;
  uint32_t dtype_bytes_ = 4;
  double bytes_per_token_ = 4, dataset_tokens_ = 0;
  double read_bps_ = 0, snapshot_bps_ = 0;
  std::string storage_domain_, failure_domain_;
  uint32_t replicas_ = 1;
  double node_mtbf_ = 0, detect_ = 0, restart_ = 0, quantile_ = kDefaultBudgetQuantile;
  double maintenance_fraction_ = 0, maintenance_hours_ = 0, contingency_ = kDefaultContingency;
  double active_seconds_ = 0;
  double snapshot_bytes_per_gpu_ = 0;
  uint32_t vstages_ = 1, etp_ = 1;
  Recompute recompute_ = Recompute::kSelective;
  AttentionConvention attention_ = AttentionConvention::kCausal;
  std::string recompute_name_ = "selective", attention_name_ = "causal";
  std::string precision_ = "bf16";  // hardware.peak_precision
  bool matmul_fp8_ = false;         // efficiency.matmul_precision (default: the peak's)
  double average_power_fraction_ = kDefaultAveragePowerFraction, reserved_bytes_ = 0;
  double idle_power_fraction_ = kDefaultIdlePowerFraction;
  double rate_spread_ = kDefaultRateSpread, job_per_day_ = 0, repair_hours_ = kDefaultRepairHours;
  double embedding_params_ = 0;
  double expert_params_ = 0,
         expert_copies_ = 1;  // set by Memory()  // one V x h matrix (the input embedding or the output layer)
  uint64_t attention_width_ = 0;
};

}  // namespace

PlanReport ComputePlan(const PlanSpec& plan) {
  if (plan.phases.empty()) return Engine(plan).Run();
  // Every phase states its own efficiency figure: the plan needs none of its own.
  const auto figure = [](const PlanSpec::Efficiency& e) {
    return e.mfu != 0 || e.hfu.has_value() || e.busy_mfu.has_value() || e.busy_hfu.has_value();
  };
  if (!figure(plan.efficiency) && std::all_of(plan.phases.begin(), plan.phases.end(), [&](const PlanSpec::Phase& ph) {
        return ph.efficiency && figure(*ph.efficiency);
      })) {
    // The first phase's figure stands in for the plan's; the conventions stay the plan's
    // unless that phase gives its own.
    PlanSpec copy = plan;
    OverlayEfficiency(copy.efficiency, *plan.phases.front().efficiency);
    return Engine(copy).RunPhased();
  }
  return Engine(plan).RunPhased();
}

namespace {

// A trial fleet counts only if nothing but the deadline is wrong with it.
bool OnlyDeadlineErrors(const PlanReport& r) {
  return std::none_of(r.findings.begin(), r.findings.end(),
                      [](const Finding& f) { return f.severity == Severity::kError && f.code != "DEADLINE_MISSED"; });
}

}  // namespace

bool SetFleetHoldingBatch(PlanSpec& plan, uint64_t gpus, uint64_t batch_sequences) {
  const uint64_t replica =
      uint64_t{plan.layout.tp.value_or(1)} * plan.layout.pp.value_or(1) * plan.layout.cp.value_or(1);
  if (replica == 0 || gpus == 0 || gpus % replica != 0 || gpus > UINT32_MAX) return false;
  const uint64_t dp = gpus / replica;
  if (batch_sequences == 0 || batch_sequences % dp != 0) return false;
  const uint64_t share = batch_sequences / dp;
  uint64_t mb = std::min<uint64_t>(std::max(1u, plan.layout.micro_batch.value_or(1)), share);
  while (share % mb != 0) --mb;
  plan.fleet.gpus = static_cast<uint32_t>(gpus);
  plan.layout.dp = static_cast<uint32_t>(dp);
  plan.layout.micro_batch = static_cast<uint32_t>(mb);
  plan.layout.grad_accum = static_cast<uint32_t>(share / mb);
  return true;
}

DeadlineFleet FindFleetForDeadline(const PlanSpec& plan, absl::Time deadline, uint32_t max_gpus,
                                   bool allow_batch_change) {
  DeadlineFleet out;
  out.deadline = deadline;
  const uint64_t replica =
      uint64_t{plan.layout.tp.value_or(1)} * plan.layout.pp.value_or(1) * plan.layout.cp.value_or(1);
  const uint32_t per_node = plan.hardware.gpus_per_node.value_or(kDefaultGpusPerNode);
  if (replica == 0 || per_node == 0) {
    out.explanation = "the layout or gpus_per_node is 0, so no fleet can be formed.";
    return out;
  }
  if (!plan.start_time) {
    out.explanation = "the plan has no start_time, so no schedule can be measured against it.";
    return out;
  }
  if (deadline <= *plan.start_time) {
    out.explanation = "the deadline is not after the start_time; no fleet can meet it.";
    return out;
  }
  if (!plan.phases.empty()) {
    // One fleet scaled and one batch held does not describe phases with their own fleets
    // and batches; an answer would be wrong without saying so.
    out.explanation = absl::StrCat("the plan has ", plan.phases.size(),
                                   " phases, each with its own batch and perhaps its own fleet: the deadline search "
                                   "scales one fleet holding one batch, so it does not search phased plans. Plan "
                                   "each phase's fleet (fleet.gpus in the phase) and compare the schedules.");
    return out;
  }
  // The plan's global batch, in sequences per step: what the recipe holds.
  const PlanReport planned = ComputePlan(plan);
  const uint64_t batch = planned.batch.sequences_per_step;
  const uint32_t plan_mb = plan.layout.micro_batch.value_or(1);
  if (!allow_batch_change && batch == 0) {
    out.explanation = "the plan's global batch is 0 sequences (see its findings); no fleet can hold it.";
    return out;
  }
  PlanSpec trial = plan;
  trial.deadline = deadline;
  double best = -1;
  uint64_t previous_dp = 0;  // the last valid fleet tried before the answer
  uint64_t not_dividing = 0, other_rule = 0;
  std::string first_other;
  enum class Stop { kRange, kBatch, kSlower } stop = Stop::kRange;
  for (uint64_t dp = 1; dp * replica <= max_gpus; ++dp) {
    if (!allow_batch_change && dp > batch) {
      stop = Stop::kBatch;  // fewer than one sequence per replica per step
      break;
    }
    const uint64_t gpus = dp * replica;
    if (gpus % per_node != 0) continue;
    if (!allow_batch_change) {
      trial.layout.micro_batch = plan_mb;
      if (!SetFleetHoldingBatch(trial, gpus, batch)) {
        ++not_dividing;
        continue;
      }
    } else {
      trial.fleet.gpus = static_cast<uint32_t>(gpus);
      trial.layout.dp = static_cast<uint32_t>(dp);
    }
    const PlanReport r = ComputePlan(trial);
    const double total = r.schedule.total_seconds;
    // Fleets that break another rule (memory, ep inside dp, ...) are not answers.
    if (!(total > 0) || !std::isfinite(total) || !OnlyDeadlineErrors(r)) {
      if (other_rule++ == 0) {
        for (const Finding& f : r.findings) {
          if (f.severity == Severity::kError && f.code != "DEADLINE_MISSED") {
            first_other = absl::StrCat(" (dp ", dp, ": ", f.code, ")");
            break;
          }
        }
      }
      continue;
    }
    const bool met = r.schedule.finish_time <= deadline;
    if (met || best < 0 || total < best) {
      best = total;
      out.met = met;
      out.gpus = static_cast<uint32_t>(gpus);
      out.nodes = r.fleet.nodes;
      out.dp = static_cast<uint32_t>(dp);
      out.micro_batch = trial.layout.micro_batch.value_or(1);
      out.grad_accum = trial.layout.grad_accum.value_or(1);
      out.tokens_per_step = r.batch.tokens_per_step;
      out.batch_changed = r.batch.sequences_per_step != batch;
      out.schedule = r.schedule;
    }
    if (met) {
      out.explanation = previous_dp == 0
                            ? absl::StrCat(gpus, " GPUs (dp ", dp, ") is the smallest valid fleet and meets it.")
                            : absl::StrCat(gpus, " GPUs (dp ", dp, " x ", replica,
                                           "-GPU replicas) is the smallest fleet that meets it; the next smaller "
                                           "valid fleet, dp ",
                                           previous_dp, " (", previous_dp * replica, " GPUs), does not.");
      if (allow_batch_change && out.batch_changed) {
        absl::StrAppend(&out.explanation, " The global batch grows from ", batch, " to ", r.batch.sequences_per_step,
                        " sequences per step: a different recipe (asked for).");
      }
      return out;
    }
    previous_dp = dp;
    // Past the fastest fleet the schedule only grows (more nodes, more failures): stop once
    // the fleet is twice the fastest one's size and still slower.
    if (best > 0 && total > best && dp > 2 * uint64_t{out.dp}) {
      stop = Stop::kSlower;
      break;
    }
  }
  std::string skipped;
  if (not_dividing > 0) {
    absl::StrAppend(&skipped, " ", not_dividing, " dp values were skipped because they do not divide the batch of ",
                    batch, " sequences.");
  }
  if (other_rule > 0) {
    absl::StrAppend(&skipped, " ", other_rule, " fleets break another rule of the plan", first_other, ".");
  }
  if (best < 0) {
    out.explanation = absl::StrCat("no valid fleet of whole ", replica, "-GPU replicas on whole ", per_node,
                                   "-GPU nodes up to ", max_gpus, " GPUs exists.", skipped);
    return out;
  }
  const std::string fastest =
      absl::StrCat("the fastest valid fleet is ", out.gpus, " GPUs (dp ", out.dp, "), finishing ",
                   absl::FormatTime("%Y-%m-%d", out.schedule.finish_time, absl::UTCTimeZone()));
  switch (stop) {
    case Stop::kBatch:
      out.explanation = absl::StrCat(
          "no fleet meets it with the plan's global batch of ", batch, " sequences per step: it splits over at most ",
          batch, " replicas (one sequence each), and ", fastest,
          ". A larger batch is a different recipe: --allow-batch-change searches with it.", skipped);
      break;
    case Stop::kSlower:
      out.explanation =
          absl::StrCat("no fleet meets it: ", fastest,
                       "; past it, failures from more nodes cost more than the added compute saves.", skipped);
      break;
    case Stop::kRange:
      out.explanation = absl::StrCat("no fleet up to ", max_gpus, " GPUs meets it: ", fastest, ".", skipped);
      break;
  }
  return out;
}

}  // namespace flightplan::planner
