#include "planner/pipeline_split.h"

#include <algorithm>
#include <cctype>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace flightplan::planner {
namespace {

const char* LayerName(char c) {
  switch (c) {
    case 'E':
      return "embedding";
    case 'L':
      return "loss";
    case 't':
      return "decoder";
    case 'm':
      return "mtp";
  }
  return "?";
}

// PipelineParallelLayerLayout.parse_str_to_list: commas are cosmetic; "(...)*n" is unrolled
// first, then "x*n" (each by one left-to-right pass of re.sub, as there); "|" splits stages.
// False, `error` set, on a character that is not a layer.
bool ParseLayout(const std::string& text, std::vector<std::string>& stages, std::string& error) {
  std::string s;
  for (char c : text) {
    if (c != ',') s += c;
  }
  // Each pass as one left-to-right re.sub: r'\(([^)]+)\)\*(\d+)' (a group, then '*' and
  // digits), then r'(.)\*(\d+)' (one character).
  const auto digit = [&](size_t at) { return at < s.size() && std::isdigit(static_cast<unsigned char>(s[at])); };
  auto unroll = [&](bool groups) {
    std::string out;
    size_t i = 0;
    while (i < s.size()) {
      size_t body_begin = i, body_end = i + 1, star = i + 1;
      bool match = false;
      if (groups) {
        const size_t close = s[i] == '(' ? s.find(')', i + 1) : std::string::npos;
        if (close != std::string::npos && close > i + 1 && close + 1 < s.size() && s[close + 1] == '*' &&
            digit(close + 2)) {
          body_begin = i + 1, body_end = close, star = close + 1, match = true;
        }
      } else {
        match = i + 1 < s.size() && s[i + 1] == '*' && digit(i + 2);
      }
      if (!match) {
        out += s[i++];
        continue;
      }
      size_t j = star + 1;
      uint64_t n = 0;
      while (digit(j)) {
        n = std::min<uint64_t>(n * 10 + static_cast<uint64_t>(s[j] - '0'), 10'000'000);
        ++j;
      }
      const std::string body = s.substr(body_begin, body_end - body_begin);
      if (n * body.size() + out.size() > 1'000'000) {
        error = absl::StrCat("'", text, "' unrolls to more than a million layers");
        return false;
      }
      for (uint64_t k = 0; k < n; ++k) out += body;
      i = j;
    }
    s = std::move(out);
    return true;
  };
  if (!unroll(true) || !unroll(false)) return false;
  stages.assign(1, "");
  for (char c : s) {
    if (c == '|') {
      stages.emplace_back();
    } else if (c == 'E' || c == 'L' || c == 't' || c == 'm') {
      stages.back() += c;
    } else {
      error = absl::StrCat("Invalid layer character: ", std::string(1, c), " (in '", text,
                           "'), known layer characters: ['E', 'L', 't', 'm']");
      return false;
    }
  }
  return true;
}

PipelineSplit FromLayout(const SplitSpec& spec) {
  PipelineSplit out;
  out.pp = spec.pp;
  out.given = true;
  std::vector<std::string> stages;
  if (!ParseLayout(spec.layout, stages, out.error)) return out;
  if (stages.size() % spec.pp != 0) {
    out.error = absl::StrCat("pipeline_model_parallel_layout must be divisible by pipeline_model_parallel_size (",
                             stages.size(), " stages, pp ", spec.pp, ")");
    return out;
  }
  out.virtual_stages = static_cast<uint32_t>(stages.size() / spec.pp);
  if (spec.virtual_stages && *spec.virtual_stages != out.virtual_stages) {
    out.error = absl::StrCat("virtual_pipeline_model_parallel_size conflicts with pipeline_model_parallel_layout (",
                             *spec.virtual_stages, " virtual stages given, ", out.virtual_stages, " in the layout)");
    return out;
  }
  // validate_layer_layout, in its order.
  std::string flat;
  for (const std::string& st : stages) flat += st;
  if (flat.empty() || flat.front() != 'E') {
    out.error = absl::StrCat("The first layer must be embedding, but got ", flat.empty() ? "none" : LayerName(flat[0]));
    return out;
  }
  if (flat.back() != 'L') {
    out.error = absl::StrCat("The last layer must be loss, but got ", LayerName(flat.back()));
    return out;
  }
  const auto count = [&](char c) { return static_cast<uint32_t>(std::count(flat.begin(), flat.end(), c)); };
  if (count('E') != 1) {
    out.error = "Embedding must be specified exactly once";
    return out;
  }
  if (count('L') != 1) {
    out.error = "Loss must be specified exactly once";
    return out;
  }
  if (count('t') != spec.layers) {
    out.error = absl::StrCat("Number of decoder layers ", count('t'), " must match num_layers ", spec.layers);
    return out;
  }
  if (const size_t m = flat.find('m'); m != std::string::npos && flat.find('t', m) != std::string::npos) {
    out.error = "decoder layers must be placed before MTP layers";
    return out;
  }
  const uint32_t mtp = count('m');
  for (size_t i = 0; i < stages.size(); ++i) {
    const uint32_t here = static_cast<uint32_t>(std::count(stages[i].begin(), stages[i].end(), 'm'));
    if (here == 0) continue;
    if (i / spec.pp + 1 != out.virtual_stages) {
      out.error = absl::StrCat(
          "Currently we restrict that the MTP should be always in the last virtual pipeline stage of that rank "
          "(stage ",
          i, " is virtual stage ", i / spec.pp, " of ", out.virtual_stages, ")");
      return out;
    }
    if (here != mtp) {
      out.error = "All of the MTP layers must be in the same one virtual pipeline stage";
      return out;
    }
  }
  for (size_t i = 0; i < stages.size(); ++i) {
    const std::string& st = stages[i];
    out.chunk_layers.push_back(
        static_cast<uint32_t>(std::count(st.begin(), st.end(), 't') + std::count(st.begin(), st.end(), 'm')));
    if (st.find('E') != std::string::npos) out.embedding_rank = static_cast<uint32_t>(i % spec.pp);
    if (st.find('L') != std::string::npos) out.loss_rank = static_cast<uint32_t>(i % spec.pp);
  }
  return out;
}

// A split of the plan's own keys over `v` virtual stages, the loss on the last rank, its
// chunks still to fill.
PipelineSplit Given(const SplitSpec& spec, uint32_t v) {
  PipelineSplit out;
  out.pp = spec.pp;
  out.virtual_stages = v;
  out.given = true;
  out.loss_rank = spec.pp - 1;
  return out;
}

// The embedding and the loss counted as layers (get_num_layers_to_build, the
// account_for_* branch; TransformerConfig.__post_init__ and validate_args for the checks).
PipelineSplit Accounted(const SplitSpec& spec, uint32_t v) {
  PipelineSplit out = Given(spec, v);
  const uint32_t e = spec.account_for_embedding ? 1 : 0, l = spec.account_for_loss ? 1 : 0;
  const uint64_t slots = uint64_t{spec.layers} + e + l;
  if (slots % spec.pp != 0) {
    out.error = v == 1
                    ? absl::StrCat("Number of layers should be divisible by the pipeline-model-parallel size (", slots,
                                   " = model.layers ", spec.layers, " + ", e + l, " counted, pp ", spec.pp, ")")
                    : absl::StrCat("num_layers: ", slots,
                                   " after enable account_for_embedding_in_pipeline_split or "
                                   "account_for_loss_in_pipeline_split must be divisible by "
                                   "pipeline_model_parallel_size ",
                                   spec.pp);
    return out;
  }
  const uint64_t per_rank = slots / spec.pp;
  if (per_rank % v != 0) {
    out.error = absl::StrCat("number of layers on each pipeline rank: ", per_rank,
                             " (after enable account_for_embedding_in_pipeline_split or "
                             "account_for_loss_in_pipeline_split) must be divisible by "
                             "virtual_pipeline_model_parallel_size ",
                             v);
    return out;
  }
  const uint32_t per_chunk = static_cast<uint32_t>(per_rank / v);
  out.chunk_layers.assign(uint64_t{spec.pp} * v, per_chunk);
  if (per_chunk < e || per_chunk < l || (spec.pp * v == 1 && per_chunk < e + l)) {
    out.chunk_layers.clear();
    out.error = per_chunk < e ? "Not enough layers in the first virtual pipeline stage"
                              : "Not enough layers in the last virtual pipeline stage";
    return out;
  }
  out.chunk_layers.front() -= e;
  out.chunk_layers.back() -= l;
  return out;
}

// Their own counts on the first and last ranks, the rest even over the middle ones
// (TransformerConfig.__post_init__'s "Uneven PP" branch, get_num_layers_to_build).
PipelineSplit FirstAndLast(const SplitSpec& spec, uint32_t v) {
  PipelineSplit out = Given(spec, v);
  int64_t rest = spec.layers;
  uint32_t middle = spec.pp;
  for (auto [name, count] : {std::pair{"first", spec.first_stage_layers}, {"last", spec.last_stage_layers}}) {
    if (!count) continue;
    if (*count == 0) {
      out.error = absl::StrCat("num_layers_in_", name, "_pipeline_stage must be larger than 0");
      return out;
    }
    if (*count % v != 0) {
      out.error = absl::StrCat("number of layers at ", name, " stage: ", *count,
                               " must be divisible by virtual pipeline parallel degree ", v);
      return out;
    }
    rest -= *count;
    --middle;
  }
  if (spec.pp == 1 || rest < 0) {
    out.error = absl::StrCat("the first and last stages' ", spec.layers - rest, " layers leave ", rest,
                             " of model.layers ", spec.layers, " for ", middle, " middle stages of pp ", spec.pp);
    return out;
  }
  if ((rest != 0) != (middle != 0)) {
    out.error =
        absl::StrCat("Mismatch: ", rest, " middle layers remaining but ", middle, " middle PP stages available.");
    return out;
  }
  if (middle > 0 && rest % middle != 0) {
    out.error = absl::StrCat("number of layers at middle stage: ", rest,
                             " must be divisible by the middle pipeline model parallel size ", middle);
    return out;
  }
  const uint32_t per_middle = middle > 0 ? static_cast<uint32_t>(rest / middle) : 0;
  if (middle > 0 && per_middle % v != 0) {
    out.error = absl::StrCat("number of layers on each middle pipeline rank: ", per_middle,
                             " must be divisible by virtual pipeline parallel degree ", v);
    return out;
  }
  out.chunk_layers.resize(uint64_t{spec.pp} * v);
  for (uint32_t vs = 0; vs < v; ++vs) {
    for (uint32_t rank = 0; rank < spec.pp; ++rank) {
      uint32_t on_rank = per_middle;
      if (rank == 0 && spec.first_stage_layers) on_rank = *spec.first_stage_layers;
      if (rank + 1 == spec.pp && spec.last_stage_layers) on_rank = *spec.last_stage_layers;
      out.chunk_layers[uint64_t{vs} * spec.pp + rank] = on_rank / v;
    }
  }
  return out;
}

}  // namespace

uint32_t PipelineSplit::StageLayers(uint32_t rank) const {
  uint32_t sum = 0;
  for (size_t i = rank; i < chunk_layers.size(); i += pp) sum += chunk_layers[i];
  return sum;
}

uint32_t PipelineSplit::MaxStageLayers() const {
  uint32_t most = 0;
  for (uint32_t r = 0; r < pp; ++r) most = std::max(most, StageLayers(r));
  return most;
}

uint32_t PipelineSplit::MaxChunkLayers() const {
  return chunk_layers.empty() ? 0 : *std::max_element(chunk_layers.begin(), chunk_layers.end());
}

uint32_t PipelineSplit::TotalLayers() const { return std::accumulate(chunk_layers.begin(), chunk_layers.end(), 0u); }

PipelineSplit SplitPipeline(const SplitSpec& spec) {
  const bool accounted = spec.account_for_embedding || spec.account_for_loss;
  const bool ends = spec.first_stage_layers || spec.last_stage_layers;
  const uint32_t pp = std::max(1u, spec.pp);
  SplitSpec s = spec;
  s.pp = pp;
  if (!spec.layout.empty()) {
    if (accounted || ends) {
      PipelineSplit out;
      out.pp = pp;
      out.given = true;
      out.error =
          "pipeline_model_parallel_layout cannot be set with other pipeline layout arguments "
          "(decoder_first_pipeline_num_layers, decoder_last_pipeline_num_layers, "
          "account_for_embedding_in_pipeline_split, account_for_loss_in_pipeline_split)";
      return out;
    }
    return FromLayout(s);
  }
  const uint32_t v = std::max(1u, spec.virtual_stages.value_or(1));
  // A bound on the chunks held (a plan file's pp x virtual_stages can be anything).
  constexpr uint64_t kMaxChunks = 1'000'000;
  if (uint64_t{pp} * v > kMaxChunks) {
    PipelineSplit out;
    out.pp = pp;
    out.virtual_stages = v;
    out.given = accounted || ends;
    if (out.given) out.error = absl::StrCat("pp ", pp, " x virtual_stages ", v, " is more than a million stages");
    return out;
  }
  if (accounted && ends) {
    PipelineSplit out;
    out.pp = pp;
    out.virtual_stages = v;
    out.given = true;
    out.error =
        "num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage cannot be set at the same time "
        "with account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split";
    return out;
  }
  if ((accounted || ends) && spec.layers == 0) {
    PipelineSplit out;
    out.pp = pp;
    out.virtual_stages = v;
    out.given = true;
    out.error = "the split places model.layers, which is not given";
    return out;
  }
  if (accounted) return Accounted(s, v);
  if (ends) return FirstAndLast(s, v);
  // The even default; where it does not divide, the chunks differ by one layer at most.
  PipelineSplit out;
  out.pp = pp;
  out.virtual_stages = v;
  out.loss_rank = pp - 1;
  const uint64_t chunks = uint64_t{pp} * v;
  for (uint64_t i = 0; i < chunks && spec.layers > 0; ++i) {
    out.chunk_layers.push_back(static_cast<uint32_t>(spec.layers / chunks + (i < spec.layers % chunks ? 1 : 0)));
  }
  return out;
}

double SplitBubbleFraction(const PipelineSplit& split, uint64_t microbatches) {
  const double layers = split.TotalLayers();
  if (split.pp <= 1 || microbatches == 0 || layers <= 0) return 0;
  const double m = static_cast<double>(microbatches);
  const double busy = m * layers / split.pp;
  const double step = m * split.MaxStageLayers() + (split.pp - 1.0) * split.MaxChunkLayers();
  return step > 0 ? std::clamp(1 - busy / step, 0.0, 1.0) : 0;
}

}  // namespace flightplan::planner
