#include "server/responses_store.h"

namespace triattn::server {

void ResponseStore::put(const std::string& id, std::shared_ptr<const StoredResponse> r) {
  if (capacity_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = by_id_.find(id); it != by_id_.end()) {
    order_.erase(it->second.second);
    by_id_.erase(it);
  }
  order_.push_back(id);
  by_id_.emplace(id, std::make_pair(std::move(r), std::prev(order_.end())));
  while (by_id_.size() > capacity_) {
    by_id_.erase(order_.front());
    order_.pop_front();
  }
}

std::shared_ptr<const StoredResponse> ResponseStore::find(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second.first;
}

bool ResponseStore::erase(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return false;
  order_.erase(it->second.second);
  by_id_.erase(it);
  return true;
}

size_t ResponseStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return by_id_.size();
}

}  // namespace triattn::server
