#pragma once
// A number through a printf format ("%.3f", "%.0f%%"), for the report's text and figures.
#include <cstdio>
#include <string>

namespace triattn {

inline std::string number_text(const char* printf_format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, printf_format, v);
  return buf;
}

}  // namespace triattn
