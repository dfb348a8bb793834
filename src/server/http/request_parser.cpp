#include "server/http/request_parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace triattn::http {

namespace {

// RFC 9110 token characters (method and header names).
bool is_tchar(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (std::isalnum(u)) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar); }

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A line without its end: "\r\n" or a bare "\n" (RFC 9112 lets a server accept that).
std::string_view strip_cr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

bool RequestParser::fail(int status, std::string message) {
  state_ = State::Failed;
  error_status_ = status;
  error_ = std::move(message);
  return false;
}

size_t RequestParser::consume(std::string_view data) {
  size_t used = 0;
  while (used < data.size() && (state_ == State::Head || state_ == State::Body)) {
    const std::string_view rest = data.substr(used);
    used += state_ == State::Head ? consume_head(rest) : consume_body(rest);
  }
  if (state_ == State::Body && mode_ == BodyMode::None) state_ = State::Complete;
  return used;
}

size_t RequestParser::consume_head(std::string_view data) {
  size_t used = 0;
  // Empty lines before a request line are skipped (RFC 9112 §2.2), e.g. a CRLF after a body.
  if (head_.empty())
    while (used < data.size() && (data[used] == '\r' || data[used] == '\n')) ++used;
  if (used == data.size()) return used;
  started_ = true;
  const size_t room = limits_.max_head_bytes - head_.size();
  const std::string_view piece = data.substr(used, room);
  head_.append(piece);
  // The head ends at its first empty line: "\n\n" or "\n\r\n".
  size_t end = std::string::npos;
  for (size_t i = scanned_ >= 2 ? scanned_ - 2 : 0; i + 1 < head_.size(); ++i) {
    if (head_[i] != '\n') continue;
    if (head_[i + 1] == '\n') {
      end = i + 2;
      break;
    }
    if (head_[i + 1] == '\r' && i + 2 < head_.size() && head_[i + 2] == '\n') {
      end = i + 3;
      break;
    }
  }
  if (end == std::string::npos) {
    scanned_ = head_.size();
    if (head_.size() >= limits_.max_head_bytes) {
      const bool in_request_line = head_.find('\n') == std::string::npos;
      fail(in_request_line ? 414 : 431, in_request_line ? "the request line is longer than " +
                                                                std::to_string(limits_.max_head_bytes) + " bytes"
                                                          : "the request headers are larger than " +
                                                                std::to_string(limits_.max_head_bytes) + " bytes");
    }
    return used + piece.size();
  }
  // The bytes past the head were appended too: hand them back.
  const size_t past = head_.size() - end;
  head_.resize(end);
  used += piece.size() - past;
  if (parse_head()) state_ = State::Body;
  return used;
}

bool RequestParser::parse_head() {
  std::string_view head(head_);
  size_t pos = head.find('\n');
  if (!parse_request_line(strip_cr(head.substr(0, pos)))) return false;
  for (;;) {
    const size_t start = pos + 1;
    pos = head.find('\n', start);
    const std::string_view line = strip_cr(head.substr(start, pos - start));
    if (line.empty()) break;
    if (line.front() == ' ' || line.front() == '\t')
      return fail(400, "a header line starts with whitespace (line folding is not allowed)");
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return fail(400, "a header line has no ':'");
    const std::string_view name = line.substr(0, colon);
    if (!is_token(name)) return fail(400, "a header name is empty or holds characters a name may not hold");
    const std::string_view value = trim_ows(line.substr(colon + 1));
    for (char c : value)
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f)
        return fail(400, "the value of header '" + std::string(name) + "' holds a control character");
    if (req_.headers.size() >= limits_.max_headers)
      return fail(431, "more than " + std::to_string(limits_.max_headers) + " request headers");
    req_.headers.push_back({std::string(name), std::string(value)});
  }
  return parse_framing();
}

bool RequestParser::parse_request_line(std::string_view line) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return fail(400, "the request line is not 'METHOD TARGET HTTP/1.1'");
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method)) return fail(400, "the request method is not a token");
  if (target.empty()) return fail(400, "the request target is empty");
  for (char c : target)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return fail(400, "the request target holds a control character");
  if (version == "HTTP/1.1") {
    req_.minor_version = 1;
  } else if (version == "HTTP/1.0") {
    req_.minor_version = 0;
  } else if (version.substr(0, 5) == "HTTP/") {
    return fail(505, "HTTP version '" + std::string(version.substr(5)) + "' is not supported (1.0 and 1.1 are)");
  } else {
    return fail(400, "the request line does not end in an HTTP version");
  }
  req_.method = std::string(method);
  req_.target = std::string(target);
  std::string_view path = target;
  // Absolute form (a proxy's "http://host/path"): the path is what follows the authority.
  if (const size_t scheme = path.find("://"); path.front() != '/' && scheme != std::string_view::npos) {
    const size_t slash = path.find('/', scheme + 3);
    path = slash == std::string_view::npos ? std::string_view("/") : path.substr(slash);
  }
  req_.path = std::string(path.substr(0, path.find('?')));
  return true;
}

bool RequestParser::parse_framing() {
  const std::string* te = nullptr;
  std::string_view length;
  bool has_length = false;
  for (const Header& h : req_.headers) {
    if (iequals(h.name, "Transfer-Encoding")) {
      if (te) return fail(400, "Transfer-Encoding is given twice");
      te = &h.value;
    } else if (iequals(h.name, "Content-Length")) {
      if (has_length && length != h.value) return fail(400, "two different Content-Length values");
      has_length = true;
      length = h.value;
    } else if (iequals(h.name, "Expect")) {
      if (!iequals(h.value, "100-continue")) return fail(417, "Expect: only 100-continue is understood");
      expect_continue_ = true;
    }
  }
  if (te) {
    if (has_length) return fail(400, "both Transfer-Encoding and Content-Length are given (one frames the body)");
    if (!iequals(*te, "chunked")) return fail(501, "Transfer-Encoding '" + *te + "' is not supported (only chunked)");
    mode_ = BodyMode::Chunked;
    chunk_ = ChunkState::Size;
    return true;
  }
  if (!has_length) {
    mode_ = BodyMode::None;
    return true;
  }
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(length.data(), length.data() + length.size(), n);
  if (length.empty() || end != length.data() + length.size() || ec == std::errc::invalid_argument)
    return fail(400, "Content-Length '" + std::string(length) + "' is not a number of bytes");
  if (ec == std::errc::result_out_of_range || n > limits_.max_body_bytes)
    return fail(413, "the body of " + std::string(length) + " bytes is larger than the limit of " +
                         std::to_string(limits_.max_body_bytes) + " bytes");
  mode_ = n > 0 ? BodyMode::Length : BodyMode::None;
  remaining_ = static_cast<size_t>(n);
  req_.body.reserve(remaining_);
  return true;
}

// Reads a line (without its end) into `line`, at most `limit` bytes; `done` when complete.
bool RequestParser::take_line(std::string_view data, size_t& used, std::string& line, bool& done, size_t limit) {
  const size_t nl = data.find('\n');
  const std::string_view part = data.substr(0, nl);
  if (line.size() + part.size() > limit) return false;
  line.append(part);
  used = nl == std::string_view::npos ? data.size() : nl + 1;
  done = nl != std::string_view::npos;
  if (done && !line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

size_t RequestParser::consume_body(std::string_view data) {
  if (mode_ == BodyMode::Length) {
    const size_t n = std::min(remaining_, data.size());
    req_.body.append(data.substr(0, n));
    remaining_ -= n;
    if (remaining_ == 0) state_ = State::Complete;
    return n;
  }
  if (mode_ == BodyMode::None) {
    state_ = State::Complete;
    return 0;
  }
  switch (chunk_) {
    case ChunkState::Size: {
      size_t used = 0;
      bool done = false;
      if (!take_line(data, used, line_, done, 1024)) {
        fail(400, "a chunk-size line is longer than 1024 bytes");
        return used;
      }
      if (!done) return used;
      // The size in hex, then optional extensions after ';' (ignored).
      std::string_view hex = trim_ows(std::string_view(line_).substr(0, line_.find(';')));
      uint64_t size = 0;
      const auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), size, 16);
      if (hex.empty() || end != hex.data() + hex.size() || ec == std::errc::invalid_argument) {
        fail(400, "a chunk size is not a hexadecimal number");
        return used;
      }
      if (ec == std::errc::result_out_of_range || size > limits_.max_body_bytes - req_.body.size()) {
        fail(413, "the chunked body is larger than the limit of " + std::to_string(limits_.max_body_bytes) + " bytes");
        return used;
      }
      line_.clear();
      remaining_ = static_cast<size_t>(size);
      chunk_ = size == 0 ? ChunkState::Trailer : ChunkState::Data;
      return used;
    }
    case ChunkState::Data: {
      const size_t n = std::min(remaining_, data.size());
      req_.body.append(data.substr(0, n));
      remaining_ -= n;
      if (remaining_ == 0) chunk_ = ChunkState::DataEnd;
      return n;
    }
    case ChunkState::DataEnd: {
      size_t used = 0;
      bool done = false;
      if (!take_line(data, used, line_, done, 2) || (done && !line_.empty())) {
        fail(400, "a chunk's data is not followed by CRLF");
        return used;
      }
      if (done) chunk_ = ChunkState::Size;
      return used;
    }
    case ChunkState::Trailer: {
      size_t used = 0;
      bool done = false;
      const size_t limit = limits_.max_head_bytes - std::min(limits_.max_head_bytes, head_.size() + trailer_bytes_);
      if (!take_line(data, used, line_, done, limit)) {
        fail(431, "the chunked body's trailer fields are larger than " + std::to_string(limits_.max_head_bytes) + " bytes");
        return used;
      }
      if (!done) return used;
      trailer_bytes_ += line_.size() + 2;
      // Trailer fields are read past, not merged: nothing here depends on them.
      if (line_.empty()) state_ = State::Complete;
      line_.clear();
      return used;
    }
  }
  return 0;
}

Request RequestParser::take() {
  Request r = std::move(req_);
  *this = RequestParser(limits_);
  return r;
}

}  // namespace triattn::http
