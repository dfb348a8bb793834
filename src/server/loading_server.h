#pragma once
// What `triattn serve` answers while the model loads: the port is open at once, GET /health
// says 503 {"status": "loading"} (a load balancer keeps the replica out of rotation instead
// of seeing refused connections), and every other request gets 503 with Retry-After. stop()
// ends it without closing the listening socket it was given a copy of, which the real server
// then serves.
#include <thread>

#include "server/http/http_server.h"

namespace triattn::server {

class LoadingServer {
 public:
  // Serves `listen_fd` (its own copy: dup'ed) on a background thread.
  explicit LoadingServer(int listen_fd);
  ~LoadingServer();
  LoadingServer(const LoadingServer&) = delete;
  LoadingServer& operator=(const LoadingServer&) = delete;
  // Returns once its connections are closed; the listening socket stays open. Repeatable.
  void stop();

 private:
  http::Server http_;
  std::thread loop_;
};

}  // namespace triattn::server
