#include "convert/plan_convert.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"

namespace flightplan::convert {
namespace {

template <typename T, typename Msg, typename Getter, typename Has>
std::optional<T> Opt(const Msg& m, Has has, Getter get) {
  if (!(m.*has)()) return std::nullopt;
  return static_cast<T>((m.*get)());
}

planner::PlanSpec::Layout LayoutFromProto(const v1::Layout& l) {
  planner::PlanSpec::Layout out;
  using L = v1::Layout;
  out.tp = Opt<uint32_t>(l, &L::has_tp, &L::tp);
  out.pp = Opt<uint32_t>(l, &L::has_pp, &L::pp);
  out.dp = Opt<uint32_t>(l, &L::has_dp, &L::dp);
  out.cp = Opt<uint32_t>(l, &L::has_cp, &L::cp);
  out.ep = Opt<uint32_t>(l, &L::has_ep, &L::ep);
  out.micro_batch = Opt<uint32_t>(l, &L::has_micro_batch, &L::micro_batch);
  out.grad_accum = Opt<uint32_t>(l, &L::has_grad_accum, &L::grad_accum);
  out.zero_stage = l.zero_stage();
  out.global_batch_tokens = Opt<uint64_t>(l, &L::has_global_batch_tokens, &L::global_batch_tokens);
  out.virtual_stages = Opt<uint32_t>(l, &L::has_virtual_stages, &L::virtual_stages);
  out.expert_tp = Opt<uint32_t>(l, &L::has_expert_tp, &L::expert_tp);
  out.pipeline_schedule = l.pipeline_schedule();
  out.account_for_embedding =
      Opt<bool>(l, &L::has_account_for_embedding_in_pipeline_split, &L::account_for_embedding_in_pipeline_split);
  out.account_for_loss =
      Opt<bool>(l, &L::has_account_for_loss_in_pipeline_split, &L::account_for_loss_in_pipeline_split);
  out.first_stage_layers =
      Opt<uint32_t>(l, &L::has_decoder_first_pipeline_num_layers, &L::decoder_first_pipeline_num_layers);
  out.last_stage_layers =
      Opt<uint32_t>(l, &L::has_decoder_last_pipeline_num_layers, &L::decoder_last_pipeline_num_layers);
  out.pipeline_layout = l.pipeline_model_parallel_layout();
  return out;
}

planner::PlanSpec::Efficiency EfficiencyFromProto(const v1::Efficiency& e) {
  planner::PlanSpec::Efficiency out;
  out.mfu = e.mfu();
  out.hfu = Opt<double>(e, &v1::Efficiency::has_hfu, &v1::Efficiency::hfu);
  out.recompute = e.recompute();
  out.causal_attention = Opt<bool>(e, &v1::Efficiency::has_causal_attention, &v1::Efficiency::causal_attention);
  out.count_attention = Opt<bool>(e, &v1::Efficiency::has_count_attention, &v1::Efficiency::count_attention);
  out.busy_mfu = Opt<double>(e, &v1::Efficiency::has_busy_mfu, &v1::Efficiency::busy_mfu);
  out.busy_hfu = Opt<double>(e, &v1::Efficiency::has_busy_hfu, &v1::Efficiency::busy_hfu);
  out.matmul_precision = e.matmul_precision();
  return out;
}

}  // namespace

v1::ScheduleReport ScheduleToProto(const planner::PlanReport::Schedule& in) {
  v1::ScheduleReport s;
  s.set_active_compute_seconds(in.active_compute_seconds);
  s.set_checkpoint_seconds(in.checkpoint_seconds);
  s.set_failure_budget_seconds(in.failure_budget_seconds);
  s.set_availability_seconds(in.availability_seconds);
  s.set_contingency_seconds(in.contingency_seconds);
  s.set_custom_seconds(in.custom_seconds);
  s.set_total_seconds(in.total_seconds);
  *s.mutable_start_time() = TimeToProto(in.start_time);
  *s.mutable_finish_time() = TimeToProto(in.finish_time);
  if (in.deadline) *s.mutable_deadline() = TimeToProto(*in.deadline);
  s.set_deadline_slack_seconds(in.deadline_slack_seconds);
  s.set_expected_goodput(in.expected_goodput);
  s.set_expected_seconds(in.expected_seconds);
  *s.mutable_expected_finish_time() = TimeToProto(in.expected_finish_time);
  return s;
}

absl::Time TimeFromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

google::protobuf::Timestamp TimeToProto(absl::Time t) {
  google::protobuf::Timestamp out;
  const int64_t seconds = absl::ToUnixSeconds(t);
  out.set_seconds(seconds);
  out.set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(t - absl::FromUnixSeconds(seconds))));
  return out;
}

planner::PlanSpec PlanFromProto(const v1::Plan& p) {
  planner::PlanSpec s;
  s.name = p.name();
  if (p.has_start_time()) s.start_time = TimeFromProto(p.start_time());
  if (p.has_deadline()) s.deadline = TimeFromProto(p.deadline());

  const v1::Model& m = p.model();
  s.model.params = m.params();
  s.model.active_params = Opt<double>(m, &v1::Model::has_active_params, &v1::Model::active_params);
  s.model.expert_params = Opt<double>(m, &v1::Model::has_expert_params, &v1::Model::expert_params);
  s.model.layers = m.layers();
  s.model.hidden = m.hidden();
  s.model.heads = m.heads();
  s.model.kv_heads = m.kv_heads();
  s.model.seq_len = m.seq_len();
  s.model.vocab_size = m.vocab_size();
  s.model.head_dim = m.head_dim();
  s.model.tied_embeddings = Opt<bool>(m, &v1::Model::has_tied_embeddings, &v1::Model::tied_embeddings);
  s.model.dropout = Opt<bool>(m, &v1::Model::has_dropout, &v1::Model::dropout);
  s.model.num_experts = Opt<uint32_t>(m, &v1::Model::has_num_experts, &v1::Model::num_experts);

  const v1::Data& d = p.data();
  s.data.tokens = d.tokens();
  s.data.dataset_tokens = Opt<uint64_t>(d, &v1::Data::has_dataset_tokens, &v1::Data::dataset_tokens);
  s.data.token_dtype = d.token_dtype();
  s.data.bytes_per_token = Opt<double>(d, &v1::Data::has_bytes_per_token, &v1::Data::bytes_per_token);

  const v1::Hardware& h = p.hardware();
  s.hardware.gpu = h.gpu();
  s.hardware.peak_flops = h.peak_flops();
  s.hardware.hbm_bytes = h.hbm_bytes();
  s.hardware.gpu_watts = h.gpu_watts();
  s.hardware.gpus_per_node = Opt<uint32_t>(h, &v1::Hardware::has_gpus_per_node, &v1::Hardware::gpus_per_node);
  s.hardware.node_other_watts = h.node_other_watts();
  s.hardware.cluster_other_watts_per_node = h.cluster_other_watts_per_node();
  s.hardware.average_power_fraction =
      Opt<double>(h, &v1::Hardware::has_average_power_fraction, &v1::Hardware::average_power_fraction);
  s.hardware.reserved_bytes = Opt<double>(h, &v1::Hardware::has_reserved_bytes, &v1::Hardware::reserved_bytes);
  s.hardware.peak_precision = h.peak_precision();
  s.hardware.scaleup_gpus = Opt<uint32_t>(h, &v1::Hardware::has_scaleup_gpus, &v1::Hardware::scaleup_gpus);

  s.fleet.gpus = p.fleet().gpus();
  s.fleet.spare_nodes = p.fleet().spare_nodes();
  s.fleet.pue = Opt<double>(p.fleet(), &v1::Fleet::has_pue, &v1::Fleet::pue);

  s.layout = LayoutFromProto(p.layout());

  s.efficiency = EfficiencyFromProto(p.efficiency());

  using S = v1::State;
  s.state.weight_bytes = Opt<double>(p.state(), &S::has_weight_bytes, &S::weight_bytes);
  s.state.grad_bytes = Opt<double>(p.state(), &S::has_grad_bytes, &S::grad_bytes);
  s.state.optimizer_bytes = Opt<double>(p.state(), &S::has_optimizer_bytes, &S::optimizer_bytes);

  const v1::Checkpoint& c = p.checkpoint();
  using C = v1::Checkpoint;
  s.checkpoint.interval_seconds = c.interval_seconds();
  s.checkpoint.write_bytes_per_second = c.write_bytes_per_second();
  s.checkpoint.read_bytes_per_second = Opt<double>(c, &C::has_read_bytes_per_second, &C::read_bytes_per_second);
  s.checkpoint.async = c.async();
  s.checkpoint.snapshot_bytes_per_second =
      Opt<double>(c, &C::has_snapshot_bytes_per_second, &C::snapshot_bytes_per_second);
  s.checkpoint.storage_domain = c.storage_domain();
  s.checkpoint.replicas = Opt<uint32_t>(c, &C::has_replicas, &C::replicas);

  const v1::Failures& f = p.failures();
  using F = v1::Failures;
  s.failures.node_mtbf_hours = Opt<double>(f, &F::has_node_mtbf_hours, &F::node_mtbf_hours);
  s.failures.failures_per_1000_node_days =
      Opt<double>(f, &F::has_failures_per_1000_node_days, &F::failures_per_1000_node_days);
  s.failures.detect_seconds = Opt<double>(f, &F::has_detect_seconds, &F::detect_seconds);
  s.failures.restart_seconds = Opt<double>(f, &F::has_restart_seconds, &F::restart_seconds);
  s.failures.failure_domain = f.failure_domain();
  s.failures.budget_quantile = Opt<double>(f, &F::has_budget_quantile, &F::budget_quantile);
  s.failures.rate_spread = Opt<double>(f, &F::has_rate_spread, &F::rate_spread);
  s.failures.job_interruptions_per_day =
      Opt<double>(f, &F::has_job_interruptions_per_day, &F::job_interruptions_per_day);
  s.failures.spare_repair_hours = Opt<double>(f, &F::has_spare_repair_hours, &F::spare_repair_hours);
  s.failures.slowdown_fix_hours = Opt<double>(f, &F::has_slowdown_fix_hours, &F::slowdown_fix_hours);
  s.failures.crisis_fix_days = Opt<double>(f, &F::has_crisis_fix_days, &F::crisis_fix_days);

  using A = v1::Availability;
  s.availability.maintenance_fraction =
      Opt<double>(p.availability(), &A::has_maintenance_fraction, &A::maintenance_fraction);
  s.availability.maintenance_hours = Opt<double>(p.availability(), &A::has_maintenance_hours, &A::maintenance_hours);
  s.contingency_fraction = Opt<double>(p, &v1::Plan::has_contingency_fraction, &v1::Plan::contingency_fraction);
  s.schedule.custom_fraction =
      Opt<double>(p.schedule(), &v1::Schedule::has_custom_fraction, &v1::Schedule::custom_fraction);
  s.cost.gpu_hour_dollars = p.cost().gpu_hour_dollars();
  s.cost.energy_dollars_per_mwh = p.cost().energy_dollars_per_mwh();
  s.cost.idle_power_fraction =
      Opt<double>(p.cost(), &v1::Cost::has_idle_power_fraction, &v1::Cost::idle_power_fraction);
  for (const v1::Phase& ph : p.phases()) {
    planner::PlanSpec::Phase out;
    out.name = ph.name();
    out.tokens = ph.tokens();
    if (ph.model().seq_len() != 0) out.seq_len = ph.model().seq_len();
    if (ph.fleet().gpus() != 0) out.gpus = ph.fleet().gpus();
    auto unchangeable = [&](const char* section, const google::protobuf::Message& msg, const char* allowed) {
      std::vector<const google::protobuf::FieldDescriptor*> set;
      msg.GetReflection()->ListFields(msg, &set);
      for (const google::protobuf::FieldDescriptor* field : set) {
        if (field->name() != allowed) out.unchangeable.push_back(absl::StrCat(section, ".", field->name()));
      }
    };
    unchangeable("model", ph.model(), "seq_len");
    unchangeable("fleet", ph.fleet(), "gpus");
    out.layout = LayoutFromProto(ph.layout());
    if (ph.has_efficiency()) out.efficiency = EfficiencyFromProto(ph.efficiency());
    if (ph.has_ramp()) out.ramp = {ph.ramp().from_sequences(), ph.ramp().step_sequences()};
    s.phases.push_back(std::move(out));
  }
  return s;
}

v1::PlanReport ReportToProto(const planner::PlanReport& r) {
  v1::PlanReport out;
  out.set_name(r.name);
  for (const planner::Finding& f : r.findings) {
    v1::Finding* pf = out.add_findings();
    pf->set_severity(f.severity == planner::Severity::kError ? v1::Finding::ERROR : v1::Finding::WARNING);
    pf->set_code(f.code);
    pf->set_message(f.message);
  }
  v1::BatchReport* b = out.mutable_batch();
  b->set_sequences_per_step(r.batch.sequences_per_step);
  b->set_tokens_per_step(r.batch.tokens_per_step);
  b->set_steps(r.batch.steps);
  b->set_last_step_tokens(r.batch.last_step_tokens);

  v1::ComputeReport* c = out.mutable_compute();
  c->set_flops_per_token(r.compute.flops_per_token);
  c->set_attention_flops_per_token(r.compute.attention_flops_per_token);
  c->set_total_flops(r.compute.total_flops);
  c->set_dense_total_flops(r.compute.dense_total_flops);
  c->set_cluster_flops_per_second(r.compute.cluster_flops_per_second);
  c->set_tokens_per_second(r.compute.tokens_per_second);
  c->set_active_gpu_hours(r.compute.active_gpu_hours);
  c->set_hardware_flops_per_token(r.compute.hardware_flops_per_token);
  c->set_mfu(r.compute.mfu);
  c->set_hfu(r.compute.hfu);
  c->set_bubble_fraction(r.compute.bubble_fraction);
  c->set_bubble_in_efficiency(r.compute.bubble_in_efficiency);
  c->set_busy_mfu(r.compute.busy_mfu);
  c->set_busy_hfu(r.compute.busy_hfu);
  c->set_attention_convention(r.compute.attention_convention);
  c->set_recompute(r.compute.recompute);

  v1::MemoryReport* m = out.mutable_memory();
  m->set_state_bytes_per_gpu(r.memory.state_bytes_per_gpu);
  m->set_fits(r.memory.fits);
  m->set_hbm_bytes(r.memory.hbm_bytes);
  m->set_weights(r.memory.weights);
  m->set_grads(r.memory.grads);
  m->set_optimizer(r.memory.optimizer);
  m->set_activation_bytes_per_layer(r.memory.activation_bytes_per_layer);
  m->set_activations(r.memory.activations);
  m->set_recompute_working_bytes(r.memory.recompute_working_bytes);
  m->set_logits(r.memory.logits);
  m->set_buffers(r.memory.buffers);
  m->set_reserve(r.memory.reserve);
  m->set_total_bytes(r.memory.total_bytes);
  m->set_layers_on_stage(r.memory.layers_on_stage);
  m->set_microbatches_in_flight(r.memory.microbatches_in_flight);
  m->set_stage(r.memory.stage);
  for (const auto& st : r.memory.stages) {
    v1::StageMemory* sm = m->add_stages();
    sm->set_stage(st.stage);
    sm->set_layers(st.layers);
    sm->set_total_bytes(st.total_bytes);
  }

  v1::CheckpointReport* k = out.mutable_checkpoint();
  k->set_size_bytes(r.checkpoint.size_bytes);
  k->set_write_seconds(r.checkpoint.write_seconds);
  k->set_read_seconds(r.checkpoint.read_seconds);
  k->set_blocking_seconds(r.checkpoint.blocking_seconds);
  k->set_young_interval_seconds(r.checkpoint.young_interval_seconds);
  k->set_daly_interval_seconds(r.checkpoint.daly_interval_seconds);
  k->set_interval_seconds(r.checkpoint.interval_seconds);
  k->set_count(r.checkpoint.count);
  k->set_overhead_seconds(r.checkpoint.overhead_seconds);
  k->set_storage_duty_cycle(r.checkpoint.storage_duty_cycle);
  k->set_total_written_bytes(r.checkpoint.total_written_bytes);
  k->set_restore_read_bytes(r.checkpoint.restore_read_bytes);

  v1::FailureReport* f = out.mutable_failures();
  f->set_node_mtbf_seconds(r.failures.node_mtbf_seconds);
  f->set_job_mtbf_seconds(r.failures.job_mtbf_seconds);
  f->set_expected_interruptions(r.failures.expected_interruptions);
  f->set_loss_per_interruption_seconds(r.failures.loss_per_interruption_seconds);
  f->set_expected_loss_seconds(r.failures.expected_loss_seconds);
  f->set_budget_seconds(r.failures.budget_seconds);
  f->set_budget_interruptions(r.failures.budget_interruptions);
  f->set_rate_spread(r.failures.rate_spread);
  f->set_job_interruptions_per_day(r.failures.job_interruptions_per_day);
  f->set_nodes_in_repair(r.failures.nodes_in_repair);
  f->set_nodes_in_repair_p99(r.failures.nodes_in_repair_p99);

  *out.mutable_schedule() = ScheduleToProto(r.schedule);

  v1::PowerReport* w = out.mutable_power();
  w->set_gpu_watts(r.power.gpu_watts);
  w->set_node_other_watts(r.power.node_other_watts);
  w->set_cluster_other_watts(r.power.cluster_other_watts);
  w->set_other_it_watts(r.power.other_it_watts);
  w->set_it_watts(r.power.it_watts);
  w->set_facility_watts(r.power.facility_watts);
  w->set_energy_mwh(r.power.energy_mwh);
  w->set_average_facility_watts(r.power.average_facility_watts);
  w->set_average_power_fraction(r.power.average_power_fraction);

  out.mutable_data()->set_epochs(r.data.epochs);
  out.mutable_data()->set_storage_bytes(r.data.storage_bytes);

  out.mutable_fleet()->set_gpus(r.fleet.gpus);
  out.mutable_fleet()->set_nodes(r.fleet.nodes);
  out.mutable_fleet()->set_spare_nodes(r.fleet.spare_nodes);
  out.mutable_fleet()->set_dp(r.fleet.dp);
  v1::CostReport* cost = out.mutable_cost();
  auto line = [](const planner::PlanReport::CostLine& in, v1::CostLine* o) {
    o->set_seconds(in.seconds);
    o->set_gpu_hours(in.gpu_hours);
    o->set_energy_mwh(in.energy_mwh);
    o->set_dollars(in.dollars);
  };
  line(r.cost.active_compute, cost->mutable_active_compute());
  line(r.cost.checkpoint, cost->mutable_checkpoint());
  line(r.cost.failure_budget, cost->mutable_failure_budget());
  line(r.cost.availability, cost->mutable_availability());
  line(r.cost.contingency, cost->mutable_contingency());
  line(r.cost.custom, cost->mutable_custom());
  line(r.cost.total, cost->mutable_total());
  cost->set_reserved_gpus(r.cost.reserved_gpus);
  cost->set_training_facility_watts(r.cost.training_facility_watts);
  cost->set_idle_facility_watts(r.cost.idle_facility_watts);
  for (const planner::PlanReport::Phase& ph : r.phases) {
    v1::PhaseReport* o = out.add_phases();
    o->set_name(ph.name);
    o->set_tokens(ph.tokens);
    o->set_seq_len(ph.seq_len);
    o->set_gpus(ph.gpus);
    o->set_steps(ph.steps);
    o->set_tokens_per_step(ph.tokens_per_step);
    o->set_tokens_per_second(ph.tokens_per_second);
    o->set_mfu(ph.mfu);
    o->set_bubble_fraction(ph.bubble_fraction);
    o->set_active_compute_seconds(ph.active_compute_seconds);
    o->set_memory_bytes(ph.memory_bytes);
    o->set_fits(ph.fits);
    o->set_tokens_before(ph.tokens_before);
    o->set_schedule_start_seconds(ph.schedule_start_seconds);
    o->set_schedule_end_seconds(ph.schedule_end_seconds);
    o->set_expected_interruptions(ph.expected_interruptions);
  }
  return out;
}

v1::DeadlineFleet DeadlineFleetToProto(const planner::DeadlineFleet& d) {
  v1::DeadlineFleet out;
  *out.mutable_deadline() = TimeToProto(d.deadline);
  out.set_met(d.met);
  out.set_gpus(d.gpus);
  out.set_nodes(d.nodes);
  out.set_dp(d.dp);
  out.set_tokens_per_step(d.tokens_per_step);
  out.set_micro_batch(d.micro_batch);
  out.set_grad_accum(d.grad_accum);
  out.set_batch_changed(d.batch_changed);
  out.set_mfu(d.mfu);
  out.set_bubble_fraction(d.bubble_fraction);
  out.set_busy_mfu(d.busy_mfu);
  if (d.gpus > 0) *out.mutable_schedule() = ScheduleToProto(d.schedule);
  out.set_explanation(d.explanation);
  return out;
}

}  // namespace flightplan::convert
