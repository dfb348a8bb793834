#include "server/http/listen_socket.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace triattn::http {

int listen_socket(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port_text = std::to_string(port);
  const std::string where = host + ":" + port_text;
  if (int rc = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &res); rc != 0)
    fail("serve: cannot listen on ", where, ": ", ::gai_strerror(rc));
  int listen_fd = -1, err = 0;
  for (addrinfo* a = res; a && listen_fd < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) {
      listen_fd = fd;
      break;
    }
    err = errno;
    ::close(fd);
  }
  ::freeaddrinfo(res);
  if (listen_fd < 0) {
    if (err == EADDRINUSE) fail("serve: cannot listen on ", where, ": the port is already in use (another server?)");
    if (err == EADDRNOTAVAIL) fail("serve: cannot listen on ", where, ": not an address of this machine");
    if (err == EACCES) fail("serve: cannot listen on ", where, ": permission denied (ports below 1024 need root)");
    fail("serve: cannot listen on ", where, ": ", std::strerror(err));
  }
  return listen_fd;
}

int socket_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                    : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

}  // namespace triattn::http
