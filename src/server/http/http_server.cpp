#include "server/http/http_server.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "server/http/listen_socket.h"

namespace triattn::http {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kListenKey = 0;
constexpr uint64_t kEventKey = 1;  // connection ids start above these
constexpr size_t kReadChunk = 64 * 1024;
// Unparsed bytes a connection may hold while its request is being answered (the next
// pipelined requests); past it the loop stops reading it until the reply is out.
constexpr size_t kMaxBufferedInput = 256 * 1024;
// A stream is pulled only while less than this is waiting to be written: a client that reads
// slowly holds the engine's text, not an ever larger send buffer.
constexpr size_t kMaxBufferedOutput = 256 * 1024;

Clock::duration seconds(double s) { return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); }

std::string json_error(int status, const std::string& message) {
  std::string escaped;
  for (char c : message) {
    if (c == '"' || c == '\\') {
      escaped += '\\';
      escaped += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      escaped += ' ';
    } else {
      escaped += c;
    }
  }
  const char* type = status >= 500 ? "server_error" : "invalid_request_error";
  return "{\"error\":{\"message\":\"" + escaped + "\",\"type\":\"" + type + "\",\"param\":null,\"code\":" +
         std::to_string(status) + "}}";
}

// A large reply's buffer goes back to the system once it is sent, not only to the allocator
// (a reply of prompt log-probabilities can be tens of MiB).
void release(std::string& buffer) {
  const size_t was = buffer.capacity();
  std::string().swap(buffer);
#ifdef __GLIBC__
  if (was > (16u << 20)) ::malloc_trim(0);
#endif
}

void set_nodelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace

// Wake-ups and finished handler calls, posted from any thread to the loop.
struct Inbox {
  std::mutex mu;
  std::vector<uint64_t> woken;
  std::vector<std::pair<uint64_t, Reply>> replies;
  int event_fd = -1;
  bool signalled = false;

  void signal_locked() {
    if (signalled || event_fd < 0) return;
    signalled = true;
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(event_fd, &one, sizeof one);
  }
  void wake(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu);
    woken.push_back(id);
    signal_locked();
  }
  void post(uint64_t id, Reply reply) {
    std::lock_guard<std::mutex> lock(mu);
    replies.emplace_back(id, std::move(reply));
    signal_locked();
  }
  void signal() {
    std::lock_guard<std::mutex> lock(mu);
    signal_locked();
  }
};

struct Server::Impl {
  // Draining: the reply to a request that was not read whole (a 413, a 408) is out and the
  // write side shut; what the client still sends is read and dropped for a moment, so that
  // closing does not reset the connection before the client has read the reply.
  enum class Phase { Reading, Handling, Waiting, Streaming, Closing, Draining };

  struct Conn {
    int fd = -1;
    uint64_t id = 0;
    RequestParser parser;
    std::string in;   // received, not yet parsed
    std::string out;  // to send
    size_t out_sent = 0;
    Phase phase = Phase::Reading;
    bool keep_alive = true;
    bool head_request_minor0 = false;  // the request being answered is HTTP/1.0
    bool continue_sent = false;
    bool news = false;         // woken since the last poll/pull
    bool peer_closed = false;  // the client closed its side
    bool reading = true;       // EPOLLIN is on
    bool writing = false;      // EPOLLOUT is on
    bool chunked = false;      // the stream's body goes out in chunks (HTTP/1.1)
    bool deadline_kind_idle = false;  // `deadline` is the idle wait, not a request's read
    bool close_when_flushed = false;
    bool linger = false;       // drain before closing (the request was not read whole)
    bool dead = false;         // closed; removed from the table by reap()
    Clock::time_point deadline;       // of the phase: the request's read, or the idle wait
    Clock::time_point last_progress;  // of writing
    std::shared_ptr<PendingReply> pending;
    std::shared_ptr<BodyStream> stream;
    explicit Conn(const Limits& l) : parser(l) {}
    size_t backlog() const { return out.size() - out_sent; }
  };

  struct Job {
    uint64_t id;
    Request request;
  };

  Server& owner;
  ServerOptions opt;
  Handler handler;
  int listen_fd = -1;
  int epoll_fd = -1;
  std::shared_ptr<Inbox> inbox = std::make_shared<Inbox>();
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns;
  uint64_t next_id = kEventKey + 1;
  bool accept_paused = false;
  Clock::time_point accept_resume;

  std::atomic<bool> stopping{false};
  bool stop_seen = false;
  Clock::time_point grace_end;

  // Workers: handler calls.
  std::mutex jobs_mu;
  std::condition_variable jobs_cv;
  std::deque<Job> jobs;
  bool workers_stop = false;
  std::vector<std::thread> workers;

  Impl(Server& s, const ServerOptions& o, Handler h) : owner(s), opt(o), handler(std::move(h)) {}

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(jobs_mu);
      workers_stop = true;
    }
    jobs_cv.notify_all();
    for (std::thread& t : workers) t.join();
    for (auto& [id, c] : conns) ::close(c->fd);
    {
      std::lock_guard<std::mutex> lock(inbox->mu);
      if (inbox->event_fd >= 0) ::close(inbox->event_fd);
      inbox->event_fd = -1;  // wakes after this are dropped
    }
    if (listen_fd >= 0) ::close(listen_fd);
    if (epoll_fd >= 0) ::close(epoll_fd);
  }

  // ---------------------------------------------------------------- setup

  void bind_listener() {
    listen_fd = opt.listen_fd >= 0 ? opt.listen_fd : listen_socket(opt.host, opt.port);
    owner.port_ = socket_port(listen_fd);
    epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    inbox->event_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd < 0 || inbox->event_fd < 0) fail("serve: cannot create the event loop: ", std::strerror(errno));
    add_fd(listen_fd, kListenKey, EPOLLIN);
    add_fd(inbox->event_fd, kEventKey, EPOLLIN);
    for (int i = 0; i < std::max(1, opt.workers); ++i) workers.emplace_back([this] { work(); });
  }

  void add_fd(int fd, uint64_t key, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = key;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }

  void update_events(Conn& c) {
    epoll_event ev{};
    ev.events = (c.reading ? EPOLLIN | EPOLLRDHUP : 0u) | (c.writing ? EPOLLOUT : 0u);
    ev.data.u64 = c.id;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &ev);
  }

  // ---------------------------------------------------------------- workers

  void work() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(jobs_mu);
        jobs_cv.wait(lock, [&] { return workers_stop || !jobs.empty(); });
        if (workers_stop) return;
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      Reply reply;
      try {
        const std::shared_ptr<Inbox> box = inbox;
        const uint64_t id = job.id;
        reply = handler(job.request, [box, id] { box->wake(id); });
        if (!reply.response && !reply.pending) throw std::logic_error("the handler gave no reply");
      } catch (const std::exception& e) {
        reply = {};
        reply.response = std::make_unique<Response>();
        reply.response->status = 500;
        reply.response->body = json_error(500, std::string("internal error: ") + e.what());
      }
      inbox->post(job.id, std::move(reply));
    }
  }

  // ---------------------------------------------------------------- the loop

  void run() {
    std::vector<epoll_event> events(256);
    for (;;) {
      const Clock::time_point now = Clock::now();
      if (stopping.load() && !stop_seen) begin_stop(now);
      if (stop_seen && (conns.empty() || now >= grace_end)) break;
      if (accept_paused && now >= accept_resume) {
        accept_paused = false;
        if (!stop_seen) add_fd(listen_fd, kListenKey, EPOLLIN);
      }
      const int timeout_ms = next_timeout_ms(now);
      const int n = ::epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), timeout_ms);
      if (n < 0 && errno != EINTR) fail("serve: the event loop failed: ", std::strerror(errno));
      for (int i = 0; i < std::max(n, 0); ++i) {
        const uint64_t key = events[i].data.u64;
        if (key == kListenKey) {
          accept_all();
        } else if (key == kEventKey) {
          uint64_t v;
          while (::read(inbox->event_fd, &v, sizeof v) > 0) {
          }
        } else if (auto it = conns.find(key); it != conns.end()) {
          on_io(*it->second, events[i].events);
        }
      }
      drain_inbox();
      expire(Clock::now());
      reap();
    }
    for (auto& [id, c] : conns) close_conn(*c);  // past the grace: what is left is cut off
    conns.clear();
    owner.open_ = 0;
    owner.busy_ = 0;
  }

  int next_timeout_ms(Clock::time_point now) const {
    Clock::time_point next = now + std::chrono::seconds(1);
    if (stop_seen) next = std::min(next, grace_end);
    if (accept_paused) next = std::min(next, accept_resume);
    for (const auto& [id, c] : conns) {
      if (c->phase == Phase::Reading || c->phase == Phase::Draining) next = std::min(next, c->deadline);
      if (c->backlog() > 0) next = std::min(next, c->last_progress + seconds(opt.write_timeout_s));
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
    return static_cast<int>(std::clamp<int64_t>(ms + 1, 0, 1000));
  }

  void accept_all() {
    for (;;) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: stop accepting for a moment instead of spinning on the listener.
          ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
          accept_paused = true;
          accept_resume = Clock::now() + std::chrono::milliseconds(100);
        }
        return;
      }
      if (stop_seen || static_cast<int>(conns.size()) >= opt.max_connections) {
        const std::string body = json_error(503, stop_seen ? "the server is shutting down"
                                                           : "too many open connections; try again later");
        const std::string msg = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: "
                                "1\r\nConnection: close\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body;
        [[maybe_unused]] ssize_t n = ::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        ::close(fd);
        continue;
      }
      set_nodelay(fd);
      auto c = std::make_unique<Conn>(opt.limits);
      c->fd = fd;
      c->id = next_id++;
      // A new connection must send its request within the request timeout.
      c->deadline = Clock::now() + seconds(opt.request_timeout_s);
      add_fd(fd, c->id, EPOLLIN | EPOLLRDHUP);
      conns.emplace(c->id, std::move(c));
      owner.open_ = static_cast<int>(conns.size());
    }
  }

  void on_io(Conn& c, uint32_t ev) {
    if (ev & (EPOLLHUP | EPOLLERR)) {  // reset, or closed both ways: nobody reads a reply
      client_gone(c);
      return;
    }
    if (ev & (EPOLLIN | EPOLLRDHUP)) read_some(c);
    if (!c.dead && (ev & EPOLLOUT)) flush(c);
    if (!c.dead) advance(c);
  }

  void read_some(Conn& c) {
    char buf[kReadChunk];
    while (c.reading && c.in.size() < kMaxBufferedInput) {
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        if (c.phase != Phase::Draining) c.in.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n < 0 && errno == EINTR) continue;
      // Closed (0) or reset: nobody reads the reply any more.
      client_gone(c);
      return;
    }
    if (c.reading && c.in.size() >= kMaxBufferedInput) {
      c.reading = false;
      update_events(c);
    }
  }

  void client_gone(Conn& c) {
    c.peer_closed = true;
    if (c.phase != Phase::Handling) {
      close_conn(c);
      return;
    }
    // A reply being computed is stopped when it arrives; until then the socket, whose close
    // epoll would report again and again, is out of the loop.
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
  }

  // Moves a connection on: parse the next request, answer it, or pull its reply.
  void advance(Conn& c) {
    if (c.dead) return;
    if (c.phase == Phase::Reading && !c.in.empty() && !stop_seen) parse(c);
    if (c.phase == Phase::Waiting && c.news) {
      c.news = false;
      std::unique_ptr<Response> r = c.pending->poll();
      if (r) {
        c.pending.reset();
        start_response(c, std::move(*r));
      }
    }
    if (c.phase == Phase::Streaming && c.news && c.backlog() < kMaxBufferedOutput) {
      c.news = false;
      std::string piece;
      const bool more = c.stream->pull(piece);
      append_body(c, piece);
      if (!more) finish_stream(c);
    }
    flush(c);
  }

  void parse(Conn& c) {
    const size_t used = c.parser.consume(c.in);
    c.in.erase(0, used);
    if (c.parser.failed()) {
      Response r;
      r.status = c.parser.error_status();
      std::string message = c.parser.error();
      if (r.status == 413 && !opt.body_limit_hint.empty()) message += " (" + opt.body_limit_hint + ")";
      r.body = json_error(r.status, message);
      c.keep_alive = false;  // what follows cannot be framed
      c.linger = true;
      c.head_request_minor0 = false;
      start_response(c, std::move(r));
      return;
    }
    if (c.parser.wants_continue() && !c.continue_sent) {
      c.continue_sent = true;
      c.out += "HTTP/1.1 100 Continue\r\n\r\n";
    }
    if (c.parser.started() && c.deadline_kind_idle) {
      c.deadline_kind_idle = false;
      c.deadline = Clock::now() + seconds(opt.request_timeout_s);
    }
    if (!c.parser.complete()) return;
    Request req = c.parser.take();
    c.continue_sent = false;
    c.keep_alive = req.keep_alive();
    c.head_request_minor0 = req.minor_version == 0;
    c.phase = Phase::Handling;
    {
      std::lock_guard<std::mutex> lock(jobs_mu);
      jobs.push_back({c.id, std::move(req)});
    }
    jobs_cv.notify_one();
  }

  void drain_inbox() {
    std::vector<uint64_t> woken;
    std::vector<std::pair<uint64_t, Reply>> replies;
    {
      std::lock_guard<std::mutex> lock(inbox->mu);
      woken.swap(inbox->woken);
      replies.swap(inbox->replies);
      inbox->signalled = false;
    }
    for (auto& [id, reply] : replies) {
      auto it = conns.find(id);
      if (it == conns.end()) {
        // The connection is gone already: its reply is for nobody.
        if (reply.pending) reply.pending->stop(BodyStream::Stop::ClientGone);
        if (reply.response && reply.response->stream) reply.response->stream->stop(BodyStream::Stop::ClientGone);
        continue;
      }
      Conn& c = *it->second;
      if (c.peer_closed) {
        if (reply.pending) reply.pending->stop(BodyStream::Stop::ClientGone);
        if (reply.response && reply.response->stream) reply.response->stream->stop(BodyStream::Stop::ClientGone);
        close_conn(c);
        continue;
      }
      if (reply.pending) {
        c.pending = std::move(reply.pending);
        c.phase = Phase::Waiting;
        c.news = true;
        if (stop_seen) c.pending->stop(BodyStream::Stop::ServerStopping);
      } else {
        start_response(c, std::move(*reply.response));
        if (c.stream && stop_seen) c.stream->stop(BodyStream::Stop::ServerStopping);
      }
      advance(c);
    }
    for (uint64_t id : woken) {
      auto it = conns.find(id);
      if (it == conns.end()) continue;
      it->second->news = true;
      advance(*it->second);
    }
  }

  // ---------------------------------------------------------------- writing

  void start_response(Conn& c, Response r) {
    if (stop_seen) c.keep_alive = false;
    const bool minor0 = c.head_request_minor0;
    std::string head = std::string(minor0 ? "HTTP/1.0 " : "HTTP/1.1 ") + std::to_string(r.status) + " " +
                       std::string(status_reason(r.status)) + "\r\n";
    if (!r.content_type.empty()) head += "Content-Type: " + r.content_type + "\r\n";
    for (const Header& h : r.headers) head += h.name + ": " + h.value + "\r\n";
    if (r.stream) {
      // HTTP/1.0 has no chunks: the body ends when the connection does.
      c.chunked = !minor0;
      if (minor0) c.keep_alive = false;
      head += c.chunked ? "Transfer-Encoding: chunked\r\n" : "";
      c.stream = std::move(r.stream);
      c.phase = Phase::Streaming;
      c.news = true;
    } else {
      head += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
      c.phase = Phase::Closing;  // until the bytes are out (finish_response)
    }
    head += c.keep_alive ? (minor0 ? "Connection: keep-alive\r\n" : "") : "Connection: close\r\n";
    head += "\r\n";
    if (c.backlog() == 0) c.last_progress = Clock::now();
    c.out += head;
    if (!c.stream) {
      c.out += r.body;
      finish_response(c);
    }
  }

  void append_body(Conn& c, const std::string& piece) {
    if (piece.empty()) return;
    if (c.backlog() == 0) c.last_progress = Clock::now();
    if (c.chunked) {
      char size[32];
      std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
      c.out += size;
      c.out += piece;
      c.out += "\r\n";
    } else {
      c.out += piece;
    }
  }

  void finish_stream(Conn& c) {
    if (c.chunked) c.out += "0\r\n\r\n";
    c.stream.reset();
    finish_response(c);
  }

  // The reply is queued whole: the connection reads the next request (after the bytes are
  // out, for one that closes).
  void finish_response(Conn& c) {
    if (c.keep_alive && !stop_seen) {
      c.phase = Phase::Reading;
      c.deadline_kind_idle = true;
      c.deadline = Clock::now() + seconds(opt.idle_timeout_s);
      if (!c.reading) {
        c.reading = true;
        update_events(c);
      }
    } else {
      c.phase = Phase::Closing;
      c.close_when_flushed = true;
    }
  }

  void flush(Conn& c) {
    if (c.dead) return;
    while (c.backlog() > 0) {
      const ssize_t n = ::send(c.fd, c.out.data() + c.out_sent, c.backlog(), MSG_NOSIGNAL);
      if (n > 0) {
        c.out_sent += static_cast<size_t>(n);
        c.last_progress = Clock::now();
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n < 0 && errno == EINTR) continue;
      client_gone(c);
      return;
    }
    if (c.backlog() == 0) {
      if (c.out.capacity() > kMaxBufferedOutput) release(c.out);
      c.out.clear();
      c.out_sent = 0;
    } else if (c.out_sent > (1 << 20)) {
      c.out.erase(0, c.out_sent);
      c.out_sent = 0;
    }
    const bool want_out = c.backlog() > 0;
    if (want_out != c.writing) {
      c.writing = want_out;
      update_events(c);
    }
    if (c.backlog() == 0 && c.close_when_flushed) {
      if (!c.linger) {
        close_conn(c);
        return;
      }
      c.close_when_flushed = false;
      c.linger = false;
      ::shutdown(c.fd, SHUT_WR);
      c.phase = Phase::Draining;
      c.in.clear();
      c.deadline = Clock::now() + std::chrono::seconds(2);
      if (!c.reading) {
        c.reading = true;
        update_events(c);
      }
      return;
    }
    // Room again: a stream that had news while the client was behind goes on.
    if (c.phase == Phase::Streaming && c.news && c.backlog() < kMaxBufferedOutput) advance(c);
    // Pipelined requests already buffered.
    if (c.phase == Phase::Reading && !c.in.empty()) advance(c);
  }

  // ---------------------------------------------------------------- ends

  void stop_reply(Conn& c, BodyStream::Stop why) {
    if (c.pending) c.pending->stop(why);
    if (c.stream) c.stream->stop(why);
  }

  void close_conn(Conn& c) {
    if (c.dead) return;
    stop_reply(c, BodyStream::Stop::ClientGone);
    c.pending.reset();
    c.stream.reset();
    ::close(c.fd);  // which takes it out of the epoll set
    c.fd = -1;
    c.phase = Phase::Closing;
    c.dead = true;
  }

  void expire(Clock::time_point now) {
    for (auto& [id, cp] : conns) {
      Conn& c = *cp;
      if (c.dead) continue;
      if (c.backlog() > 0 && now - c.last_progress > seconds(opt.write_timeout_s)) {
        close_conn(c);  // a client that does not read its reply
        continue;
      }
      if (c.phase == Phase::Draining && now >= c.deadline) {
        close_conn(c);
        continue;
      }
      if (c.phase != Phase::Reading || now < c.deadline) continue;
      if (!c.parser.started() && c.in.empty()) {
        close_conn(c);  // idle: close quietly
        continue;
      }
      Response r;
      r.status = 408;
      r.body = json_error(408, "the request did not arrive within " + std::to_string(static_cast<int>(opt.request_timeout_s)) +
                                   " s (--request-read-timeout)");
      c.keep_alive = false;
      c.linger = true;
      start_response(c, std::move(r));
      flush(c);
    }
  }

  void reap() {
    for (auto it = conns.begin(); it != conns.end();) {
      if (it->second->dead) {
        it = conns.erase(it);
      } else {
        ++it;
      }
    }
    owner.open_ = static_cast<int>(conns.size());
    // Requests in flight: being handled, waited on or streamed, or replied to with bytes
    // still to send (a connection lingering after its reply owes nothing).
    int busy = 0;
    for (const auto& [id, c] : conns)
      busy += c->phase == Phase::Handling || c->phase == Phase::Waiting || c->phase == Phase::Streaming ||
              (c->phase != Phase::Draining && c->backlog() > 0);
    owner.busy_ = busy;
  }

  void begin_stop(Clock::time_point now) {
    stop_seen = true;
    grace_end = now + seconds(opt.stop_grace_s);
    if (!accept_paused) ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
    ::close(listen_fd);
    listen_fd = -1;
    // Requests no worker has started: answered 503 here.
    std::deque<Job> unstarted;
    {
      std::lock_guard<std::mutex> lock(jobs_mu);
      unstarted.swap(jobs);
    }
    for (Job& j : unstarted) {
      auto it = conns.find(j.id);
      if (it == conns.end()) continue;
      Response r;
      r.status = 503;
      r.body = json_error(503, "the server is shutting down");
      start_response(*it->second, std::move(r));
      flush(*it->second);
    }
    for (auto& [id, cp] : conns) {
      Conn& c = *cp;
      if (c.dead) continue;
      if (c.phase == Phase::Reading || c.phase == Phase::Draining) {
        close_conn(c);  // nothing in flight (or half a request): closed now
      } else if (c.phase == Phase::Waiting || c.phase == Phase::Streaming) {
        stop_reply(c, BodyStream::Stop::ServerStopping);
        c.news = true;
        c.keep_alive = false;
        advance(c);
      }
    }
    reap();
  }
};

Server::Server(const ServerOptions& options, Handler handler)
    : impl_(std::make_unique<Impl>(*this, options, std::move(handler))), options_(options) {}

Server::~Server() = default;

void Server::bind() { impl_->bind_listener(); }

void Server::run() { impl_->run(); }

void Server::stop() {
  impl_->stopping = true;
  impl_->inbox->signal();
}

}  // namespace triattn::http
