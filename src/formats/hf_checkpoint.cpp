// Hugging Face checkpoint directories: one model.safetensors, or shards listed in
// model.safetensors.index.json ("weight_map": tensor name -> shard file).
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "formats/safetensors.h"

namespace triattn {

namespace fs = std::filesystem;

namespace {
nlohmann::json read_json_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) fail(p.string(), ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    fail(p.string(), ": not valid JSON: ", e.what());
  }
}
}  // namespace

HfCheckpoint HfCheckpoint::open(const std::string& dir) {
  HfCheckpoint ck;
  const fs::path root(dir);
  const fs::path index_path = root / "model.safetensors.index.json";
  const fs::path single_path = root / "model.safetensors";

  auto add_shard = [&](const fs::path& p) {
    auto shard = SafetensorsFile::open(p.string());
    for (const SafetensorsTensor& t : shard->tensors()) {
      auto [it, inserted] = ck.index_.emplace(t.name, &t);
      if (!inserted) fail(dir, ": tensor '", t.name, "' appears in more than one shard (", p.string(), ")");
    }
    for (const auto& [k, v] : shard->metadata()) ck.metadata_[k] = v;
    ck.shards_.push_back(std::move(shard));
    return ck.shards_.back().get();
  };

  if (fs::exists(index_path)) {
    ck.source_ = index_path.string();
    const nlohmann::json index = read_json_file(index_path);
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
      fail(index_path.string(), ": no \"weight_map\" object");
    const nlohmann::json& wm = index["weight_map"];
    std::map<std::string, const SafetensorsFile*> shards;
    for (auto it = wm.begin(); it != wm.end(); ++it) {
      if (!it.value().is_string())
        fail(index_path.string(), ": weight_map entry '", it.key(), "' is not a file name");
      const std::string file = it.value().get<std::string>();
      if (!shards.count(file)) {
        const fs::path p = root / file;
        if (!fs::exists(p)) fail(index_path.string(), ": shard '", file, "' (for tensor '", it.key(), "') is missing");
        shards[file] = add_shard(p);
      }
      if (!shards[file]->find(it.key()))
        fail(index_path.string(), ": tensor '", it.key(), "' is not in its shard '", file, "'");
    }
    if (shards.empty()) fail(index_path.string(), ": weight_map is empty");
  } else if (fs::exists(single_path)) {
    ck.source_ = single_path.string();
    add_shard(single_path);
  } else {
    fail(dir, ": no model.safetensors or model.safetensors.index.json");
  }
  return ck;
}

const SafetensorsTensor* HfCheckpoint::find(const std::string& name) const {
  if (auto it = index_.find(name); it != index_.end()) return it->second;
  if (auto m = metadata_.find(name); m != metadata_.end())
    if (auto it = index_.find(m->second); it != index_.end()) return it->second;
  return nullptr;
}

std::vector<std::string> HfCheckpoint::names() const {
  std::vector<std::string> out;
  out.reserve(index_.size());
  for (const auto& [k, v] : index_) out.push_back(k);
  return out;
}

}  // namespace triattn
