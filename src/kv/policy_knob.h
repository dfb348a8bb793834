#pragma once
// Helpers for describing a knob of PolicyParams (PolicyKnob): its default as help texts show
// it, and the range checks whose messages name the flag.
#include <string>

#include "kv/policy.h"

namespace triattn {

// The default of `member` in PolicyParams{}: "32", "0.1", "off".
std::string knob_default_text(const PolicyKnobMember& member);
// A real as help texts and errors show it: "0.1", not "0.100000".
std::string real_text(double x);
// A knob for a count or seed member, range [min, max], its default from PolicyParams{}.
PolicyKnob count_knob(std::string flag, PolicyKnobMember member, int64_t min, int64_t max, std::string description);
// A knob for a real member, range [min, max], its default from PolicyParams{}.
PolicyKnob real_knob(std::string flag, double PolicyParams::*member, double min, double max, std::string description);

}  // namespace triattn
