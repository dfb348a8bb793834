#pragma once
// Error kinds the interpreter distinguishes from plain failures.
#include "core/error.h"

namespace triattn::jinja {

// A template called raise_exception(msg): what() is exactly the template's message, so a
// server can show it to the client as HF does.
class TemplateRaised : public Error {
 public:
  using Error::Error;
};

// An Error whose message already names the template line; the interpreter does not wrap it
// again as it unwinds.
class LocatedError : public Error {
 public:
  using Error::Error;
};

}  // namespace triattn::jinja
