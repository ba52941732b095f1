// RequestChannel — the shared state behind a RequestHandle: a queue of events, a cancel
// flag and the "finish sent / finish taken" marks.
//
// Contract:
//  - Thread-safe. Exactly two parties use it: the engine thread (push / finish /
//    cancel_requested) and the handle's owner (next / cancel).
//  - finish() delivers the one Finish event; it returns false and drops the event when a
//    finish was already sent, and every push() after it is dropped, so "exactly one
//    Finish, nothing after it" holds whatever the engine's paths do.
//  - next(timeout) only waits: it never changes the request (a timeout is a poll).
//  - cancel() only sets a flag; the engine acts on it at its next step boundary.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

#include "engine/request.h"

namespace keel::engine {

class RequestChannel {
 public:
  explicit RequestChannel(uint64_t id) : id_(id) {}

  uint64_t id() const { return id_; }

  // Engine side.
  void push(Event event);
  bool finish(Event event);
  bool cancel_requested() const { return cancelled_.load(std::memory_order_acquire); }
  bool finish_sent() const;

  // Handle side.
  std::optional<Event> next(std::chrono::milliseconds timeout);
  void cancel();
  bool finish_taken() const;

 private:
  const uint64_t id_;
  std::atomic<bool> cancelled_{false};
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Event> events_;    // guarded by mutex_
  bool finish_sent_ = false;    // guarded by mutex_
  bool finish_taken_ = false;   // guarded by mutex_
};

}  // namespace keel::engine
