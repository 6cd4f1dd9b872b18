#include "cli/plan_print.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "text/units.h"

namespace flightplan::cli {

namespace units = text::units;  // the one rendering of numbers, shared with the run page

namespace {

using namespace units;  // NOLINT: this file is all formatting

class Out {
 public:
  void Section(const std::string& title) { absl::StrAppend(&text_, "\n", title, "\n"); }
  void Row(const std::string& label, const std::string& value) {
    absl::StrAppend(&text_, absl::StrFormat("  %-24s %s\n", label, value));
  }
  void Line(const std::string& line) { absl::StrAppend(&text_, line, "\n"); }
  std::string Take() { return std::move(text_); }

 private:
  std::string text_;
};

void ScheduleRows(Out& o, const planner::PlanReport::Schedule& s) {
  const double total = s.total_seconds;
  auto row = [&](const std::string& label, double seconds) {
    o.Line(absl::StrFormat("  %-24s %8s days %7s", label, Days(seconds), total > 0 ? Percent(seconds / total) : "-"));
  };
  row("active compute", s.active_compute_seconds);
  row("checkpoint overhead", s.checkpoint_seconds);
  if (s.custom_seconds > 0) row("custom (evals, checks)", s.custom_seconds);
  row("failure budget", s.failure_budget_seconds);
  row("availability", s.availability_seconds);
  row("contingency", s.contingency_seconds);
  o.Line(absl::StrFormat("  %-24s %8s days", "total", Days(total)));
  o.Row("start -> finish", absl::StrCat(Date(s.start_time), " -> ", Date(s.finish_time), " (committed)"));
  if (s.expected_seconds > 0) {
    o.Row("expected finish", absl::StrCat(Date(s.expected_finish_time),
                                          " (P50: the median interruption count, no "
                                          "contingency; a run on plan, and its slip, are measured against it)"));
  }
}

}  // namespace

std::string FormatPlanReport(const planner::PlanSpec& p, const planner::PlanReport& r,
                             const planner::DeadlineFleet* fleet) {
  Out o;
  o.Line(absl::StrCat("plan ", r.name.empty() ? "(unnamed)" : r.name, ": ", Sci(p.model.params), " params, ",
                      Sci(static_cast<double>(p.data.tokens)), " tokens on ", Count(r.fleet.gpus), " x ",
                      p.hardware.gpu.empty() ? "GPU" : p.hardware.gpu));

  o.Section("Findings");
  if (r.findings.empty()) o.Line("  none: the plan is consistent");
  for (const planner::Finding& f : r.findings) {
    o.Line(absl::StrFormat("  %-7s %s: %s", f.severity == planner::Severity::kError ? "ERROR" : "WARNING", f.code,
                           f.message));
  }
  if (r.InputInvalid()) {
    // Figures built on an invalid input (mfu 42 is 4200%) would read as answers.
    o.Line("\nNo figures: an input is invalid or missing (the errors above). Fix it and plan again.");
    return o.Take();
  }

  const auto& b = r.batch;
  const auto& c = r.compute;
  o.Section("Compute");
  o.Row("FLOPs per token",
        c.attention_flops_per_token > 0
            ? absl::StrCat(Sci(c.flops_per_token), " (6N ", Sci(c.flops_per_token - c.attention_flops_per_token), " + ",
                           c.attention_convention, " attention ", Sci(c.attention_flops_per_token), ")")
            : absl::StrCat(Sci(c.flops_per_token), " (6N; attention ", c.attention_convention, ")"));
  o.Row("hardware FLOPs", absl::StrCat(Sci(c.hardware_flops_per_token), " per token (recompute ", c.recompute, ")"));
  o.Row("total FLOPs", absl::StrCat(Sci(c.total_flops), " (", Count(c.total_flops / 1e15 / 86400),
                                    " PF-days; 6ND alone ", Sci(c.dense_total_flops), ")"));
  const auto& e = p.efficiency;
  const char* source = e.hfu        ? "the plan's HFU"
                       : e.busy_mfu ? "the plan's MFU while busy, less the bubble"
                       : e.busy_hfu ? "the plan's HFU while busy, less the bubble"
                       : e.mfu > 0  ? "the plan's MFU"
                                    : "the phases' figures";
  o.Row("efficiency", absl::StrCat(Percent(c.mfu), " MFU, ", Percent(c.hfu), " HFU end to end (from ", source, ")"));
  if (c.bubble_fraction > 0) {
    o.Row("while busy", absl::StrCat(Percent(c.busy_mfu), " MFU, ", Percent(c.busy_hfu),
                                     " HFU between the bubbles (end to end over 1 - bubble)"));
  }
  if (!r.phases.empty()) {
    o.Row("pipeline bubble",
          absl::StrCat(Percent(c.bubble_fraction), " of the active time over the phases (each below)"));
  } else if (r.fleet.dp > 0 && p.layout.pp.value_or(1) > 1) {
    o.Row("pipeline bubble", absl::StrCat(Percent(c.bubble_fraction), " of each step (pp ", p.layout.pp.value_or(1),
                                          ", ", p.layout.grad_accum.value_or(1), " micro-batches",
                                          p.layout.virtual_stages.value_or(1) > 1
                                              ? absl::StrCat(", ", *p.layout.virtual_stages, " virtual stages")
                                              : std::string(),
                                          c.bubble_in_efficiency ? "; in the plan's figure)" : "; charged)"));
    if (!p.layout.pipeline_layout.empty() || p.layout.account_for_embedding.value_or(false) ||
        p.layout.account_for_loss.value_or(false) || p.layout.first_stage_layers || p.layout.last_stage_layers) {
      const auto& l = p.layout;
      std::string how = !l.pipeline_layout.empty() ? absl::StrCat("layout '", l.pipeline_layout, "'") : "";
      if (l.account_for_embedding.value_or(false) || l.account_for_loss.value_or(false)) {
        how = absl::StrCat(l.account_for_embedding.value_or(false) ? "the embedding" : "",
                           l.account_for_embedding.value_or(false) && l.account_for_loss.value_or(false) ? " and " : "",
                           l.account_for_loss.value_or(false) ? "the loss" : "", " counted as layers");
      } else if (l.first_stage_layers || l.last_stage_layers) {
        how =
            absl::StrCat("first stage ", l.first_stage_layers ? absl::StrCat(*l.first_stage_layers) : "even",
                         ", last stage ", l.last_stage_layers ? absl::StrCat(*l.last_stage_layers) : "even", " layers");
      }
      o.Row("pipeline split", absl::StrCat(how, ": the fullest stage sets the pace (the bubble above)"));
    }
  }
  o.Row("cluster, achieved", Si(c.cluster_flops_per_second, "FLOP/s"));
  o.Row("throughput", absl::StrCat(Si(c.tokens_per_second, "tokens/s"), " (",
                                   Count(c.tokens_per_second / std::max(1u, r.fleet.gpus)), " per GPU)"));
  o.Row("active GPU-hours", Count(c.active_gpu_hours));

  o.Section("Fleet and layout");
  o.Row("GPUs", absl::StrCat(Count(r.fleet.gpus), " on ", Count(r.fleet.nodes), " nodes",
                             r.fleet.spare_nodes ? absl::StrCat(" (+", r.fleet.spare_nodes, " spare)") : ""));
  o.Row("layout",
        absl::StrCat("tp ", p.layout.tp.value_or(1), " x pp ", p.layout.pp.value_or(1), " x dp ", r.fleet.dp, " x cp ",
                     p.layout.cp.value_or(1), ", ep ", p.layout.ep.value_or(1), ", ZeRO-", p.layout.zero_stage));
  o.Row("batch", absl::StrCat(Count(static_cast<double>(b.sequences_per_step)), " sequences, ",
                              Si(static_cast<double>(b.tokens_per_step), "tokens"), " per step"));
  o.Row("steps", absl::StrCat(Count(static_cast<double>(b.steps)), " (last step ",
                              Count(static_cast<double>(b.last_step_tokens)), " tokens)"));

  const auto& m = r.memory;
  o.Section(absl::StrCat("Memory per GPU (", m.stage, m.stage == "only" ? " stage" : " pipeline stage",
                         m.layers_on_stage > 0 ? absl::StrCat(", ", m.layers_on_stage, " layers") : "", ")"));
  o.Row("weights", Si(m.weights, "B"));
  o.Row("gradients", Si(m.grads, "B"));
  o.Row("optimizer state", absl::StrCat(Si(m.optimizer, "B"), " (ZeRO-", p.layout.zero_stage, ")"));
  if (m.activation_bytes_per_layer > 0) {
    o.Row("activations", absl::StrCat(Si(m.activations, "B"), " = ", absl::StrFormat("%.4g", m.microbatches_in_flight),
                                      " micro-batches in flight x ", m.layers_on_stage, " layers x ",
                                      Si(m.activation_bytes_per_layer, "B"), " (recompute ", r.compute.recompute, ")"));
  } else {
    o.Row("activations", "not counted (the model's shape is not given)");
  }
  if (m.recompute_working_bytes > 0) o.Row("layer recomputed", Si(m.recompute_working_bytes, "B"));
  if (m.logits > 0) o.Row("logits", Si(m.logits, "B"));
  if (m.buffers > 0) o.Row("ZeRO-3 gathered layers", Si(m.buffers, "B"));
  o.Row("framework reserve", Si(m.reserve, "B"));
  o.Row("total", m.hbm_bytes > 0 ? absl::StrCat(Si(m.total_bytes, "B"), " of ", Si(m.hbm_bytes, "B"),
                                                " HBM: ", m.fits ? "fits" : "DOES NOT FIT")
                                 : absl::StrCat(Si(m.total_bytes, "B"), " (hbm_bytes not given)"));
  if (m.stages.size() > 1) {
    std::string each;
    for (const auto& st : m.stages) {
      absl::StrAppend(&each, each.empty() ? "" : ", ", st.stage, " ", st.layers, " layers ", Si(st.total_bytes, "B"));
    }
    o.Row("by stage", each);
  }

  if (!r.phases.empty()) {
    o.Section("Phases");
    o.Line(absl::StrFormat("  %-16s %9s %7s %6s %9s %9s %6s %7s %9s %s", "phase", "tokens", "seq", "GPUs", "batch",
                           "tokens/s", "MFU", "bubble", "memory", "schedule (days from start)"));
    for (const planner::PlanReport::Phase& ph : r.phases) {
      o.Line(absl::StrFormat("  %-16s %9s %7s %6s %9s %9s %6s %7s %9s %s -> %s", ph.name,
                             Sci(static_cast<double>(ph.tokens)), Count(ph.seq_len), Count(ph.gpus),
                             Si(static_cast<double>(ph.tokens_per_step), ""), Si(ph.tokens_per_second, ""),
                             Percent(ph.mfu), Percent(ph.bubble_fraction), Si(ph.memory_bytes, "B"),
                             Days(ph.schedule_start_seconds), Days(ph.schedule_end_seconds)));
    }
  }

  const auto& k = r.checkpoint;
  o.Section("Checkpoints");
  o.Row("size", absl::StrCat(Si(k.size_bytes, "B"), ", write ", Duration(k.write_seconds), ", blocks ",
                             Duration(k.blocking_seconds)));
  o.Row("restore", absl::StrCat("read ", Si(k.restore_read_bytes, "B"), " in ", Duration(k.read_seconds),
                                " (every replica reads what it holds)"));
  o.Row("interval", absl::StrCat(Duration(k.interval_seconds), " (Young ", Duration(k.young_interval_seconds),
                                 ", Daly ", Duration(k.daly_interval_seconds), ")"));
  o.Row("saves",
        absl::StrCat(Count(static_cast<double>(k.count)), ", blocking ", Duration(k.overhead_seconds), " in all"));
  o.Row("storage", absl::StrCat("busy writing ", Percent(k.storage_duty_cycle), " of the run, ",
                                Si(k.total_written_bytes, "B"), " written"));

  const auto& f = r.failures;
  o.Section("Failures");
  o.Row("job MTBF", absl::StrCat(Duration(f.job_mtbf_seconds), " (node ", Duration(f.node_mtbf_seconds), " over ",
                                 Count(r.fleet.nodes), " nodes)"));
  o.Row("interruptions",
        absl::StrFormat("%.1f expected, %d budgeted (P%.0f, rate CV %.2f)", f.expected_interruptions,
                        f.budget_interruptions, p.failures.budget_quantile.value_or(0.9) * 100, f.rate_spread));
  if (f.nodes_in_repair > 0) {
    o.Row("nodes in repair", absl::StrFormat("%.1f on average, %d at P99; %d spare", f.nodes_in_repair,
                                             f.nodes_in_repair_p99, r.fleet.spare_nodes));
  }
  o.Row("loss per interruption", Duration(f.loss_per_interruption_seconds));
  o.Row("loss",
        absl::StrCat(Duration(f.expected_loss_seconds), " expected, ", Duration(f.budget_seconds), " budgeted"));
  if (p.failures.slowdown_fix_hours.value_or(0) > 0) {
    o.Row("slowdown fixed in", absl::StrCat(Duration(*p.failures.slowdown_fix_hours * 3600),
                                            " (failures.slowdown_fix_hours: the tracker's forecast of a slowdown)"));
  }
  if (p.failures.crisis_fix_days.value_or(0) > 0) {
    o.Row("crisis fixed in", absl::StrCat(Duration(*p.failures.crisis_fix_days * 86400),
                                          " (failures.crisis_fix_days: the tracker's forecast of a crisis)"));
  }

  const auto& s = r.schedule;
  o.Section("Schedule");
  ScheduleRows(o, s);
  if (s.deadline) {
    o.Row("deadline", absl::StrCat(Date(*s.deadline), ", slack ", Days(s.deadline_slack_seconds), " days"));
  }
  o.Row("expected goodput", Percent(s.expected_goodput));

  const auto& w = r.power;
  o.Section("Power");
  o.Row("IT load", absl::StrCat(Si(w.it_watts, "W"), " = GPUs ", Si(w.gpu_watts, "W"), " + nodes ",
                                Si(w.node_other_watts, "W"), " + cluster ", Si(w.cluster_other_watts, "W")));
  o.Row("facility",
        absl::StrCat(Si(w.facility_watts, "W"), " at PUE ", absl::StrFormat("%.2f", p.fleet.pue.value_or(1.2))));
  o.Row("energy", absl::StrCat(Count(w.energy_mwh), " MWh over the schedule: ", Si(r.cost.training_facility_watts, "W"),
                               " while training (", Percent(w.average_power_fraction, 0), " of the node ratings), ",
                               Si(r.cost.idle_facility_watts, "W"), " while down"));

  const auto& k2 = r.cost;
  o.Section(absl::StrCat(
      "Cost (", Count(k2.reserved_gpus), " GPUs reserved",
      p.cost.gpu_hour_dollars > 0 ? absl::StrFormat(" at $%.2f per GPU-hour", p.cost.gpu_hour_dollars)
                                  : std::string(", no price given"),
      p.cost.energy_dollars_per_mwh > 0 ? absl::StrFormat(" + $%.0f per MWh", p.cost.energy_dollars_per_mwh)
                                        : std::string(),
      ")"));
  auto cost_row = [&](const std::string& label, const planner::PlanReport::CostLine& l) {
    o.Line(absl::StrFormat(
        "  %-24s %12s GPU-h %9s MWh %14s", label, Count(l.gpu_hours), Count(l.energy_mwh),
        p.cost.gpu_hour_dollars > 0 || p.cost.energy_dollars_per_mwh > 0 ? absl::StrCat("$", Count(l.dollars)) : "-"));
  };
  cost_row("active compute", k2.active_compute);
  cost_row("checkpoint overhead", k2.checkpoint);
  if (k2.custom.seconds > 0) cost_row("custom (evals, checks)", k2.custom);
  cost_row("failure budget", k2.failure_budget);
  cost_row("availability", k2.availability);
  cost_row("contingency", k2.contingency);
  cost_row("total", k2.total);

  o.Section("Data");
  o.Row("epochs", absl::StrFormat("%.2f over the unique tokens", r.data.epochs));
  o.Row("storage", Si(r.data.storage_bytes, "B"));

  if (fleet != nullptr) {
    o.Section(absl::StrCat("Fleet for the deadline ", Date(fleet->deadline)));
    if (fleet->met) {
      o.Row("smallest fleet",
            absl::StrCat(Count(fleet->gpus), " GPUs on ", Count(fleet->nodes), " nodes (dp ", fleet->dp,
                         ", micro-batch ", fleet->micro_batch, " x grad_accum ", fleet->grad_accum, ", ",
                         Si(static_cast<double>(fleet->tokens_per_step), "tokens"), " per step",
                         fleet->batch_changed ? ": the batch changed" : ": the plan's batch", ")"));
    } else {
      o.Line(fleet->gpus > 0 ? "  NO FLEET MEETS THIS DEADLINE" : "  NO FLEET FOUND");
    }
    if (fleet->gpus > 0) {
      o.Row(fleet->met ? "efficiency" : "fastest fleet's efficiency",
            absl::StrCat(Percent(fleet->mfu), " MFU end to end (", Percent(fleet->busy_mfu),
                         " while busy, the plan's; pipeline bubble ", Percent(fleet->bubble_fraction), ")"));
    }
    if (fleet->met) ScheduleRows(o, fleet->schedule);
    o.Line(absl::StrCat("  ", fleet->explanation));
  }
  return o.Take();
}

}  // namespace flightplan::cli
