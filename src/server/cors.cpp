#include "server/cors.h"

#include <algorithm>
#include <cctype>

namespace keel::server {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// scheme://host[:port] with host localhost, 127.0.0.1 or [::1] and a numeric port.
bool is_loopback_origin(const std::string& origin) {
  std::string rest;
  for (const char* scheme : {"http://", "https://"}) {
    if (origin.rfind(scheme, 0) == 0) rest = origin.substr(std::char_traits<char>::length(scheme));
  }
  if (rest.empty()) return false;
  for (const char* host : {"localhost", "127.0.0.1", "[::1]"}) {
    const std::string h = host;
    if (rest.rfind(h, 0) != 0) continue;
    const std::string port = rest.substr(h.size());
    if (port.empty()) return true;
    if (port[0] != ':' || port.size() < 2 || port.size() > 6) return false;
    return std::all_of(port.begin() + 1, port.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  }
  return false;
}

}  // namespace

bool cors_origin_allowed(const std::string& origin, const std::vector<std::string>& allowed) {
  if (origin.empty()) return false;
  const std::string o = lower(origin);
  for (const std::string& entry : allowed) {
    if (entry == "*") return true;
    if (entry == "loopback") {
      if (is_loopback_origin(o)) return true;
      continue;
    }
    std::string e = lower(entry);
    while (!e.empty() && e.back() == '/') e.pop_back();
    if (!e.empty() && e == o) return true;
  }
  return false;
}

}  // namespace keel::server
