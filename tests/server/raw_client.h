#pragma once
// A TCP client for the server tests that sends exactly the bytes a test gives (slowly,
// pipelined, malformed, half a request) and reads what comes back, with a deadline on every
// wait so a server that hangs fails the test instead of stalling it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
#include <cctype>

namespace triattn::test {

class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawClient() { close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  // False when the server has closed the connection (or reset it).
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Reads until `done(received so far)`, the peer closes, or `timeout_s` passes; everything
  // received is kept in received().
  const std::string& read_until(const std::function<bool(const std::string&)>& done, double timeout_s = 10) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (!done(in_) && !eof_) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        eof_ = true;
        break;
      }
      in_.append(buf, static_cast<size_t>(n));
    }
    return in_;
  }
  // Until the server closes the connection.
  const std::string& read_all(double timeout_s = 10) {
    return read_until([](const std::string&) { return false; }, timeout_s);
  }
  // Until `text` has arrived.
  const std::string& read_for(const std::string& text, double timeout_s = 10) {
    return read_until([&](const std::string& s) { return s.find(text) != std::string::npos; }, timeout_s);
  }
  bool eof() const { return eof_; }
  const std::string& received() const { return in_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // The client stops sending, and still reads (a half-close).
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  std::string in_;
};

// How many responses a buffer holds: their status lines ("HTTP/1.1 200 ", one per response).
// The status codes of the responses in a byte stream, read in order: each head, then as many
// body bytes as its Content-Length says (a response without one runs to the end).
inline std::vector<std::string> response_statuses(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < s.size() && s.compare(at, 7, "HTTP/1.") == 0) {
    out.push_back(s.substr(at + 9, 3));
    const size_t head_end = s.find("\r\n\r\n", at);
    if (head_end == std::string::npos) break;
    size_t length = s.size() - head_end - 4;
    for (size_t line = s.find("\r\n", at) + 2; line < head_end; line = s.find("\r\n", line) + 2) {
      std::string name = s.substr(line, 15);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (name == "content-length:") length = std::stoul(s.substr(line + 15, s.find("\r\n", line) - line - 15));
    }
    at = head_end + 4 + length;
  }
  return out;
}

inline int count_status_lines(const std::string& s, const std::string& status = "") {
  int n = 0;
  for (const std::string& code : response_statuses(s)) n += status.empty() || code == status;
  return n;
}

// Polls cond every 10 ms for up to `seconds`: for states a server reaches on its own time.
template <class F>
bool eventually(F cond, double seconds = 10) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

}  // namespace triattn::test
