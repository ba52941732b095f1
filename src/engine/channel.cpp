#include "engine/channel.h"

#include <utility>

namespace keel::engine {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kDeadline: return "deadline";
    case FinishReason::kError: return "error";
  }
  return "unknown";
}

void RequestChannel::push(Event event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finish_sent_) return;
    event.kind = Event::Kind::kDelta;
    events_.push_back(std::move(event));
  }
  ready_.notify_all();
}

bool RequestChannel::finish(Event event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finish_sent_) return false;
    finish_sent_ = true;
    event.kind = Event::Kind::kFinish;
    events_.push_back(std::move(event));
  }
  ready_.notify_all();
  return true;
}

bool RequestChannel::finish_sent() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finish_sent_;
}

std::optional<Event> RequestChannel::next(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (finish_taken_) return std::nullopt;
  if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
  Event event = std::move(events_.front());
  events_.pop_front();
  if (event.kind == Event::Kind::kFinish) finish_taken_ = true;
  return event;
}

void RequestChannel::cancel() { cancelled_.store(true, std::memory_order_release); }

bool RequestChannel::finish_taken() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finish_taken_;
}

RequestHandle::RequestHandle(std::shared_ptr<RequestChannel> channel)
    : channel_(std::move(channel)) {}

RequestHandle::RequestHandle(RequestHandle&& other) noexcept = default;

RequestHandle& RequestHandle::operator=(RequestHandle&& other) noexcept {
  if (this != &other) {
    if (channel_ && !channel_->finish_taken()) channel_->cancel();
    channel_ = std::move(other.channel_);
  }
  return *this;
}

RequestHandle::~RequestHandle() {
  // Dropping the handle means nobody will read the rest: cancel so the engine frees the
  // slot. After the Finish event was taken there is nothing left to cancel.
  if (channel_ && !channel_->finish_taken()) channel_->cancel();
}

std::optional<Event> RequestHandle::next(std::chrono::milliseconds timeout) {
  if (!channel_) return std::nullopt;
  return channel_->next(timeout);
}

void RequestHandle::cancel() {
  if (channel_) channel_->cancel();
}

bool RequestHandle::finished() const { return channel_ && channel_->finish_taken(); }

uint64_t RequestHandle::id() const { return channel_ ? channel_->id() : 0; }

}  // namespace keel::engine
