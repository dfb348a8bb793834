#pragma once
// An incremental HTTP/1.1 request parser (RFC 9112): bytes go in as they arrive, in pieces of
// any size; out comes one request at a time, or an error with the status to answer. Every
// size is bounded before it is buffered: the head, the number of headers, the body (by its
// Content-Length before a byte of it is read, and chunk by chunk when chunked). Framing that
// two parsers could read differently (Content-Length with Transfer-Encoding, two lengths,
// codings other than chunked) is refused, so nothing can be smuggled past a proxy in front.
#include <cstddef>
#include <string>
#include <string_view>

#include "server/http/http_message.h"

namespace triattn::http {

struct Limits {
  size_t max_head_bytes = 16384;  // request line, headers and chunked trailers
  size_t max_headers = 100;
  size_t max_body_bytes = 1 << 20;
};

class RequestParser {
 public:
  enum class State { Head, Body, Complete, Failed };

  explicit RequestParser(const Limits& limits) : limits_(limits) {}

  // Reads what it can of `data`; returns how many bytes it used. It stops at the end of a
  // request (the rest belongs to the next one: pipelining) and at an error.
  size_t consume(std::string_view data);

  State state() const { return state_; }
  bool complete() const { return state_ == State::Complete; }
  bool failed() const { return state_ == State::Failed; }
  // Some bytes of a request have arrived (its deadline runs from the first).
  bool started() const { return started_; }
  // The head is in and the client waits for "100 Continue" before it sends the body.
  bool wants_continue() const { return state_ == State::Body && expect_continue_; }

  // When complete: the request, and the parser is ready for the next one.
  Request take();
  // When failed: the status to answer (400, 413, 431, 501, 505) and why.
  int error_status() const { return error_status_; }
  const std::string& error() const { return error_; }

 private:
  enum class BodyMode { None, Length, Chunked };
  enum class ChunkState { Size, Data, DataEnd, Trailer };
  size_t consume_head(std::string_view data);
  size_t consume_body(std::string_view data);
  bool parse_head();
  bool parse_request_line(std::string_view line);
  bool parse_framing();
  bool fail(int status, std::string message);
  bool take_line(std::string_view data, size_t& used, std::string& line, bool& done, size_t limit);

  Limits limits_;
  State state_ = State::Head;
  bool started_ = false;
  std::string head_;   // the head's bytes until its blank line
  size_t scanned_ = 0; // of head_, already searched for the blank line
  Request req_;
  BodyMode mode_ = BodyMode::None;
  size_t remaining_ = 0;  // Length: bytes still to come; Chunked: of the current chunk
  ChunkState chunk_ = ChunkState::Size;
  std::string line_;      // a chunk-size or trailer line being read
  size_t trailer_bytes_ = 0;
  bool expect_continue_ = false;
  int error_status_ = 0;
  std::string error_;
};

}  // namespace triattn::http
