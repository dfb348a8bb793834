#include "server/replica_info.h"

#include <unistd.h>

namespace triattn::server {

std::string replica_info_metric(const std::string& name) {
  std::string label;
  for (char c : name) {
    if (c == '\\' || c == '"') label += '\\';
    if (c == '\n') {
      label += "\\n";
      continue;
    }
    label += c;
  }
  return "# HELP triattn_replica_info Which replica this is (--replica-name).\n# TYPE triattn_replica_info gauge\n"
         "triattn_replica_info{name=\"" +
         label + "\"} 1\n";
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace triattn::server
