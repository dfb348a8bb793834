#include "kv/policy_knob.h"

namespace triattn {

std::string real_text(double x) {
  std::string s = std::to_string(x);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

std::string knob_default_text(const PolicyKnobMember& member) {
  static const PolicyParams defaults{};
  struct Text {
    std::string operator()(int64_t PolicyParams::*m) const { return std::to_string(defaults.*m); }
    std::string operator()(std::optional<int64_t> PolicyParams::*m) const {
      return std::to_string((defaults.*m).value_or(0));
    }
    std::string operator()(double PolicyParams::*m) const { return real_text(defaults.*m); }
    std::string operator()(uint64_t PolicyParams::*m) const { return std::to_string(defaults.*m); }
    std::string operator()(bool PolicyParams::*m) const { return defaults.*m ? "on" : "off"; }
    std::string operator()(std::optional<PruningMode> PolicyParams::*m) const {
      return std::string(pruning_mode_name(defaults.*m));
    }
  };
  return std::visit(Text{}, member);
}

std::string knob_field(const PolicyKnob& knob) {
  std::string f = knob.flag.substr(knob.flag.find_first_not_of('-'));
  for (char& c : f)
    if (c == '-') c = '_';
  return f;
}

PolicyKnob count_knob(std::string flag, PolicyKnobMember member, int64_t min, int64_t max, std::string description) {
  PolicyKnob k;
  k.flag = std::move(flag);
  k.default_value = knob_default_text(member);
  k.description = std::move(description);
  k.member = member;
  k.min = min;
  k.max = max;
  return k;
}

PolicyKnob real_knob(std::string flag, double PolicyParams::*member, double min, double max, std::string description) {
  PolicyKnob k;
  k.flag = std::move(flag);
  k.default_value = knob_default_text(member);
  k.description = std::move(description);
  k.member = member;
  k.min_real = min;
  k.max_real = max;
  return k;
}

}  // namespace triattn
