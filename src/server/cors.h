// Cross-origin (browser) access: which page origins may read keel's responses.
//
// A browser sends `Origin` on cross-origin requests and, before a request with an API key
// or a JSON body, an OPTIONS preflight. An origin on the allow list gets the
// Access-Control-Allow-* headers on its responses and a 204 on its preflight; any other
// origin gets no such headers (the browser then withholds the response from the page) and
// a 403 preflight. Requests without `Origin` (curl, SDKs, servers) are unaffected, and a
// request is never refused for its Origin alone (a web app behind a reverse proxy sends
// its own origin on every POST).
//
// Allow-list entries: an exact origin ("https://app.example.com"), "*" (any origin), or
// "loopback" (http/https on localhost, 127.0.0.1 or [::1], any port: local development,
// the default).
#pragma once

#include <string>
#include <vector>

namespace keel::server {

// True when `origin` (the request's Origin header, non-empty) matches an entry of `allowed`.
bool cors_origin_allowed(const std::string& origin, const std::vector<std::string>& allowed);

}  // namespace keel::server
