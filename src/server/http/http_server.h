#pragma once
// The HTTP/1.1 server under `triattn serve`, built for clients that misbehave: one event loop
// (epoll) owns every socket, so a slow or idle connection costs a few kilobytes, never a
// thread. Each request is read whole within a deadline (slow senders get 408), its size is
// bounded as it arrives (413 as soon as a length or a chunk passes the limit), connections are
// capped (past the cap a new one gets 503), and keep-alive, pipelining and "Expect:
// 100-continue" are honoured. Handlers run on a few worker threads; a reply that waits on the
// engine is returned as a PendingReply or a BodyStream, which the loop polls when the
// handler's Wake says there is news, so no thread waits on a generation either. A client that
// goes away (or stops reading for the write timeout) has its reply stopped at once.
// stop() closes the listener, gives the replies in flight a short grace to finish properly
// (a stream ends with its closing event), then closes what is left.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "server/http/http_message.h"
#include "server/http/request_parser.h"

namespace triattn::http {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (port() tells which)
  // A listening socket (http/listen_socket.h) to serve instead of opening host:port; the
  // server owns it from bind() on.
  int listen_fd = -1;
  Limits limits;
  int max_connections = 1024;     // open at once; past it a new connection gets 503
  int workers = 4;                // threads that run handlers (parsing, tokenizing, queueing)
  double request_timeout_s = 30;  // from a request's first byte to its last (else 408)
  double idle_timeout_s = 60;     // a kept-alive connection with no request in flight
  double write_timeout_s = 60;    // a reply the client reads nothing of for this long is dropped
  double stop_grace_s = 2;        // stop(): how long replies in flight may take to finish
  // Added to the message of a 413 (body too large): how to raise the limit, e.g. "--max-body".
  std::string body_limit_hint;
};

// Safe from any thread, as often as wanted (wake-ups coalesce): the pending reply or body
// stream of this request has news.
using Wake = std::function<void()>;

// What a handler answers: a response now, or one that comes later.
struct Reply {
  std::unique_ptr<Response> response;
  std::shared_ptr<PendingReply> pending;
};
using Handler = std::function<Reply(Request& request, const Wake& wake)>;

class Server {
 public:
  Server(const ServerOptions& options, Handler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Listens on host:port (or adopts listen_fd); Error naming the address when it cannot (in use, not an address
  // of this machine, no permission).
  void bind();
  int port() const { return port_; }
  // The event loop on the calling thread until stop() (bind() first).
  void run();
  // From any thread, repeatable; run() returns once the replies in flight are done or the
  // grace has passed.
  void stop();
  int connections() const { return open_.load(); }
  // Requests in flight: read whole and not yet answered to the last byte (a drain waits for
  // none before stop(), which would cut them).
  int busy() const { return busy_.load(); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  ServerOptions options_;
  int port_ = 0;
  std::atomic<int> open_{0};
  std::atomic<int> busy_{0};
};

}  // namespace triattn::http
