#pragma once
// The outputs every evaluation writes into its -o directory: results.json (everything,
// per configuration and per sample), results.csv (one row per configuration), SVG plots,
// and the same table printed as Markdown on stdout (scripts/results.sh pastes it as is).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace triattn::eval {

// Cells are JSON values: numbers print with 4 significant digits in the Markdown table and
// exactly in the CSV; strings as they are; null as "".
struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<nlohmann::json>> rows;
};

std::string markdown_table(const Table& t);
std::string csv_table(const Table& t);

// Writes text to dir/name atomically (calib/atomic_write.h).
void write_output(const std::string& dir, const std::string& name, const std::string& text);

}  // namespace triattn::eval

#include "eval/eval_config.h"
#include "eval/svg_plot.h"

namespace triattn::eval {

// What one evaluation hands back: everything for results.json, the per-configuration table
// (results.csv and stdout) and its plots (file name -> plot).
struct TaskReport {
  nlohmann::json json;
  Table table;
  std::vector<std::pair<std::string, LinePlot>> plots;
};

// results.json, results.csv and each plot into dir.
void write_report(const std::string& dir, const TaskReport& report);

// A metric against budget: one series per evicting policy (its budgets on x), a dashed
// reference line per configuration that does not evict (full). values[i] belongs to
// configs[i].
LinePlot budget_plot(const std::string& title, const std::string& y_label, const std::vector<EvalConfig>& configs,
                     const std::vector<double>& values);

}  // namespace triattn::eval
