#include "cli/kernel_choice.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "calib/atomic_write.h"
#include "core/error.h"
#include "ops/cpu_dispatch.h"
#include "ops/kernel_timing.h"

namespace triattn::cli {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// Bump when a kernel's speed changes enough that machines should measure again.
constexpr int kKernelRevision = 1;

std::vector<std::string> g_lines;

std::string isa_list() {
  std::string s;
  for (ops::Isa isa : ops::supported_isas()) s += (s.empty() ? "" : ",") + std::string(ops::isa_name(isa));
  return s;
}

std::optional<ops::Isa> isa_named(const std::string& name) {
  for (ops::Isa isa : ops::supported_isas())
    if (ops::isa_name(isa) == name) return isa;
  return std::nullopt;
}

std::optional<DType> layout_named(const std::string& name) {
  for (int t = 0; t < ops::kNumDTypes; ++t)
    if (dtype_name(static_cast<DType>(t)) == name) return static_cast<DType>(t);
  return std::nullopt;
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&now));
  return buf;
}

// The layer matrices by file type, experts one matrix each, largest types first.
std::map<DType, std::vector<TensorView>> matrices_by_type(const ModelWeights& w) {
  std::map<DType, std::vector<TensorView>> out;
  auto add = [&](const TensorView& t) {
    if (t.empty()) return;
    if (t.shape.size() == 2) {
      out[t.type].push_back(t);
    } else if (t.shape.size() == 3) {
      const TensorView one{t.type, {t.shape[1], t.shape[2]}, nullptr};
      for (int64_t e = 0; e < t.shape[0]; ++e) {
        TensorView m = one;
        m.data = static_cast<const uint8_t*>(t.data) + static_cast<size_t>(e) * one.nbytes();
        out[t.type].push_back(m);
      }
    }
  };
  for (const LayerWeights& L : w.layers) {
    for (const TensorView* t : L.matrices()) add(*t);
    for (const TensorView* t : L.expert_stacks()) add(*t);
  }
  add(w.output);
  return out;
}

size_t total_bytes(const std::vector<TensorView>& ms) {
  size_t b = 0;
  for (const TensorView& m : ms) b += m.nbytes();
  return b;
}

bool same_key(const json& e, const std::string& cpu, int threads, DType type) {
  return e.value("cpu", "") == cpu && e.value("isas", "") == isa_list() && e.value("threads", -1) == threads &&
         e.value("revision", -1) == kKernelRevision && e.value("type", "") == dtype_name(type);
}

json read_cache(const std::string& path) {
  if (path.empty() || !fs::exists(path)) return json::array();
  try {
    std::ifstream in(path);
    json j = json::parse(in);
    if (j.is_object() && j.value("format", "") == "triattn-kernel-choices" && j["entries"].is_array())
      return j["entries"];
    std::cerr << "warning: " << path << " is not a triattn kernel-choice file; measuring again and replacing it\n";
  } catch (const std::exception& e) {
    std::cerr << "warning: " << path << ": unreadable kernel-choice file (" << e.what()
              << "); measuring again and replacing it\n";
  }
  return json::array();
}

void write_cache(const std::string& path, const json& entries) {
  if (path.empty()) return;
  try {
    fs::create_directories(fs::path(path).parent_path());
    write_file_atomically(path, [&](const std::string& tmp) {
      std::ofstream out(tmp);
      out << json{{"format", "triattn-kernel-choices"}, {"entries", entries}}.dump(1) << "\n";
      if (!out) fail("cannot write ", tmp);
    });
  } catch (const std::exception& e) {
    std::cerr << "warning: kernel choices not saved: " << e.what() << "\n";
  }
}

// The cached choice as kernels, or nullopt when an entry names what this build or CPU lacks.
std::optional<ops::KernelChoice> parse_choice(const json& e) {
  try {
    const auto isa = isa_named(e.at("isa").get<std::string>());
    const auto batch = isa_named(e.at("batch_isa").get<std::string>());
    const auto layout = layout_named(e.at("layout").get<std::string>());
    if (isa && batch && layout) return ops::KernelChoice{{*isa, *layout}, *batch};
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::string line_for(DType type, const json& e) {
  char buf[96];
  std::string s = std::string(dtype_name(type)) + ": " + e.value("isa", "") + " " + e.value("layout", "");
  if (e.value("batch_isa", "") != e.value("isa", "")) s += " (batches: " + e.value("batch_isa", "") + ")";
  s += ", measured " + e.value("date", "?") + " on " + std::to_string(e.value("threads", 0)) + " threads; one token:";
  bool first = true;
  for (const json& t : e.value("timings", json::array())) {
    std::snprintf(buf, sizeof buf, "%s %s %s %.3g ms", first ? "" : ",", t.value("isa", "").c_str(),
                  t.value("layout", "").c_str(), t.value("decode_ms", 0.0));
    s += buf;
    first = false;
  }
  return s;
}

}  // namespace

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown";
}

std::string kernel_cache_path() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return (fs::path(x) / "triattn" / "kernels.json").string();
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "triattn" / "kernels.json").string();
  return "";
}

void choose_kernels(const ModelWeights& w, int threads, KernelChoiceMode mode, const std::string& cache_path,
                    size_t min_measured_bytes) {
  if (mode == KernelChoiceMode::Isa) return;
  ThreadPool pool(threads);
  const std::string cpu = cpu_model_name();
  json entries = read_cache(cache_path);
  bool changed = false;
  for (const auto& [type, matrices] : matrices_by_type(w)) {
    json* cached = nullptr;
    for (json& e : entries)
      if (same_key(e, cpu, pool.size(), type)) cached = &e;
    if (cached && mode == KernelChoiceMode::Measure) {
      if (const auto c = parse_choice(*cached)) {
        ops::use_kernel_variant(type, c->decode, c->batch_isa);
        g_lines.push_back(line_for(type, *cached) + " (cached)");
        continue;
      }
    }
    if (total_bytes(matrices) < min_measured_bytes) continue;
    const std::vector<ops::VariantTiming> timings = ops::time_kernel_variants(type, matrices, &pool);
    if (timings.size() < 2) continue;  // nothing to choose between
    const ops::KernelChoice c = ops::fastest(timings);
    ops::use_kernel_variant(type, c.decode, c.batch_isa);
    json e = {{"cpu", cpu},           {"isas", isa_list()},
              {"threads", pool.size()}, {"revision", kKernelRevision},
              {"type", dtype_name(type)}, {"isa", ops::isa_name(c.decode.isa)},
              {"layout", dtype_name(c.decode.layout)}, {"batch_isa", ops::isa_name(c.batch_isa)},
              {"date", today()},        {"timings", json::array()}};
    for (const ops::VariantTiming& t : timings)
      e["timings"].push_back({{"isa", ops::isa_name(t.variant.isa)},
                              {"layout", dtype_name(t.variant.layout)},
                              {"decode_ms", t.decode_s * 1e3},
                              {"batch_ms", t.batch_s * 1e3}});
    if (cached)
      *cached = e;
    else
      entries.push_back(e);
    changed = true;
    g_lines.push_back(line_for(type, e));
  }
  if (changed) write_cache(cache_path, entries);
}

std::vector<std::string> kernel_choice_lines() { return g_lines; }

std::vector<std::string> cached_kernel_choices(const ModelWeights& w, const std::string& cache_path) {
  const std::string cpu = cpu_model_name();
  std::vector<std::string> lines;
  const json entries = read_cache(cache_path);
  for (const auto& [type, matrices] : matrices_by_type(w))
    for (const json& e : entries)
      if (same_key(e, cpu, e.value("threads", -1), type)) lines.push_back(line_for(type, e));
  return lines;
}

}  // namespace triattn::cli
