#pragma once
// An HTTP/1.1 request as the server's handlers see it, and the response they give back.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace triattn::http {

struct Header {
  std::string name, value;
};

struct Request {
  std::string method;       // "GET", "POST", ...
  std::string target;       // as sent: "/v1/models?x=1"
  std::string path;         // the target without its query
  int minor_version = 1;    // HTTP/1.<minor>
  std::vector<Header> headers;
  std::string body;         // Content-Length or chunked, decoded

  // The first header of that name (case-insensitive), or null.
  const std::string* header(std::string_view name) const;
  // Whether the connection stays open after the reply (HTTP/1.1 unless "close"; HTTP/1.0
  // only with "keep-alive").
  bool keep_alive() const;
};

// A body the server writes as it becomes available (chunked transfer), pulled on the server's
// loop thread whenever the handler's wake-up says there is something new.
class BodyStream {
 public:
  virtual ~BodyStream() = default;
  // Appends what is ready to `out`; false once the body is complete (what it appended last
  // is then the end of it).
  virtual bool pull(std::string& out) = 0;
  enum class Stop { ClientGone, ServerStopping };
  // The client went away (nothing more is written), or the server is stopping: the next
  // pull() must finish the body at once (a closing event, say).
  virtual void stop(Stop why) = 0;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<Header> headers;  // extra headers (Content-Length and framing are the server's)
  std::string body;
  std::shared_ptr<BodyStream> stream;  // when set, the body comes from it and `body` is unused
};

// A reply that is not ready when the handler returns (it waits on the engine): polled on the
// loop thread after each wake-up.
class PendingReply {
 public:
  virtual ~PendingReply() = default;
  // The response once there is one; null until then.
  virtual std::unique_ptr<Response> poll() = 0;
  // As BodyStream::stop: after ServerStopping, the next poll() must answer.
  virtual void stop(BodyStream::Stop why) = 0;
};

std::string_view status_reason(int status);
bool iequals(std::string_view a, std::string_view b);

}  // namespace triattn::http
