// parse_http_url: the shapes --url accepts, the API root it finds, and named errors.
#include "core/http_url.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace triattn {
namespace {

TEST(HttpUrl, HostPortAndApiRoot) {
  HttpUrl u = parse_http_url("http://127.0.0.1:8080");
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, 8080);
  EXPECT_EQ(u.api_root, "/v1");
  EXPECT_EQ(u.origin(), "http://127.0.0.1:8080");
  EXPECT_EQ(parse_http_url("http://localhost:9/v1/").api_root, "/v1");
  EXPECT_EQ(parse_http_url("http://h:1/proxy").api_root, "/proxy/v1");
  EXPECT_EQ(parse_http_url("http://h:1/proxy/v1").api_root, "/proxy/v1");
  EXPECT_EQ(parse_http_url("http://example.com").port, 80);
}

TEST(HttpUrl, BadAddressesNameTheFlag) {
  for (const char* bad : {"127.0.0.1:8080", "https://h:1", "http://h:0", "http://h:70000", "http://h:x", "http://",
                          "http://h:1?x=1", ""}) {
    try {
      parse_http_url(bad, "--url");
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--url"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace triattn
