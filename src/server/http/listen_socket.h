#pragma once
// A listening TCP socket on host:port, apart from the server that serves it: `triattn serve`
// opens it before loading the model, so that a load balancer finds the port answering
// "loading" at once, and hands the same socket to the real server afterwards (connections
// that arrive in between wait in its backlog instead of being refused).
#include <string>

namespace triattn::http {

// Non-blocking, close-on-exec, SO_REUSEADDR (never SO_REUSEPORT: a second server on the same
// port must fail, not share its requests). Error naming the address when it cannot (in use,
// not an address of this machine, no permission).
int listen_socket(const std::string& host, int port);

// The port a bound socket listens on (the one picked for port 0).
int socket_port(int fd);

}  // namespace triattn::http
