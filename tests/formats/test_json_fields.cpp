// JsonFields: every refusal names the file and the key and says what was expected; numbers
// are checked as read, never truncated or wrapped.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "formats/json_fields.h"

namespace triattn {
namespace {

const std::string kFile = "/models/m/config.json";

// The message of the Error `read` throws ("" when it does not throw).
template <class F>
std::string error_of(const std::string& json_text, F read) {
  const nlohmann::json j = nlohmann::json::parse(json_text);
  try {
    read(JsonFields(j, kFile));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

int64_t positive(const std::string& json_text, int64_t max = 1 << 20) {
  const nlohmann::json j = nlohmann::json::parse(json_text);
  return JsonFields(j, kFile).positive_int("n", max);
}

TEST(JsonFields, PositiveIntegersAreCheckedAsRead) {
  const auto err = [](const std::string& text) {
    return error_of(text, [](const JsonFields& f) { f.positive_int("hidden_size", 1 << 20); });
  };
  EXPECT_EQ(err(R"({})"), kFile + ": 'hidden_size' is missing");
  EXPECT_EQ(err(R"({"hidden_size": null})"), kFile + ": 'hidden_size' is missing");
  EXPECT_EQ(err(R"({"hidden_size": "abc"})"), kFile + ": 'hidden_size' must be a positive integer, got \"abc\"");
  EXPECT_EQ(err(R"({"hidden_size": 64.5})"), kFile + ": 'hidden_size' must be a positive integer, got 64.5");
  EXPECT_EQ(err(R"({"hidden_size": 0})"), kFile + ": 'hidden_size' must be a positive integer, got 0");
  EXPECT_EQ(err(R"({"hidden_size": -64})"), kFile + ": 'hidden_size' must be a positive integer, got -64");
  EXPECT_EQ(err(R"({"hidden_size": true})"), kFile + ": 'hidden_size' must be a positive integer, got true");
  EXPECT_EQ(err(R"({"hidden_size": [64]})"), kFile + ": 'hidden_size' must be a positive integer, got [64]");
  EXPECT_EQ(err(R"({"hidden_size": 4294967360})"),
            kFile + ": 'hidden_size' must be a positive integer no larger than 1048576, got 4294967360");
  EXPECT_EQ(err(R"({"hidden_size": 18446744073709551615})"),
            kFile + ": 'hidden_size' must be a positive integer no larger than 1048576, got 18446744073709551615");
  EXPECT_EQ(err(R"({"hidden_size": 1e300})"),
            kFile + ": 'hidden_size' must be a positive integer no larger than 1048576, got 1e+300");
  EXPECT_EQ(positive(R"({"n": 64})"), 64);
  EXPECT_EQ(positive(R"({"n": 64.0})"), 64);  // a whole number, whatever its spelling
  EXPECT_EQ(positive(R"({"n": 1048576})"), 1048576);
}

TEST(JsonFields, OptionalFieldsFallBackOnlyWhenAbsent) {
  const nlohmann::json j = nlohmann::json::parse(R"({"a": null, "eps": 1e-6, "tie": false, "act": "silu"})");
  const JsonFields f(j, kFile);
  EXPECT_FALSE(f.has("a"));
  EXPECT_EQ(f.positive_int_or("a", 10, 7), 7);
  EXPECT_EQ(f.positive_int_or("missing", 10, 7), 7);
  EXPECT_FLOAT_EQ(f.positive_float_or("eps", 1.0f), 1e-6f);
  EXPECT_FLOAT_EQ(f.positive_float_or("missing", 0.5f), 0.5f);
  EXPECT_FALSE(f.bool_or("tie", true));
  EXPECT_EQ(f.text_or("act", "gelu"), "silu");
  EXPECT_EQ(f.text_or("missing", "gelu"), "gelu");
  EXPECT_FALSE(f.object_or_none("a").has_value());
}

TEST(JsonFields, WrongTypesNameTheKeyAndTheExpectation) {
  EXPECT_EQ(error_of(R"({"rms_norm_eps": "small"})", [](const JsonFields& f) { f.positive_float_or("rms_norm_eps", 1); }),
            kFile + ": 'rms_norm_eps' must be a positive number, got \"small\"");
  EXPECT_EQ(error_of(R"({"rms_norm_eps": -1e-6})", [](const JsonFields& f) { f.positive_float_or("rms_norm_eps", 1); }),
            kFile + ": 'rms_norm_eps' must be a positive number, got -1e-06");
  EXPECT_EQ(error_of(R"({"rope_theta": 1e300})", [](const JsonFields& f) { f.positive_float_or("rope_theta", 1); }),
            kFile + ": 'rope_theta' must be a positive number that fits in a float, got 1e+300");
  EXPECT_EQ(error_of(R"({"tie": "yes"})", [](const JsonFields& f) { f.bool_or("tie", false); }),
            kFile + ": 'tie' must be true or false, got \"yes\"");
  EXPECT_EQ(error_of(R"({"model_type": 3})", [](const JsonFields& f) { f.text("model_type"); }),
            kFile + ": 'model_type' must be a string, got 3");
  EXPECT_EQ(error_of(R"({})", [](const JsonFields& f) { f.text("model_type"); }), kFile + ": 'model_type' is missing");
  EXPECT_EQ(error_of(R"([1, 2])", [](const JsonFields&) {}), kFile + ": must hold a JSON object, got [1,2]");
  // A long value is cut short in the message.
  const std::string msg = error_of(R"({"k": ")" + std::string(500, 'x') + R"("})",
                                   [](const JsonFields& f) { f.positive_int("k", 10); });
  EXPECT_LT(msg.size(), 150u) << msg;
}

TEST(JsonFields, NestedObjectsReportDottedKeys) {
  const auto err = [](const std::string& text) {
    return error_of(text, [](const JsonFields& f) {
      if (auto r = f.object_or_none("rope_scaling")) r->positive_float_or("factor", 1.0f);
    });
  };
  EXPECT_EQ(err(R"({"rope_scaling": null})"), "");
  EXPECT_EQ(err(R"({"rope_scaling": {"factor": 8}})"), "");
  EXPECT_EQ(err(R"({"rope_scaling": {"factor": "8"}})"),
            kFile + ": 'rope_scaling.factor' must be a positive number, got \"8\"");
  EXPECT_EQ(err(R"({"rope_scaling": "linear"})"), kFile + ": 'rope_scaling' must be an object, got \"linear\"");
}

}  // namespace
}  // namespace triattn
