#pragma once
// Which replica a scrape of /metrics came from: Prometheus's info-metric convention, one
// gauge at 1 whose label carries the name (--replica-name, default hostname:port), so that
// replicas behind one load balancer can be told apart and joined on (docs/serving.md).
#include <string>

namespace triattn::server {

// "# HELP/# TYPE triattn_replica_info gauge" and triattn_replica_info{name="..."} 1, the name
// escaped as Prometheus label values are (backslash, double quote, newline).
std::string replica_info_metric(const std::string& name);

// This machine's host name ("localhost" when it has none).
std::string host_name();

}  // namespace triattn::server
