#pragma once
// Reads a builtin's arguments the Python way: each parameter by position or by keyword.
#include <initializer_list>
#include <string>

#include "chat/jinja_value.h"
#include "core/error.h"

namespace triattn::jinja {

class ArgReader {
 public:
  // `params` lists the parameter names in positional order; unknown keywords or too many
  // positionals are errors naming `fn`.
  ArgReader(const CallArgs& a, std::string fn, std::initializer_list<const char*> params)
      : a_(a), fn_(std::move(fn)), params_(params) {
    if (a.pos.size() > params_.size())
      fail(fn_, "() takes at most ", params_.size(), " arguments (", a.pos.size(), " given)");
    for (const auto& [k, v] : a.kw) {
      bool known = false;
      for (size_t i = 0; i < params_.size(); ++i)
        if (k == params_[i]) {
          known = true;
          if (i < a.pos.size()) fail(fn_, "() got multiple values for argument '", k, "'");
        }
      if (!known) fail(fn_, "() got an unexpected keyword argument '", k, "'");
    }
  }

  // The argument for parameter i, or undefined when not passed.
  Value get(size_t i) const {
    if (i < a_.pos.size()) return a_.pos[i];
    for (const auto& [k, v] : a_.kw)
      if (k == params_[i]) return v;
    return Value::undefined();
  }
  bool has(size_t i) const { return !get(i).is_undefined(); }

  std::string str(size_t i, const std::string& dflt) const {
    Value v = get(i);
    if (v.is_undefined() || v.is_none()) return dflt;
    if (!v.is_string()) fail(fn_, "(): argument '", params_[i], "' must be a string, not ", v.type_name());
    return v.str_ref();
  }
  int64_t integer(size_t i, int64_t dflt) const {
    Value v = get(i);
    if (v.is_undefined() || v.is_none()) return dflt;
    if (!v.is_int() && !v.is_bool()) fail(fn_, "(): argument '", params_[i], "' must be an integer, not ", v.type_name());
    return v.as_int();
  }
  bool flag(size_t i, bool dflt) const {
    Value v = get(i);
    return v.is_undefined() ? dflt : v.truthy();
  }
  const std::string& fn() const { return fn_; }

 private:
  const CallArgs& a_;
  std::string fn_;
  std::vector<const char*> params_;
};

}  // namespace triattn::jinja
