#pragma once
// Responses kept by id (Responses API, store: true): the response object for GET
// /v1/responses/{id}, and the token ids its sequence holds for previous_response_id, which
// continues them with only the new turn's tokens appended. The KV cache itself is the
// scheduler's: its kept sequence continues when its history is a prefix of the new prompt,
// else the tokens are fed again. Safe from any thread; the oldest is forgotten first.
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace triattn::server {

struct StoredResponse {
  nlohmann::json response;       // as the API returned it
  std::vector<int32_t> tokens;   // the prompt and the reply (an end-of-generation token left out)
  bool ended_by_eog = false;     // the reply ended with its end-of-generation token
};

class ResponseStore {
 public:
  explicit ResponseStore(size_t capacity) : capacity_(capacity) {}
  void put(const std::string& id, std::shared_ptr<const StoredResponse> r);
  std::shared_ptr<const StoredResponse> find(const std::string& id) const;
  bool erase(const std::string& id);  // false: no such id
  size_t size() const;

 private:
  size_t capacity_;
  mutable std::mutex mu_;
  std::list<std::string> order_;  // oldest first
  std::unordered_map<std::string, std::pair<std::shared_ptr<const StoredResponse>, std::list<std::string>::iterator>> by_id_;
};

}  // namespace triattn::server
