// Internal to the gguf module: metadata values to and from their on-disk bytes. The body
// of a value is what follows its u32 type code (for an array: element type, count,
// elements); a key/value pair is key string, type code, body.
#pragma once

#include <string>

#include "gguf/cursor.h"
#include "gguf/gguf.h"

namespace keel::gguf::detail {

// Reads the body of a value of `type`. depth counts enclosing arrays (0 at top level).
// Every count is bounded by the remaining bytes before anything is allocated.
Value read_value(Cursor& in, ValueType type, int depth);

// Appends the body of v to out. Throws keel::Error(kInvalidArgument) when v's type does not
// match what it holds, or arrays nest deeper than kMaxArrayDepth.
void append_value(std::string& out, const Value& v, int depth);

}  // namespace keel::gguf::detail
