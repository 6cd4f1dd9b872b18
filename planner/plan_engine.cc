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
#include "planner/plan_engine_internal.h"

namespace flightplan::planner {

bool PlanReport::HasError() const {
  return std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return f.severity == Severity::kError; });
}

bool PlanReport::InputInvalid() const {
  return std::any_of(findings.begin(), findings.end(), [](const Finding& f) {
    return f.severity == Severity::kError &&
           (f.code == "INVALID_VALUE" || f.code == "MISSING_FIELD" || f.code == "CONFLICTING_FIELDS");
  });
}

const Finding* PlanReport::Find(const std::string& code) const {
  for (const Finding& f : findings) {
    if (f.code == code) return &f;
  }
  return nullptr;
}

namespace engine_internal {

PlanReport Engine::RunPhased() {
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
    const bool batch_changed = ph.seq_len || ph.gpus || ph.layout.dp || ph.layout.micro_batch || ph.layout.grad_accum ||
                               ph.layout.tp || ph.layout.pp || ph.layout.cp;
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
    if (l.account_for_embedding) sub.layout.account_for_embedding = l.account_for_embedding;
    if (l.account_for_loss) sub.layout.account_for_loss = l.account_for_loss;
    if (l.first_stage_layers) sub.layout.first_stage_layers = l.first_stage_layers;
    if (l.last_stage_layers) sub.layout.last_stage_layers = l.last_stage_layers;
    if (!l.pipeline_layout.empty()) sub.layout.pipeline_layout = l.pipeline_layout;
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
              parts[i].schedule.custom_seconds +
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

PlanReport Engine::Run() {
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

void Engine::Finish() {
  for (PlanReport::Phase& ph : r_.phases) {
    for (double* v : {&ph.tokens_per_second, &ph.mfu, &ph.bubble_fraction, &ph.active_compute_seconds, &ph.memory_bytes,
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

void Engine::Combine(const std::vector<PlanReport>& parts) {
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

void Engine::Error(std::string code, std::string message) {
  r_.findings.push_back({Severity::kError, std::move(code), std::move(message)});
}

void Engine::Warn(std::string code, std::string message) {
  r_.findings.push_back({Severity::kWarning, std::move(code), std::move(message)});
}

void Engine::Invalid(const std::string& field, double value, const std::string& rule) {
  Error("INVALID_VALUE", absl::StrCat(field, " ", Num(value), " is invalid: ", rule, "."));
}

void Engine::Missing(const std::string& field, const std::string& why) {
  Error("MISSING_FIELD", absl::StrCat(field, " is required: ", why, "."));
}

void Engine::Sanitize() {
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
                    &r_.schedule.custom_seconds,
                    &r_.schedule.total_seconds,
                    &r_.schedule.expected_goodput,
                    &r_.schedule.expected_seconds,
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
                                  &r_.cost.availability, &r_.cost.contingency, &r_.cost.custom, &r_.cost.total}) {
    for (double* v : {&l->seconds, &l->gpu_hours, &l->energy_mwh, &l->dollars}) fix(*v);
  }
  if (broken && r_.memory.state_bytes_per_gpu == 0) r_.memory.fits = false;
  if (!std::isfinite(absl::ToDoubleSeconds(r_.schedule.finish_time - r_.schedule.start_time))) {
    r_.schedule.finish_time = r_.schedule.start_time;
  }
  if (!std::isfinite(absl::ToDoubleSeconds(r_.schedule.expected_finish_time - r_.schedule.start_time))) {
    r_.schedule.expected_finish_time = r_.schedule.start_time;
  }
}

}  // namespace engine_internal

using engine_internal::Engine;
using engine_internal::kDefaultGpusPerNode;
using engine_internal::OverlayEfficiency;

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

std::optional<double> FigureBubble(const PlanSpec& plan) {
  const auto& e = plan.efficiency;
  if (!plan.phases.empty() || e.busy_mfu || e.busy_hfu || !(e.mfu > 0 || e.hfu)) return std::nullopt;
  return ComputePlan(plan).compute.bubble_fraction;
}

PlanReport ComputeVariant(const PlanSpec& variant, std::optional<double> figure_bubble) {
  // A phased plan's phases already hold the plan's figure to its own layout (RunPhased).
  if (!figure_bubble || !variant.phases.empty()) return ComputePlan(variant);
  return Engine(variant, nullptr, figure_bubble).Run();
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
  // The plan's end-to-end figure was measured on its own layout: every trial keeps the
  // efficiency while busy and pays its own bubble.
  const std::optional<double> figure_bubble = FigureBubble(plan);
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
      // A stated global batch scales with dp, as the recipe the flag asks for does.
      if (plan.layout.global_batch_tokens && planned.fleet.dp > 0) {
        trial.layout.global_batch_tokens = *plan.layout.global_batch_tokens / planned.fleet.dp * dp;
      }
    }
    const PlanReport r = ComputeVariant(trial, figure_bubble);
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
      out.mfu = r.compute.mfu;
      out.bubble_fraction = r.compute.bubble_fraction;
      out.busy_mfu = r.compute.busy_mfu;
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
