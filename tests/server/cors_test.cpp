// cors_origin_allowed (server/cors.h): exact origins, "*", and "loopback".
#include <gtest/gtest.h>

#include "server/cors.h"

namespace keel::server {
namespace {

TEST(Cors, LoopbackMatchesLocalPagesOnly) {
  const std::vector<std::string> allowed = {"loopback"};
  for (const char* o : {"http://localhost", "http://localhost:3000", "https://127.0.0.1:8443", "http://[::1]:5173",
                        "HTTP://LOCALHOST:80"}) {
    EXPECT_TRUE(cors_origin_allowed(o, allowed)) << o;
  }
  for (const char* o : {"http://localhost.evil.com", "http://localhost:3000.evil.com", "http://127.0.0.1.nip.io",
                        "http://localhostx", "file://", "null", "http://localhost:", "http://localhost:1234567",
                        "ftp://localhost", "http://10.0.0.1", ""}) {
    EXPECT_FALSE(cors_origin_allowed(o, allowed)) << o;
  }
}

TEST(Cors, ExactOriginsAndWildcard) {
  const std::vector<std::string> allowed = {"https://app.example.com/", "http://a.test:8080"};
  EXPECT_TRUE(cors_origin_allowed("https://app.example.com", allowed));
  EXPECT_TRUE(cors_origin_allowed("https://App.Example.com", allowed));
  EXPECT_TRUE(cors_origin_allowed("http://a.test:8080", allowed));
  EXPECT_FALSE(cors_origin_allowed("http://app.example.com", allowed));
  EXPECT_FALSE(cors_origin_allowed("https://app.example.com.evil.com", allowed));
  EXPECT_FALSE(cors_origin_allowed("http://a.test:8081", allowed));
  EXPECT_FALSE(cors_origin_allowed("http://localhost", allowed));
  EXPECT_TRUE(cors_origin_allowed("https://anything.test", {"*"}));
  EXPECT_FALSE(cors_origin_allowed("", {"*"}));
  EXPECT_FALSE(cors_origin_allowed("http://localhost", {}));
}

}  // namespace
}  // namespace keel::server
