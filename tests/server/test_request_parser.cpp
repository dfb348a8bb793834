// The HTTP/1.1 request parser against its definition: requests split anywhere parse the same,
// pipelined requests come apart, chunked bodies decode, every limit answers its status before
// the bytes past it are buffered, and framing two parsers could read differently is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/http/request_parser.h"

namespace triattn::http {
namespace {

struct Parsed {
  std::vector<Request> requests;
  int status = 0;  // of the error, 0 when none
  std::string error;
  size_t used = 0;
};

// Feeds `bytes` in pieces of `piece` bytes (0: all at once), taking every complete request.
Parsed parse(const std::string& bytes, size_t piece = 0, Limits limits = {}) {
  RequestParser p(limits);
  Parsed out;
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t n = piece == 0 ? bytes.size() - pos : std::min(piece, bytes.size() - pos);
    std::string_view chunk(bytes.data() + pos, n);
    while (!chunk.empty()) {
      const size_t used = p.consume(chunk);
      chunk.remove_prefix(used);
      pos += used;
      if (p.complete()) out.requests.push_back(p.take());
      if (p.failed()) {
        out.status = p.error_status();
        out.error = p.error();
        out.used = pos;
        return out;
      }
      if (used == 0) break;
    }
  }
  out.used = pos;
  return out;
}

TEST(RequestParser, GetAndPostWithTheirParts) {
  const Parsed p = parse(
      "GET /v1/models?x=1 HTTP/1.1\r\nHost: a\r\n\r\n"
      "POST /v1/completions HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: 14\r\n"
      "Connection: keep-alive\r\n\r\n{\"prompt\":\"x\"}");
  ASSERT_EQ(p.status, 0) << p.error;
  ASSERT_EQ(p.requests.size(), 2u);
  const Request& g = p.requests[0];
  EXPECT_EQ(g.method, "GET");
  EXPECT_EQ(g.target, "/v1/models?x=1");
  EXPECT_EQ(g.path, "/v1/models");
  EXPECT_EQ(g.minor_version, 1);
  EXPECT_TRUE(g.keep_alive());
  ASSERT_NE(g.header("host"), nullptr);
  EXPECT_EQ(*g.header("HOST"), "a");
  const Request& q = p.requests[1];
  EXPECT_EQ(q.method, "POST");
  EXPECT_EQ(q.body, "{\"prompt\":\"x\"}");
  EXPECT_EQ(q.minor_version, 0);
  EXPECT_TRUE(q.keep_alive());
}

TEST(RequestParser, EverySplitGivesTheSameRequests) {
  const std::string bytes =
      "\r\nPOST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloPOST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3;ext=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nTrailer: x\r\n\r\nGET /c HTTP/1.1\n\n";
  const Parsed whole = parse(bytes);
  ASSERT_EQ(whole.status, 0) << whole.error;
  ASSERT_EQ(whole.requests.size(), 3u);
  EXPECT_EQ(whole.requests[0].body, "hello");
  EXPECT_EQ(whole.requests[1].body, "abc0123456789abcdef");
  EXPECT_EQ(whole.requests[2].path, "/c");
  for (size_t piece = 1; piece <= 17; ++piece) {
    const Parsed p = parse(bytes, piece);
    ASSERT_EQ(p.status, 0) << "pieces of " << piece << ": " << p.error;
    ASSERT_EQ(p.requests.size(), 3u) << piece;
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(p.requests[i].path, whole.requests[i].path) << piece;
      EXPECT_EQ(p.requests[i].body, whole.requests[i].body) << piece;
    }
  }
}

TEST(RequestParser, BodyLimitsAnswer413BeforeTheBody) {
  Limits l;
  l.max_body_bytes = 100;
  Parsed p = parse("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", 0, l);
  EXPECT_EQ(p.status, 413) << p.error;
  p = parse("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 0, l);
  EXPECT_EQ(p.status, 413) << p.error;
  // Chunked: refused at the chunk-size line that passes the limit, not after its data.
  const std::string head = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  p = parse(head + "40\r\n" + std::string(64, 'a') + "\r\n40\r\n", 0, l);
  EXPECT_EQ(p.status, 413) << p.error;
  EXPECT_EQ(p.used, head.size() + 4 + 64 + 2 + 4);
  p = parse(head + "8000000\r\n", 0, l);  // 128 MiB declared
  EXPECT_EQ(p.status, 413);
  p = parse(head + "ffffffffffffffffffff\r\n", 0, l);
  EXPECT_EQ(p.status, 413);
  // Exactly the limit is fine, in either framing.
  p = parse("POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'b'), 0, l);
  ASSERT_EQ(p.requests.size(), 1u) << p.error;
  p = parse(head + "64\r\n" + std::string(100, 'c') + "\r\n0\r\n\r\n", 0, l);
  ASSERT_EQ(p.requests.size(), 1u) << p.error;
}

TEST(RequestParser, HeadLimits) {
  Limits l;
  l.max_head_bytes = 256;
  l.max_headers = 4;
  Parsed p = parse("GET /" + std::string(400, 'x') + " HTTP/1.1\r\n\r\n", 0, l);
  EXPECT_EQ(p.status, 414);
  p = parse("GET / HTTP/1.1\r\nX: " + std::string(400, 'x') + "\r\n\r\n", 0, l);
  EXPECT_EQ(p.status, 431);
  EXPECT_LE(p.used, 256u + 1) << "nothing past the limit is taken";
  p = parse("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\n\r\n", 0, l);
  EXPECT_EQ(p.status, 431);
  // A slow sender's head one byte at a time is bounded the same way.
  p = parse("GET / HTTP/1.1\r\nX: " + std::string(400, 'x'), 1, l);
  EXPECT_EQ(p.status, 431);
}

TEST(RequestParser, AmbiguousFramingIsRefused) {
  struct Case {
    std::string head;
    int status;
  };
  const std::vector<Case> cases = {
      {"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n", 400},
      {"Transfer-Encoding: gzip, chunked\r\n", 501},
      {"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", 400},
      {"Content-Length: 3\r\nContent-Length: 4\r\n", 400},
      {"Content-Length: -3\r\n", 400},
      {"Content-Length: 3x\r\n", 400},
      {"Content-Length: \r\n", 400},
      {"Expect: 200-ok\r\n", 417},
  };
  for (const Case& c : cases) {
    const Parsed p = parse("POST / HTTP/1.1\r\n" + c.head + "\r\nabc");
    EXPECT_EQ(p.status, c.status) << c.head << ": " << p.error;
    EXPECT_FALSE(p.error.empty());
  }
  // The same length twice is one length.
  const Parsed same = parse("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc");
  ASSERT_EQ(same.requests.size(), 1u) << same.error;
  EXPECT_EQ(same.requests[0].body, "abc");
}

TEST(RequestParser, MalformedHeadsAreRefusedByName) {
  struct Case {
    std::string bytes;
    int status;
  };
  const std::vector<Case> cases = {
      {"GET / HTTP/2.0\r\n\r\n", 505},
      {"GET / FTP/1.0\r\n\r\n", 400},
      {"GET /\r\n\r\n", 400},
      {"GET  / HTTP/1.1\r\n\r\n", 400},
      {"G\"T / HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nNo colon here\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nX: a\r\n  folded\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nX: a\x01" "b\r\n\r\n", 400},
      {"GET /a\x7f HTTP/1.1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n", 400},
  };
  for (const Case& c : cases) {
    const Parsed p = parse(c.bytes);
    EXPECT_EQ(p.status, c.status) << c.bytes << ": " << p.error;
  }
}

TEST(RequestParser, ExpectContinueAndStartedAndConnection) {
  RequestParser p({});
  EXPECT_FALSE(p.started());
  p.consume("\r\n");
  EXPECT_FALSE(p.started()) << "empty lines before a request are not a request";
  p.consume("POST /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(p.started());
  EXPECT_TRUE(p.wants_continue());
  p.consume("ok");
  ASSERT_TRUE(p.complete());
  const Request r = p.take();
  EXPECT_EQ(r.body, "ok");
  EXPECT_FALSE(r.keep_alive());
  EXPECT_FALSE(p.started());
  const Parsed ten = parse("GET / HTTP/1.0\r\n\r\n");
  ASSERT_EQ(ten.requests.size(), 1u);
  EXPECT_FALSE(ten.requests[0].keep_alive());
  // An absolute target (as sent to a proxy) routes by its path.
  const Parsed abs = parse("GET http://example:8080/v1/models?q HTTP/1.1\r\n\r\n");
  ASSERT_EQ(abs.requests.size(), 1u);
  EXPECT_EQ(abs.requests[0].path, "/v1/models");
}

}  // namespace
}  // namespace triattn::http
