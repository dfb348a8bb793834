#include "eval/report.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "calib/atomic_write.h"
#include "core/error.h"

namespace triattn::eval {

namespace {

std::string cell(const nlohmann::json& v, bool exact) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) {
    char b[40];
    std::snprintf(b, sizeof b, exact ? "%.10g" : "%.4g", v.get<double>());
    return b;
  }
  return v.dump();
}

std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string markdown_table(const Table& t) {
  std::string o = "|";
  for (const auto& c : t.columns) o += " " + c + " |";
  o += "\n|";
  for (size_t i = 0; i < t.columns.size(); ++i) o += i == 0 ? "---|" : "---:|";
  o += "\n";
  for (const auto& r : t.rows) {
    o += "|";
    for (const auto& v : r) o += " " + cell(v, false) + " |";
    o += "\n";
  }
  return o;
}

std::string csv_table(const Table& t) {
  std::string o;
  for (size_t i = 0; i < t.columns.size(); ++i) o += (i ? "," : "") + csv_quote(t.columns[i]);
  o += "\n";
  for (const auto& r : t.rows) {
    for (size_t i = 0; i < r.size(); ++i) o += (i ? "," : "") + csv_quote(cell(r[i], true));
    o += "\n";
  }
  return o;
}

void write_output(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::path(dir) / name).string();
  write_file_atomically(path, [&](const std::string& tmp) {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    f.close();
    if (!f) fail(tmp, ": write failed");
  });
}

}  // namespace triattn::eval

namespace triattn::eval {

void write_report(const std::string& dir, const TaskReport& report) {
  write_output(dir, "results.json", report.json.dump(2) + "\n");
  write_output(dir, "results.csv", csv_table(report.table));
  for (const auto& [name, plot] : report.plots) write_output(dir, name, render_svg(plot));
}

LinePlot budget_plot(const std::string& title, const std::string& y_label, const std::vector<EvalConfig>& configs,
                     const std::vector<double>& values) {
  LinePlot p;
  p.title = title;
  p.x_label = "KV budget B (tokens per layer and KV head)";
  p.y_label = y_label;
  p.log2_x = true;
  for (size_t i = 0; i < configs.size(); ++i) {
    const EvalConfig& c = configs[i];
    if (!c.prunes()) {
      p.references.push_back({c.policy_name(), values[i]});
      continue;
    }
    auto it = std::find_if(p.series.begin(), p.series.end(), [&](const PlotSeries& s) { return s.name == c.policy_name(); });
    if (it == p.series.end()) {
      p.series.push_back({c.policy_name(), {}});
      it = p.series.end() - 1;
    }
    it->points.emplace_back(static_cast<double>(c.budget), values[i]);
  }
  return p;
}

}  // namespace triattn::eval
