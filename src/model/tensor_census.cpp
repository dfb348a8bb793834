#include "model/tensor_census.h"

#include <charconv>

#include "core/error.h"

namespace triattn {

namespace {

// N of "<prefix>N.<rest>", or nullopt for other names (and indices too long to be real).
std::optional<int64_t> layer_index(const std::string& name, const std::string& prefix) {
  if (name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const char* begin = name.data() + prefix.size();
  const char* end = name.data() + name.size();
  int64_t n = 0;
  const auto [ptr, ec] = std::from_chars(begin, end, n);
  if (ec != std::errc() || ptr == begin || ptr == end || *ptr != '.' || n < 0) return std::nullopt;
  return n;
}

constexpr size_t kNamesShown = 5;

}  // namespace

TensorCensus::TensorCensus(const std::vector<std::string>& names, std::string layer_prefix)
    : prefix_(std::move(layer_prefix)), unused_(names.begin(), names.end()) {
  for (const std::string& n : names)
    if (auto l = layer_index(n, prefix_)) layers_.insert(*l);
}

std::string TensorCensus::describe_layers() const {
  if (layers_.empty()) return "no " + prefix_ + "N tensors";
  std::string out = prefix_;
  bool first = true;
  for (auto it = layers_.begin(); it != layers_.end();) {
    const int64_t lo = *it;
    int64_t hi = lo;
    for (++it; it != layers_.end() && *it == hi + 1; ++it) hi = *it;
    out += (first ? "" : ", ") + std::to_string(lo) + (hi > lo ? "-" + std::to_string(hi) : "");
    first = false;
  }
  return out;
}

void TensorCensus::check_layer_count(int64_t n_layers, const std::string& count_source, const std::string& file) const {
  const auto count = static_cast<int64_t>(layers_.size());
  const bool contiguous = layers_.empty() || (*layers_.begin() == 0 && *layers_.rbegin() == count - 1);
  if (count == n_layers && contiguous) return;
  std::string expected;
  if (count == n_layers)
    expected = "; expected " + prefix_ + "0" + (n_layers > 1 ? "-" + std::to_string(n_layers - 1) : "");
  fail(count_source, " says ", n_layers, " layer", n_layers == 1 ? "" : "s", " but ", file, " holds tensors for ",
       count, " (", describe_layers(), ")", expected);
}

void TensorCensus::mark_used(const std::string& name) { unused_.erase(name); }

std::optional<std::string> TensorCensus::unused_report(const std::string& file) const {
  if (unused_.empty()) return std::nullopt;
  std::string out = file + ": " + std::to_string(unused_.size()) + (unused_.size() == 1 ? " tensor" : " tensors") +
                    " not used: ";
  size_t shown = 0;
  for (const std::string& n : unused_) {
    if (shown == kNamesShown) break;
    out += (shown++ ? ", " : "") + n;
  }
  if (unused_.size() > kNamesShown) out += " and " + std::to_string(unused_.size() - kNamesShown) + " more";
  return out;
}

}  // namespace triattn
