#include "server/loading_server.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "server/api_error.h"
#include "server/http_reply.h"

namespace triattn::server {

namespace {

http::ServerOptions loading_options(int listen_fd) {
  http::ServerOptions o;
  o.listen_fd = ::dup(listen_fd);
  if (o.listen_fd < 0) fail("serve: cannot share the listening socket: ", std::strerror(errno));
  o.workers = 1;
  o.stop_grace_s = 0.5;  // replies here are immediate: nothing to wait for
  return o;
}

http::Reply loading_reply(http::Request& req, const http::Wake&) {
  http::Reply reply;
  reply.response = std::make_unique<http::Response>();
  http::Response& r = *reply.response;
  r.status = 503;
  r.headers.push_back({"Retry-After", "1"});
  r.body = req.path == "/health" ? json_text({{"status", "loading"}})
                                 : json_text(ApiError(503, "the model is still loading; retry shortly").body());
  return reply;
}

}  // namespace

LoadingServer::LoadingServer(int listen_fd) : http_(loading_options(listen_fd), loading_reply) {
  http_.bind();
  loop_ = std::thread([this] { http_.run(); });
}

LoadingServer::~LoadingServer() { stop(); }

void LoadingServer::stop() {
  http_.stop();
  if (loop_.joinable()) loop_.join();
}

}  // namespace triattn::server
