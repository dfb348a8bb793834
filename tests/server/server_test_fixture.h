#pragma once
// The server tests' shared fixture: the TinyStories model and its statistics, a server on a
// free port, an HTTP client, the engine alone for comparison, and SSE parsing.
#include <gtest/gtest.h>
#include <httplib.h>

#include <sstream>

#include "engine/calibrate.h"
#include "core/read_file.h"
#include "engine/generate.h"
#include "server/server.h"

namespace triattn::server::test {

using json = nlohmann::json;
inline const std::string kModel = std::string(TRIATTN_SHARED_DIR) + "/models/tinystories-656k";
// A chat template that shows no tool-call syntax (the model's own absence of one gets ChatML,
// which has one), for the refusals of tools.
inline const std::string kNoToolsTemplate = std::string(TRIATTN_SHARED_DIR) + "/chat-templates/google-gemma-2-2b-it.jinja";

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = Model::load(kModel);
    ThreadPool pool(2);
    CalibrateOptions copt;
    copt.pool = &pool;
    const std::string text = read_file(std::string(TRIATTN_SOURCE_DIR) + "/tests/data/calibration_stories.txt");
    stats_ = std::make_shared<HeadStats>(calibrate_text(*model_, text, copt).stats);
  }
  static void TearDownTestSuite() { model_.reset(); }

  // A server on a free port with these options (statistics loaded as --stats would).
  static std::unique_ptr<Server> start(ServerOptions o = {}) {
    o.port = 0;
    o.threads = 2;
    o.defaults.kv.params.stats = stats_;
    auto s = std::make_unique<Server>(model_, o);
    s->start();
    return s;
  }
  static httplib::Result post(Server& s, const std::string& path, const json& body, const std::string& key = "") {
    httplib::Client c("127.0.0.1", s.port());
    c.set_read_timeout(60, 0);
    httplib::Headers h;
    if (!key.empty()) h.emplace("Authorization", "Bearer " + key);
    return c.Post(path.c_str(), h, body.dump(), "application/json");
  }
  // The engine alone: greedy text of a prompt (with these KV settings).
  static std::string alone(const std::vector<int32_t>& prompt, int64_t n, const KvSettings& kv = {}) {
    PolicyFactory f(*model_, kv);
    Sequence seq(*model_, f);
    ThreadPool pool(2);
    Forward fwd(*model_, &pool);
    SamplerParams sp;
    sp.temperature = 0;
    Sampler sampler(sp);
    GenerateOptions opt;
    opt.n_predict = n;
    return generate(*model_, fwd, seq, prompt, opt, sampler).text;
  }
  static std::vector<int32_t> ids(const std::string& text) {
    const Tokenizer& t = model_->tokenizer();
    return t.encode(text, t.add_bos_default());
  }
  // The "event: NAME" / "data: {...}" pairs of an SSE body with named events (Responses, Messages).
  struct NamedEvent {
    std::string name;
    json data;
  };
  static std::vector<NamedEvent> named_events(const std::string& body) {
    std::vector<NamedEvent> out;
    std::istringstream in(body);
    std::string line, name;
    while (std::getline(in, line)) {
      if (line.rfind("event: ", 0) == 0) name = line.substr(7);
      if (line.rfind("data: ", 0) == 0) out.push_back({name, json::parse(line.substr(6))});
    }
    return out;
  }
  // The "data:" events of an SSE body, parsed ([DONE] as the string "[DONE]").
  static std::vector<json> events(const std::string& body) {
    std::vector<json> out;
    std::istringstream in(body);
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("data: ", 0) == 0) {
        const std::string d = line.substr(6);
        out.push_back(d == "[DONE]" ? json("[DONE]") : json::parse(d));
      }
    return out;
  }
  static inline std::shared_ptr<const Model> model_;
  static inline std::shared_ptr<const HeadStats> stats_;
};

// A metric's value in the server's /metrics, or -1.
inline double metric(Server& s, const std::string& name) {
  httplib::Client c("127.0.0.1", s.port());
  const auto r = c.Get("/metrics");
  if (!r) return -1;
  const size_t at = r->body.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(r->body.substr(at + name.size() + 2));
}

}  // namespace triattn::server::test
