// FunctionRef<R(Args...)> — a non-owning reference to a callable: one object pointer and
// one call thunk, no allocation, no copy of the callable.
//
// Contract: the referenced callable must outlive every call through the FunctionRef (bind
// it to a lambda that lives at least as long as the call that receives it; never store a
// FunctionRef beyond that call). Copying a FunctionRef copies the reference, not the
// callable. Thread-safety: as the referenced callable's operator().
#pragma once

#include <type_traits>
#include <utility>

namespace keel {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
             std::is_invocable_r_v<R, F&, Args...>)
  FunctionRef(F&& f) noexcept  // NOLINT(google-explicit-constructor): used like a function
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace keel
