#include "analyze/report_files.h"

#include <filesystem>
#include <fstream>

#include "analyze/analysis_json.h"
#include "analyze/figures.h"
#include "analyze/findings.h"
#include "analyze/report_html.h"
#include "calib/atomic_write.h"
#include "core/error.h"

namespace triattn {

void write_text_file(const std::string& path, const std::string& text) {
  write_file_atomically(path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    out.close();
    if (!out) fail(tmp, ": cannot write");
  });
}

std::vector<std::string> write_analysis_report(const std::string& dir, const AnalysisRun& run) {
  namespace fs = std::filesystem;
  const std::vector<Figure> figures = report_figures(run);
  const std::vector<std::string> words = findings(run);
  std::vector<std::string> written;
  auto put = [&](const std::string& name, const std::string& text) {
    const std::string p = (fs::path(dir) / name).string();
    write_text_file(p, text);
    written.push_back(p);
  };
  put("analysis.json", analysis_json(run, figures, words).dump(1) + "\n");
  for (const Figure& f : figures) put(f.file, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + f.svg);
  put("index.html", report_html(run, figures, words));
  return written;
}

}  // namespace triattn
